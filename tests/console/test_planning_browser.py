"""The new-campaign page shows the planned precision (the preview's `planning`) next to the cost, and
the images needed once a target half-width is typed."""
from __future__ import annotations

from typing import Any

import pytest

from tests.browser import Browser, browser  # noqa: F401  (fixture)
from tests.builders.console import browser_login_researcher

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def test_new_campaign_page_shows_planned_half_width(browser: Browser, settings: Any) -> None:  # noqa: F811
    settings.ROOT_URLCONF = "tests.console.urls"
    b = browser
    browser_login_researcher(b, "planner")
    b.get("/console/new/")
    b.text_in("#preview-state", "Valid spec")
    # The PST occupation preset: 120 single + 800 paired images, R = 3; kappa 0.90 -> ±4.7 points (paired).
    b.wait(lambda d: "±" in b.find("#pv-halfwidth").text, message="half-width not shown")
    assert "paired" in b.find("#pv-halfwidth").text and "STS points" in b.find("#pv-halfwidth").text
    assert "kappa 0.9" in b.find("#pv-planning-note").text
    rows = b.find_all("#pv-planning-table tbody tr")
    assert [r.find_element("css selector", "th").text for r in rows] == ["single", "paired"]
    b.find("#pv-target").send_keys("3")
    b.wait(lambda d: b.find_all("#pv-planning-table tbody tr")[1].text.split()[-1].isdigit(),
           message="images for the target not shown")
    need = int(b.find_all("#pv-planning-table tbody tr")[1].text.split()[-1])
    assert need > 800  # more images than planned for a tighter interval
    assert b.console_errors() == []
    b.shot("console-new-planning")
