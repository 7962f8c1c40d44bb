"""The task page fits the screen (issue 17): at 1366x768, 1280x720, a 390x844 phone and the MTurk
ExternalQuestion frame (tests/crowd/test_mturk_browser.py), the question, the whole image and every
answer button lie inside the viewport with nothing scrolled, with the instructions open (first HIT)
and closed (the I key). The image is scaled to the space left and keeps its aspect ratio.
Screenshots: test-artifacts/screenshots/fit-*.png."""
from __future__ import annotations

import pytest

from tests.browser import Browser, browser  # noqa: F401  (fixture)
from tests.builders.campaigns import make_annotator
from tests.builders.taskpage import assert_fits, fit_campaign, login

pytestmark = [pytest.mark.django_db(transaction=True)]

SIZES = [(1366, 768, False), (1280, 720, False), (390, 844, True)]


def _position(b: Browser) -> tuple[int, int]:
    words = b.find("#progress").text.split()  # "Question 2 / 5"
    return int(words[1]), int(words[3])


def _choice_click(b: Browser, key: str) -> None:
    b.find(f"#choices .choice[data-key={key}]").click()


@pytest.mark.browser
def test_task_page_fits_each_screen(browser: Browser) -> None:
    b = browser
    campaign = fit_campaign()
    annotator, _ = make_annotator("fiona", campaign=campaign)
    login(b, annotator.user)
    for n, (width, height, mobile) in enumerate(SIZES):
        b.viewport(width, height, mobile=mobile)
        b.get(f"/work/{campaign.pk}/")
        b.visible("#stage-task")
        if n == 0:
            # The first HIT: instructions (the PST paper's text) open, and everything still fits.
            assert b.find("#instructions").get_attribute("open") is not None
            text = b.find("#instructions-text").text
            assert "gender fairness issues" in text and "UCLA" not in text  # lab-neutral
            family_text = b.find("#family-instructions").text
            assert "decide whether the two individuals" in family_text
            # The example of the HIT's paired questions, with its answer and caption.
            figures = b.find_all("#examples figure")
            assert len(figures) == 1 and figures[0].get_attribute("data-family") == "person:paired"
            assert "Cannot identify" in figures[0].text and "Both faces hidden" in figures[0].text
            b.wait(lambda d: d.execute_script("const i = document.querySelector('#examples img');"
                                              "return i.complete && i.naturalWidth > 0"), message="example not loaded")
        else:
            assert b.find("#instructions").get_attribute("open") is None  # collapsed after the first HIT
            b.keys("i")  # reachable with a key
            b.wait(lambda d: b.find("#instructions").get_attribute("open") is not None)
        assert_fits(b, f"fit-{width}x{height}-instructions-open")
        b.keys("i")
        b.wait(lambda d: b.find("#instructions").get_attribute("open") is None)
        while _position(b)[0] != 1:  # a reload resumes at the first unanswered question
            b.find("#back").click()
        # Every question of the HIT (paired left/right, the tall single image) fits as well.
        seen = []
        while True:
            at, total = _position(b)
            seen.append(at)
            assert_fits(b, f"fit-{width}x{height}-question-{at}")
            if at == total:
                break
            _choice_click(b, "C")
            b.wait(lambda d, at=at: _position(b)[0] == at + 1)
        assert seen == list(range(1, total + 1)) and total == 5  # 2 paired images (2 questions each) + 1 single
        b.keys("?")
        b.wait(lambda d: b.find("#instructions").get_attribute("open") is not None)
        b.keys("\ue00c")  # Escape closes it
        b.wait(lambda d: b.find("#instructions").get_attribute("open") is None)
    assert b.inline_code() == [] and b.console_errors() == []
