"""Issue 13, point 7: `POST /api/campaigns/import/` runs the validators of the normal paths: the spec
validator (unknown keys, the `backend.api_base` allow-list), the image import's URL rule for
`source_url` and the storage-key rule for `file` / `web_file`; all or nothing, 400 naming the field."""
from __future__ import annotations

import io
import json
import zipfile
from typing import Any

import pytest
from django.contrib.auth.models import User

from annotation.models import Annotator, Answer, Question
from campaigns.models import Campaign, Prompt
from generation.importer import image_url_problem
from generation.models import Image
from generation.storage import storage_key_problem
from tests.builders.metrics import SMALL_GEP, annotators, answer_all, campaign_with_questions, gep_label
from tests.conftest import token_client

pytestmark = pytest.mark.django_db


def _members(researcher: User) -> dict[str, bytes]:
    campaign, questions = campaign_with_questions(researcher, SMALL_GEP)
    answer_all(campaign, questions[:4], gep_label, annotators(2))
    data = token_client(researcher).get(f"/api/campaigns/{campaign.pk}/export/").content
    zf = zipfile.ZipFile(io.BytesIO(data))
    return {n: zf.read(n) for n in zf.namelist()}


def _zip(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return out.getvalue()


def _with_spec(members: dict[str, bytes], change: Any) -> bytes:
    manifest = json.loads(members["manifest.json"])
    change(manifest["campaign"]["spec"])
    return _zip({**members, "manifest.json": json.dumps(manifest).encode()})


def _with_image(members: dict[str, bytes], **fields: Any) -> bytes:
    rows = [json.loads(line) for line in members["images.jsonl"].decode().splitlines() if line.strip()]
    rows[0].update(fields)
    return _zip({**members, "images.jsonl": "".join(json.dumps(r) + "\n" for r in rows).encode()})


def _counts() -> tuple[int, ...]:
    return (Campaign.objects.count(), Prompt.objects.count(), Image.objects.count(), Question.objects.count(),
            Answer.objects.count(), Annotator.objects.count())


def test_archive_import_runs_the_normal_validators_all_or_nothing(researcher: User, other_researcher: User) -> None:
    members = _members(researcher)
    client = token_client(other_researcher)
    cases = {
        "surprise": _with_spec(members, lambda s: s.update(surprise=1)),
        "backend.api_base": _with_spec(members, lambda s: s.update(backend={
            "name": "openai", "model": "gpt-image-1", "api_base": "http://169.254.169.254/latest"})),
        "images.1.source_url": _with_image(members, source_url="javascript:alert(document.cookie)"),
        "images.1.file": _with_image(members, file="../../etc/passwd"),
        "images.1.web_file": _with_image(members, web_file="/etc/passwd"),
    }
    extra_keys = {
        "images.1.file": ["images\\..\\..\\x.png", "archives/campaign-1-20260101.zip", "images/./a.png"],
        "images.1.source_url": ["data:text/html,<script>1</script>", "file:///etc/passwd", "vbscript:x"],
    }
    for field, values in extra_keys.items():
        for n, value in enumerate(values):
            cases[f"{field}#{n}"] = _with_image(members, **{field.split(".")[-1]: value})
    before = _counts()
    for field, data in cases.items():
        response = client.post("/api/campaigns/import/", {"archive": io.BytesIO(data)}, format="multipart")
        assert response.status_code == 400, (field, response.content)
        assert field.split("#")[0] in response.json()["errors"], (field, response.json())
        assert _counts() == before, field  # nothing stored
    # The untouched archive still imports, with the spec as the validator writes it.
    ok = client.post("/api/campaigns/import/", {"archive": io.BytesIO(_zip(members))}, format="multipart")
    assert ok.status_code == 201, ok.content
    imported = Campaign.objects.get(pk=ok.json()["id"])
    assert imported.spec == json.loads(members["manifest.json"])["campaign"]["spec"]


def test_the_shared_validators_unit() -> None:
    assert image_url_problem("https://images.example.org/a.png") is None
    for bad in ("javascript:alert(1)", "data:image/png;base64,AAAA", "ftp://x/y", "http://u:p@x/y", 5, "https://" + "a" * 1000):
        assert image_url_problem(bad), bad
    assert storage_key_problem("images/ab/" + "c" * 64 + ".png") is None
    assert storage_key_problem("web/ab/x.webp") is None
    for bad in ("../../etc/passwd", "/etc/passwd", "images/../x", "images\\x", "C:/x", "images//x", "images/./x",
                "archives/a.zip", "", None, "images/" + "x" * 300):
        assert storage_key_problem(bad), bad
