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
        "BACKEND": "storages.backends.s3.S3Storage",
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
