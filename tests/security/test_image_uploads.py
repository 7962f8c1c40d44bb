"""Issue 24: every uploaded image is re-encoded from its pixels (examples, image imports): no PNG text
or EXIF chunk, no bytes after the image (HTML, a zip) survive in what is stored or served."""
from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.storage import default_storage
from PIL import Image as PILImage
from rest_framework.test import APIClient

from annotation.models import ExampleImage
from campaigns.models import Campaign
from campaigns.services import campaign_create
from generation.models import Image
from tests.builders.crowd import small  # noqa: F401  (fixture)
from tests.builders.hostile import SECRET_TEXT, TRAILER, tainted_png, zip_of

pytestmark = pytest.mark.django_db


def _file(name: str, data: bytes) -> io.BytesIO:
    f = io.BytesIO(data)
    f.name = name
    return f


def _clean(key: str) -> None:
    with default_storage.open(key) as handle:
        data = handle.read()
    assert SECRET_TEXT not in data and b"secret" not in data and TRAILER not in data and b"<html>" not in data
    with PILImage.open(io.BytesIO(data)) as image:
        image.load()
        assert not image.info.get("parameters") and not image.info.get("exif") and not getattr(image, "text", None)
    assert data.endswith(b"IEND\xaeB`\x82") or key.endswith(".webp")


def test_an_uploaded_example_png_is_stored_without_metadata_or_trailing_bytes(api: APIClient, small: Campaign,  # noqa: F811
                                                                            media: Path) -> None:
    from annotation.families import design_example_families

    family = design_example_families(small.kind, small.spec)[0]
    choice = small.questions.filter(family=family["name"] if isinstance(family, dict) else family).first()
    answer = choice.choices[0] if choice else "Yes"
    response = api.post(f"/api/campaigns/{small.pk}/examples/",
                        {"file": _file("e.png", tainted_png()), "family": family["name"] if isinstance(family, dict)
                         else family, "answer": answer}, format="multipart")
    assert response.status_code == 201, response.content
    example = ExampleImage.objects.get(campaign=small)
    _clean(example.file)
    _clean(example.web_file)


def _empty(researcher: User) -> Campaign:
    return campaign_create(owner=researcher, spec={
        "name": "imports", "kind": "gep", "seed": 1, "design": {"settings": ["neutral"], "samples": 1,
                                                                "contexts": ["sitting at a table"],
                                                                "attributes": [{"name": "boots", "phrase": "in boots"}]},
        "backend": {"name": "import"}})


@pytest.mark.parametrize("how", ["files", "archive"])
def test_imported_png_files_are_re_encoded(api: APIClient, researcher: User, media: Path, how: str) -> None:
    campaign = _empty(researcher)
    key = campaign.prompts.order_by("position").first().key
    manifest = f"prompt_key,sample_index,file\n{key},0,a.png\n".encode()
    files = {"files": [_file("a.png", tainted_png(colour=(1, 2, 3)))]} if how == "files" else \
        {"archive": _file("x.zip", zip_of({"a.png": tainted_png(colour=(4, 5, 6))}))}
    response = api.post(f"/api/campaigns/{campaign.pk}/images/import/", {"manifest": _file("m.csv", manifest), **files},
                        format="multipart")
    assert response.status_code == 201, response.content
    image = Image.objects.get(campaign=campaign, prompt__key=key, sample_index=0)
    _clean(image.file)
    _clean(image.web_file)


def test_served_original_of_an_import_has_no_metadata(api: APIClient, researcher: User, media: Path) -> None:
    """The researcher (who may read originals) gets pixels only, too."""
    small = _empty(researcher)
    key = small.prompts.order_by("position").first().key
    manifest = f"prompt_key,sample_index,file\n{key},0,a.png\n".encode()
    response = api.post(f"/api/campaigns/{small.pk}/images/import/",
                        {"manifest": _file("m.csv", manifest), "files": [_file("a.png", tainted_png(colour=(7, 8, 9)))]},
                        format="multipart")
    assert response.status_code == 201, response.content
    image = Image.objects.get(campaign=small, prompt__key=key, sample_index=0)
    served = api.get(f"/media/{image.file}")
    body: Any = b"".join(served.streaming_content) if getattr(served, "streaming", False) else served.content
    assert served.status_code == 200 and SECRET_TEXT not in body and TRAILER not in body
