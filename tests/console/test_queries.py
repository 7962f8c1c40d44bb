"""Every console page renders with a bounded number of queries for a campaign of 2,400 images
and 14,400 answers (GEP explicit: 480 prompts x 5 samples, one question per image, 6 annotators),
bulk-built with the metrics builders. Counts, not timings."""
from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from annotation.models import AggregatedLabel, Enrollment
from campaigns.models import Campaign
from metrics.options import ReportOptions
from metrics.snapshots.report import report_get
from tests.builders.console import login
from tests.builders.metrics import annotators, answer_all, make_images, make_questions
from tests.conftest import GEP_MINIMAL

# Measured on PostgreSQL, session and user lookups included: list 5, campaign 11 (10 + fair pay's one
# query, annotation/pay.py), images 7 (examples: +1),
# annotators 22 (the annotation app's 5-query table, auto-approval, median times, ties and low
# agreement, qualifications, progress), report 9 (snapshot lookup and data version). None depends on
# the number of images, answers or annotators.
# campaign: 10 + fair pay's one query (annotation/pay.py) + the autolabel progress row (one query over
# AutolabelJob).
MAX_QUERIES = {"list": 6, "campaign": 13, "images": 8, "images_filtered": 8, "annotators": 23, "report": 10}


@pytest.fixture
def big(researcher: User) -> Campaign:
    from campaigns.services import campaign_create

    spec = {**GEP_MINIMAL, "name": "big-gep", "design": {"settings": ["explicit"]}}
    campaign = campaign_create(owner=researcher, spec=spec)
    images = make_images(campaign)
    questions = make_questions(campaign, images, required=6)
    raters = annotators(6)
    now = timezone.now()
    Enrollment.objects.bulk_create([Enrollment(campaign=campaign, annotator=a, consented_at=now) for a in raters])
    attributes = [a["name"] for a in campaign.spec["design"]["attributes"]]

    def label_of(q: Any) -> str:
        woman = q.metadata["gender"] == "woman"
        return "Yes" if woman == (attributes.index(q.metadata["attribute"]) % 2 == 0) else "No"

    answers = answer_all(campaign, questions, label_of, raters, dissent_every=4)
    AggregatedLabel.objects.bulk_create([
        AggregatedLabel(question=q, label=label_of(q) if i % 50 else "tie",
                        votes={"Yes": 3, "No": 3} if not i % 50 else {label_of(q): 5 if i % 4 == 0 else 6},
                        answers=6, tie=not i % 50)
        for i, q in enumerate(questions)], batch_size=2000)
    Campaign.objects.filter(pk=campaign.pk).update(status=Campaign.Status.OPEN)
    campaign.refresh_from_db()
    assert len(images) == 2400 and answers == 14_400
    return campaign


def test_pages_have_bounded_queries(big: Campaign, researcher: User, django_assert_max_num_queries: Any) -> None:
    client = login(researcher)
    client.get("/console/")  # session and user loaded once, as in any request
    base = f"/console/campaigns/{big.pk}/"
    state, report = report_get(campaign=big, options=ReportOptions(), allow_async=False)  # built once, here
    assert state == "ready" and report["counts"]["answers"] == 14_400
    pages = {"list": "/console/", "campaign": base, "images": base + "images/?page=3",
             "images_filtered": base + "images/?attribute=boots&gender=woman",
             "annotators": base + "annotators/", "report": base + "report/"}
    for name, url in pages.items():
        with django_assert_max_num_queries(MAX_QUERIES[name]):
            response = client.get(url)
        assert response.status_code == 200, name
    page = client.get(base + "images/?page=3").content.decode()
    assert page.count('<li class="tile') == 48 and "2400 images" in page
    filtered = client.get(base + "images/?attribute=boots&gender=woman").content.decode()
    assert "80 images" in filtered  # 16 contexts x 5 samples
    monitor = client.get(base + "annotators/").content.decode()
    assert monitor.count('id="annotator-') == 6 and "Ties (48)" in monitor
    assert "Low agreement (" in monitor
    assert "<svg" in client.get(base + "report/").content.decode()
