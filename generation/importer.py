"""The `import` path: images generated elsewhere, uploaded with a manifest.

Manifest: CSV (header row) or JSON Lines, one image per row with `prompt_key` (or the exact
`prompt` text), `sample_index`, and either `file` (a name in the uploaded files / zip / folder) or
`url` (register an image by URL, no file). Every row is validated before anything is stored, and
every problem names its row (the line number in the manifest). Then the files are written to
storage (content-addressed: a retried import finds them) and all rows are recorded in one
transaction: all or nothing.
"""
from __future__ import annotations

import io
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Protocol

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from PIL import Image as PILImage

from campaigns.models import Campaign, Prompt
from campaigns.revision import data_changed
from common import fastpath
from common.errors import ApplicationError, ConflictError
from common.inputs import BodyError, brief
from common.numbers import number
from common.outbound import OutboundBlocked, check_url
from common.uploads import upload_rows
from common.zipsafe import SafeZip, ZipMemberError, path_is_safe

from .bulk import ImageRecord, images_plan_recorded, images_record
from .models import Image
from .services import STARTABLE, campaign_generation_refresh, images_plan
from .storage import image_store, png_normalize

S = Image.Status
MAX_ROWS = 100_000


class FileSource(Protocol):
    def problems(self) -> list[str]: ...
    def exists(self, name: str) -> bool: ...
    def size(self, name: str) -> int: ...
    def read(self, name: str, limit: int) -> bytes: ...


class NoFiles:
    def problems(self) -> list[str]:
        return []

    def exists(self, name: str) -> bool:
        return False

    def size(self, name: str) -> int:
        return 0

    def read(self, name: str, limit: int) -> bytes:
        raise FileNotFoundError(name)


class ZipSource:
    """An uploaded zip, read through common.zipsafe (a damaged member is a problem naming it)."""

    def __init__(self, file: str | Path | BinaryIO):
        self.zip = SafeZip(file, field="archive")
        self.members = self.zip.members

    def problems(self) -> list[str]:
        # A member over IMPORT_MAX_FILE_BYTES is named by its manifest row (reads stop at the limit).
        return self.zip.problems(max_total=settings.IMPORT_MAX_ARCHIVE_BYTES, max_ratio=100)

    def exists(self, name: str) -> bool:
        return self.zip.exists(name)

    def size(self, name: str) -> int:
        return self.zip.size(name)

    def read(self, name: str, limit: int) -> bytes:
        # Never more than the limit, whatever the header claims; the CRC is checked to the end.
        return self.zip.read(name, limit=limit)


class DirectorySource:
    def __init__(self, root: str | Path):
        self.root = Path(root).resolve()

    def _path(self, name: str) -> Path | None:
        path = (self.root / name).resolve()
        return path if path.is_relative_to(self.root) and path.is_file() else None

    def problems(self) -> list[str]:
        return []

    def exists(self, name: str) -> bool:
        return self._path(name) is not None

    def size(self, name: str) -> int:
        path = self._path(name)
        return path.stat().st_size if path else 0

    def read(self, name: str, limit: int) -> bytes:
        path = self._path(name)
        assert path is not None
        with path.open("rb") as handle:
            return handle.read(limit + 1)


class UploadedFilesSource:
    """Files uploaded in the same multipart request (`files` fields), by their names."""

    def __init__(self, files: list[Any]):
        self.files = {f.name: f for f in files}

    def problems(self) -> list[str]:
        return []

    def exists(self, name: str) -> bool:
        return name in self.files

    def size(self, name: str) -> int:
        return int(self.files[name].size)

    def read(self, name: str, limit: int) -> bytes:
        handle = self.files[name]
        handle.seek(0)
        return handle.read(limit + 1)


@dataclass
class ManifestRow:
    line: int
    prompt: Prompt
    sample_index: int
    file: str = ""
    url: str = ""
    sha256: str = ""  # of the normalised PNG, filled when validated


MANIFEST_COLUMNS = ("prompt_key", "prompt", "sample_index", "file", "url")


def _manifest_rows(name: str, data: bytes | BinaryIO, errors: dict[str, list[str]]) -> Iterator[tuple[int, dict[str, Any]]]:
    return upload_rows(name, data, errors, columns=MANIFEST_COLUMNS,
                       columns_hint="columns: prompt_key or prompt, sample_index, file or url", empty_field="manifest",
                       encoding_hint="; save the manifest as UTF-8")


def image_url_problem(url: Any) -> str | None:
    """Why `url` cannot be an image's `source_url` (registered by URL), or None: the same URL rules as
    every outbound request (common.outbound): http(s) only, no user information, spaces or control
    characters, at most 1000 characters. The URL is shown to annotators and in the console, never
    fetched. Used by the image import and the campaign archive import."""
    if not isinstance(url, str):
        return "url must be a plain http(s) URL (text)"
    try:
        check_url(url, what="url")
        if len(url) > 1000:
            raise OutboundBlocked("is longer than 1000 characters")
    except OutboundBlocked as exc:
        return f"url must be a plain http(s) URL of at most 1000 characters: {exc}"
    return None


def _check_image(data: bytes, limit: int) -> str | None:
    """Why these bytes are not an acceptable image, or None."""
    if len(data) > limit:
        return f"larger than the size limit of {limit} bytes"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", PILImage.DecompressionBombWarning)
            with PILImage.open(io.BytesIO(data)) as image:
                pixels = image.width * image.height
                if pixels > settings.IMPORT_MAX_PIXELS:
                    return (f"decompression bomb: {image.width}x{image.height} is over the limit of "
                            f"{settings.IMPORT_MAX_PIXELS} pixels")
                image.load()
    except (PILImage.DecompressionBombError, PILImage.DecompressionBombWarning) as exc:
        return f"decompression bomb: {exc}"
    except (PILImage.UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        return f"not an image ({type(exc).__name__}: {exc})"
    return None


def image_bytes_check(data: bytes, limit: int | None = None) -> str | None:
    """Why uploaded bytes are not an acceptable image (over the size limit, not decodable by Pillow,
    a decompression bomb), or None: the import's rule, for every other upload of an image."""
    return _check_image(data, settings.IMPORT_MAX_FILE_BYTES if limit is None else limit)


def images_import_validate(*, campaign: Campaign, manifest_name: str, manifest: bytes | BinaryIO,
                           files: FileSource) -> list[ManifestRow]:
    """Every row checked; raises ApplicationError listing every problem by row, or returns the rows.

    Long because it is the import's whole validation in one pass over the manifest (prompt by key or
    text, sample, file in the archive, size, type, duplicates), collecting every row's problems before
    anything is stored: the checks share the lookups and the per-row problem list."""
    errors: dict[str, list[str]] = {}
    for problem in files.problems():
        errors.setdefault("archive", []).append(problem)
    prompts_by_key = {p.key: p for p in Prompt.objects.filter(campaign=campaign)}
    prompts_by_text: dict[str, list[Prompt]] = {}
    for p in prompts_by_key.values():
        prompts_by_text.setdefault(p.text, []).append(p)
    existing = {(i.prompt_id, i.sample_index): i for i in Image.objects.filter(campaign=campaign)
                .exclude(file="", source_url="")}
    seen: dict[tuple[int, int], int] = {}
    rows: list[ManifestRow] = []
    limit = settings.IMPORT_MAX_FILE_BYTES
    count = 0
    for line, raw in _manifest_rows(manifest_name, manifest, errors):
        count += 1
        if count > MAX_ROWS:
            errors.setdefault(f"rows.{line}", []).append(f"row {line}: more than {MAX_ROWS} rows")
            break
        problems: list[str] = []
        prompt: Prompt | None = None
        if raw.get("prompt_key") not in (None, ""):
            prompt = prompts_by_key.get(str(raw["prompt_key"]))
            if prompt is None:
                problems.append(f"unknown prompt_key {brief(raw['prompt_key'])}")
        elif raw.get("prompt") not in (None, ""):
            matches = prompts_by_text.get(str(raw["prompt"]), [])
            if len(matches) == 1:
                prompt = matches[0]
            elif not matches:
                problems.append(f"unknown prompt {brief(str(raw['prompt'])[:200])} (no prompt of the campaign has this text)")
            else:
                problems.append("prompt text matches several prompts: use prompt_key")
        else:
            problems.append("prompt_key or prompt is required")
        sample: int | None = None
        try:  # common.numbers: short text, a whole number
            sample = number(raw.get("sample_index", ""), field="sample_index", kind="int", minimum=-(2**31),
                            maximum=2**31 - 1)
        except BodyError:
            problems.append(f"sample_index must be an integer, got {brief(raw.get('sample_index'))}")
        if prompt is not None and sample is not None and not 0 <= sample < prompt.samples:
            problems.append(f"sample_index {sample} is out of range for {brief(prompt.key)} (0 to {prompt.samples - 1})")
            sample = None
        file, url = str(raw.get("file") or "").strip(), str(raw.get("url") or "").strip()
        if bool(file) == bool(url):
            problems.append("give exactly one of file and url")
        if prompt is not None and sample is not None:
            key = (prompt.pk, sample)
            if key in seen:
                problems.append(f"duplicate: {brief(prompt.key)} sample {sample} is already on row {seen[key]}")
            else:
                seen[key] = line
        row = ManifestRow(line=line, prompt=prompt, sample_index=sample or 0, file=file, url=url)  # type: ignore[arg-type]
        if url:
            why = image_url_problem(url)
            if why:
                problems.append(why)
        elif file:
            if not path_is_safe(file):
                problems.append(f"file {brief(file)} has an unsafe path (absolute or with '..')")
            elif not files.exists(file):
                problems.append(f"missing file {brief(file)} (not among the uploaded files)")
            elif files.size(file) > limit:
                problems.append(f"file {brief(file)} is larger than the size limit of {limit} bytes")
            else:
                try:
                    data = files.read(file, limit)
                except ZipMemberError as exc:
                    data, why = b"", exc.message
                else:
                    why = None
                why = why or _check_image(data, limit)
                if why:
                    problems.append(f"file {brief(file)}: {why}")
                else:
                    import hashlib

                    row.sha256 = hashlib.sha256(png_normalize(data)[0]).hexdigest()
        if prompt is not None and sample is not None and (prompt.pk, sample) in existing and not problems:
            current = existing[(prompt.pk, sample)]
            same = (row.sha256 and current.sha256 == row.sha256) or (url and current.source_url == url)
            if not same:
                problems.append(f"{brief(prompt.key)} sample {sample} already has an image (#{current.pk})")
        if problems:
            errors.setdefault(f"rows.{line}", []).extend(f"row {line}: {p}" for p in problems)
        else:
            rows.append(row)
    if not errors and not rows:
        errors["manifest"] = ["the manifest has no rows"]
    if errors:
        bad = sum(1 for k in errors if k.startswith("rows."))
        raise ApplicationError(f"Import rejected ({bad} bad rows of {count}); nothing was stored.", errors=errors)
    return rows


def images_import(*, campaign: Campaign, manifest_name: str, manifest: bytes | BinaryIO, files: FileSource | None = None,
                  ) -> dict[str, int]:
    """Validate every row, then store the files, then record every image in one transaction."""
    if campaign.status not in STARTABLE:
        raise ConflictError(f"Campaign {campaign.pk} is {campaign.status}: images can no longer be imported.")
    files = files or NoFiles()
    rows = images_import_validate(campaign=campaign, manifest_name=manifest_name, manifest=manifest, files=files)
    stored = {}
    for row in rows:
        if row.file:
            stored[row.line] = image_store(files.read(row.file, settings.IMPORT_MAX_FILE_BYTES))
    backend = campaign.spec.get("backend", {})
    how = {"model": str(backend.get("model") or ""), "note": backend.get("note", ""), "manifest": manifest_name,
           "now": timezone.now()}
    with transaction.atomic():
        if fastpath.enabled("image_import") and not Image.objects.filter(campaign=campaign).exists():
            # Nothing planned yet: the planning statement inserts every imported row with its final
            # values (generation.bulk), instead of inserting it and then rewriting it.
            records = [_record(row, stored.get(row.line), image_id=0) for row in rows]
            if images_plan_recorded(campaign_id=campaign.pk, records=records, **how) != len(records):
                raise ConflictError(f"Campaign {campaign.pk}'s images were planned by another request during the "
                                    "import; nothing was stored. Import again.")
            data_changed(campaign_ids=[campaign.pk])  # the report counts images (as images_plan does)
            imported = len(records)
        else:
            imported = _record_planned(campaign, rows, stored, how)
        if campaign.status == Campaign.Status.DRAFT and not Image.objects.filter(
                campaign=campaign).exclude(status__in=(S.DONE, S.FILTERED, S.FAILED)).exists():
            from campaigns.services import campaign_status_set

            campaign_status_set(campaign=campaign, status=Campaign.Status.GENERATED)
    campaign_generation_refresh(campaign_id=campaign.pk)
    return {"imported": imported, "unchanged": len(rows) - imported, "rows": len(rows)}


def _record(row: ManifestRow, meta: Any, *, image_id: int) -> ImageRecord:
    """What the import stores for one manifest row: its URL, or its stored file (`meta`)."""
    stored = {} if meta is None else {"file": meta.file, "web_file": meta.web_file, "sha256": meta.sha256,
                                      "width": meta.width, "height": meta.height}
    return ImageRecord(image_id=image_id, row=row.line, source_url=row.url, prompt_id=row.prompt.pk,
                       sample_index=row.sample_index, **stored)


def _record_planned(campaign: Campaign, rows: list[ManifestRow], stored: dict[int, Any], how: dict[str, Any]) -> int:
    """Plan the campaign's missing images, then record the rows on the planned images (one UPDATE,
    generation.bulk); rows already imported with the same file or URL are left unchanged. Returns how
    many rows were recorded. Inside the import's transaction."""
    had = Image.objects.filter(campaign=campaign).exists()
    created = images_plan(campaign=campaign)
    # The planned rows, locked (id order), read as plain values: one UPDATE records them all, never one
    # save() per row. Rows this transaction has just created (a campaign with no image before) are
    # invisible to every other transaction until COMMIT: no lock to take (100,000 row locks cost
    # PostgreSQL about a second).
    planned = Image.objects.filter(campaign=campaign)
    if had or created != planned.count():
        planned = planned.select_for_update()
    by_key = {(p, i): (pk, status, sha, url, file) for pk, p, i, status, sha, url, file in
              planned.order_by("id").values_list("id", "prompt_id", "sample_index", "status", "sha256",
                                                 "source_url", "file")}
    records: list[ImageRecord] = []
    for row in rows:
        pk, status, sha, url, file = by_key[(row.prompt.pk, row.sample_index)]
        meta = stored.get(row.line)
        if status == S.DONE and (meta and sha == meta.sha256 or row.url and url == row.url):
            continue
        if status in (S.DONE, S.RUNNING) and (file or url or status == S.RUNNING):
            raise ConflictError(f"Image for {brief(row.prompt.key)} sample {row.sample_index} changed during the "
                                "import; nothing was stored.")
        records.append(_record(row, meta, image_id=pk))
    images_record(records=records, **how)
    return len(records)
