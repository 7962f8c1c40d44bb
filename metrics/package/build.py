"""What the replication package carries besides the answer, question and image tables, so that the
report can be recomputed from it alone (`metrics.package.read`): the manifest `package.json`, the
questions' choices and families, each answer's order of arrival in its question, the machine labels'
failures, the recorded human sample, the CLIPScores and (only under the publication rule below) the
annotators' demographics.

Pseudonyms: annotators are numbered `annotator_0001`, ... in the order of their account ids (the
blocked ones without answers too), a monotone map, so every computation that orders annotators (the
Dawid-Skene aggregation, the permutation tests over annotators) sees them in the same order as the
server and gives the same figures. No user id, name or crowd-platform id leaves the product.

Privacy (docs/security.md, "Replication package"): the package carries per-annotator demographics
(`data/annotators.parquet`, keyed by pseudonym) only when the campaign's spec says
`annotation.demographics.researcher_access: "individual"` and `publish: true`, and then only for the
annotators who answered the campaign's own form under its current consent version (whose text, for
such a campaign, says that the answers are published with the replication data) and did not
withdraw. Profile answers are never published. Without that table the report's `annotators` section
is left out of `report.json` and of a report recomputed from the package.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
from django.apps import apps
from django.db.models import TextField
from django.db.models.functions import Cast

from annotation.demographics import FIELDS, group_of
from annotation.models import DemographicsResponse, Question
from annotation.spec_section import annotation_settings

FORMAT = 2
ERROR_CHARS = 500


def annotator_numbers(answer_annotators: np.ndarray, blocked: np.ndarray) -> dict[int, int]:
    """account id -> pseudonym number (1, 2, ... in order of account id)."""
    ids = np.unique(np.concatenate([answer_annotators.astype(np.int64), blocked.astype(np.int64)]))
    return {int(i): n for n, i in enumerate(ids.tolist(), start=1)}


def pseudonym(number: int, width: int) -> str:
    return f"annotator_{number:0{width}d}"


def pseudonym_width(count: int) -> int:
    return max(4, len(str(count)))


def pseudonyms(annotators: np.ndarray, numbers: dict[int, int]) -> np.ndarray:
    """The pseudonym of each entry of `annotators` (account ids)."""
    width = pseudonym_width(len(numbers))
    if not numbers:
        return np.zeros(0, dtype=object)
    ids = np.fromiter(numbers, np.int64, len(numbers))
    order = np.argsort(ids)
    names = np.array([pseudonym(numbers[int(i)], width) for i in ids[order]], dtype=object)
    return names[np.searchsorted(ids[order], annotators)] if annotators.size else np.zeros(0, dtype=object)


def arrival(question: np.ndarray, answer_id: np.ndarray) -> np.ndarray:
    """1-based order of arrival of each answer among its question's stored answers (by answer id,
    the order the database assigned them: corrections and gold included)."""
    if question.size == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.lexsort((answer_id, question))
    q_sorted = question[order]
    start = np.r_[True, q_sorted[1:] != q_sorted[:-1]]
    first = np.maximum.accumulate(np.where(start, np.arange(q_sorted.size), 0))
    out = np.empty(question.size, dtype=np.int64)
    out[order] = np.arange(q_sorted.size) - first + 1
    return out


def question_extras(campaign: Any, question_ids: np.ndarray) -> dict[str, list[Any]]:
    """`family` and `choices` (a JSON list, in the question's order: the first is what a machine score
    is the probability of) of each question, aligned with `question_ids` (sorted)."""
    # The stored JSON as text (PostgreSQL's jsonb text form; never decoded here: a few distinct values).
    rows = {pk: (fam, ch or "[]") for pk, fam, ch in Question.objects.filter(campaign=campaign).order_by("id")
            .annotate(choices_text=Cast("choices", TextField()))
            .values_list("id", "family", "choices_text").iterator(chunk_size=20_000)}
    missing = ("", "[]")
    pairs = [rows.get(q, missing) for q in question_ids.tolist()]
    return {"family": [p[0] for p in pairs], "choices": [p[1] for p in pairs]}


def machine_tables(campaign: Any) -> dict[str, pa.Table]:
    """The autolabel app's failures, human sample and CLIPScores of the campaign (when that app is
    installed; metrics reads them through its models, as `metrics.extract.machine` does)."""
    if not apps.is_installed("autolabel"):
        return {}
    failure = apps.get_model("autolabel", "MachineLabelFailure")
    sample = apps.get_model("autolabel", "HumanSampleImage")
    clip = apps.get_model("autolabel", "ImageClipScore")
    out: dict[str, pa.Table] = {}
    rows = list(failure.objects.filter(campaign=campaign).order_by("question_id", "labeller")
                .values_list("question_id", "labeller", "error", "created_at"))
    out["machine_label_failures"] = pa.table({
        "question_id": pa.array([r[0] for r in rows], type=pa.int64()),
        "labeller": pa.array([r[1] for r in rows], type=pa.string()),
        "error": pa.array([(r[2] or "")[:ERROR_CHARS] for r in rows], type=pa.string()),
        "created_at": pa.array([r[3] for r in rows], type=pa.timestamp("us", tz="UTC"))})
    rows = list(sample.objects.filter(campaign=campaign).order_by("image_id").values_list("image_id", "stratum"))
    out["human_sample"] = pa.table({"image_id": pa.array([r[0] for r in rows], type=pa.int64()),
                                    "stratum": pa.array([r[1] for r in rows], type=pa.string())})
    rows = list(clip.objects.filter(campaign=campaign).order_by("image_id", "model")
                .values_list("image_id", "model", "revision", "score"))
    out["clip_scores"] = pa.table({"image_id": pa.array([r[0] for r in rows], type=pa.int64()),
                                   "model": pa.array([r[1] for r in rows], type=pa.string()),
                                   "revision": pa.array([r[2] for r in rows], type=pa.string()),
                                   "score": pa.array([r[3] for r in rows], type=pa.float64())})
    return out


def publication_allowed(campaign: Any) -> bool:
    cfg = annotation_settings(campaign)["demographics"]
    return cfg["researcher_access"] == "individual" and bool(cfg.get("publish"))


def demographics_table(campaign: Any, numbers: dict[int, int], used: dict[int, dict[str, Any]]
                       ) -> tuple[pa.Table | None, str]:
    """(`data/annotators.parquet` or None, what the manifest says: "none", "partial" or "all").
    `used` is what the report's `annotators` section read (annotator id -> answers); "all" when the
    table holds exactly that, so a report from the package has the same section."""
    if not publication_allowed(campaign):
        return None, "none"
    cfg = annotation_settings(campaign)["demographics"]
    rows = (DemographicsResponse.objects.filter(campaign=campaign, consent_version=cfg["consent_version"],
                                                consented_at__isnull=False, withdrawn_at__isnull=True)
            .order_by("annotator_id").values_list("annotator_id", "answers"))
    # The free-text gender is never published (it could name one person; it is never a group either).
    published = {int(a): {k: answers[k] for k in FIELDS if k in answers}
                 for a, answers in rows if answers and int(a) in numbers}
    if not published:
        return None, "none"
    width = pseudonym_width(len(numbers))
    table = pa.table({"annotator": pa.array([pseudonym(numbers[a], width) for a in published], type=pa.string()),
                      **{k: pa.array([published[a].get(k) for a in published], type=pa.string()) for k in FIELDS}})
    same = all(group_of(published.get(a), f) == group_of(used.get(a), f)
               for a in set(published) | {a for a in used if a in numbers} for f in FIELDS)
    return table, ("all" if same else "partial")


def manifest(campaign: Any, *, options: dict[str, Any], image_counts: dict[str, int], blocked: list[str],
             demographics: str, labellers: list[str], has_sample: bool) -> dict[str, Any]:
    """`package.json`: what `metrics.package.read` needs besides the tables."""
    return {
        "format": FORMAT,
        "campaign": {"id": campaign.pk, "name": campaign.name, "kind": campaign.kind,
                     "kind_display": campaign.get_kind_display(), "status": campaign.status,
                     "seed": int(campaign.seed)},
        "report_options": options,
        "image_counts": image_counts,
        "blocked_annotators": blocked,
        "demographics": demographics,
        "machine_labellers": labellers,
        "human_sample": has_sample,
        "tables": {"answers": "data/answers.parquet", "questions": "data/questions.parquet",
                   "images": "data/images.parquet"},
    }
