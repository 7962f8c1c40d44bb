"""Extraction of a campaign's stored labels into numpy arrays, with a fixed number of queries.

No per-answer model objects: `values_list` rows go straight into arrays. The number of queries
does not depend on the number of answers (a test asserts it): questions (1), answers (1), blocked
annotators (1), image counts (1).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from django.db.models import Count, Max, Q
from django.db.models.fields.json import KT

from annotation.models import Answer, Enrollment, Question
from campaigns.models import Campaign
from generation.models import Image

# Question metadata keys read per campaign kind (the contract of GET /api/campaigns/{id}/questions/).
PST_KEYS = ("identity", "group", "position", "sample_index")
GEP_KEYS = ("gender", "attribute", "context", "sample_index")


@dataclass
class CampaignData:
    """Arrays of one campaign. Question arrays are aligned (one entry per question); answer arrays
    are aligned (one entry per effective answer: latest correction, not gold, not excluded)."""

    campaign: Campaign
    q_id: np.ndarray
    q_image: np.ndarray
    q_setting: np.ndarray
    q_meta: dict[str, np.ndarray]
    a_question: np.ndarray
    a_annotator: np.ndarray
    a_choice: np.ndarray
    counts: dict[str, int] = field(default_factory=dict)

    def answers_of(self, question_mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Answers whose question is selected by a boolean mask over the question arrays."""
        keep = np.isin(self.a_question, self.q_id[question_mask])
        return self.a_question[keep], self.a_annotator[keep], self.a_choice[keep]


def _column(rows: list[tuple[Any, ...]], index: int, dtype: Any) -> np.ndarray:
    if not rows:
        return np.zeros(0, dtype=dtype)
    return np.fromiter((r[index] for r in rows), dtype=dtype, count=len(rows)) if dtype is not object \
        else np.array([r[index] for r in rows], dtype=object)


def campaign_data(campaign: Campaign, *, exclude_blocked: bool = True) -> CampaignData:
    """Load the questions and effective answers of a campaign.

    Left out (and counted in `counts`): gold questions and their answers, questions of images the
    researcher excluded, answers that a later correction replaced, and (when `exclude_blocked`)
    answers of annotators blocked in this campaign.
    """
    keys = PST_KEYS if campaign.kind == Campaign.Kind.PST else GEP_KEYS
    q_rows = list(
        Question.objects.filter(campaign=campaign, is_gold=False, image__excluded=False)
        .order_by("id")
        .values_list("id", "image_id", "setting", *(KT(f"metadata__{k}") for k in keys))
    )
    q_id = _column(q_rows, 0, np.int64)
    q_image = _column(q_rows, 1, np.int64)
    q_setting = _column(q_rows, 2, object)
    q_meta = {k: _column(q_rows, 3 + i, object) for i, k in enumerate(keys)}
    if "sample_index" in q_meta:
        q_meta["sample_index"] = np.array([int(v) if v not in (None, "") else -1 for v in q_meta["sample_index"]],
                                          dtype=np.int64)

    blocked: list[int] = []
    if exclude_blocked:
        blocked = list(Enrollment.objects.filter(campaign=campaign, status=Enrollment.Status.BLOCKED)
                       .values_list("annotator_id", flat=True))
    answers = Answer.objects.filter(campaign=campaign, corrected_by__isnull=True)
    a_rows = list(answers.filter(question__is_gold=False, question__image__excluded=False)
                  .exclude(annotator_id__in=blocked).values_list("question_id", "annotator_id", "choice"))
    a_question = _column(a_rows, 0, np.int64)
    a_annotator = _column(a_rows, 1, np.int64)
    a_choice = _column(a_rows, 2, object)

    counts = answers.aggregate(
        answers_total=Count("id"),
        answers_gold=Count("id", filter=Q(question__is_gold=True)),
        answers_excluded_images=Count("id", filter=Q(question__image__excluded=True, question__is_gold=False)),
        answers_blocked=Count("id", filter=Q(annotator_id__in=blocked, question__is_gold=False,
                                             question__image__excluded=False)),
    )
    image_counts = Image.objects.filter(campaign=campaign).aggregate(
        images=Count("id"), images_done=Count("id", filter=Q(status=Image.Status.DONE)),
        images_excluded=Count("id", filter=Q(excluded=True)),
        images_failed=Count("id", filter=Q(status=Image.Status.FAILED)),
        images_filtered=Count("id", filter=Q(status=Image.Status.FILTERED)),
    )
    counts.update(image_counts)
    counts.update({"questions": int(q_id.size), "answers": int(a_question.size), "annotators_blocked": len(blocked),
                   "annotators": int(np.unique(a_annotator).size)})
    return CampaignData(campaign, q_id, q_image, q_setting, q_meta, a_question, a_annotator, a_choice, counts)


def campaign_data_version(campaign: Campaign) -> str:
    """Changes whenever anything a report reads changes (answers, exclusions, annotator status)."""
    a = Answer.objects.filter(campaign=campaign).aggregate(n=Count("id"), last=Max("id"))
    i = Image.objects.filter(campaign=campaign).aggregate(ex=Count("id", filter=Q(excluded=True)),
                                                          upd=Max("updated_at"))
    e = Enrollment.objects.filter(campaign=campaign).aggregate(
        blocked=Count("id", filter=Q(status=Enrollment.Status.BLOCKED)), changed=Max("status_changed_at"))
    q = Question.objects.filter(campaign=campaign).aggregate(n=Count("id"), last=Max("id"))
    parts = [a["n"], a["last"], i["ex"], i["upd"], e["blocked"], e["changed"], q["n"], q["last"], campaign.updated_at]
    return "|".join(str(p) for p in parts)
