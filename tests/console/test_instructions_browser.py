"""The new-campaign form edits what annotators read: the instructions and the single / two-person
setting texts, with a preview of the task page; an intervention image is previewed (and stored) with
the paired text. The PST default is lab-neutral (issue 25)."""
from __future__ import annotations

import json
from typing import Any

import pytest
from selenium.webdriver.support.ui import Select

from campaigns.models import Campaign
from tests.browser import Browser, browser  # noqa: F401  (fixture)
from tests.builders.console import browser_login_researcher

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def test_instructions_are_edited_in_the_form_and_previewed(browser: Browser, settings: Any) -> None:  # noqa: F811
    settings.ROOT_URLCONF = "tests.console.urls"
    b = browser
    browser_login_researcher(b, "teacher")
    b.get("/console/new/")
    b.text_in("#preview-state", "Valid spec")
    intro = b.find("#tp-instructions").text
    assert "gender fairness issues" in intro and "UCLA" not in intro
    assert "the individual in the image" in b.find("#tp-setting-text").text
    assert len(b.find_all("#tp-questions li")) == 1 and len(b.find_all("#tp-image .tp-figure")) == 1
    Select(b.find("#tp-setting")).select_by_value("intervention")
    b.wait(lambda d: len(b.find_all("#tp-questions li")) == 2, message="two questions for a two-person image")
    assert "the two individuals" in b.find("#tp-setting-text").text
    assert "paired examples" in b.find("#tp-note").text
    b.find("#instructions-editor summary").click()
    b.find("#b-instructions").clear()
    b.find("#b-instructions").send_keys("We are the Example Lab. Thank you for helping.")
    b.find("#b-si-paired").clear()
    b.find("#b-si-paired").send_keys("Two people: judge each one.")
    b.wait(lambda d: "Two people: judge each one." in b.find("#tp-setting-text").text, message="preview not updated")
    assert b.find("#tp-instructions").text == "We are the Example Lab. Thank you for helping."
    b.shot("console-new-task-preview")
    spec = json.loads(b.find("#spec").get_attribute("value"))
    assert spec["annotation"]["instructions"] == "We are the Example Lab. Thank you for helping."
    texts = spec["annotation"]["setting_instructions"]
    assert texts["paired"] == texts["intervention"] == "Two people: judge each one."
    assert texts["single"].startswith("Given the image shown, decide whether the individual")
    b.find("#b-name").clear()
    b.find("#b-name").send_keys("lab-instructions")
    b.text_in("#preview-state", "Valid spec")
    b.find("#create").click()
    b.text_in("h1", "lab-instructions")
    stored = Campaign.objects.get(name="lab-instructions").spec["annotation"]
    assert stored["instructions"] == "We are the Example Lab. Thank you for helping."
    assert stored["setting_instructions"]["intervention"] == "Two people: judge each one."
    assert b.console_errors() == []
    b.shot("console-new-instructions")
