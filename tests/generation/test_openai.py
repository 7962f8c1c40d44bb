"""The openai backend against a local server speaking the Images API's wire format."""
from __future__ import annotations

import base64
import io
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from PIL import Image as PILImage

from generation.backends import GenerationItem, PermanentError, TransientError
from generation.backends.openai_images import OpenAIBackend


def _png() -> bytes:
    out = io.BytesIO()
    PILImage.new("RGB", (16, 16), (10, 200, 30)).save(out, format="PNG")
    return out.getvalue()


class FakeImagesApi:
    """Plays back a script of (status, body, headers) per request and records the requests."""

    def __init__(self) -> None:
        self.script: list[tuple[int, dict[str, Any], dict[str, str]]] = []
        self.requests: list[dict[str, Any]] = []
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                api.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
                status, payload, headers = api.script.pop(0)
                raw = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()


@pytest.fixture
def fake_api(monkeypatch: pytest.MonkeyPatch, settings: Any) -> Iterator[FakeImagesApi]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-123")
    api = FakeImagesApi()
    # The stand-in listens on loopback: allowed as a base, and as a private address, for this test only.
    settings.OPENAI_API_BASES = [api.base]
    settings.OUTBOUND_PRIVATE_ALLOWLIST = ["127.0.0.1/32"]
    yield api
    api.server.shutdown()


OK = (200, {"created": 1, "data": [{"b64_json": base64.b64encode(_png()).decode(),
                                   "revised_prompt": "A photo of a woman sitting at a table."}]}, {})
PARAMS = {"name": "openai", "model": "dall-e-3", "size": "1024x1024", "quality": "hd", "style": "natural"}


def test_success_sends_the_wire_format_and_keeps_the_revised_prompt(fake_api: FakeImagesApi) -> None:
    fake_api.script = [OK]
    [out] = OpenAIBackend().generate([GenerationItem(1, "A woman sitting at a table.", 3)],
                                     {**PARAMS, "api_base": fake_api.base})
    assert out.status == "done" and out.data == _png()
    assert out.revised_prompt == "A photo of a woman sitting at a table."
    assert out.model == "dall-e-3" and out.params["quality"] == "hd" and out.wall_time_s is not None
    [request] = fake_api.requests
    assert request["path"] == "/v1/images/generations" and request["auth"] == "Bearer sk-test-123"
    assert request["body"] == {"model": "dall-e-3", "prompt": "A woman sitting at a table.", "n": 1,
                               "size": "1024x1024", "quality": "hd", "response_format": "b64_json", "style": "natural"}


def test_429_waits_for_retry_after_then_succeeds(fake_api: FakeImagesApi) -> None:
    import time

    fake_api.script = [(429, {"error": {"code": "rate_limit_exceeded", "message": "slow down"}}, {"Retry-After": "1"}),
                       (503, {"error": {"message": "overloaded"}}, {"Retry-After": "0"}), OK]
    started = time.monotonic()
    [out] = OpenAIBackend().generate([GenerationItem(1, "A man walking.", 3)], {**PARAMS, "api_base": fake_api.base})
    assert out.status == "done" and len(fake_api.requests) == 3
    assert time.monotonic() - started >= 1.0  # honoured Retry-After


def test_long_retry_after_is_left_to_the_task(fake_api: FakeImagesApi) -> None:
    fake_api.script = [(429, {"error": {"message": "quota"}}, {"Retry-After": "120"})]
    with pytest.raises(TransientError) as info:
        OpenAIBackend().generate([GenerationItem(1, "x", 3)], {**PARAMS, "api_base": fake_api.base})
    assert info.value.retry_after == 120 and len(fake_api.requests) == 1


def test_refusal_fails_that_image_with_the_message(fake_api: FakeImagesApi) -> None:
    refusal = (400, {"error": {"code": "content_policy_violation", "type": "invalid_request_error",
                               "message": "Your request was rejected as a result of our safety system."}}, {})
    fake_api.script = [refusal, OK]
    refused, ok = OpenAIBackend().generate([GenerationItem(1, "bad", 1), GenerationItem(2, "good", 2)],
                                           {**PARAMS, "api_base": fake_api.base})
    assert refused.status == "failed" and refused.data is None
    assert "content_policy_violation" in refused.error and "safety system" in refused.error
    assert ok.status == "done"


def test_missing_key_is_permanent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(PermanentError, match="OPENAI_API_KEY"):
        OpenAIBackend().generate([GenerationItem(1, "x", 3)], PARAMS)
