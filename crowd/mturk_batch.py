"""Import of the batch-results CSV that MTurk's requester site exports.

Columns: `HITId`, `WorkerId`, `AssignmentId`, `AssignmentStatus`, `WorkTimeInSeconds`, `Input.*`,
`Answer.*`. Which `Input.*` column holds the image and which `Answer.*` columns hold each choice
is a *mapping* (the default is the GEP paper's 10-image HITs: `Input.image_url{k}` with
`Answer.Yes{k}.1` / `Answer.No{k}.0`, and `Input.attribute` naming the attribute by its prompt
phrase). Images are found by the URL they were registered with (`Image.source_url`).

Every row is validated before anything is written; problems are reported row by row (unknown
image, both or neither choice, duplicate assignment, unknown attribute, a worker answering the same
question twice) and nothing is imported while there is one. Rows whose `AssignmentStatus` is in
`skip_statuses` (default: `Rejected`) are skipped and counted: a rejected assignment's answers
were not accepted by the requester.
"""
from __future__ import annotations

import codecs
import csv
import io
from array import array
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import numpy as np
from django.db import transaction
from django.utils import timezone

from annotation.models import Assignment, Question
from annotation.services.answers import (
    ImportedAnswers,
    ImportedHit,
    answers_import,
    mturk_annotators_ensure,
    rows_insert,
)
from annotation.services.staged import references_checked_in_bulk
from campaigns.models import Campaign
from campaigns.spec import GEP
from common.accounts import EXTERNAL_ID_RULE, external_id_valid
from common.errors import ApplicationError
from common.inputs import BodyError
from common.numbers import number
from common.templates import template_fill, template_problem
from generation.models import Image

from .models import MTurkAssignmentRecord

REQUIRED_COLUMNS = ("HITId", "WorkerId", "AssignmentId", "AssignmentStatus")
MAX_ERRORS_REPORTED = 200
MAX_WORK_SECONDS = 365 * 24 * 3600  # MTurk's longest assignment duration
MAX_REWARD_USD = 10_000  # per assignment (the stored amount has 8 digits, 2 decimals)

GEP_PAPER_MAPPING: dict[str, Any] = {
    "slots": 10,
    "image_url": "Input.image_url{k}",
    "choices": {"Yes": "Answer.Yes{k}.1", "No": "Answer.No{k}.0"},
    "question": {"column": "Input.attribute", "by": "attribute_phrase"},
    "skip_statuses": ["Rejected"],
}
PST_SINGLE_MAPPING: dict[str, Any] = {
    "slots": 1,
    "image_url": "Input.image_url",
    "choices": {"Feminine": "Answer.feminine.on", "Masculine": "Answer.masculine.on",
                "Cannot identify": "Answer.cannot.on"},
    "question": {"slot": "single"},
    "skip_statuses": ["Rejected"],
}


class BatchImportError(ApplicationError):
    """The file has problems; `errors` maps "row N" (1-based data row, header = row 1) to messages."""


@dataclass
class BatchResult:
    rows: int = 0
    assignments: int = 0
    answers: int = 0
    skipped_rows: int = 0
    skipped_by_status: dict[str, int] = field(default_factory=dict)
    workers: int = 0
    questions: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {"rows": self.rows, "assignments": self.assignments, "answers": self.answers,
                "skipped_rows": self.skipped_rows, "skipped_by_status": self.skipped_by_status,
                "workers": self.workers, "questions": self.questions}


def _mapping(raw: Mapping[str, Any] | None, campaign: Campaign) -> dict[str, Any]:
    if raw is None:
        return dict(GEP_PAPER_MAPPING if campaign.kind == GEP else PST_SINGLE_MAPPING)
    errors: dict[str, list[str]] = {}
    out = {**(GEP_PAPER_MAPPING if campaign.kind == GEP else PST_SINGLE_MAPPING), **raw}
    if not isinstance(out.get("slots"), int) or not 1 <= out["slots"] <= 100:
        errors["mapping.slots"] = ["must be an integer between 1 and 100"]
    # common.templates: column names with {k} only, no format spec ({k:>100000000}), at most 200 characters.
    if not isinstance(out.get("image_url"), str) or len(out["image_url"]) > 200 or \
            template_problem(out["image_url"], ("k",)):
        errors["mapping.image_url"] = ["must be a column name (with {k} for several images per HIT)"]
    if not isinstance(out.get("choices"), Mapping) or not out["choices"] or len(out["choices"]) > 20 or any(
            not isinstance(c, str) or len(c) > 200 or template_problem(c, ("k",)) for c in out["choices"].values()):
        errors["mapping.choices"] = ["must map each choice to its Answer.* column (with {k} for several images)"]
    question = out.get("question")
    if not isinstance(question, Mapping) or not ({"slot"} <= set(question) or {"column", "by"} <= set(question)):
        errors["mapping.question"] = ['must be {"slot": "..."} or {"column": "Input.x", "by": "attribute_phrase|slot"}']
    if errors:
        raise BatchImportError("Invalid MTurk batch mapping.", errors=errors)
    return out


def _stream(data: bytes | BinaryIO) -> BinaryIO:
    """The file as a binary stream (an upload is read from its temporary file, never whole: issue 24),
    checked to be UTF-8 first, in chunks, to name the first bad byte."""
    stream: BinaryIO = io.BytesIO(data) if isinstance(data, bytes | bytearray) else data
    stream.seek(0)
    decoder = codecs.getincrementaldecoder("utf-8")()
    offset = 0
    while chunk := stream.read(1 << 20):
        try:
            decoder.decode(chunk)
        except UnicodeDecodeError as exc:
            raise BatchImportError("The batch file is not UTF-8 text (MTurk exports UTF-8 CSV).",
                                   errors={"file": [f"byte {offset + exc.start}: not UTF-8"]}) from exc
        offset += len(chunk)
    try:
        decoder.decode(b"", final=True)
    except UnicodeDecodeError as exc:
        raise BatchImportError("The batch file is not UTF-8 text (MTurk exports UTF-8 CSV).",
                               errors={"file": [f"byte {offset + exc.start}: not UTF-8"]}) from exc
    stream.seek(0)
    return stream


def _read_rows(data: bytes | BinaryIO, keep: set[str] | None = None
               ) -> tuple[list[str], Iterator[tuple[int, dict[str, str]]]]:
    """The header and the data rows as (row number, dict), read as they are needed. With `keep`, rows
    hold only those columns (plus the required ones): an export has ~90 columns, the import reads ~25."""
    # Decoded as it is read: the whole file as a str would be up to four times its bytes.
    reader = csv.reader(io.TextIOWrapper(_stream(data), encoding="utf-8-sig", newline=""))
    try:
        header = next(reader)
    except StopIteration as exc:
        raise BatchImportError("The batch file is empty.", errors={"file": ["no header row"]}) from exc
    except csv.Error as exc:
        raise BatchImportError(f"The batch file is not valid CSV: {exc}", errors={"file": [str(exc)]}) from exc
    missing = [c for c in REQUIRED_COLUMNS if c not in header]
    if missing:
        raise BatchImportError(f"The batch file lacks the columns {', '.join(missing)}.",
                               errors={"file": [f"missing column {c}" for c in missing]})
    columns = list(enumerate(header)) if keep is None else [
        (i, c) for i, c in enumerate(header) if c in keep or c in REQUIRED_COLUMNS]

    def rows() -> Iterator[tuple[int, dict[str, str]]]:
        index = 1  # row 1 is the header
        try:
            for values in reader:
                if not values:
                    continue
                index += 1
                # MTurk's exports may leave trailing header columns (Approve, Reject) out of data rows.
                n = len(values)
                yield index, {c: values[i] for i, c in columns if i < n}
        except csv.Error as exc:
            raise BatchImportError(f"The batch file is not valid CSV near line {reader.line_num}: {exc}",
                                   errors={f"row {reader.line_num}": [str(exc)]}) from exc

    return header, rows()


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("true", "1", "on", "yes", "checked")


def _codes(values: dict[str, int], value: str) -> int:
    """A small integer standing for `value` (the first one seen gets 0)."""
    code = values.get(value)
    if code is None:
        code = values[value] = len(values)
    return code


def _checked(row: dict[str, str], checkboxes: list[str], flags: dict[str | None, bool]) -> list[int]:
    """The indexes of the checked boxes among `checkboxes` (one image's choices). `flags` remembers the
    truth of the spellings seen, at most 64 (an export uses a few: "true", "", "false")."""
    chosen = []
    for i, box in enumerate(checkboxes):
        value = row.get(box)
        flag = flags.get(value)
        if flag is None:
            flag = _truthy(value)
            if len(flags) < 64:
                flags[value] = flag
        if flag:
            chosen.append(i)
    return chosen


@dataclass
class _Parsed:
    """What the pass over the file keeps: one entry per accepted row (`planned`), and its answers as
    integer columns (row, planned index, image URL, slot, choice), not a tuple per answer."""

    planned: list[dict[str, Any]] = field(default_factory=list)
    urls: dict[str, int] = field(default_factory=dict)
    slots: dict[str, int] = field(default_factory=dict)
    workers: dict[str, int] = field(default_factory=dict)
    columns: dict[str, array[int]] = field(default_factory=lambda: {
        k: array("q") for k in ("row", "plan", "url", "slot", "choice", "k")})


def _parse_rows(rows: Iterator[tuple[int, dict[str, str]]], ctx: dict[str, Any], errors: dict[int, list[str]],
                result: BatchResult) -> tuple[_Parsed, dict[str, int]]:
    """The pass over the file: each row's own checks (status, ids, attribute, numbers, one choice per
    image); its answers go to integer columns, to be checked against the database all at once."""
    image_cols, choice_cols, choices = ctx["image_cols"], ctx["choice_cols"], ctx["choices"]
    question_cfg, skip_statuses, phrase_to_name = ctx["question"], ctx["skip"], ctx["phrases"]
    parsed = _Parsed()
    cols = parsed.columns
    # Per image slot: its column and its choices' checkbox columns; the columns' appends bound once; the
    # checkbox spellings' truth memoised (100k rows x 10 images x 2 choices: ~30% of the pass).
    per_image = [(k, col, [choice_cols[c][k] for c in choices]) for k, col in enumerate(image_cols)]
    add_row, add_plan, add_url, add_slot, add_choice, add_k = (
        cols[name].append for name in ("row", "plan", "url", "slot", "choice", "k"))
    flags: dict[str | None, bool] = {}
    file_assignments: dict[str, int] = {}
    for index, row in rows:
        result.rows += 1

        def bad(msg: str, where: int = index) -> None:
            errors.setdefault(where, []).append(msg)

        status = row.get("AssignmentStatus", "")
        if status in skip_statuses:
            result.skipped_rows += 1
            result.skipped_by_status[status] = result.skipped_by_status.get(status, 0) + 1
            continue
        assignment_id, worker, hit = row.get("AssignmentId", "").strip(), row.get("WorkerId", "").strip(), \
            row.get("HITId", "").strip()
        if not assignment_id or not worker:
            bad("AssignmentId and WorkerId are required")
            continue
        if not external_id_valid(worker):  # the id becomes a link account: the links' rule
            bad(f"WorkerId: {EXTERNAL_ID_RULE} (the crowd links' rule)")
            continue
        if assignment_id in file_assignments:
            bad(f"duplicate assignment {assignment_id} (also row {file_assignments[assignment_id]})")
            continue
        file_assignments[assignment_id] = index
        if "slot" in question_cfg:
            slot_name = question_cfg["slot"]
        else:
            raw_slot = row.get(question_cfg["column"], "").strip()
            slot_name = phrase_to_name.get(raw_slot) if question_cfg["by"] == "attribute_phrase" else raw_slot
            if not slot_name:
                bad(f"{question_cfg['column']}: unknown attribute {raw_slot!r}")
                continue
        try:  # common.numbers: finite, bounded, a problem naming the column
            seconds = int(number(row.get("WorkTimeInSeconds") or 0, field="WorkTimeInSeconds", kind="float",
                                 minimum=0, maximum=MAX_WORK_SECONDS))
            reward = number(row.get("Reward") or 0, field="Reward", kind="decimal", minimum=0,
                            maximum=MAX_REWARD_USD, places=2, currency=True)
        except BodyError as exc:
            bad(exc.message)
            continue
        plan = len(parsed.planned)
        slot = _codes(parsed.slots, slot_name)
        for k, col, checkboxes in per_image:
            url = row.get(col, "").strip()
            if not url:
                continue  # a HIT with fewer images than slots
            chosen = _checked(row, checkboxes, flags)
            if len(chosen) != 1:
                names = [choices[i] for i in chosen]
                bad(f"image {k} ({col}): {'both ' + ' and '.join(names) if names else 'no choice'} checked")
                continue
            add_row(index)
            add_plan(plan)
            add_url(_codes(parsed.urls, url))
            add_slot(slot)
            add_choice(chosen[0])
            add_k(k)
        parsed.planned.append({"assignment": assignment_id, "hit": hit, "worker": _codes(parsed.workers, worker),
                               "status": status, "seconds": seconds, "reward": reward, "row": index})
    return parsed, file_assignments


def mturk_batch_import(*, campaigns: list[Campaign], data: bytes | BinaryIO, mapping: Mapping[str, Any] | None = None,
                       dry_run: bool = False) -> BatchResult:
    """Validate the whole file, then write every answer in one transaction (or nothing).

    `data` is the file's bytes or a binary file object (an upload's temporary file: read in a pass,
    never held whole). Several campaigns may share one file (the GEP paper's HITs mix DALL-E 2 and
    CogView2 images): each image URL is looked up in every given campaign and its answer goes to that
    campaign. Rows are read once; their answers are kept as integer columns and checked against the
    images and questions with numpy (a million answers: ~20 MB, not a tuple each).
    """
    if not campaigns or len({c.kind for c in campaigns}) != 1:
        raise BatchImportError("Import into one or more campaigns of one kind.", errors={"campaigns": ["required"]})
    campaign = campaigns[0]
    cfg = _mapping(mapping, campaign)
    slots = cfg["slots"]
    image_cols = [template_fill(cfg["image_url"], k=k) for k in range(slots)]
    choice_cols = {choice: [template_fill(col, k=k) for k in range(slots)] for choice, col in cfg["choices"].items()}
    choices = list(choice_cols)
    used = {*image_cols, *(c for cols in choice_cols.values() for c in cols), "WorkTimeInSeconds", "Reward"}
    if isinstance(cfg["question"], Mapping) and "column" in cfg["question"]:
        used.add(cfg["question"]["column"])
    header, rows = _read_rows(data, keep=used)
    absent = sorted({c for c in image_cols + [c for cols in choice_cols.values() for c in cols] if c not in header})
    if absent:
        raise BatchImportError("The batch file lacks columns the mapping names.",
                               errors={"mapping": [f"column {c} not in the file" for c in absent[:20]]})
    campaign_ids = [c.pk for c in campaigns]
    errors: dict[int, list[str]] = {}
    result = BatchResult()
    ctx = {"image_cols": image_cols, "choice_cols": choice_cols, "choices": choices, "question": cfg["question"],
           "skip": set(cfg.get("skip_statuses") or []),
           "phrases": {a["phrase"]: a["name"] for c in campaigns for a in c.spec.get("design", {}).get("attributes", [])}}
    parsed, file_assignments = _parse_rows(rows, ctx, errors, result)
    seen = set(MTurkAssignmentRecord.objects.filter(
        campaign_id__in=campaign_ids, mturk_assignment_id__in=list(file_assignments)
    ).values_list("mturk_assignment_id", flat=True))
    for p in parsed.planned:
        if p["assignment"] in seen:
            errors.setdefault(p["row"], []).insert(0, f"assignment {p['assignment']} was already imported")
    answers = _resolve(parsed, campaign_ids, image_cols, errors)
    if errors:
        shown = {f"row {r}": errors[r] for r in sorted(errors)[:MAX_ERRORS_REPORTED]}
        first_where, first_msgs = next(iter(shown.items()))
        raise BatchImportError(f"{len(errors)} rows have problems; nothing was imported. First: {first_where}: "
                               f"{first_msgs[0]}", errors=shown)
    result.assignments = len(parsed.planned)
    result.answers = len(answers["question"])
    result.workers = len({p["worker"] for p in parsed.planned})
    result.questions = len(np.unique(answers["question"]))
    if not dry_run:
        _write(parsed, answers, choices)
    return result


def _resolve(parsed: _Parsed, campaign_ids: list[int], image_cols: list[str],
             errors: dict[int, list[str]]) -> dict[str, np.ndarray]:
    """Each answer's image, question and campaign (numpy lookups against two queries); problems go
    to `errors` by row: an unknown image, an image in several campaigns, a question that does not
    exist, a worker answering the same question twice."""
    c = {k: np.frombuffer(v, dtype=np.int64) if len(v) else np.zeros(0, dtype=np.int64)
         for k, v in parsed.columns.items()}
    urls = list(parsed.urls)
    image_of = np.full(len(urls), -1, dtype=np.int64)
    several = np.zeros(len(urls), dtype=bool)
    url_code = parsed.urls
    for url, image_id in Image.objects.filter(campaign_id__in=campaign_ids, source_url__in=urls).values_list(
            "source_url", "id").iterator(chunk_size=10_000):
        i = url_code[url]
        several[i] |= image_of[i] >= 0
        image_of[i] = image_id
    slot_names = list(parsed.slots)
    found = np.fromiter((v for row in Question.objects.filter(
        campaign_id__in=campaign_ids, image_id__in=image_of[image_of >= 0].tolist(), slot__in=slot_names
    ).values_list("image_id", "slot", "id", "campaign_id").iterator(chunk_size=20_000)
        for v in (row[0] * len(slot_names) + parsed.slots[row[1]], row[2], row[3])), dtype=np.int64).reshape(-1, 3)
    order = np.argsort(found[:, 0], kind="stable")
    keys, qids, cids = found[order, 0], found[order, 1], found[order, 2]
    image = image_of[c["url"]]
    key = image * len(slot_names) + c["slot"]
    at = np.minimum(np.searchsorted(keys, key), max(0, len(keys) - 1))
    has_q = keys[at] == key if len(keys) else np.zeros(len(key), dtype=bool)
    ok = (image >= 0) & ~several[c["url"]] & has_q
    question = np.where(ok, qids[at] if len(keys) else -1, -1)
    worker = np.fromiter((p["worker"] for p in parsed.planned), dtype=np.int64, count=len(parsed.planned))
    pair = worker[c["plan"]] * (question.max(initial=0).item() + 1) + question
    first = np.zeros(len(pair), dtype=bool)
    _, firsts = np.unique(np.where(ok, pair, -1 - np.arange(len(pair))), return_index=True)
    first[firsts] = True
    twice = ok & ~first
    bad = np.flatnonzero(~ok | twice)
    if len(bad):
        pair_first, worker_ids = {}, list(parsed.workers)
        pairs, rows = pair.tolist(), c["row"].tolist()
        for i in np.flatnonzero(ok & first).tolist():
            pair_first[pairs[i]] = rows[i]
        for i in bad.tolist():
            col = image_cols[c["k"][i]]
            url = urls[c["url"][i]]
            if image[i] < 0:
                msg = f"{col}: unknown image URL {url}"
            elif several[c["url"][i]]:
                msg = f"{col}: the image URL {url} is registered in several of the campaigns"
            elif not ok[i]:
                msg = f"{col}: the image has no question {slot_names[c['slot'][i]]!r} (is the campaign open for annotation?)"
            else:
                worker_id = worker_ids[worker[c["plan"][i]]]
                msg = f"{col}: worker {worker_id} already answered this question (row {pair_first[pairs[i]]})"
            errors.setdefault(rows[i], []).append(msg)
    return {"plan": c["plan"], "question": question, "campaign": np.where(ok, cids[at] if len(keys) else -1, -1),
            "choice": c["choice"]}


@transaction.atomic
def _write(parsed: _Parsed, answers: dict[str, np.ndarray], choices: list[str]) -> None:
    """Through annotation's write path (`annotation.services.answers.answers_import`: answers, leases,
    counters, labels, adaptive `required`, the data revision); crowd keeps only its own records."""
    planned = parsed.planned
    workers = list(parsed.workers)
    annotators = mturk_annotators_ensure(worker_ids=[workers[p["worker"]] for p in planned])
    review = {"Approved": Assignment.Review.APPROVED, "Rejected": Assignment.Review.REJECTED}
    # One product assignment per (MTurk assignment, campaign it touches), in file order then campaign.
    plan, campaign = answers["plan"], answers["campaign"]
    order = np.lexsort((campaign, plan))  # stable: each HIT's answers keep their order
    hit_key, hit_of = np.unique(np.stack([plan[order], campaign[order]], axis=1), axis=0, return_inverse=True)
    per_plan = np.bincount(plan, minlength=len(planned))
    # A HIT's work time shared evenly by its answers (whole milliseconds).
    seconds = np.fromiter((p["seconds"] for p in planned), dtype=np.int64, count=len(planned))
    ms = seconds * 1000 // np.maximum(1, per_plan)
    hits = []
    for i, cid in hit_key.tolist():
        p = planned[i]
        hits.append(ImportedHit(campaign_id=cid, annotator_id=annotators[workers[p["worker"]]],
                                review=review.get(p["status"], Assignment.Review.PENDING).value, reward=p["reward"],
                                external_hit_id=p["hit"]))
    columns = ImportedAnswers(hit=hit_of.reshape(-1), question=answers["question"][order],
                              choice=answers["choice"][order], choices=choices, time_ms=ms[plan[order]])
    ids = answers_import(hits=hits, source="mturk-import", answers=columns)
    now = timezone.now()
    # The records' foreign keys checked in bulk: their campaigns (locked by the Assignments' check above,
    # locked again here: cheap) and the Assignments this transaction has just inserted (no lock needed).
    with references_checked_in_bulk([(Campaign, set(hit_key[:, 1].tolist()), True), (Assignment, ids, False)]):
        rows_insert(MTurkAssignmentRecord, ["campaign_id", "assignment_id", "mturk_assignment_id", "mturk_hit_id",
                                            "worker_id", "status", "source", "created_at"],
                    ((cid, pk, planned[i]["assignment"], planned[i]["hit"], workers[planned[i]["worker"]],
                      planned[i]["status"], "batch-csv", now)
                     for (i, cid), pk in zip(hit_key.tolist(), ids, strict=True)))
