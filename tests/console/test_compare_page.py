"""The console's compare page drives what the API offers without typed keys: label sources are
checkboxes among the sources every chosen campaign has labels from, and two settings of one campaign
are compared from the page (before, `campaign=ID&settings=A,B` was API-only)."""
from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User

from tests.builders.console import login
from tests.builders.machine import gep_sources_campaign, machine_labels
from tests.builders.metrics import (
    SMALL_GEP,
    SMALL_PST,
    annotators,
    answer_all,
    campaign_with_questions,
    gep_label,
    stereotyped,
)

pytestmark = pytest.mark.django_db


def _sources(html: str) -> list[str]:
    box = html.split('id="cmp-sources"', 1)[1].split("</fieldset>", 1)[0]
    return re.findall(r'name="source" value="([^"]*)"', box)


def test_two_settings_of_one_campaign_from_the_page(researcher: User) -> None:
    campaign, questions = campaign_with_questions(researcher, SMALL_PST)
    answer_all(campaign, questions, stereotyped, annotators(3, "cs-"))
    client = login(researcher)
    form = client.get("/console/compare/?mode=settings").content.decode()
    assert 'name="setting_a"' in form and 'name="setting_b"' in form and f'value="{campaign.pk}"' in form
    resp = client.get(f"/console/compare/?mode=settings&campaign={campaign.pk}&setting_a=single&setting_b=paired")
    html = resp.content.decode()
    assert resp.status_code == 200, html[:2000]
    api = client.get(f"/api/reports/compare/?campaign={campaign.pk}&settings=single,paired").json()
    assert api["mode"] == "settings"
    # The page shows the API's settings comparison and links to it.
    assert f"campaign={campaign.pk}&amp;test=permutation&amp;settings=single,paired" in html
    assert 'id="comparison"' in html
    # A setting the campaign lacks is an error naming it, on the page.
    bad = client.get(f"/console/compare/?mode=settings&campaign={campaign.pk}&setting_a=single&setting_b=intervention")
    assert bad.status_code == 400 and "intervention" in bad.content.decode()


def test_sources_offered_are_those_every_campaign_has(researcher: User) -> None:
    first = gep_sources_campaign(researcher)
    second, questions = campaign_with_questions(researcher, {**SMALL_GEP, "name": "second"})
    answer_all(second, questions, gep_label, annotators(3, "sc-"))
    client = login(researcher)
    only_first = client.get(f"/console/compare/?campaigns={first.pk}&test=none").content.decode()
    assert _sources(only_first) == ["human", "clip_cls", "hybrid:clip_cls"]
    both = client.get(f"/console/compare/?campaigns={first.pk}&campaigns={second.pk}&test=none").content.decode()
    assert _sources(both) == ["human"]  # the second has no machine labels
    machine_labels(second, "clip_cls", gep_label, flip=0.2, seed=3)
    resp = client.get(f"/console/compare/?campaigns={first.pk}&campaigns={second.pk}&test=none"
                      "&source=human&source=clip_cls")
    html = resp.content.decode()
    assert resp.status_code == 200, html[:2000]
    assert _sources(html) == ["human", "clip_cls", "hybrid:clip_cls"]
    assert re.search(r'value="clip_cls" id="src-\d+" checked', html)
    assert "source=human,clip_cls" in html  # the API link carries both sources
