"""The task page on a phone (issue 25): at 390x844 the image takes the full width (at least 300 px)
at every question of the HIT, for PST (paired and single) and GEP, with the instructions open and
closed (open, they are a drawer over the page that does not shrink the image); the question's own
examples are one tap away. The MTurk frame is walked in tests/crowd/test_mturk_browser.py.
Screenshots: test-artifacts/screenshots/phone-*.png."""
from __future__ import annotations

from typing import Any

import pytest

from tests.browser import Browser, browser  # noqa: F401  (fixture)
from tests.builders.campaigns import make_annotator
from tests.builders.taskpage import assert_fits, assert_phone_image, fit_campaign, fit_gep_campaign, login

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def _position(b: Browser) -> tuple[int, int]:
    words = b.find("#progress").text.split()  # "Question 2 / 5"
    return int(words[1]), int(words[3])


def _walk(b: Browser, name: str) -> list[dict[str, Any]]:
    """Every question of the HIT, instructions open then closed at each; returns the measured boxes."""
    boxes = []
    while True:
        at, total = _position(b)
        for state in ("open", "closed"):
            want_open = state == "open"
            if (b.find("#instructions").get_attribute("open") is not None) != want_open:
                b.keys("i")
                b.wait(lambda d, w=want_open: (b.find("#instructions").get_attribute("open") is not None) == w)
            boxes.append(assert_phone_image(b, f"phone-{name}-q{at}-{state}"))
        if at == total:
            return boxes
        b.find("#choices .choice").click()
        b.wait(lambda d, at=at: _position(b)[0] == at + 1)


@pytest.mark.parametrize("kind", ["pst", "gep"])
def test_phone_image_full_width_at_every_question(browser: Browser, kind: str) -> None:
    b = browser
    campaign = fit_campaign() if kind == "pst" else fit_gep_campaign()
    annotator, _ = make_annotator(f"phone-{kind}", campaign=campaign)
    login(b, annotator.user)
    b.viewport(390, 844, mobile=True)
    b.get(f"/work/{campaign.pk}/")
    b.visible("#stage-task")
    assert b.find("#instructions").get_attribute("open") is not None  # the first HIT opens them
    total = _position(b)[1]
    boxes = _walk(b, kind)
    assert total >= 2 and len(boxes) == 2 * total, (total, len(boxes))
    # Closed, everything fits the screen as before (issue 17).
    if b.find("#instructions").get_attribute("open") is not None:
        b.keys("i")
    assert_fits(b, f"phone-{kind}-fits")
    assert b.inline_code() == [] and b.console_errors() == []


def test_question_examples_one_tap_away(browser: Browser) -> None:
    b = browser
    campaign = fit_gep_campaign()
    annotator, _ = make_annotator("phone-ex", campaign=campaign)
    login(b, annotator.user)
    b.viewport(390, 844, mobile=True)
    b.get(f"/work/{campaign.pk}/")
    b.visible("#stage-task")
    if b.find("#instructions").get_attribute("open") is not None:
        b.find("#instructions-close").click()
        b.wait(lambda d: b.find("#instructions").get_attribute("open") is None)
    families = set(campaign.examples.values_list("family", flat=True))
    # Every question has examples of its own family: its button opens them.
    seen_button = False
    while True:
        at, total = _position(b)
        button = b.find("#q-examples")
        if button.is_displayed():
            seen_button = True
            family = button.get_attribute("data-family")
            assert family in families and "example" in button.text
            button.click()
            b.wait(lambda d: b.find("#instructions").get_attribute("open") is not None)
            figure = b.find(f'#examples figure[data-family="{family}"]')
            assert figure.is_displayed() and "clearly so" in figure.text
            box = assert_phone_image(b, "phone-examples-open")
            assert box["drawer"][1] > 0, "the drawer sits over the page"
            b.find("#instructions-close").click()
            b.wait(lambda d: b.find("#instructions").get_attribute("open") is None)
            break
        assert at < total, "no question of the example's family in the HIT"
        b.find("#choices .choice").click()
        b.wait(lambda d, at=at: _position(b)[0] == at + 1)
    assert seen_button
