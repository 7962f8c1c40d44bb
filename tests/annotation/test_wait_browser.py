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
from annotation.models import Answer, Assignment, Question
from annotation.services.lifecycle import campaign_annotation_transition, questions_open
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



@pytest.mark.browser
def test_the_next_hit_from_the_submit_waits_then_stops_as_the_page_says(browser: Browser, monkeypatch: Any) -> None:
    """The submit's `next` drives the page like a HIT request: a 204 with `retry_after` -> the wait stage,
    then the reopened question; an error (the campaign paused meanwhile) -> its message, the answers stored."""
    monkeypatch.setattr(selectors, "HIT_RETRY_AFTER_S", 2)
    b = browser
    campaign = make_campaign(make_researcher("rhea"), annotation={"hit_size": 1, "redundancy": ADAPTIVE},
                             settings=["explicit"])
    for n, prompt in enumerate(campaign.prompts.filter(setting="explicit").order_by("position")[:2]):
        _image(campaign, prompt, n)
    questions_open(campaign=campaign)
    (amy, _), (bob, _) = make_annotator("amy", campaign=campaign), make_annotator("bob", campaign=campaign)
    held = [assignment_next(annotator=a, campaign_id=campaign.pk, rng=random.Random(1))[0] for a in (amy, bob)]
    taken = held[0]["questions"][0]["id"]
    assert held[1]["questions"][0]["id"] == taken  # started questions first: both seats of one question
    walker, _ = make_annotator("walker", campaign=campaign)
    mine = Answer.objects.filter(annotator=walker)
    login(b, walker.user)
    b.get(f"/work/{campaign.pk}/")
    b.visible("#stage-task")
    _wait_question(b, 1)
    first = Assignment.objects.get(annotator=walker, status=Assignment.Status.ACTIVE)
    b.record_api_calls()
    b.find("#choices .choice[data-choice=Yes]").click()
    b.keys(Keys.ENTER)
    # The other question: answered. This one: both seats leased. The submit's `next` is a 204 with
    # retry_after (answers in flight may reopen it): the page waits, having made no other request.
    b.visible("#stage-wait", timeout=15)
    assert mine.count() == 1 and mine.get().question_id != taken
    assert [path for path, _ in b.api_calls()] == [f"assignments/{first.pk}/submit/"]
    _submit(amy, held[0], "Yes")
    _submit(bob, held[1], "No")  # 1-1: the question wants a third answer
    b.visible("#stage-task", timeout=15)
    _wait_question(b, 1)
    # Paused meanwhile: the answer is stored, and the submit's `next` (409) is the page's message.
    campaign_annotation_transition(campaign=campaign, action="pause")
    b.find("#choices .choice[data-choice=No]").click()
    b.keys(Keys.ENTER)
    b.visible("#stage-blocked", timeout=15)
    assert "paused" in b.find("#blocked-text").text
    assert sorted(mine.values_list("question_id", "choice")) == sorted(
        [(mine.exclude(question_id=taken).get().question_id, "Yes"), (taken, "No")])
    assert b.console_errors() == []
