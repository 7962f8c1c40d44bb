"""Extraction: a campaign's stored labels read once into one data object (`CampaignData`), with a fixed
number of queries.

No per-answer model objects. Two readers of the same columns: `pg.py` (PostgreSQL fast path: each
table as one tab-separated text from `string_agg`, parsed by pandas; questions and answers at once on
two connections sharing one exported snapshot outside a transaction, one after the other inside one)
and `orm.py` (portable, `values_list`; SQLite runs it). Which one runs is `common.fastpath`'s
decision (`report_extract`; `answers_csv` for the answers read with the answers.csv columns). The
number of queries does not depend on the number of answers (tests pin it exactly).

Answers are coded: `a_qidx` is the row of the answer's question in the question arrays and `a_code`
the index of its choice in `choices`, so every metric works on small integer arrays. With
`table=True` the data also carries every stored answer with its question (what answers.csv holds),
so an export reads the database once.

Labels from elsewhere (`ReportOptions.source`: a machine labeller, or `hybrid:<labeller>`) are read
by `metrics/extract/machine.py` into a `MachineData` aligned with these question arrays (three
queries, made only for such a source); `metrics/sections/sources.py` computes from both.
"""
from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import numpy as np
from django.db import connection, transaction
from django.db.models import Count, Q

from annotation.models import Enrollment
from campaigns.models import Campaign
from common import fastpath
from generation.models import Image
from metrics.core._arrays import distinct_count

from . import orm, pg
from .data import GEP_KEYS, PST_KEYS, AnswerColumns, AnswerTable, CampaignData, CampaignFacts, QuestionColumns
from .demographics import demographics_read
from .redundancy import redundancy_read

__all__ = ["GEP_KEYS", "PST_KEYS", "AnswerColumns", "AnswerTable", "CampaignData", "CampaignFacts",
           "QuestionColumns", "campaign_data"]

T = TypeVar("T")


def campaign_data(campaign: Campaign, *, exclude_blocked: bool = True, table: bool = False) -> CampaignData:
    """Load the questions and effective answers of a campaign (and, with `table`, every stored answer
    with its question's columns, for answers.csv).

    Left out of the arrays (and counted in `counts`): gold questions and their answers, questions of
    images the researcher excluded, answers that a later correction replaced, and (when
    `exclude_blocked`) answers of annotators blocked in this campaign.
    """
    facts = CampaignFacts.of(campaign)
    if fastpath.enabled("report_extract") and not connection.in_atomic_block:
        with transaction.atomic():
            data = _campaign_data(facts, exclude_blocked=exclude_blocked, table=table, snapshot=_snapshot_export())
            data.redundancy = redundancy_read(campaign)
            return data
    data = _campaign_data(facts, exclude_blocked=exclude_blocked, table=table, snapshot=None)
    data.redundancy = redundancy_read(campaign)
    return data


def _questions(campaign_id: int, keys: tuple[str, ...], table: bool) -> QuestionColumns:
    reader = pg if fastpath.enabled("report_extract") else orm
    return reader.questions_read(campaign_id, keys, slot=table)


def _answers(campaign_id: int, table: bool) -> AnswerColumns:
    reader = pg if fastpath.enabled("answers_csv" if table else "report_extract") else orm
    return reader.answers_read(campaign_id, table=table)


def _snapshot_export() -> str:
    """Make the current transaction REPEATABLE READ and export its snapshot (first statements of it)."""
    with connection.cursor() as cursor:
        cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        cursor.execute("SELECT pg_export_snapshot()")
        return str(cursor.fetchone()[0])


def _in_snapshot(snapshot: str, fn: Callable[..., T], *args: Any) -> T:
    """Run `fn` on this thread's own connection, in the given exported snapshot (so two connections
    read the same committed state), then close that connection."""
    try:
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                cursor.execute("SET TRANSACTION SNAPSHOT %s", [snapshot])
            return fn(*args)
    finally:
        connection.close()


def _campaign_data(facts: CampaignFacts, *, exclude_blocked: bool, table: bool, snapshot: str | None) -> CampaignData:
    keys = facts.meta_keys
    if snapshot is None:
        questions = _questions(facts.id, keys, table)
        answers = _answers(facts.id, table)
        blocked, image_counts = _small_reads(facts.id)
    else:
        # The answers on a second connection in the same snapshot, while this one reads the questions
        # and the small tables: PostgreSQL builds one text while this process parses the other
        # (bench/README.md).
        with ThreadPoolExecutor(max_workers=1) as pool:
            pending = pool.submit(_in_snapshot, snapshot, _answers, facts.id, table)
            questions = _questions(facts.id, keys, table)
            blocked, image_counts = _small_reads(facts.id)
            answers = pending.result()
    data = assemble(facts, questions, answers, blocked, image_counts, exclude_blocked=exclude_blocked, table=table)
    data.demographics_release, data.demographics = demographics_read(facts.id)
    return data


def assemble(facts: CampaignFacts, questions: QuestionColumns, answers: AnswerColumns, blocked: np.ndarray,
             image_counts: dict[str, int], *, exclude_blocked: bool, table: bool = False) -> CampaignData:
    """The data object from what the readers returned (pure: numpy only)."""
    pool = ~questions.is_gold & ~questions.excluded
    # Every question in the pool (no gold, nothing excluded: most campaigns): the columns as read, not
    # copied (~0.1 s of wide string columns at 333k questions); nothing writes into them.
    keep = _whole if bool(pool.all()) else (lambda values: values[pool])
    q_id = keep(questions.id)
    # Row of each answer's question among all the campaign's questions (`found` guards against an
    # answer whose question is not the campaign's, which the foreign keys do not rule out).
    n_q = questions.id.size
    q_row = np.minimum(np.searchsorted(questions.id, answers.question), max(n_q - 1, 0))
    found = questions.id[q_row] == answers.question if n_q else np.zeros(answers.id.size, dtype=bool)
    superseded = np.isin(answers.id, answers.corrects[answers.corrects >= 0])
    current = ~superseded & found
    is_gold = found & questions.is_gold[q_row] if n_q else found
    on_excluded = found & ~questions.is_gold[q_row] & questions.excluded[q_row] if n_q else found
    in_pool = found & pool[q_row] if n_q else found
    is_blocked = np.isin(answers.annotator, blocked)
    use = current & in_pool & (~is_blocked if exclude_blocked else True)
    counts = {
        "answers_total": int((~superseded).sum()),
        "answers_gold": int((current & is_gold).sum()),
        "answers_excluded_images": int((current & on_excluded).sum()),
        "answers_blocked": int((current & in_pool & is_blocked).sum()) if exclude_blocked else 0,
    }
    counts.update(image_counts)
    # Row of each used answer among the pool questions.
    pool_row = np.cumsum(pool) - 1
    a_qidx = pool_row[q_row[use]]
    a_annotator = answers.annotator[use]
    counts.update({"questions": int(q_id.size), "answers": int(use.sum()),
                   "annotators_blocked": int(blocked.size) if exclude_blocked else 0,
                   "annotators": distinct_count(a_annotator)})
    meta = {k: keep(v) for k, v in questions.meta.items()}
    for key in ("sample_index", "template_index"):
        if key in meta:
            meta[key] = _int_meta(meta[key])
    return CampaignData(facts, q_id, keep(questions.image), keep(questions.setting), meta, a_qidx.astype(np.int64),
                        a_annotator, answers.code[use], answers.choices, counts,
                        AnswerTable(answers, questions, q_row, superseded) if table else None,
                        a_arrival=arrival_ids(answers.id, answers.corrects)[use])


def _whole(values: np.ndarray) -> np.ndarray:
    return values


def _int_meta(raw: np.ndarray) -> np.ndarray:
    """A stored integer metadata text column as int64 ('' -> -1): the distinct texts (pandas' hash
    table) parsed once each, not every row."""
    if not raw.size:
        return np.zeros(0, np.int64)
    import pandas as pd

    codes, uniques = pd.factorize(raw)
    texts = np.asarray(uniques, dtype=str)
    return np.where(texts == "", "-1", texts).astype(np.int64)[codes]


def arrival_ids(ids: np.ndarray, corrects: np.ndarray) -> np.ndarray:
    """Per answer, the id of the first answer of its correction chain (ids sorted): a correction
    keeps the place in the question's order of arrival of the answer it corrects. No correction: the
    ids themselves (an int64 array as given, not copied: 10M answers 0.4 s of copies)."""
    if not bool((np.asarray(corrects) >= 0).any()):
        return np.asarray(ids, dtype=np.int64)
    root = np.asarray(corrects, dtype=np.int64).copy()
    out = np.asarray(ids, dtype=np.int64).copy()
    for _ in range(64):  # chains are short; bounded against a malformed cycle
        has = root >= 0
        if not has.any():
            break
        out[has] = root[has]
        at = np.minimum(np.searchsorted(ids, root[has]), max(ids.size - 1, 0))
        nxt = np.where(ids[at] == root[has], np.asarray(corrects)[at], -1)
        root[has] = nxt
        root[~has] = -1
    return out


def _small_reads(campaign_id: int) -> tuple[np.ndarray, dict[str, int]]:
    """Blocked annotators, image counts."""
    blocked = np.array(list(Enrollment.objects.filter(campaign_id=campaign_id, status=Enrollment.Status.BLOCKED)
                            .values_list("annotator_id", flat=True)), dtype=np.int64)
    image_counts = Image.objects.filter(campaign_id=campaign_id).aggregate(
        images=Count("id"), images_done=Count("id", filter=Q(status=Image.Status.DONE)),
        images_excluded=Count("id", filter=Q(excluded=True)),
        images_failed=Count("id", filter=Q(status=Image.Status.FAILED)),
        images_filtered=Count("id", filter=Q(status=Image.Status.FILTERED)),
    )
    return blocked, image_counts
