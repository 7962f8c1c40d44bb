"""A stored upload is streamed to the import in the worker (common/upload_jobs.py), never read whole:
the runner gets a binary stream from the default storage, the parsers read it in bounded chunks
(common/uploads.py: the UTF-8 check in READ_CHUNK pieces, then the CSV reader over a text stream), and
the request's size limit is checked again on the stored file. Asserted on what is read (the sizes and
the count of reads), never on time."""
from __future__ import annotations

import io
from typing import Any, BinaryIO

import pytest
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import SimpleUploadedFile

from common import upload_jobs, uploads
from common.budget import Estimate

pytestmark = pytest.mark.django_db
ROWS = 200_000  # ~7 MB of CSV: seven READ_CHUNKs


class CountingReader:
    """A stored upload's handle that records every read's requested size and returned length."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle
        self.reads: list[tuple[int | None, int]] = []

    def read(self, size: int | None = -1) -> bytes:
        data = self.handle.read(size)
        self.reads.append((size, len(data)))
        return data

    read1 = read

    def __getattr__(self, name: str) -> Any:  # seek, tell, readable, seekable, closed, close...
        return getattr(self.handle, name)

    def __enter__(self) -> CountingReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.handle.close()


@pytest.fixture
def probe(monkeypatch: pytest.MonkeyPatch, settings: Any, media: Any) -> dict[str, Any]:
    """A runner of kind "probe" that parses its upload with `upload_rows` (the manifests' and machine
    labels' reader) and counts the rows; every stored upload opened through a CountingReader."""
    seen: dict[str, Any] = {"handles": []}

    def runner(params: dict[str, Any], files: dict[str, BinaryIO]) -> dict[str, Any]:
        seen["type"] = type(files["file"])
        errors: dict[str, list[str]] = {}
        rows = sum(1 for _ in uploads.upload_rows("big.csv", files["file"], errors, columns=("a", "b"),
                                                   columns_hint="a, b", empty_field="file"))
        return {"rows": rows, "errors": len(errors)}

    monkeypatch.setitem(upload_jobs._runners, "probe", runner)
    monkeypatch.setattr(upload_jobs, "task_send", lambda name, args: seen.setdefault("queued", args))

    class Storage:  # the default storage, its open() counted
        def open(self, name: str, mode: str = "rb") -> CountingReader:
            handle = CountingReader(default_storage.open(name, mode))
            seen["handles"].append(handle)
            return handle

        def __getattr__(self, name: str) -> Any:
            return getattr(default_storage, name)

    monkeypatch.setattr(upload_jobs, "default_storage", Storage())
    settings.REQUEST_WORK_BUDGET_S = 0.01
    return seen


def _stored_job(data: bytes, django_capture_on_commit_callbacks: Any) -> str:
    with django_capture_on_commit_callbacks(execute=True):
        state, body = upload_jobs.upload_import_request(
            kind="probe", campaign_id=1, owner_id=1, estimate=Estimate(data=1.0), params={},
            uploads={"file": SimpleUploadedFile("big.csv", data)}, inline=lambda: pytest.fail("imported in the request"))
    assert state == "building"
    return str(body["id"])


def test_a_large_stored_upload_reaches_the_parser_as_a_stream_read_in_bounded_chunks(
        probe: dict[str, Any], django_capture_on_commit_callbacks: Any) -> None:
    data = b"a,b\n" + b"".join(b"%d,row %d of a large upload\n" % (i, i) for i in range(ROWS))
    assert len(data) > 6 * uploads.READ_CHUNK
    job = _stored_job(data, django_capture_on_commit_callbacks)
    result = upload_jobs.upload_import_run(job_id=job)
    assert result is not None and result["status"] == "done", result
    assert result["result"] == {"rows": ROWS, "errors": 0}  # every row parsed from the stream
    assert not issubclass(probe["type"], bytes | bytearray)  # a stream, not the upload's bytes
    [handle] = probe["handles"]
    sizes = [size for size, _ in handle.reads]
    assert all(size is not None and 0 < size <= uploads.READ_CHUNK for size in sizes), set(sizes)  # never whole
    assert max(got for _, got in handle.reads) <= uploads.READ_CHUNK
    assert len(sizes) >= 2 * len(data) // uploads.READ_CHUNK  # the UTF-8 pass and the CSV pass, in chunks
    assert sum(got for _, got in handle.reads) >= 2 * len(data)
    assert default_storage.listdir(upload_jobs.PREFIX)[1] == []  # the stored upload is removed


def test_the_size_limit_is_checked_again_on_the_stored_upload(
        probe: dict[str, Any], settings: Any, django_capture_on_commit_callbacks: Any) -> None:
    job = _stored_job(b"a,b\n" + b"1,x\n" * 1000, django_capture_on_commit_callbacks)
    settings.UPLOAD_LIMITS = {"csv": 100}  # the deployment's limit, lowered after the upload was stored
    result = upload_jobs.upload_import_run(job_id=job)
    assert result is not None and result["status"] == "failed" and "larger than 100 bytes" in result["error"]
    assert probe["handles"] == [] and "type" not in probe  # refused before it was opened or parsed


@pytest.mark.parametrize("chunk", [1, 2, 3, 5, 7, 1 << 20])
def test_the_chunked_utf8_check_names_the_line_and_byte_whatever_the_chunk_size(
        monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    monkeypatch.setattr(uploads, "READ_CHUNK", chunk)
    good = "a,b\nü,漢字\n👩,x\n".encode()
    assert uploads.utf8_problem(io.BytesIO(good)) is None  # characters split across chunks are not errors
    bad = good + b"ok,\xff\n"
    assert uploads.utf8_problem(io.BytesIO(bad)) == (4, len(good) + 3)
    assert uploads.utf8_problem(io.BytesIO(good + "é".encode()[:1])) == (4, len(good))  # cut at the end
    errors: dict[str, list[str]] = {}
    assert list(uploads.upload_rows("x.csv", io.BytesIO(bad), errors, columns=("a", "b"), columns_hint="",
                                    empty_field="file")) == []
    assert errors == {"rows.4": [f"row 4: not valid UTF-8 (byte {len(good) + 3})"]}


@pytest.mark.parametrize("how", ["archive", "files"])
def test_an_image_import_with_its_files_over_the_budget_reads_them_from_storage(
        api: Any, researcher: Any, settings: Any, media: Any, monkeypatch: pytest.MonkeyPatch,
        django_capture_on_commit_callbacks: Any, how: str) -> None:
    """The manifest, and the zip (through common.zipsafe) or the image files, as stored streams."""
    import zipfile

    from campaigns.services import campaign_create
    from generation.backends.placeholder import placeholder_render
    from generation.models import Image
    from tests.builders.campaigns import small_spec

    campaign = campaign_create(owner=researcher, spec=small_spec(name="import", model="m", note=""))
    keys = list(campaign.prompts.order_by("position").values_list("key", flat=True))[:2]
    images = {f"{i}.png": placeholder_render(k, i, width=24, height=16) for i, k in enumerate(keys)}
    manifest = "prompt_key,sample_index,file\n" + "".join(f"{k},0,{i}.png\n" for i, k in enumerate(keys))
    if how == "archive":
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w") as zf:
            for name, data in images.items():
                zf.writestr(name, data)
        extra: dict[str, Any] = {"archive": SimpleUploadedFile("images.zip", out.getvalue())}
    else:
        extra = {"files": [SimpleUploadedFile(name, data) for name, data in images.items()]}
    settings.REQUEST_WORK_BUDGET_S = 0.01
    sent: list[Any] = []
    monkeypatch.setattr(upload_jobs, "task_send", lambda name, args: sent.append(args[0]))
    with django_capture_on_commit_callbacks(execute=True):
        resp = api.post(f"/api/campaigns/{campaign.pk}/images/import/",
                        {"manifest": SimpleUploadedFile("m.csv", manifest.encode()), **extra}, format="multipart")
    assert resp.status_code == 202 and sent == [resp.json()["id"]], resp.content
    result = upload_jobs.upload_import_run(job_id=sent[0])
    assert result is not None and result["status"] == "done" and result["result"]["imported"] == 2, result
    stored = Image.objects.filter(campaign=campaign, status=Image.Status.DONE).exclude(file="")
    assert sorted(media.joinpath(i.file).read_bytes() for i in stored) == sorted(images.values())
