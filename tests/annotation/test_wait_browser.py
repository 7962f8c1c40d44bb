"""The task page under adaptive redundancy (issue 21): when nothing is left only for now (a 204 with
`Retry-After`: other annotators' answers are in flight) the page waits and asks again by itself,
and takes the question that reopened; a final 204 (no Retry-After) ends with "No work left"."""
from __future__ import annotations

import random
from typing import Any

import pytest
from selenium.webdriver.common.keys import Keys

from annotation import selectors
from annotation.hits import answers_submit, assignment_next
from annotation.models import Answer, Question
from annotation.services.lifecycle import questions_open
from tests.browser import Browser, browser  # noqa: F401  (fixture)
from tests.builders.campaigns import make_annotator, make_campaign
from tests.builders.hit_page import _image, _wait_question
from tests.builders.taskpage import login
from tests.conftest import make_researcher

pytestmark = [pytest.mark.django_db(transaction=True)]
ADAPTIVE = {"min": 2, "max": 3, "rule": "confidence", "threshold": 0.75}


def _submit(annotator: Any, hit: Any, choice: str) -> None:
    answers_submit(annotator=annotator, assignment_id=hit["id"], answers=[
        {"question": q["id"], "choice": choice, "time_ms": 1500} for q in hit["questions"]])


@pytest.mark.browser
def test_the_page_waits_for_a_question_to_reopen_then_finishes(browser: Browser, monkeypatch: Any) -> None:
    monkeypatch.setattr(selectors, "HIT_RETRY_AFTER_S", 2)
    b = browser
    campaign = make_campaign(make_researcher("rhea"), annotation={"hit_size": 1, "redundancy": ADAPTIVE},
                             settings=["explicit"])
    _image(campaign, campaign.prompts.filter(setting="explicit").order_by("position").first(), 1)
    questions_open(campaign=campaign)
    question = Question.objects.get(campaign=campaign)
    (amy, _), (bob, _) = make_annotator("amy", campaign=campaign), make_annotator("bob", campaign=campaign)
    held = [assignment_next(annotator=a, campaign_id=campaign.pk, rng=random.Random(1))[0] for a in (amy, bob)]
    walker, _ = make_annotator("walker", campaign=campaign)
    login(b, walker.user)
    b.get(f"/work/{campaign.pk}/")
    # Both seats are leased: nothing for walker now, but more may come.
    b.visible("#stage-wait")
    assert "Waiting" in b.find("#wait-heading").text
    b.shot("wait-1-waiting")
    _submit(amy, held[0], "Yes")
    _submit(bob, held[1], "No")  # 1-1: the question wants a third answer
    assert Question.objects.get(pk=question.pk).required == 3
    # The page asks again by itself (no reload) and gets the reopened question.
    b.js("window.__samePage = true")
    b.visible("#stage-task", timeout=15)
    _wait_question(b, 1)
    b.shot("wait-2-reopened")
    b.find("#choices .choice[data-choice=Yes]").click()
    b.keys(Keys.ENTER)
    b.visible("#stage-done", timeout=15)
    assert b.js("return window.__samePage === true")
    assert Answer.objects.filter(annotator=walker, question=question, choice="Yes").exists()
    assert b.console_errors() == []
