"""Issue 13.6, qualification retakes through HTTP: the attempt's answer never carries a score (no
key inference by flipping one answer per throw-away account), and attempts are limited per client
address (`annotation.qualification_attempts_per_address` within `qualification_address_hours`),
stored as an HMAC, never the raw address."""
from __future__ import annotations

from datetime import timedelta

import pytest

from annotation.models import QualificationAddressUse, Question
from generation.models import Image
from tests.builders.campaigns import make_annotator, make_campaign, make_images, open_campaign

pytestmark = pytest.mark.django_db


@pytest.fixture
def setup(researcher, api):
    campaign = make_campaign(researcher, settings=["explicit"], annotation={
        "hit_size": 5, "qualification_attempts_per_address": 3, "qualification_address_hours": 12})
    make_images(campaign, "explicit", 10)
    open_campaign(campaign)
    family = Question.objects.filter(campaign=campaign).values_list("family", flat=True).order_by("pk").first()
    images = list(Image.objects.filter(campaign=campaign).values_list("pk", flat=True)[:4])
    response = api.post(f"/api/campaigns/{campaign.pk}/qualifications/", {
        "family": family, "items": [{"image": i, "correct": "Yes"} for i in images],
        "retake_after_minutes": 0, "max_attempts": 5}, format="json")
    assert response.status_code == 201, response.content
    return campaign, f"/api/qualifications/{response.json()['id']}/attempts/"


def test_a_failed_attempt_reports_no_score(setup):
    campaign, url = setup
    _, client = make_annotator("flip", campaign=campaign)
    # One answer flipped per attempt: the reply must not say which attempt had more right.
    replies = [client.post(url, {"answers": ["Yes"] * i + ["No"] * (4 - i)}, format="json", REMOTE_ADDR=f"10.0.0.{i}")
               for i in range(3)]
    for reply in replies:
        assert reply.status_code == 201, reply.content
        assert set(reply.json()) == {"passed", "total", "retake_at", "attempts_left"}
        assert reply.json()["passed"] is False and reply.json()["total"] == 4
    shapes = {(r.json()["passed"], r.json()["total"]) for r in replies}
    assert shapes == {(False, 4)}  # 0, 1 and 2 of 4 right: the same answer each time


def test_attempts_are_limited_per_address(setup):
    campaign, url = setup
    clients = [make_annotator(f"throw{i}", campaign=campaign)[1] for i in range(5)]
    for client in clients[:3]:
        assert client.post(url, {"answers": ["No"] * 4}, format="json", REMOTE_ADDR="203.0.113.7").status_code == 201
    refused = clients[3].post(url, {"answers": ["Yes"] * 4}, format="json", REMOTE_ADDR="203.0.113.7")
    assert refused.status_code == 429 and "address" in refused.json()["errors"], refused.content
    # Another address is not affected; the raw address is not stored.
    assert clients[3].post(url, {"answers": ["Yes"] * 4}, format="json", REMOTE_ADDR="198.51.100.2").status_code == 201
    uses = list(QualificationAddressUse.objects.values_list("address_hmac", flat=True))
    assert len(uses) == 4 and not any("203.0.113.7" in u or "198.51" in u for u in uses)
    assert all(len(u) == 64 for u in uses)
    # The window passes: the address may try again.
    QualificationAddressUse.objects.update(created_at=QualificationAddressUse.objects.first().created_at
                                           - timedelta(hours=13))
    assert clients[4].post(url, {"answers": ["Yes"] * 4}, format="json", REMOTE_ADDR="203.0.113.7").status_code == 201


def test_bad_address_settings_are_a_400_naming_the_field(api):
    from tests.conftest import GEP_MINIMAL

    spec = {**GEP_MINIMAL, "annotation": {"qualification_attempts_per_address": 0,
                                          "qualification_address_hours": "a day"}}
    response = api.post("/api/campaigns/", spec, format="json")
    assert response.status_code == 400
    assert {"annotation.qualification_attempts_per_address", "annotation.qualification_address_hours"} <= set(
        response.json()["errors"])
