"""No researcher-controlled outbound request carries a secret or reaches an internal address (issue
13, point 1).

A spec's `backend.api_base` must lie under one of the deployment's OPENAI_API_BASES (default: the
official endpoint only): anything else is a 400 naming the field at preview and create (and in the
validator the archive import runs). The worker re-checks at send time, through common.outbound:
the key goes to an allowed base only, never across a redirect, never to a private address the
deployment did not list; error text kept from a remote service is short and never a body from a
host that was not allowed. Real HTTP servers on loopback play the API and the attacker."""
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
from rest_framework.test import APIClient

from campaigns.models import Campaign
from campaigns.services import campaign_create
from campaigns.spec import SpecError, spec_normalize
from generation.models import Image
from generation.services import generation_start, images_generate_batch
from tests.conftest import GEP_MINIMAL

pytestmark = pytest.mark.django_db
KEY = "sk-deployment-secret-0123456789"


class Recorder:
    """A loopback HTTP server that records every request (and whether it carried the key) and
    answers from a script (default: an Images API success)."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.reply: Any = None
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                outer.requests.append({"path": self.path, "auth": self.headers.get("Authorization"),
                                       "body": self.rfile.read(length)})
                status, payload, headers = outer.reply() if outer.reply else _ok()
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _ok() -> tuple[int, bytes, dict[str, str]]:
    out = io.BytesIO()
    PILImage.new("RGB", (8, 8), (1, 2, 3)).save(out, format="PNG")
    body = {"data": [{"b64_json": base64.b64encode(out.getvalue()).decode()}]}
    return 200, json.dumps(body).encode(), {"Content-Type": "application/json"}


@pytest.fixture
def api_server() -> Iterator[Recorder]:
    server = Recorder()
    yield server
    server.close()


@pytest.fixture
def attacker() -> Iterator[Recorder]:
    server = Recorder()
    server.reply = lambda: (200, b"attacker's page: SECRET-INTERNAL-DATA " * 200, {"Content-Type": "text/plain"})
    yield server
    server.close()


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    return KEY


def openai_spec(api_base: str | None) -> dict[str, Any]:
    spec = {**GEP_MINIMAL, "design": {"settings": ["neutral"], "samples": 1, "contexts": ["in a park"]},
            "backend": {"name": "openai"}}
    if api_base is not None:
        spec["backend"]["api_base"] = api_base
    return spec


FOREIGN = [
    "http://127.0.0.1:8000", "http://localhost/v1", "http://169.254.169.254/latest/meta-data/",
    "http://[::1]:8080/", "http://10.0.0.5/", "file:///etc/passwd", "gopher://127.0.0.1:70/_x",
    "ftp://api.openai.com/", "http://api.openai.com", "https://api.openai.com.evil.test",
    "https://api.openai.com@evil.test/", "https://evil.test/https://api.openai.com", "https://api.openai.com:8443",
    "https://api.openai.com/v1/../../x", "javascript:alert(1)", "https://api.openai.com/\x00", "x" * 5000,
]


@pytest.mark.parametrize("api_base", FOREIGN)
def test_a_foreign_api_base_is_a_400_at_preview_and_create(api: APIClient, api_base: str) -> None:
    for url in ("/api/specs/preview/", "/api/campaigns/"):
        response = api.post(url, openai_spec(api_base), format="json")
        assert response.status_code == 400, (url, api_base, response.content[:200])
        errors = response.json()["errors"]
        assert "backend.api_base" in errors, errors
        assert all(len(m) <= 600 for m in errors["backend.api_base"])
    assert not Campaign.objects.exists()


def test_the_official_endpoint_and_listed_bases_are_accepted(api: APIClient, settings: Any) -> None:
    for base in (None, "https://api.openai.com", "https://api.openai.com/"):
        assert api.post("/api/specs/preview/", openai_spec(base), format="json").status_code == 200, base
    proxy = "https://llm-gateway.lab.example/openai"
    assert api.post("/api/specs/preview/", openai_spec(proxy), format="json").status_code == 400
    settings.OPENAI_API_BASES = ["https://api.openai.com", proxy]
    assert api.post("/api/specs/preview/", openai_spec(proxy), format="json").status_code == 200
    assert api.post("/api/specs/preview/", openai_spec(proxy + "x"), format="json").status_code == 400


def test_the_spec_validator_itself_refuses_it() -> None:
    """The archive import (and any other door) runs spec_normalize: it refuses the same values."""
    for base in ("http://169.254.169.254/", "gopher://x/"):
        with pytest.raises(SpecError) as info:
            spec_normalize(openai_spec(base))
        assert "backend.api_base" in info.value.errors


def _stored_campaign(researcher: Any, api_base: str, settings: Any) -> Campaign:
    """A campaign whose stored spec names `api_base`, as one created before this rule, or written
    into the database any other way, would: the worker must not trust the stored spec."""
    allowed = settings.OPENAI_API_BASES
    settings.OPENAI_API_BASES = [api_base]
    campaign = campaign_create(owner=researcher, spec=openai_spec(api_base))
    settings.OPENAI_API_BASES = allowed
    return campaign


def _generate(campaign: Campaign) -> list[Image]:
    generation_start(campaign=campaign)
    ids = list(Image.objects.filter(campaign=campaign).values_list("id", flat=True))
    for image_id in ids:
        images_generate_batch(image_ids=[image_id], task_id=f"t-{image_id}")
    return list(Image.objects.filter(campaign=campaign))


def test_the_worker_sends_the_key_only_to_an_allowed_base(researcher: Any, media: Any, settings: Any, key: str,
                                                          api_server: Recorder, attacker: Recorder) -> None:
    settings.OUTBOUND_PRIVATE_ALLOWLIST = ["127.0.0.1/32"]  # the loopback servers stand for public hosts
    settings.OPENAI_API_BASES = [api_server.base]
    campaign = _stored_campaign(researcher, attacker.base, settings)
    images = _generate(campaign)
    assert attacker.requests == []  # not a byte, let alone the key
    assert {i.status for i in images} == {"failed"}
    assert all("not one of the allowed bases" in i.error and len(i.error) <= 1000 for i in images)
    listed = APIClient()
    listed.force_authenticate(researcher)
    body = listed.get(f"/api/campaigns/{campaign.pk}/images/").content.decode()
    assert KEY not in body and "SECRET-INTERNAL-DATA" not in body

    # The allowed base gets it, with the key.
    good = campaign_create(owner=researcher, spec=openai_spec(api_server.base))
    assert {i.status for i in _generate(good)} == {"done"}
    assert api_server.requests and all(r["auth"] == f"Bearer {KEY}" for r in api_server.requests)


def test_loopback_bases_still_need_the_private_allowlist(researcher: Any, media: Any, settings: Any, key: str,
                                                         api_server: Recorder) -> None:
    settings.OPENAI_API_BASES = [api_server.base]
    settings.OUTBOUND_PRIVATE_ALLOWLIST = []
    campaign = campaign_create(owner=researcher, spec=openai_spec(api_server.base))
    images = _generate(campaign)
    assert api_server.requests == []
    assert {i.status for i in images} == {"failed"} and all("loopback" in i.error for i in images)


def test_a_redirect_never_carries_the_key_off_the_allowed_base(researcher: Any, media: Any, settings: Any, key: str,
                                                               api_server: Recorder, attacker: Recorder) -> None:
    settings.OUTBOUND_PRIVATE_ALLOWLIST = ["127.0.0.1/32"]
    settings.OPENAI_API_BASES = [api_server.base]
    api_server.reply = lambda: (307, b"", {"Location": f"{attacker.base}/steal"})
    images = _generate(campaign_create(owner=researcher, spec=openai_spec(api_server.base)))
    assert attacker.requests == []
    assert {i.status for i in images} == {"failed"} and all("redirect" in i.error for i in images)


def test_remote_error_text_is_short(researcher: Any, media: Any, settings: Any, key: str,
                                    api_server: Recorder, monkeypatch: pytest.MonkeyPatch) -> None:
    settings.OUTBOUND_PRIVATE_ALLOWLIST = ["127.0.0.1/32"]
    settings.OPENAI_API_BASES = [api_server.base]
    huge = {"error": {"code": "bad_param", "message": "m" * 100_000}}
    api_server.reply = lambda: (400, json.dumps(huge).encode(), {"Content-Type": "application/json"})
    images = _generate(campaign_create(owner=researcher, spec=openai_spec(api_server.base)))
    assert {i.status for i in images} == {"failed"}
    assert all(len(i.error) <= 1000 and "bad_param" in i.error for i in images)
    api_server.reply = lambda: (500, b"<html>" + b"z" * 100_000, {"Content-Type": "text/html"})
    from generation.backends import GenerationItem, TransientError, openai_images

    monkeypatch.setattr(openai_images, "IN_PROCESS_ATTEMPTS", 1)
    with pytest.raises(TransientError) as info:
        openai_images.OpenAIBackend().generate([GenerationItem(1, "x", 1)], {"name": "openai",
                                                                             "api_base": api_server.base})
    assert len(str(info.value)) <= 600
