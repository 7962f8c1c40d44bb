"""Importing images generated elsewhere: a good manifest, and every bad row kind rejected with
nothing stored."""
from __future__ import annotations

import io
import json
import struct
import zipfile
import zlib
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command

from campaigns.models import Campaign
from campaigns.services import campaign_create
from generation.backends.placeholder import placeholder_render
from generation.models import Image
from tests.builders.campaigns import small_spec

pytestmark = pytest.mark.django_db


@pytest.fixture
def imported(researcher: User, media: Path) -> Campaign:
    return campaign_create(owner=researcher, spec=small_spec(name="import", model="sdxl-turbo", note="run on host B"))


def _keys(campaign: Campaign) -> list[str]:
    return list(campaign.prompts.order_by("position").values_list("key", flat=True))


def _zip(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return out.getvalue()


def _bomb_png() -> bytes:
    """A valid tiny PNG whose header claims 30000 x 30000 pixels."""
    data = bytearray(placeholder_render("x", 1, width=8, height=8))
    ihdr = 8  # signature, then the IHDR chunk: length(4) type(4) data(13) crc(4)
    data[ihdr + 8:ihdr + 16] = struct.pack(">II", 30000, 30000)
    data[ihdr + 21:ihdr + 25] = struct.pack(">I", zlib.crc32(bytes(data[ihdr + 4:ihdr + 21])) & 0xFFFFFFFF)
    return bytes(data)


def test_good_manifest_csv_with_zip_via_api(api: Any, imported: Campaign, media: Path) -> None:
    keys = _keys(imported)
    files = {f"out/{i}.png": placeholder_render(k, i, width=40, height=30) for i, k in enumerate(keys)}
    prompt_text = imported.prompts.get(key=keys[1]).text
    manifest = "prompt_key,prompt,sample_index,file,url\n"
    manifest += f"{keys[0]},,0,out/0.png,\n"
    manifest += f',"{prompt_text}",1,out/1.png,\n'
    manifest += f"{keys[2]},,0,,https://cdn.example.org/a.png\n"
    response = api.post(f"/api/campaigns/{imported.pk}/images/import/", {
        "manifest": _upload("m.csv", manifest.encode()), "archive": _upload("images.zip", _zip(files))},
        format="multipart")
    assert response.status_code == 201, response.content
    assert response.data["imported"] == 3
    done = Image.objects.filter(campaign=imported, status="done").order_by("prompt__position", "sample_index")
    assert done.count() == 3
    first = done[0]
    assert first.backend == "import" and first.model == "sdxl-turbo" and first.params["note"] == "run on host B"
    assert (media / first.file).read_bytes() == files["out/0.png"] and first.width == 40
    assert done[2].source_url == "https://cdn.example.org/a.png" and done[2].file == ""
    # Same manifest again: nothing changes (content-addressed, idempotent).
    response = api.post(f"/api/campaigns/{imported.pk}/images/import/", {
        "manifest": _upload("m.csv", manifest.encode()), "archive": _upload("images.zip", _zip(files))},
        format="multipart")
    assert response.status_code == 201 and response.data["unchanged"] == 3 and response.data["imported"] == 0


def test_jsonl_with_folder_via_cli_completes_the_campaign(imported: Campaign, tmp_path: Path) -> None:
    folder = tmp_path / "gen"
    folder.mkdir()
    lines = []
    for prompt in imported.prompts.all():
        for index in range(prompt.samples):
            name = f"{prompt.pk}-{index}.png"
            (folder / name).write_bytes(placeholder_render(prompt.text, index, width=16, height=16))
            lines.append(json.dumps({"prompt_key": prompt.key, "sample_index": index, "file": name}))
    manifest = tmp_path / "manifest.jsonl"
    manifest.write_text("\n".join(lines) + "\n")
    out = io.StringIO()
    call_command("campaign", "import-images", str(imported.pk), str(manifest), "--files", str(folder), stdout=out)
    assert "8 images imported" in out.getvalue()
    assert Campaign.objects.get(pk=imported.pk).status == "generated"


def _upload(name: str, data: bytes) -> Any:
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile(name, data)


BAD_CASES = {
    "unknown prompt": ("{k0},0,a.png\nnope:x|y,0,a.png\n", "unknown prompt_key 'nope:x|y'"),
    "duplicate": ("{k0},0,a.png\n{k0},0,a.png\n", "already on row 2"),
    "missing file": ("{k0},0,a.png\n{k1},0,missing.png\n", "missing file 'missing.png'"),
    "not an image": ("{k0},0,a.png\n{k1},0,notes.txt\n", "not an image"),
    "too large": ("{k0},0,a.png\n{k1},0,big.png\n", "larger than the size limit"),
    "decompression bomb": ("{k0},0,a.png\n{k1},0,bomb.png\n", "decompression bomb"),
    "zip slip": ("{k0},0,a.png\n{k1},0,../../etc/passwd\n", "unsafe path"),
    "sample out of range": ("{k0},0,a.png\n{k1},5,a.png\n", "out of range"),
}


@pytest.mark.parametrize("case", BAD_CASES)
def test_bad_rows_are_named_and_nothing_is_stored(case: str, api: Any, imported: Campaign, media: Path,
                                                  settings: Any) -> None:
    settings.IMPORT_MAX_FILE_BYTES = 20_000
    template, message = BAD_CASES[case]
    keys = _keys(imported)
    manifest = "prompt_key,sample_index,file\n" + template.format(k0=keys[0], k1=keys[1])
    archive = _zip({"a.png": placeholder_render("a", 1, width=16, height=16), "notes.txt": b"hello, not a png",
                    "big.png": placeholder_render("big", 2, width=400, height=400) + b"\0" * 30_000,
                    "bomb.png": _bomb_png()})
    response = api.post(f"/api/campaigns/{imported.pk}/images/import/", {
        "manifest": _upload("m.csv", manifest.encode()), "archive": _upload("a.zip", archive)}, format="multipart")
    assert response.status_code == 400, response.content
    assert list(response.data["errors"]) == ["rows.3"], response.data
    assert message in " ".join(response.data["errors"]["rows.3"]) and "row 3" in response.data["errors"]["rows.3"][0]
    assert "nothing was stored" in response.data["detail"]
    assert not Image.objects.filter(campaign=imported).exists()
    assert not any(media.rglob("*.png")) and not any(media.rglob("*.webp"))


def test_unsafe_archive_member_and_wrong_encoding_are_rejected(api: Any, imported: Campaign, media: Path) -> None:
    keys = _keys(imported)
    archive = _zip({"a.png": placeholder_render("a", 1, width=16, height=16), "../evil.png": b"x"})
    manifest = f"prompt_key,sample_index,file\n{keys[0]},0,a.png\n".encode()
    response = api.post(f"/api/campaigns/{imported.pk}/images/import/", {
        "manifest": _upload("m.csv", manifest), "archive": _upload("a.zip", archive)}, format="multipart")
    assert response.status_code == 400 and "unsafe path" in response.data["errors"]["archive"][0]
    latin1 = f"prompt_key,sample_index,file\n{keys[0]},0,a.png\n# café\n".encode("latin-1")
    response = api.post(f"/api/campaigns/{imported.pk}/images/import/", {
        "manifest": _upload("m.csv", latin1), "archive": _upload("a.zip", _zip({"a.png": b"x"}))}, format="multipart")
    assert response.status_code == 400 and "not valid UTF-8" in response.data["errors"]["rows.3"][0]
    assert not Image.objects.filter(campaign=imported).exists() and not any(media.rglob("*.png"))


def test_cli_import_reports_every_problem(imported: Campaign, tmp_path: Path) -> None:
    manifest = tmp_path / "m.csv"
    manifest.write_text("prompt_key,sample_index,file\nnope,0,a.png\nnope2,x,/etc/passwd\n")
    with pytest.raises(CommandError) as info:
        call_command("campaign", "import-images", str(imported.pk), str(manifest), "--files", str(tmp_path),
                     stdout=io.StringIO())
    text = str(info.value)
    assert "rows.2" in text and "rows.3" in text and "sample_index must be an integer" in text and "unsafe path" in text
    assert not Image.objects.exists()


@pytest.mark.parametrize("url", ["http://user:pw@cdn.example.org/a.png", "https://cdn.example.org/a b.png",
                                 "https://cdn.example.org/a\u0000.png", "gopher://cdn.example.org/a.png",
                                 "javascript:alert(1)//.png"])
def test_url_rows_follow_the_outbound_url_rules(url: str, api: Any, imported: Campaign, media: Path) -> None:
    """A URL row is shown to annotators as it is: the same rules as any outbound URL (http(s) only,
    no user information, spaces or control characters), a 400 naming the row, nothing stored."""
    keys = _keys(imported)
    rows = [{"prompt_key": keys[0], "sample_index": 0, "url": "https://cdn.example.org/ok.png"},
            {"prompt_key": keys[1], "sample_index": 0, "url": url}]
    manifest = "\n".join(json.dumps(r) for r in rows).encode()
    response = api.post(f"/api/campaigns/{imported.pk}/images/import/", {"manifest": _upload("m.jsonl", manifest)},
                        format="multipart")
    assert response.status_code == 400, response.content
    assert list(response.data["errors"]) == ["rows.2"] and "url" in response.data["errors"]["rows.2"][0]
    assert not Image.objects.filter(campaign=imported).exclude(source_url="").exists()
