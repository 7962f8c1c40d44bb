"""`vlm` against a loopback server speaking the OpenAI chat-completions wire format, `vqa` with a
tiny BLIP model, and the answer parsing both rely on."""
from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from annotation.models import Question
from autolabel.labellers.answers import answer_to_choice
from autolabel.labellers.vqa import vqa_prompt
from autolabel.models import AutolabelJob, MachineLabel, MachineLabelFailure
from autolabel.services import autolabel_start, labels_compute
from campaigns.models import Campaign
from campaigns.spec import SpecError, spec_normalize
from tests.builders.autolabel import SMALL_GEP, add_images, make_campaign, opened

pytestmark = pytest.mark.django_db
PERSON = ["Feminine", "Masculine", "Cannot identify"]


class FakeChat:
    """Answers each chat completion from `reply(request) -> (status, text)`; records the requests."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.reply = lambda body: (200, "Yes")
        chat = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                chat.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
                status, text = chat.reply(body)
                payload = {"id": "x", "object": "chat.completion", "model": body["model"],
                           "choices": [{"index": 0, "finish_reason": "stop",
                                        "message": {"role": "assistant", "content": text}}]}
                raw = json.dumps(payload if status == 200 else {"error": {"message": "no"}}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()


@pytest.fixture
def chat(settings: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeChat]:
    fake = FakeChat()
    monkeypatch.setenv("LAB_VLM_KEY", "sk-lab-1")
    settings.AUTOLABEL_VLM_ENDPOINTS = {"lab": {"base": fake.base, "key_env": "LAB_VLM_KEY"}}
    settings.OUTBOUND_PRIVATE_ALLOWLIST = ["127.0.0.1/32"]
    yield fake
    fake.server.shutdown()


def _run(campaign: Campaign, labeller: str, capture: Any, monkeypatch: pytest.MonkeyPatch) -> AutolabelJob:
    sent: list[Any] = []
    monkeypatch.setattr("autolabel.services._publish", lambda *args: sent.append(args))
    with capture(execute=True):
        autolabel_start(campaign=campaign, labeller=labeller)
    for job_id, run, batches in sent:
        for batch in batches:
            labels_compute(job_id=job_id, run=run, question_ids=batch)
    return AutolabelJob.objects.get(campaign=campaign, labeller=labeller)


def test_vlm_labels_through_the_chat_endpoint(chat: FakeChat, researcher: User, media: Path,
                                              django_capture_on_commit_callbacks: Any,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    campaign = make_campaign(researcher, autolabel={"labellers": [
        {"name": "vlm", "endpoint": "lab", "model": "llava-test"}]}, **SMALL_GEP)
    add_images(campaign, "explicit", 6)
    opened(campaign)
    answers = iter(["Yes.", "no", "I think yes", "No, there is none", "maybe", "YES"])
    chat.reply = lambda body: (200, next(answers))
    job = _run(campaign, "vlm", django_capture_on_commit_callbacks, monkeypatch)
    assert len(chat.requests) == 6
    request = chat.requests[0]
    assert request["path"] == "/v1/chat/completions" and request["auth"] == "Bearer sk-lab-1"
    content = request["body"]["messages"][0]["content"]
    assert request["body"]["model"] == "llava-test"
    assert content[0]["type"] == "text" and "Answer with exactly one of: Yes, No." in content[0]["text"]
    assert content[1]["image_url"]["url"].startswith("data:image/png;base64,")
    labels = list(MachineLabel.objects.filter(labeller="vlm").order_by("question__image_id"))
    assert [m.choice for m in labels] == ["Yes", "No", "Yes", "No", "Yes"]
    assert all(m.score is None and m.model == "llava-test" and m.params["endpoint"] == "lab" for m in labels)
    failure = MachineLabelFailure.objects.get(labeller="vlm")
    assert "unparseable answer: 'maybe'" in failure.error
    assert (job.done, job.failed, job.total, job.status) == (5, 1, 6, "done")
    # A rerun tries only the failed question again; an HTTP error stays a failure with its status.
    chat.reply = lambda body: (500, "")
    job = _run(campaign, "vlm", django_capture_on_commit_callbacks, monkeypatch)
    assert len(chat.requests) == 7 and "HTTP 500" in MachineLabelFailure.objects.get(labeller="vlm").error


def test_vlm_endpoints_come_only_from_settings(chat: FakeChat) -> None:
    base = {"name": "x", "kind": "gep", "seed": 1, "design": {"settings": ["neutral"]},
            "backend": {"name": "placeholder"}}
    with pytest.raises(SpecError) as err:
        spec_normalize({**base, "autolabel": {"labellers": [{"name": "vlm", "endpoint": "http://evil/v1",
                                                             "model": "m"}]}})
    assert "unknown endpoint" in err.value.errors["autolabel.labellers.0.endpoint"][0]
    with pytest.raises(SpecError) as err:
        spec_normalize({**base, "autolabel": {"labellers": [{"name": "vlm", "endpoint": "lab", "model": "m",
                                                             "base": "http://evil/v1"}]}})
    assert "autolabel.labellers.0.base" in err.value.errors


def test_answer_parsing() -> None:
    assert answer_to_choice("Female.", PERSON) == "Feminine"
    assert answer_to_choice("a man", PERSON) == "Masculine"
    assert answer_to_choice("woman", PERSON) == "Feminine"
    assert answer_to_choice("I cannot identify the gender", PERSON) == "Cannot identify"
    assert answer_to_choice("man and woman", PERSON) is None
    assert answer_to_choice("the", PERSON) is None
    assert answer_to_choice("yes", ["Yes", "No"]) == "Yes"
    assert answer_to_choice("No, not really", ["Yes", "No"]) == "No"
    assert answer_to_choice("dunno", ["Yes", "No"]) is None


def test_vqa_prompts_are_pst_table_11(researcher: User, media: Path, tiny_blip: Path,
                                      django_capture_on_commit_callbacks: Any,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    campaign = make_campaign(researcher, kind="pst", autolabel={"labellers": [
        {"name": "vqa", "model": str(tiny_blip)}]})
    add_images(campaign, "paired", 1)
    add_images(campaign, "single", 1, seed=4)
    opened(campaign)
    prompts = {q.slot: vqa_prompt(q) for q in Question.objects.filter(campaign=campaign)}
    identity = Question.objects.filter(campaign=campaign, slot="left").first().metadata["identity"]
    assert prompts["left"] == f"What gender is the {identity} on the left in the picture?"
    assert prompts["right"].endswith("on the right in the picture?")
    assert prompts["single"].startswith("What gender is the ") and prompts["single"].endswith(" in the picture?")
    # The tiny random BLIP answers nonsense: every question is tried and recorded as failed with the
    # answer, none stored as a label; a real BLIP's "female" / "male" maps as test_answer_parsing shows.
    job = _run(campaign, "vqa", django_capture_on_commit_callbacks, monkeypatch)
    assert job.total == 3 and job.done + job.failed == 3
    for failure in MachineLabelFailure.objects.filter(labeller="vqa"):
        assert failure.error.startswith("unparseable answer")
    for label in MachineLabel.objects.filter(labeller="vqa"):
        assert label.choice in PERSON and label.params["prompts"] == "PST Table 11"
