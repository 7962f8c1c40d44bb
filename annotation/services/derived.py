"""The one write path for everything derived from answers.

Answers are written by the HIT engines (`annotation.hits`: the hot path), by the bulk imports
(`annotation.services.answers.answers_import`: the MTurk batch results, `annotation.archive`) and by
corrections (`annotation.services.answers.answer_correct`). Whatever else changes what counts of
them (gold marking, blocking, opening, examples, demographics, machine labels, references,
exclusion) is a "rarer writer". All of them keep the derived data current through this module, in
the writer's transaction:

- the counters `assigned` / `completed` (the engines and the imports move them with the rows);
- the stored majority labels (`AggregatedLabel`, the rule in `annotation.labels`);
- adaptive `required` (`annotation.redundancy`), re-evaluated wherever the counted votes change:
  at submit, after a correction, after a block or an unblock, after an import;
- the campaign's data revision (:func:`data_revision`): derived from the answers (their count and
  highest id, which every answer insert moves without touching a shared row) plus the counter
  `Campaign.data_changes`, bumped here (:func:`revision_bump`) by every rarer writer.

Every snapshot (report, comparison, dataset export) is keyed by the data revision and its options
(`metrics` `snapshot_key`); nothing else decides staleness. `tests/contracts/test_write_path.py`
runs every writer and then checks stored labels == the labels the report computes, counters ==
rows, and that the revision moved.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from django.db.models import Count, F
from django.utils import timezone

from campaigns.models import Campaign
from campaigns.revision import data_changed

from .. import prepared
from ..labels import labels_recompute, labels_write, labels_write_bulk, labels_write_counts
from ..models import Answer, Question
from ..redundancy import is_adaptive, questions_to_grow
from ..selectors import data_revision  # noqa: F401  (the reader, beside its writers here)
from ..spec_section import annotation_settings
from .staged import references_checked_in_bulk

__all__ = ["annotator_data_changed", "answers_derive", "counters_recount", "data_revision", "required_reevaluate", "revision_bump", "submit_derive",
           "submit_derive_sql"]


def revision_bump(*, campaign_ids: Iterable[int]) -> None:
    """A rarer writer changed what a snapshot reads: move the campaigns' data revision (in the caller's
    transaction)."""
    data_changed(campaign_ids=campaign_ids)


def annotator_data_changed(*, annotator_id: int) -> None:
    """Something of the annotator's that reports read changed (demographics in their profile, a
    withdrawal): bump every campaign they are enrolled in or answered a form of."""
    from ..models import DemographicsResponse, Enrollment

    ids = set(Enrollment.objects.filter(annotator_id=annotator_id).values_list("campaign_id", flat=True))
    ids |= set(DemographicsResponse.objects.filter(annotator_id=annotator_id).values_list("campaign_id", flat=True))
    revision_bump(campaign_ids=ids)


def counters_recount(*, campaign_id: int) -> None:
    """Set every question's counters from its rows (an import of a whole campaign: `completed` = its
    original answers, `assigned` the same, at most `required`; no live lease survives an import)."""
    from django.db.models.functions import Least

    for row in Answer.objects.filter(campaign_id=campaign_id, corrects__isnull=True).values("question_id").annotate(
            n=Count("id")):
        Question.objects.filter(pk=row["question_id"]).update(completed=row["n"], assigned=Least(row["n"], F("required")))


def required_reevaluate(*, question_ids: Sequence[int], redundancy: object) -> list[int]:
    """Adaptive redundancy: `required + 1` on the given questions whose stored majority is not settled
    while all their wanted answers are in (`annotation.redundancy.required_next`). Called after the
    labels of those questions were written (at submit on the rows the counters' UPDATE locked; after
    a correction, a block, an import). Returns the questions that grew."""
    if not is_adaptive(redundancy) or not question_ids:
        return []
    rows = Question.objects.filter(pk__in=question_ids, is_gold=False).order_by("pk").values_list(
        "pk", "required", "completed", "choices", "label__votes")
    grow = questions_to_grow([(pk, r, c, len(ch), v) for pk, r, c, ch, v in rows], redundancy)  # type: ignore[arg-type]
    if grow:
        Question.objects.filter(pk__in=grow, completed__gte=F("required"),
                                required__lt=redundancy["max"]).update(required=F("required") + 1)  # type: ignore[index]
    return grow


def answers_derive(*, campaign_id: int, question_ids: Iterable[int] | None = None,
                   cfg: Mapping[str, Any] | None = None, bump: bool = True, sql: bool = False) -> int:
    """What counts of the answers to these questions (all of the campaign's when None) changed: their
    labels recomputed, adaptive `required` re-evaluated, and (unless the caller's own answer inserts
    move it) the data revision bumped. Returns the number of labels written. `sql` (PostgreSQL, given
    questions): the labels by one statement (`labels_write_bulk`, the submit's rules with anti-joins
    for many questions), not the ORM's read and upsert (a bulk import's 300,000 questions)."""
    if cfg is None:
        cfg = annotation_settings(Campaign.objects.get(pk=campaign_id))
    ids = None if question_ids is None else sorted(set(question_ids))
    if sql and ids is not None:
        # The labels' one foreign key (their question) checked once for all, not per upserted row at COMMIT
        # (a million-answer import upserts ~333,000 labels: ~1.1 s of PostgreSQL CPU).
        with references_checked_in_bulk([(Question, ids, True)]):
            written = labels_write_bulk(campaign_id=campaign_id, question_ids=ids,
                                        exclude_blocked=cfg["exclude_flagged_answers"], now=timezone.now())
    else:
        written = labels_recompute(campaign_id=campaign_id, question_ids=ids,
                                   exclude_blocked=cfg["exclude_flagged_answers"])
    if is_adaptive(cfg["redundancy"]):
        if ids is None:
            ids = list(Question.objects.filter(campaign_id=campaign_id, is_gold=False).values_list("pk", flat=True))
        required_reevaluate(question_ids=ids, redundancy=cfg["redundancy"])
    if bump:
        revision_bump(campaign_ids=[campaign_id])
    return written


def submit_derive(*, campaign_id: int, question_ids: Sequence[int], cfg: Mapping[str, Any]) -> None:
    """The ORM engine's submit: labels of the answered questions, then adaptive `required` (the revision
    moves with the inserted answers: no shared row is written)."""
    labels_recompute(campaign_id=campaign_id, question_ids=question_ids, exclude_blocked=cfg["exclude_flagged_answers"])
    required_reevaluate(question_ids=question_ids, redundancy=cfg["redundancy"])


# Adaptive redundancy: one more answer wanted for the questions whose majority is not settled (the
# rows are locked by the submit's counters; the conditions repeat redundancy.required_next's).
SUBMIT_GROW = """
UPDATE annotation_question SET required = required + 1
WHERE id = ANY((SELECT %(questions)s::bigint[])::bigint[]) AND completed >= required AND required < %(max)s"""


def submit_derive_sql(*, campaign_id: int, question_ids: Sequence[int], cfg: Mapping[str, Any], now: datetime) -> None:
    """:func:`submit_derive` as prepared statements (the PostgreSQL engine): one for the labels (that
    also reads back the adaptive rule's input), +1 when some `required` grows."""
    if is_adaptive(cfg["redundancy"]):
        rows = labels_write_counts(campaign_id=campaign_id, question_ids=question_ids,
                                   exclude_blocked=cfg["exclude_flagged_answers"], now=now)
        grow = questions_to_grow(rows, cfg["redundancy"])
        if grow:
            prepared.run(SUBMIT_GROW, {"questions": grow, "max": cfg["redundancy"]["max"]})
    else:
        labels_write(campaign_id=campaign_id, question_ids=question_ids,
                     exclude_blocked=cfg["exclude_flagged_answers"], now=now or timezone.now())
