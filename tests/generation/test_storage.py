"""Content-addressed storage through Django's storage API: local media and S3 (a local
S3-compatible server, moto in server mode)."""
from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core.files.storage import default_storage
from PIL import Image as PILImage

from generation.backends.placeholder import placeholder_render
from generation.storage import image_store


def test_local_store_dedupes_and_makes_a_small_webp(media: Path) -> None:
    big = placeholder_render("a chef", 11, width=1024, height=512)
    first = image_store(big)
    again = image_store(big)
    assert first == again
    assert first.file == f"images/{first.sha256[:2]}/{first.sha256}.png" and (first.width, first.height) == (1024, 512)
    assert sorted(p.name for p in (media / "images" / first.sha256[:2]).iterdir()) == [f"{first.sha256}.png"]
    with PILImage.open(media / first.web_file) as web:
        assert web.format == "WEBP" and web.size == (768, 384)


def test_jpeg_with_exif_is_stored_as_png_without_metadata(media: Path) -> None:
    out = io.BytesIO()
    exif = PILImage.Exif()
    exif[0x0131] = "StableDiffusion-XL secret model"  # Software tag
    PILImage.new("RGB", (20, 10), (1, 2, 3)).save(out, format="JPEG", exif=exif.tobytes())
    stored = image_store(out.getvalue())
    data = (media / stored.file).read_bytes()
    assert data.startswith(b"\x89PNG") and b"secret model" not in data


@pytest.fixture
def s3(settings: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    import boto3
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    for key, value in {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(key, value)
    boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(Bucket="audit-test")
    settings.MEDIA_STORAGE = "s3"
    settings.STORAGES = {**settings.STORAGES, "default": {
        "BACKEND": "common.s3_media.S3MediaStorage",
        "OPTIONS": {"bucket_name": "audit-test", "endpoint_url": endpoint, "region_name": "us-east-1",
                    "default_acl": None, "querystring_auth": True, "querystring_expire": 600, "file_overwrite": False},
    }}
    yield endpoint
    server.stop()


def test_s3_store_is_content_addressed_and_deduped(s3: str) -> None:
    import boto3

    data = placeholder_render("a nurse", 3, width=64, height=64)
    stored = image_store(data)
    assert image_store(data) == stored
    client = boto3.client("s3", endpoint_url=s3, region_name="us-east-1")
    keys = sorted(o["Key"] for o in client.list_objects_v2(Bucket="audit-test")["Contents"])
    assert keys == sorted([stored.file, stored.web_file])
    assert client.get_object(Bucket="audit-test", Key=stored.file)["Body"].read() == data
    url = default_storage.url(stored.file)
    assert url.startswith(f"{s3}/audit-test/images/") and "Signature" in url and "nurse" not in url


def _fetch(url: str) -> bytes:
    import httpx

    response = httpx.get(url, timeout=10)
    assert response.status_code == 200, (response.status_code, response.text[:300])
    return response.content


def test_s3_urls_are_signed_once_per_window_and_open_the_image(s3: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A HIT's image URLs: the same presigned URL for a key within its window (one signature per image and
    window, not one per HIT: bench/README.md section 1, "Seventh round"), a new one after it; each opens
    the image on the S3 server."""
    from storages.backends.s3 import S3Storage

    from common import s3_media

    signed: list[str] = []
    sign = S3Storage.url

    def counting(self: Any, name: str, *args: Any, **kwargs: Any) -> str:
        signed.append(name)
        return sign(self, name, *args, **kwargs)

    monkeypatch.setattr(S3Storage, "url", counting)
    stored = image_store(placeholder_render("a pilot", 5, width=64, height=64))
    assert isinstance(default_storage._wrapped, s3_media.S3MediaStorage)  # what MEDIA_STORAGE=s3 configures
    now = 1_000_000 * 150.0  # the start of a window (600 s lifetime: 150 s windows)
    monkeypatch.setattr(s3_media.time, "time", lambda: now)
    first = default_storage.url(stored.web_file)
    assert [default_storage.url(stored.web_file) for _ in range(5)] == [first] * 5
    other = default_storage.url(stored.file)
    assert other != first and signed == [stored.web_file, stored.file]
    assert _fetch(first)[:4] == b"RIFF" and _fetch(other) == placeholder_render("a pilot", 5, width=64, height=64)
    now += 149.9  # still the same window
    assert default_storage.url(stored.web_file) == first and len(signed) == 2
    now += 0.1  # the next window: signed again
    default_storage.url(stored.web_file)
    assert signed == [stored.web_file, stored.file, stored.web_file]
    # Own parameters or lifetime: signed every time, never kept.
    default_storage.url(stored.web_file, expire=30)
    default_storage.url(stored.web_file, parameters={"ResponseContentType": "image/webp"})
    assert len(signed) == 5


@pytest.mark.parametrize(("expire", "window"), [(3600, 300), (600, 150), (60, 15), (4, 1), (3, 0), (0, 0)])
def test_s3_url_reuse_window_leaves_three_quarters_of_the_lifetime(expire: int, window: int) -> None:
    from common.s3_media import reuse_seconds

    assert reuse_seconds(expire) == window
    assert window == 0 or expire - window >= 0.75 * expire


def test_s3_urls_are_not_kept_for_a_short_lifetime_and_the_memo_is_bounded(s3: str, settings: Any,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from storages.backends.s3 import S3Storage

    from common import s3_media

    signed: list[str] = []
    sign = S3Storage.url
    monkeypatch.setattr(S3Storage, "url", lambda self, name, *a, **k: signed.append(name) or sign(self, name, *a, **k))
    options = settings.STORAGES["default"]["OPTIONS"]
    short = s3_media.S3MediaStorage(**{**options, "querystring_expire": 3})
    short.url("a.webp")
    short.url("a.webp")
    assert signed == ["a.webp", "a.webp"] and not short._signed
    monkeypatch.setattr(s3_media, "MAX_KEPT", 2)
    kept = s3_media.S3MediaStorage(**options)
    for name in ("a.webp", "b.webp", "c.webp", "d.webp"):
        kept.url(name)
    assert 1 <= len(kept._signed) <= 2
