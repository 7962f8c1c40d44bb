"""Issue 24, leftovers of "Differencing": a withdrawal and a homogeneous release against the release
rule (docs/security.md, "Demographics release rule"), as a researcher would try them over HTTP.

- Within one release: the report's `annotators` section was computed from today's answers of the
  release's members, so a member's withdrawal moved one person from their group to `not reported`.
- Across releases: after one member withdrew, the next release's counts, compared with the last
  one's, told which group lost a member (five new women join, one man withdraws: `man` 5 -> 4).
- A release where everyone who answered is in one group (`woman` 10, `not reported` 5) named each
  answerer's gender."""
from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from annotation.demographics import NOT_REPORTED, OTHER, release_shrinks
from tests.builders.campaigns import make_annotator
from tests.builders.security import demographics_campaign

pytestmark = pytest.mark.django_db
REPORT = "report/?n_boot=0&n_perm=0"


def _join(campaign: Any, name: str, gender: str | None) -> APIClient:
    """An annotator who consents, answers the form (when `gender`) and submits one HIT."""
    _, client = make_annotator(name, campaign=campaign)
    if gender is not None:
        assert client.post(f"/api/campaigns/{campaign.pk}/demographics/", {
            "consent": True, "consent_version": "1", "answers": {"gender": gender}}, format="json").status_code == 200
    hit = client.post(f"/api/campaigns/{campaign.pk}/assignments/", format="json").json()
    answers = [{"question": q["id"], "choice": "Yes", "time_ms": 900} for q in hit["questions"]]
    assert client.post(f"/api/assignments/{hit['id']}/submit/", {"answers": answers}, format="json").status_code == 200
    return client


def _gender_counts(section: dict[str, Any]) -> dict[str, Any]:
    return {g: v["annotators"] for g, v in section["fields"].get("gender", {}).get("groups", {}).items()}


def test_a_withdrawal_after_a_release_does_not_move_anyone_in_the_report(researcher: User, api: APIClient) -> None:
    campaign = demographics_campaign(researcher)
    url = f"/api/campaigns/{campaign.pk}/"
    for i in range(6):
        _join(campaign, f"w{i}", "woman")
    men = [_join(campaign, f"m{i}", "man") for i in range(5)]
    assert api.post(url + "demographics/releases/").status_code == 201
    before = api.get(url + REPORT).json()["annotators"]
    assert _gender_counts(before) == {"woman": 6, "man": 5}
    summary_before = api.get(url + "demographics/").json()["groups"]
    # The researcher watches one man withdraw, then polls again.
    assert men[0].post("/api/annotators/me/demographics/withdraw/", format="json").status_code == 200
    after = api.get(url + REPORT).json()["annotators"]
    assert after["fields"] == {} and after["release"]["stale"] is True  # no group until the next release
    assert "man" not in str(after["fields"]) and NOT_REPORTED not in str(after["fields"])
    assert api.get(url + "demographics/").json()["groups"] == summary_before  # the release as released


def test_the_next_release_after_a_withdrawal_does_not_name_the_group_left(researcher: User, api: APIClient) -> None:
    campaign = demographics_campaign(researcher)
    url = f"/api/campaigns/{campaign.pk}/demographics/"
    for i in range(5):
        _join(campaign, f"w{i}", "woman")
    men = [_join(campaign, f"m{i}", "man") for i in range(5)]
    assert api.post(url + "releases/").status_code == 201
    assert men[0].post("/api/annotators/me/demographics/withdraw/", format="json").status_code == 200
    assert api.get(url).json()["next_release"]["needed"] == 6  # min_group, plus the one who withdrew
    for i in range(5):
        _join(campaign, f"late{i}", "woman")
    refused = api.post(url + "releases/")  # 5 new: not enough once the withdrawal counts
    assert refused.status_code == 409 and "release" in refused.json()["errors"]
    _join(campaign, "late5", "woman")
    # 6 new women: `woman` 5 -> 11 would say that the one who left was not a woman (a man): refused.
    refused = api.post(url + "releases/")
    assert refused.status_code == 409 and "gender" in str(refused.json()["errors"]["release"])
    _join(campaign, "late6", "man")  # a joiner who could have replaced them: either group could be the one left
    assert api.post(url + "releases/").status_code == 201
    groups = api.get(url).json()["groups"]["gender"]
    assert groups["woman"] == 11 and groups[OTHER] == 6 and "man" not in groups


def test_a_release_with_everyone_who_answered_in_one_group_does_not_name_it(researcher: User, api: APIClient) -> None:
    campaign = demographics_campaign(researcher)
    url = f"/api/campaigns/{campaign.pk}/demographics/"
    for i in range(10):
        _join(campaign, f"w{i}", "woman")
    for i in range(5):
        _join(campaign, f"n{i}", None)  # consented, answered nothing
    assert api.post(url + "releases/").status_code == 201
    gender = api.get(url).json()["groups"]["gender"]
    assert "woman" not in gender and gender == {OTHER: 10, NOT_REPORTED: 5}
    section = api.get(f"/api/campaigns/{campaign.pk}/{REPORT}").json()["annotators"]
    assert "woman" not in _gender_counts(section)


def test_the_shrink_rule_on_its_own() -> None:
    before = {"gender": {"woman": 5, "man": 5}}
    # one man withdrew (moved to not reported), six women joined: refused
    assert release_shrinks(before, {"gender": {"woman": 11, "man": 4, NOT_REPORTED: 1}}, 5, 1) == ["gender"]
    # and one man joined too: allowed
    assert release_shrinks(before, {"gender": {"woman": 11, "man": 5, NOT_REPORTED: 1}}, 5, 1) == []
    # nobody moved: joiners only ever grow the cells
    assert release_shrinks(before, {"gender": {"woman": 10, "man": 5}}, 5, 0) == []
