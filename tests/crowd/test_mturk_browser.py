"""An MTurk worker in headless Chromium: the ExternalQuestion page in preview (inputs disabled,
nothing leased), then accepted (workerId / assignmentId / hitId / turkSubmitTo): consent, the
qualification test (granted on MTurk through the stubbed client), a HIT answered with the keyboard,
and the finished assignment posted to a local stand-in for MTurk's `externalSubmit`.
Screenshots: test-artifacts/screenshots/mturk-*.png."""
from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode

import pytest
from selenium.webdriver.common.keys import Keys

from annotation.models import Annotator, Answer, Assignment, Enrollment, QualificationAttempt
from crowd.models import MTurkQualificationType
from tests.browser import Browser, browser  # noqa: F401  (fixture)
from tests.builders.crowd import FakeMTurk
from tests.builders.hit_page import _answer_hit_with_keyboard, _open_campaign, _wait_question
from tests.builders.taskpage import assert_fits, assert_phone_image

pytestmark = [pytest.mark.django_db(transaction=True)]


class StandIn:
    """MTurk's externalSubmit on 127.0.0.1: records each POST (path and form fields)."""

    def __init__(self) -> None:
        self.posts: list[tuple[str, dict[str, list[str]]]] = []
        posts = self.posts

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                posts.append((self.path, parse_qs(self.rfile.read(length).decode())))
                body = b"<!doctype html><title>MTurk stand-in</title><h1 id='received'>HIT submitted to MTurk</h1>"
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.origin = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)


@pytest.fixture
def stand_in(settings: Any) -> Iterator[StandIn]:
    s = StandIn()
    s.thread.start()
    settings.MTURK_SUBMIT_HOSTS_EXTRA = [s.origin]
    try:
        yield s
    finally:
        s.server.shutdown()
        s.server.server_close()


@pytest.mark.browser
def test_mturk_worker_preview_accept_answer_submit(browser: Browser, stand_in: StandIn,  # noqa: F811
                                                   fake_mturk: FakeMTurk) -> None:
    b = browser
    campaign, ctx = _open_campaign()
    MTurkQualificationType.objects.create(qualification=ctx["qualification"], qualification_type_id="QTPERSON")
    base = f"/mturk/{campaign.pk}/?"

    # Preview: the task as it will look, every input disabled, nothing leased, nobody created.
    b.get(base + urlencode({"assignmentId": "ASSIGNMENT_ID_NOT_AVAILABLE", "hitId": "3HITAAA",
                            "turkSubmitTo": stand_in.origin}))
    b.visible("#accept-notice")
    assert "Accept the HIT to start" in b.find("#accept-notice").text
    assert "feminine or masculine" in b.find("#q-text").text
    assert len(b.find_all("#examples img")) == 2
    controls = b.find_all("#choices button") + [b.find("#next")]
    assert len(controls) == 4 and not any(c.is_enabled() for c in controls)
    assert b.find_all("#work-app") == []
    b.shot("mturk-01-preview")
    assert not Assignment.objects.exists() and not Annotator.objects.exists()

    # Accepted: MTurk reloads the frame with the worker's ids.
    accepted = base + urlencode({"assignmentId": "3ASSIGNAAA", "hitId": "3HITAAA", "workerId": "AWORKERAAA",
                                 "turkSubmitTo": stand_in.origin})
    b.get(accepted)
    b.visible("#consent-form")
    assert "research study" in b.find("#consent-text").text
    b.shot("mturk-02-consent")
    b.find("#consent-check").click()
    b.find("#consent-submit").click()
    b.visible("#qual-form")
    annotator = Annotator.objects.get(mturk_worker_id="AWORKERAAA")
    assert Enrollment.objects.get(annotator=annotator, campaign=campaign).consented_at is not None
    b.shot("mturk-03-qualification")
    for radio in b.find_all("#qual-items input[value=Masculine]"):
        radio.click()
    b.find("#qual-submit").click()
    b.visible("#qual-continue")
    assert QualificationAttempt.objects.get(annotator=annotator).passed
    assert fake_mturk.calls == [("associate_qualification_with_worker", {
        "QualificationTypeId": "QTPERSON", "WorkerId": "AWORKERAAA", "IntegerValue": 100, "SendNotification": False})]
    b.find("#qual-continue").click()

    # The HIT: leased for this MTurk assignment, answered with the keyboard.
    b.visible("#stage-task")
    _wait_question(b, 1)
    product = Assignment.objects.get(annotator=annotator)
    assert (product.external_assignment_id, product.external_hit_id) == ("3ASSIGNAAA", "3HITAAA")
    b.shot("mturk-04-hit")
    # Inside the ExternalQuestion frame (FrameHeight 0: the window under MTurk's own header, about
    # 620 px of a 1366x768 laptop) the question, the whole image and the answers fit unscrolled.
    b.viewport(1366, 620)
    assert_fits(b, "mturk-04-hit-in-frame-1366x620")
    # On a phone, MTurk's frame under its own header (390 x about 760): at every question of the HIT
    # the image keeps at least 300 px of width with the instructions drawer open and closed (issue 25);
    # then back to the first question (Backspace) to answer the HIT on the laptop frame.
    b.viewport(390, 760, mobile=True)
    total = _wait_question(b, 1)
    for n in range(1, total + 1):
        _wait_question(b, n)
        for state in ("open", "closed"):
            if (b.find("#instructions").get_attribute("open") is not None) != (state == "open"):
                b.keys("i")
                b.wait(lambda d, s=state: (b.find("#instructions").get_attribute("open") is not None) == (s == "open"))
            assert_phone_image(b, f"mturk-04-hit-in-frame-390x760-q{n}-{state}")
        if n < total:
            b.keys("m")
    for n in range(total - 1, 0, -1):
        b.keys(Keys.BACKSPACE)
        _wait_question(b, n)
    assert total >= 2
    b.viewport(1366, 620)
    given = _answer_hit_with_keyboard(b, ["Feminine", "Masculine"])
    b.shot("mturk-05-answered")
    assert b.console_errors() == [] and b.inline_code() == []
    b.keys(Keys.ENTER)

    # Stored by our server first, then posted to MTurk's externalSubmit with the assignment id.
    b.visible("#received", timeout=15)
    b.shot("mturk-06-submitted-to-mturk")
    assert len(stand_in.posts) == 1
    path, form = stand_in.posts[0]
    assert path == "/mturk/externalSubmit"
    assert form["assignmentId"] == ["3ASSIGNAAA"] and form["hit"] == [str(product.pk)]
    assert form["answers"] == [str(len(given))]
    product.refresh_from_db()
    assert product.status == Assignment.Status.SUBMITTED
    assert [a.choice for a in Answer.objects.filter(assignment=product).order_by("question__items__position")] == given

    # A reload of the same assignment (e.g. MTurk did not take the post): the same product HIT, which
    # is already stored, so the page only tells MTurk again; nothing new is leased.
    b.get(accepted)
    b.wait(lambda d: len(stand_in.posts) == 2, message="no second externalSubmit")
    assert stand_in.posts[1][1]["assignmentId"] == ["3ASSIGNAAA"]
    assert Assignment.objects.filter(annotator=annotator).count() == 1
