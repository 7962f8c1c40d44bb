"""A small PST campaign whose annotators reported demographics in many small groups: the shape that
makes the report's `annotators` section test many pairs (the request work budget's tests and
`bench/budget_calibrate.py`)."""
from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.utils import timezone

from annotation.demographics import default_section
from annotation.models import DemographicsResponse, Enrollment
from annotation.services.demographics import demographics_release_cut

from .metrics import SMALL_PST, annotators, answer_all, campaign_with_questions, stereotyped

GENDERS = ("woman", "man", "non_binary")
BANDS = ("18-24", "25-34", "35-44", "45-54", "55-64", "65+")


def grouped_campaign(owner: User, *, raters: int = 30, spec: dict[str, Any] | None = None,
                     name: str = "grouped") -> Any:
    """`raters` annotators (3 genders, 6 age bands, one country), each answering every question, and a
    demographics release cut (the `annotators` section reports on a release only; groups of >= 5)."""
    campaign, questions = campaign_with_questions(owner, {**(spec or SMALL_PST), "name": name})
    campaign.spec["annotation"]["demographics"] = default_section(ask=True)
    campaign.save(update_fields=["spec"])
    people = annotators(raters, f"{name}-{campaign.pk}-")
    now = timezone.now()
    for i, a in enumerate(people):
        Enrollment.objects.create(campaign=campaign, annotator=a, consented_at=now)
        DemographicsResponse.objects.create(annotator=a, campaign=campaign, consent_version="1", consented_at=now,
                                            answers={"gender": GENDERS[i % 3], "age_band": BANDS[i % 6],
                                                     "country": "NZ"})
    answer_all(campaign, questions, stereotyped, people)
    demographics_release_cut(campaign=campaign, reason="request")
    return campaign
