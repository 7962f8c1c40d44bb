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

import csv
import io
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.utils import timezone

from annotation.models import Assignment, Question
from annotation.services.answers import ImportedHit, answers_import, mturk_annotators_ensure, rows_insert
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


def _read_rows(data: bytes, keep: set[str] | None = None) -> tuple[list[str], list[dict[str, str]]]:
    """The header and the data rows as dicts. With `keep`, rows hold only those columns (plus the
    required ones): an export has ~90 columns, the import reads ~25, and 100,000 full rows would
    hold ~9M strings in memory."""
    try:
        data.decode("utf-8-sig")  # checked whole first, to name the byte; the copy is dropped at once
    except UnicodeDecodeError as exc:
        raise BatchImportError("The batch file is not UTF-8 text (MTurk exports UTF-8 CSV).",
                               errors={"file": [f"byte {exc.start}: not UTF-8"]}) from exc
    # Decoded as it is read: io.StringIO(text) would hold the whole file as 4-byte characters
    # (~750 MB for a 100,000-row export).
    reader = csv.reader(io.TextIOWrapper(io.BytesIO(data), encoding="utf-8-sig", newline=""))
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
    rows = []
    try:
        for values in reader:
            if not values:
                continue
            # MTurk's exports may leave trailing header columns (Approve, Reject) out of data rows.
            n = len(values)
            rows.append({c: values[i] for i, c in columns if i < n})
    except csv.Error as exc:
        raise BatchImportError(f"The batch file is not valid CSV near line {reader.line_num}: {exc}",
                               errors={f"row {reader.line_num}": [str(exc)]}) from exc
    return header, rows


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("true", "1", "on", "yes", "checked")


@dataclass
class _Lookup:
    """What the file's rows are checked against, read once for the whole file."""

    image_cols: list[str]
    choice_cols: dict[str, list[str]]
    question_cfg: Mapping[str, Any]
    images: dict[str, int]               # image URL -> image id
    duplicates_across: set[str]          # URLs registered in several of the campaigns
    questions: dict[tuple[int, str], tuple[int, int]]  # (image id, slot) -> (question id, campaign id)
    phrase_to_name: dict[str, str]
    seen_assignments: set[str]           # assignments imported before
    answered: dict[tuple[str, int], int] = field(default_factory=dict)  # (worker, question) -> row
    file_assignments: dict[str, int] = field(default_factory=dict)      # assignment -> row


def _lookup(campaigns: list[Campaign], cfg: Mapping[str, Any], header: list[str], rows: list[dict[str, str]],
            image_cols: list[str], choice_cols: dict[str, list[str]]) -> _Lookup:
    absent = sorted({c for c in image_cols + [c for cols in choice_cols.values() for c in cols] if c not in header})
    if absent:
        raise BatchImportError("The batch file lacks columns the mapping names.",
                               errors={"mapping": [f"column {c} not in the file" for c in absent[:20]]})
    urls = {row.get(col, "").strip() for row in rows for col in image_cols} - {""}
    campaign_ids = [c.pk for c in campaigns]
    images: dict[str, int] = {}
    duplicates_across: set[str] = set()
    for url, image_id in Image.objects.filter(campaign_id__in=campaign_ids, source_url__in=urls).values_list(
            "source_url", "id"):
        if url in images:
            duplicates_across.add(url)
        images[url] = image_id
    questions: dict[tuple[int, str], tuple[int, int]] = {}
    for qid, image_id, slot, cid in Question.objects.filter(
            campaign_id__in=campaign_ids, image_id__in=images.values()).values_list("id", "image_id", "slot",
                                                                                     "campaign_id"):
        questions[(image_id, slot)] = (qid, cid)
    phrase_to_name = {a["phrase"]: a["name"] for c in campaigns for a in c.spec.get("design", {}).get("attributes", [])}
    seen_assignments = set(MTurkAssignmentRecord.objects.filter(
        campaign_id__in=campaign_ids, mturk_assignment_id__in=[r.get("AssignmentId", "") for r in rows]
    ).values_list("mturk_assignment_id", flat=True))
    return _Lookup(image_cols, choice_cols, cfg["question"], images, duplicates_across, questions, phrase_to_name,
                   seen_assignments)


def _row_answers(row: dict[str, str], index: int, worker: str, slot_name: str, look: _Lookup,
                 bad: Any) -> list[tuple[int, str, int]]:
    """(question id, choice, campaign id) of each image slot of one row; problems go to `bad`."""
    answers = []
    for k, col in enumerate(look.image_cols):
        url = row.get(col, "").strip()
        if not url:
            continue  # a HIT with fewer images than slots
        chosen = [c for c, cols in look.choice_cols.items() if _truthy(row.get(cols[k]))]
        if len(chosen) != 1:
            bad(f"image {k} ({col}): {'both ' + ' and '.join(chosen) if chosen else 'no choice'} checked")
            continue
        image_id = look.images.get(url)
        if image_id is None:
            bad(f"{col}: unknown image URL {url}")
            continue
        if url in look.duplicates_across:
            bad(f"{col}: the image URL {url} is registered in several of the campaigns")
            continue
        found = look.questions.get((image_id, slot_name))
        if found is None:
            bad(f"{col}: the image has no question {slot_name!r} (is the campaign open for annotation?)")
            continue
        qid, cid = found
        if (worker, qid) in look.answered:
            bad(f"{col}: worker {worker} already answered this question (row {look.answered[(worker, qid)]})")
            continue
        look.answered[(worker, qid)] = index
        answers.append((qid, chosen[0], cid))
    return answers


def _row_plan(row: dict[str, str], index: int, look: _Lookup, bad: Any) -> dict[str, Any] | None:
    """One row's assignment and answers, or None (its problems reported through `bad`)."""
    assignment_id, worker, hit = row.get("AssignmentId", "").strip(), row.get("WorkerId", "").strip(), \
        row.get("HITId", "").strip()
    if not assignment_id or not worker:
        bad("AssignmentId and WorkerId are required")
        return None
    if not external_id_valid(worker):  # the id becomes a link account: the links' rule
        bad(f"WorkerId: {EXTERNAL_ID_RULE} (the crowd links' rule)")
        return None
    if assignment_id in look.file_assignments:
        bad(f"duplicate assignment {assignment_id} (also row {look.file_assignments[assignment_id]})")
        return None
    look.file_assignments[assignment_id] = index
    if assignment_id in look.seen_assignments:
        bad(f"assignment {assignment_id} was already imported")
        return None
    question_cfg = look.question_cfg
    if "slot" in question_cfg:
        slot_name = question_cfg["slot"]
    else:
        raw_slot = row.get(question_cfg["column"], "").strip()
        slot_name = look.phrase_to_name.get(raw_slot) if question_cfg["by"] == "attribute_phrase" else raw_slot
        if not slot_name:
            bad(f"{question_cfg['column']}: unknown attribute {raw_slot!r}")
            return None
    answers = _row_answers(row, index, worker, slot_name, look, bad)
    try:  # common.numbers: finite, bounded, a problem naming the column
        seconds = int(number(row.get("WorkTimeInSeconds") or 0, field="WorkTimeInSeconds", kind="float",
                             minimum=0, maximum=MAX_WORK_SECONDS))
        reward = number(row.get("Reward") or 0, field="Reward", kind="decimal", minimum=0,
                        maximum=MAX_REWARD_USD, places=2, currency=True)
    except BodyError as exc:
        bad(exc.message)
        return None
    return {"assignment": assignment_id, "hit": hit, "worker": worker, "status": row.get("AssignmentStatus", ""),
            "seconds": seconds, "answers": answers, "reward": reward}


def mturk_batch_import(*, campaigns: list[Campaign], data: bytes, mapping: Mapping[str, Any] | None = None,
                       dry_run: bool = False) -> BatchResult:
    """Validate the whole file, then write every answer in one transaction (or nothing).

    Several campaigns may share one file (the GEP paper's HITs mix DALL-E 2 and CogView2 images):
    each image URL is looked up in every given campaign and its answer goes to that campaign.
    """
    if not campaigns or len({c.kind for c in campaigns}) != 1:
        raise BatchImportError("Import into one or more campaigns of one kind.", errors={"campaigns": ["required"]})
    campaign = campaigns[0]
    cfg = _mapping(mapping, campaign)
    slots = cfg["slots"]
    image_cols = [template_fill(cfg["image_url"], k=k) for k in range(slots)]
    choice_cols = {choice: [template_fill(col, k=k) for k in range(slots)] for choice, col in cfg["choices"].items()}
    used = {*image_cols, *(c for cols in choice_cols.values() for c in cols), "WorkTimeInSeconds", "Reward"}
    if isinstance(cfg["question"], Mapping) and "column" in cfg["question"]:
        used.add(cfg["question"]["column"])
    header, rows = _read_rows(data, keep=used)
    look = _lookup(campaigns, cfg, header, rows, image_cols, choice_cols)
    skip_statuses = set(cfg.get("skip_statuses") or [])

    errors: dict[str, list[str]] = {}
    result = BatchResult(rows=len(rows))
    planned: list[dict[str, Any]] = []
    for index, row in enumerate(rows, start=2):  # row 1 is the header
        where = f"row {index}"

        def bad(msg: str, where: str = where) -> None:
            errors.setdefault(where, []).append(msg)

        status = row.get("AssignmentStatus", "")
        if status in skip_statuses:
            result.skipped_rows += 1
            result.skipped_by_status[status] = result.skipped_by_status.get(status, 0) + 1
            continue
        plan = _row_plan(row, index, look, bad)
        if plan is not None:
            planned.append(plan)
    if errors:
        shown = dict(list(errors.items())[:MAX_ERRORS_REPORTED])
        first_where, first_msgs = next(iter(errors.items()))
        raise BatchImportError(f"{len(errors)} rows have problems; nothing was imported. First: {first_where}: "
                               f"{first_msgs[0]}", errors=shown)
    result.assignments = len(planned)
    result.answers = sum(len(p["answers"]) for p in planned)
    result.workers = len({p["worker"] for p in planned})
    result.questions = len({a[0] for p in planned for a in p["answers"]})
    if not dry_run:
        _write(planned)
    return result




@transaction.atomic
def _write(planned: list[dict[str, Any]]) -> None:
    """Through annotation's write path (`annotation.services.answers.answers_import`: answers, leases,
    counters, labels, adaptive `required`, the data revision); crowd keeps only its own records."""
    annotators = mturk_annotators_ensure(worker_ids=[p["worker"] for p in planned])
    review = {"Approved": Assignment.Review.APPROVED, "Rejected": Assignment.Review.REJECTED}
    # One product assignment per (MTurk assignment, campaign it touches).
    keys: list[tuple[int, int]] = []  # (planned index, campaign id)
    hits: list[ImportedHit] = []
    for i, p in enumerate(planned):
        ms = int(p["seconds"] * 1000 / max(1, len(p["answers"])))
        for cid in sorted({a[2] for a in p["answers"]}):
            keys.append((i, cid))
            hits.append(ImportedHit(
                campaign_id=cid, annotator_id=annotators[p["worker"]],
                review=review.get(p["status"], Assignment.Review.PENDING).value, reward=p["reward"],
                external_hit_id=p["hit"], answers=[(qid, choice, ms) for qid, choice, c in p["answers"] if c == cid]))
    ids = answers_import(hits=hits, source="mturk-import")
    now = timezone.now()
    rows_insert(MTurkAssignmentRecord, ["campaign_id", "assignment_id", "mturk_assignment_id", "mturk_hit_id",
                                        "worker_id", "status", "source", "created_at"],
                ((cid, pk, planned[i]["assignment"], planned[i]["hit"], planned[i]["worker"], planned[i]["status"],
                  "batch-csv", now) for (i, cid), pk in zip(keys, ids, strict=True)))
