"""Local media with signed URLs (MEDIA_STORAGE=local).

`MediaStorage` is Django's file-system storage whose `url()` carries an expiry and a signature,
`/media/signed/<unix time>/<hex signature>/<key>`, the way S3's signed URLs do: the API hands an
image URL only to someone who may see the image (an enrolled annotator's HIT, the owner's image
list), and that URL is enough to load it for MEDIA_URL_EXPIRE_SECONDS, with no cookie (the MTurk page
runs in a third-party iframe). The URL is stable for a few minutes, so browsers cache the image.

The view that serves `/media/` (annotation/media_views.py, because it needs enrollments) accepts a
valid signature, or a logged-in user who may see the file; see there.
"""
from __future__ import annotations

import hashlib
import hmac
import math
import time
from functools import lru_cache
from urllib.parse import quote

from django.conf import settings
from django.core.files.storage import FileSystemStorage
from django.utils.encoding import force_bytes

SALT = "common.media.url"
STABLE_FOR_S = 300  # URLs made within one such window are the same (cacheable)


def expire_seconds() -> int:
    return int(getattr(settings, "MEDIA_URL_EXPIRE_SECONDS", 3600))


@lru_cache(maxsize=4)
def _signing_key(secret: str) -> bytes:
    """Django's `salted_hmac` key for SALT (sha256 of salt + secret), computed once per secret."""
    return hashlib.sha256(force_bytes(SALT) + force_bytes(secret)).digest()


def media_signature(key: str, expires: int) -> str:
    """`salted_hmac(SALT, "<key>\\n<expires>", algorithm="sha256")`, its first 40 hex digits: one
    HMAC per URL with the key precomputed (a HIT's payload signs one URL per question)."""
    return hmac.digest(_signing_key(settings.SECRET_KEY), f"{key}\n{expires}".encode(), "sha256").hex()[:40]


def media_signature_valid(key: str, expires: str | int | None, signature: str | None, *,
                          now: float | None = None) -> bool:
    expires = str(expires or "")
    if not expires or not signature or not expires.isdigit() or len(expires) > 12:
        return False
    if int(expires) < (now if now is not None else time.time()):
        return False
    return hmac.compare_digest(media_signature(key, int(expires)), signature)


def media_expires(now: float | None = None) -> int:
    """An expiry at least MEDIA_URL_EXPIRE_SECONDS away, rounded up to a STABLE_FOR_S boundary."""
    moment = (now if now is not None else time.time()) + expire_seconds()
    return int(math.ceil(moment / STABLE_FOR_S) * STABLE_FOR_S)


class MediaStorage(FileSystemStorage):
    """File-system storage whose URLs are signed (see the module docstring)."""

    def url(self, name: str | None) -> str:
        if not name:
            return super().url(name)
        key = name.replace("\\", "/").lstrip("/")
        expires = media_expires()
        # In the path, not the query: the URL still ends with the file's name and extension.
        return f"{str(settings.MEDIA_URL).rstrip('/')}/signed/{expires}/{media_signature(key, expires)}/{quote(key)}"
