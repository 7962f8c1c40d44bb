"""S3 media (MEDIA_STORAGE=s3): django-storages' S3 storage whose presigned URLs are reused for a short window.

A presigned URL costs ~0.14 ms of Python (botocore's SigV4 signer) and names the moment it was signed,
so every HIT payload signed each of its images again: a 10-question HIT spent ~1.4 ms of the web
process's CPU on its URLs, and the chained HIT cycle served 1,333 answers/s against 1,814 with local
media (`bench/annotation_load.py --media s3`, bench/README.md section 1, "Seventh round"). Here each
process keeps the URL it signed for a key and hands it out again until its window ends: the same URL
for every annotator shown that image in the window (browsers cache the image as they do local media's
stable URLs, `common.media.STABLE_FOR_S`), one signature per image and window.

The window is `min(STABLE_FOR_S, S3_URL_EXPIRE_SECONDS // 4)` seconds: a URL handed out has at least
three quarters of its lifetime left (with the default hour, at least 55 minutes). A URL is a bearer
link to an image that only someone allowed to see it is given (an enrolled annotator's HIT, the
owner's image list); handing two such people the same link gives neither more than their own would.
Calls with their own `parameters`, `expire` or `http_method`, and storages without signed URLs, sign
every time. The keys kept per process are bounded (`MAX_KEPT`); past it the memo starts again.
"""
from __future__ import annotations

import time
from typing import Any

from storages.backends.s3 import S3Storage

from .media import STABLE_FOR_S

MAX_KEPT = 100_000  # URLs kept per process (~50 MB at most): a campaign's images shown in one window


def reuse_seconds(expire: int) -> int:
    """How long a signed URL is handed out again: STABLE_FOR_S, and at most a quarter of its lifetime
    (0: sign every time)."""
    return max(0, min(STABLE_FOR_S, int(expire) // 4))


class S3MediaStorage(S3Storage):
    """`storages.backends.s3.S3Storage` whose `url()` reuses a key's presigned URL within its window."""

    def __init__(self, **settings: Any) -> None:
        super().__init__(**settings)
        self._signed: dict[str, tuple[int, str]] = {}

    def url(self, name: str, parameters: Any = None, expire: Any = None, http_method: Any = None) -> str:
        window = reuse_seconds(self.querystring_expire)
        if not name or parameters or expire is not None or http_method or not self.querystring_auth or window <= 0:
            return super().url(name, parameters, expire, http_method)
        slot = int(time.time() // window)
        kept = self._signed.get(name)
        if kept is not None and kept[0] == slot:
            return kept[1]
        signed = super().url(name)
        if len(self._signed) >= MAX_KEPT:
            self._signed.clear()
        self._signed[name] = (slot, signed)
        return signed
