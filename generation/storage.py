"""Image files through Django's storage API (local media or S3), content-addressed.

Originals: `images/<sha256[:2]>/<sha256>.png`; annotation-UI derivatives (at most 768 px, WebP):
`web/<sha256[:2]>/<sha256>.webp`, where sha256 is the digest of the original PNG. The names say
nothing about the prompt or the model (annotators see the URLs), and storing the same pixels twice
finds the existing object instead of writing a second one.
"""
from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass
from typing import Any

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from PIL import Image

from common.inputs import brief
from common.zipsafe import path_is_safe

WEB_MAX_PX = 768
WEB_QUALITY = 85


@dataclass(frozen=True)
class StoredImage:
    file: str
    web_file: str
    sha256: str
    width: int
    height: int


def image_key(sha256: str) -> str:
    return f"images/{sha256[:2]}/{sha256}.png"


def web_key(sha256: str) -> str:
    return f"web/{sha256[:2]}/{sha256}.webp"


IMAGE_NAMESPACES = ("images/", "web/")


def storage_key_problem(key: Any) -> str | None:
    """Why `key` cannot be an image's storage key (`file`, `web_file`), or None. The zip-slip rule of
    every path from outside (common.zipsafe.path_is_safe: no absolute path, drive, backslash, NUL or
    `..`), no `.` segments, and inside the image namespaces (`images/`, `web/`, where image_key and
    web_key write): a key from outside can never name an archive or another stored object."""
    if not isinstance(key, str):
        return "must be a storage key (text)"
    if len(key) > 300:
        return "is longer than 300 characters"
    if not path_is_safe(key) or any(part in ("", ".") for part in key.split("/")):
        return f"{brief(key)} is not a safe storage key (absolute, with '..', '.', '//' or a backslash)"
    if not key.startswith(IMAGE_NAMESPACES):
        return f"{brief(key)} is outside the image storage ({', '.join(IMAGE_NAMESPACES)})"
    return None


def png_normalize(data: bytes) -> tuple[bytes, int, int]:
    """Re-encode every image from its pixels as a PNG with nothing else: no EXIF, no text chunks
    (which may name the model or prompt, or carry HTML), no ICC profile, no bytes after the image's
    end (a PNG followed by a zip or an HTML page). PNGs too: every upload, generated image, import
    and example goes through here (image_store)."""
    with Image.open(io.BytesIO(data)) as opened:
        opened.load()
        image: Image.Image = opened
        if image.mode not in ("RGB", "RGBA", "L", "LA"):
            image = image.convert("RGBA" if "A" in image.getbands() else "RGB")
        clean = Image.frombytes(image.mode, image.size, image.tobytes())  # pixels only: an empty `info`
    out = io.BytesIO()
    clean.save(out, format="PNG")
    return out.getvalue(), clean.width, clean.height


def web_derivative(data: bytes) -> bytes:
    with Image.open(io.BytesIO(data)) as opened:
        opened.load()
        image = opened.convert("RGBA" if "A" in opened.getbands() else "RGB")
        image.thumbnail((WEB_MAX_PX, WEB_MAX_PX))
        out = io.BytesIO()
        image.save(out, format="WEBP", quality=WEB_QUALITY, method=4)
        return out.getvalue()


def _put(key: str, data: bytes) -> str:
    if default_storage.exists(key):
        return key
    # `save` may pick another name if a concurrent writer got there first; either holds the same bytes.
    return default_storage.save(key, ContentFile(data))


def image_store(data: bytes) -> StoredImage:
    """Store an image and its web derivative; returns their keys. Idempotent."""
    png, width, height = png_normalize(data)
    digest = hashlib.sha256(png).hexdigest()
    file = _put(image_key(digest), png)
    web = web_key(digest)
    web_file = web if default_storage.exists(web) else _put(web, web_derivative(png))
    return StoredImage(file=file, web_file=web_file, sha256=digest, width=width, height=height)


def web_rendition_of(key: str, sha256: str, *, max_bytes: int) -> str:
    """The web rendition of the stored original `key` (made from its pixels when missing); its key.
    Raises ValueError for an original over `max_bytes` or not an image (OSError from storage)."""
    web = web_key(sha256)
    if default_storage.exists(web):
        return web
    with default_storage.open(key, "rb") as f:
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise ValueError(f"{brief(key)} is over {max_bytes} bytes")
    return _put(web, web_derivative(data))
