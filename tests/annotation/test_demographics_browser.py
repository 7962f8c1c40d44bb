"""The task page's optional "About you" form in headless Chromium against the live server: it opens
once when the questions appear, keeps the task's shortcut keys out while open, saves consented
answers (gender with free text, age band, country), and withdraws them; a campaign that does not ask
shows nothing. Screenshots go to test-artifacts/screenshots/."""
from __future__ import annotations

import pytest
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select

from annotation.models import Annotator, Answer, DemographicsResponse
from tests.browser import Browser, browser  # noqa: F401  (fixture)
from tests.builders.campaigns import make_annotator, make_campaign, make_images, open_campaign
from tests.conftest import make_researcher

pytestmark = [pytest.mark.django_db(transaction=True)]


def _login(b: Browser, campaign_id: int, name: str) -> None:
    b.get(f"/work/{campaign_id}/login/")
    b.visible("#login-form")
    b.find("#id_username").send_keys(name)
    b.find("#id_password").send_keys(f"{name}-Secret-pass-9")
    b.find("#login-form button[type=submit]").click()


def _errors(b: Browser) -> list[str]:
    """Console errors but the images' (these tests store no image files: a 404 each)."""
    return [m for m in b.console_errors() if "/media/" not in m]


def _campaign(demographics):
    campaign = make_campaign(make_researcher("rita"), settings=["explicit"],
                             annotation={"hit_size": 2, "redundancy": 1, "demographics": demographics})
    make_images(campaign, "explicit", 4)
    return open_campaign(campaign)


@pytest.mark.browser
def test_annotator_fills_submits_and_withdraws(browser: Browser) -> None:
    b = browser
    campaign = _campaign({"ask": True, "consent_version": "3"})
    annotator, _ = make_annotator("dora", campaign=campaign)
    _login(b, campaign.pk, "dora")
    # The questions appear, and the optional form opens over them once.
    b.visible("#demographics-dialog")
    assert b.find("#stage-task").is_displayed()
    assert "optional" in b.find("#demographics-consent-text").text.lower()
    b.shot("20-demographics-dialog")
    b.keys("y")  # the task's key for "Yes": held back while the dialog is open
    assert b.js("return document.querySelectorAll('#choices [aria-checked=true]').length") == 0
    b.find("#demographics-gender input[value=self_describe]").click()
    b.find("#demographics-gender-text").send_keys("genderqueer")
    Select(b.find("#demographics-age-select")).select_by_value("25-34")
    Select(b.find("#demographics-country-select")).select_by_value("NZ")
    b.find("#demographics-submit").click()  # consent not ticked: refused with a message, nothing stored
    b.visible("#demographics-error")
    assert not DemographicsResponse.objects.exists()
    b.find("#demographics-consent").click()
    b.find("#demographics-submit").click()
    b.visible("#demographics-saved")
    row = DemographicsResponse.objects.get(annotator=annotator, campaign=campaign)
    assert row.answers == {"gender": "self_describe", "gender_self_described": "genderqueer", "age_band": "25-34",
                           "country": "NZ"}
    assert row.consent_version == "3" and row.consented_at is not None
    b.shot("21-demographics-saved")
    b.find("#demographics-close").click()
    b.hidden("#demographics-dialog")
    # Back to the task: the keys answer again.
    b.keys("y")
    b.wait(lambda d: b.js("return document.querySelectorAll('#choices [aria-checked=true]').length") == 1
           or "2 /" in b.find("#progress").text, message="the key did not answer after the dialog closed")
    b.keys("y", Keys.ENTER)
    b.wait(lambda d: Answer.objects.filter(annotator=annotator).count() == 2, message="HIT not submitted")
    # Reopen from the button: the saved answers are shown; withdraw erases them.
    b.find("#demographics-open").click()
    b.visible("#demographics-withdraw")
    assert b.find("#demographics-age-select").get_attribute("value") == "25-34"
    b.find("#demographics-withdraw").click()
    b.text_in("#demographics-saved-text", "answers were erased")
    row.refresh_from_db()
    assert row.answers == {} and row.withdrawn_at is not None
    assert Annotator.objects.get(pk=annotator.pk).demographics_withdrawn_at is not None
    assert Answer.objects.filter(annotator=annotator).count() == 2  # the task answers stay
    b.shot("22-demographics-withdrawn")
    assert b.inline_code() == [] and _errors(b) == []
    # A reload: answered once, the form does not open by itself again.
    b.get(f"/work/{campaign.pk}/")
    b.visible("#stage-task")
    b.visible("#demographics-open")
    assert not b.find("#demographics-dialog").is_displayed()


@pytest.mark.browser
def test_campaign_that_does_not_ask_shows_nothing(browser: Browser) -> None:
    b = browser
    campaign = _campaign(False)
    make_annotator("otto", campaign=campaign)
    _login(b, campaign.pk, "otto")
    b.visible("#stage-task")
    assert not b.find("#demographics-open").is_displayed()
    assert not b.find("#demographics-dialog").is_displayed()
    assert _errors(b) == []
