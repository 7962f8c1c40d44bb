"""Bad input in a zip is a 4xx naming the member, never a 500 (issue 13, point 9): a member whose
CRC does not match, in the image import's zip and in the campaign archive import. Both read their
zips through one helper (common/zipsafe.py), unit-tested here as well."""
from __future__ import annotations

import io
import json
import zipfile
from typing import Any

import pytest
from rest_framework.test import APIClient

from campaigns.models import Campaign
from campaigns.services import campaign_create
from generation.backends.placeholder import placeholder_render
from generation.models import Image
from tests.builders.campaigns import small_spec

from .conftest import World

pytestmark = pytest.mark.django_db


def corrupt(data: bytes, member: bytes) -> bytes:
    """The zip with one byte of a stored member's content changed: same sizes, wrong CRC."""
    at = data.index(member)
    flipped = bytes([member[len(member) // 2] ^ 0x01])
    return data[:at + len(member) // 2] + flipped + data[at + len(member) // 2 + 1:]


def stored_zip(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_STORED) as zf:
        for name, content in files.items():
            zf.writestr(name, content)
    return out.getvalue()


def test_image_import_zip_with_a_bad_crc_is_a_400_naming_the_member(api: APIClient, researcher: Any,
                                                                   media: Any) -> None:
    campaign = campaign_create(owner=researcher, spec=small_spec(name="import"))
    key = campaign.prompts.order_by("position").first().key
    png = placeholder_render(key, 0, width=16, height=16)
    archive = corrupt(stored_zip({"out/0.png": png}), png)
    manifest = f"prompt_key,sample_index,file\n{key},0,out/0.png\n".encode()
    client = APIClient(raise_request_exception=False)
    client.force_authenticate(researcher)
    response = client.post(f"/api/campaigns/{campaign.pk}/images/import/",
                           {"manifest": io.BytesIO(manifest), "archive": io.BytesIO(archive)}, format="multipart")
    assert response.status_code == 400, response.content[:300]
    text = json.dumps(response.json())
    assert "out/0.png" in text and "CRC" in text
    assert not Image.objects.filter(campaign=campaign).exclude(file="").exists()


def _export(world: World) -> bytes:
    response = world.client("researcher_x").get(f"/api/campaigns/{world.campaign.pk}/export/")
    assert response.status_code == 200
    return b"".join(response.streaming_content) if response.streaming else response.content


def test_campaign_archive_with_a_bad_crc_is_a_400_naming_the_member(world: World) -> None:
    exported = _export(world)
    with zipfile.ZipFile(io.BytesIO(exported)) as zf:
        members = {name: zf.read(name) for name in zf.namelist()}
    archive = corrupt(stored_zip(members), members["prompts.jsonl"][:200])
    before = Campaign.objects.count()
    client = world.client("researcher_x")
    client.raise_request_exception = False
    response = client.post("/api/campaigns/import/", {"archive": io.BytesIO(archive)}, format="multipart")
    assert response.status_code == 400, response.content[:300]
    text = json.dumps(response.json())
    assert "prompts.jsonl" in text and "CRC" in text
    assert Campaign.objects.count() == before


def test_safe_zip_reports_each_kind_of_damage_by_member(tmp_path: Any) -> None:
    from common.zipsafe import SafeZip, ZipMemberError

    good = stored_zip({"a.txt": b"hello world, hello zip", "dir/b.txt": b"second member"})
    with SafeZip(good, field="archive") as z:
        assert z.read("a.txt", limit=100) == b"hello world, hello zip"
        assert z.names() == ["a.txt", "dir/b.txt"]
    with SafeZip(corrupt(good, b"second member"), field="archive") as z, pytest.raises(ZipMemberError) as info:
        z.read("dir/b.txt", limit=100)
    assert info.value.member == "dir/b.txt" and "CRC" in info.value.message
    assert info.value.errors == {"archive": [info.value.message]}
    with SafeZip(good, field="archive") as z, pytest.raises(ZipMemberError, match="larger than"):
        z.read("a.txt", limit=5)
    with pytest.raises(ZipMemberError, match="not a zip"):
        SafeZip(b"not a zip at all", field="archive")
    slip = stored_zip({"../evil.txt": b"x", "/abs.txt": b"y"})
    with SafeZip(slip, field="archive") as z:
        assert len(z.problems()) == 2 and all("unsafe path" in p for p in z.problems())
    encrypted = bytearray(good)
    for signature, offset in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):  # local and central "encrypted" flags
        at = bytes(encrypted).find(signature)
        while at != -1:
            encrypted[at + offset] |= 0x01
            at = bytes(encrypted).find(signature, at + 4)
    with SafeZip(bytes(encrypted), field="archive") as z, pytest.raises(ZipMemberError, match="encrypted"):
        z.read("a.txt", limit=100)
