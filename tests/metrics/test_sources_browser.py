"""The console report page of a hybrid source in headless Chromium: the machine-agreement table and the
human-vs-machine GEP vector scatter (GEP Figure 5 shape), an inline matplotlib SVG like the other charts."""
from __future__ import annotations

from typing import Any

import pytest
from django.conf import settings as django_settings
from django.contrib.auth.models import User
from django.test import Client

from campaigns.models import Campaign
from tests.browser import Browser, browser  # noqa: F401  (fixture)
from tests.builders.machine import gep_sources_campaign

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


@pytest.fixture
def gep_campaign(researcher: User) -> Campaign:
    return gep_sources_campaign(researcher)


def test_report_page_shows_machine_agreement_and_the_scatter(browser: Browser, researcher: User,  # noqa: F811
                                                             gep_campaign: Campaign, settings: Any) -> None:
    client = Client()
    client.force_login(researcher)
    b = browser
    b.get("/")
    b.driver.add_cookie({"name": django_settings.SESSION_COOKIE_NAME,
                         "value": client.cookies[django_settings.SESSION_COOKIE_NAME].value, "path": "/"})
    b.get(f"/console/campaigns/{gep_campaign.pk}/report/?source=hybrid:clip_cls&n_boot=50")
    table = b.visible("#machine-agreement")
    rows = b.find_all("#machine-agreement tbody tr")
    scopes = [r.find_elements("css selector", "td")[1].text for r in rows]
    assert "overall" in scopes and "neutral / dress" in scopes and "neutral / mean over attributes" in scopes
    assert "clip_cls" in table.text
    b.visible("#machine-gep")
    b.visible("#hybrid")
    assert len(b.find_all("#hybrid tbody tr")) >= 4
    captions = [f.text for f in b.find_all("figure.chart figcaption")]
    scatter = [c for c in captions if c.startswith("Human vs clip_cls GEP vector")]
    assert scatter, captions
    figure = next(f for f in b.find_all("figure.chart") if f.text.startswith("Human vs clip_cls"))
    svg = figure.find_element("css selector", "svg")
    assert svg.size["width"] > 100 and svg.size["height"] > 100
    # one marker per attribute: the scatter's path collection has a point for dress and for tie
    assert "dress" in svg.get_attribute("innerHTML") and "tie" in svg.get_attribute("innerHTML")
    assert not [e for e in b.console_errors() if "favicon" not in e]
    b.shot("report-hybrid-source")
