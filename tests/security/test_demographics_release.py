"""Issue 24: the demographics release rule (docs/security.md, "Demographics release rule") against the
differencing attacks of the probe, through the API: polling before and after one annotator joins,
the suppressed `other` computed from the total, `min_group=2`, and the report's `annotators`
section keyed by its release."""
from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from annotation.demographics import merge_small_groups
from campaigns.models import Campaign
from tests.builders.campaigns import make_annotator
from tests.builders.security import ASK, demographics_campaign

pytestmark = pytest.mark.django_db



def _join(campaign: Campaign, name: str, gender: str | None, country: str = "NZ") -> None:
    _, client = make_annotator(name, campaign=campaign)
    if gender is not None:
        reply = client.post(f"/api/campaigns/{campaign.pk}/demographics/", {
            "consent": True, "consent_version": "1", "answers": {"gender": gender, "country": country}}, format="json")
        assert reply.status_code == 200, reply.json()
    hit = client.post(f"/api/campaigns/{campaign.pk}/assignments/", format="json").json()
    answers = [{"question": q["id"], "choice": "Yes", "time_ms": 900} for q in hit["questions"]]
    assert client.post(f"/api/assignments/{hit['id']}/submit/", {"answers": answers}, format="json").status_code == 200


def _cells(summary: dict[str, Any]) -> list[Any]:
    return [n for groups in summary["groups"].values() for n in groups.values()]


def test_polling_before_and_after_one_annotator_joins_reveals_nothing(researcher: User, api: APIClient) -> None:
    campaign = demographics_campaign(researcher)
    url = f"/api/campaigns/{campaign.pk}/demographics/"
    for i in range(6):
        _join(campaign, f"w{i}", "woman")
    for i in range(5):
        _join(campaign, f"m{i}", "man")
    # No release yet: nothing, however often it is polled.
    assert api.get(url).json()["groups"] == {} and api.get(url).json()["release"] is None
    assert api.post(url + "releases/").status_code == 201
    before = api.get(url).json()
    report_before = api.get(f"/api/campaigns/{campaign.pk}/report/?n_boot=0&n_perm=0").json()["annotators"]
    _join(campaign, "target", "non_binary", country="IS")  # the one person the researcher watches
    after = api.get(url).json()
    assert after["groups"] == before["groups"] and after["release"] == before["release"]
    assert after["next_release"]["new_annotators"] == 1
    report_after = api.get(f"/api/campaigns/{campaign.pk}/report/?n_boot=0&n_perm=0").json()["annotators"]
    assert report_after["release"] == report_before["release"] and report_after["fields"] == report_before["fields"]
    # A new release needs the campaign's min_group (5) new annotators: one is refused, nothing cut.
    refused = api.post(url + "releases/")
    assert refused.status_code == 409 and "release" in refused.json()["errors"]
    for i in range(4):
        _join(campaign, f"late{i}", "woman")
    assert api.post(url + "releases/").status_code == 201
    assert api.get(url).json()["release"]["number"] == 2
    releases = api.get(url + "releases/").json()["releases"]
    assert [r["number"] for r in releases] == [1, 2] and releases[1]["annotators"] - releases[0]["annotators"] == 5


def test_no_cell_follows_from_the_others_and_the_total(researcher: User, api: APIClient) -> None:
    campaign = demographics_campaign(researcher)
    for i in range(6):
        _join(campaign, f"w{i}", "woman")
    for i in range(5):
        _join(campaign, f"m{i}", "man")
    _join(campaign, "nb", "non_binary")
    _join(campaign, "quiet", None)
    url = f"/api/campaigns/{campaign.pk}/demographics/"
    api.post(url + "releases/")
    summary = api.get(url).json()
    # The probe: other = total - woman - man gave the suppressed 2. Now every cell is at least 5, and
    # the small ones travel with a complementary group, so no cell can be solved for.
    assert summary["groups"]["gender"] == {"woman": 6, "other": 7}
    assert all(n is None or n >= 5 for n in _cells(summary))
    for groups in summary["groups"].values():
        assert None not in groups.values() or set(groups) == {"other"}
        assert sum(n for n in groups.values() if n is not None) in (0, summary["annotators"])
    # The rule on its own: whatever the sizes, every reported cell is 0 or >= min, none is implied.
    for sizes in ([1, 1, 9], [4, 4, 4], [2, 30], [5, 1], [3], [6, 6, 1, 1, 1], [1, 2, 3, 4, 5]):
        members = {(g, i): f"g{g}" for g, n in enumerate(sizes) for i in range(n)}
        _, counts = merge_small_groups(members, 5)
        shown = [n for n in counts.values() if n is not None]
        assert all(n >= 5 for n in shown), (sizes, counts)
        assert (sum(shown) == len(members)) or set(counts) == {"other"}, (sizes, counts)
        assert len(counts) != 1 or "other" in counts, (sizes, counts)  # no single group naming everyone


def test_min_group_cannot_be_lowered_below_the_campaigns_setting(researcher: User, api: APIClient) -> None:
    campaign = demographics_campaign(researcher, min_group=6)
    for i in range(6):
        _join(campaign, f"w{i}", "woman")
    for i in range(6):
        _join(campaign, f"m{i}", "man")
    _join(campaign, "nb0", "non_binary")
    _join(campaign, "nb1", "non_binary")
    url = f"/api/campaigns/{campaign.pk}/demographics/"
    assert api.post(url + "releases/").status_code == 201
    for value in ("2", "5"):
        refused = api.get(f"{url}?min_group={value}")
        assert refused.status_code == 400 and "min_group" in refused.json()["errors"]
    assert api.get(f"{url}?min_group=7").json()["min_group"] == 7
    report = api.get(f"/api/campaigns/{campaign.pk}/report/?n_boot=0&n_perm=0&min_group=2").json()["annotators"]
    assert report["min_group"] == 6 and "non_binary" not in report["fields"]["gender"]["groups"]
    assert all(g["annotators"] is None or g["annotators"] >= 6 for g in report["fields"]["gender"]["groups"].values())
    # The spec cannot set it below 5 either.
    bad = api.post("/api/specs/preview/", {**campaign.spec, "annotation": {"demographics": {**ASK, "min_group": 2}}},
                   format="json")
    assert bad.status_code == 400 and "annotation.demographics.min_group" in bad.json()["errors"]


def test_closing_the_campaign_cuts_the_release_the_rule_allows(researcher: User, api: APIClient) -> None:
    campaign = demographics_campaign(researcher)
    for i in range(3):
        _join(campaign, f"w{i}", "woman")
    url = f"/api/campaigns/{campaign.pk}/demographics/"
    assert api.post(url + "releases/").status_code == 409  # 3 < 5 while open
    assert api.post(f"/api/campaigns/{campaign.pk}/close/").status_code == 200
    summary = api.get(url).json()
    # The first release at close covers everyone; fewer than 5: nothing is shown.
    assert summary["release"]["reason"] == "close" and summary["groups"]["gender"] == {"other": None}
    assert summary["annotators"] == 3
