"""Issue 24, leftovers of "Images": an image stored with no web rendition (an archive row that names
only `file`) was shown to annotators by its original's URL (on S3 a signed URL to the original, with
its metadata). Annotators get only web renditions: the HIT pool leaves such an image out until the
sweeper makes its rendition from the stored pixels, and then the HIT carries the `web/...webp` URL.
Both HIT engines, over HTTP."""
from __future__ import annotations

import io
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.storage import default_storage
from PIL import Image as PILImage

from generation import services
from generation.models import Image
from generation.storage import image_store
from tests.builders.campaigns import make_annotator, make_campaign, open_campaign

pytestmark = pytest.mark.django_db


@pytest.fixture(params=["sql", "orm"])
def engine(request: pytest.FixtureRequest, settings: Any) -> str:
    settings.FASTPATHS = {**settings.FASTPATHS, "hit_engine": request.param == "sql"}
    return request.param


def _png(seed: int) -> bytes:
    out = io.BytesIO()
    PILImage.new("RGB", (32, 32), (seed * 40 % 256, 90, 120)).save(out, format="PNG")
    return out.getvalue()


def _originals_only(researcher: User, count: int) -> Any:
    campaign = make_campaign(researcher, settings=["explicit"], annotation={"hit_size": 2})
    prompts = list(campaign.prompts.filter(setting="explicit").order_by("position")[:count])
    for i, p in enumerate(prompts):
        stored = image_store(_png(i))
        default_storage.delete(stored.web_file)  # as an archive row that names only `file`
        Image.objects.create(campaign=campaign, prompt=p, sample_index=0, seed=p.seeds[0], status=Image.Status.DONE,
                             file=stored.file, web_file="", sha256=stored.sha256, width=32, height=32)
    return open_campaign(campaign)


def test_an_image_with_no_web_rendition_never_reaches_an_annotator_as_its_original(
        researcher: User, media: Any, engine: str) -> None:
    campaign = _originals_only(researcher, 4)
    _, client = make_annotator("ulla", campaign=campaign)
    first = client.post(f"/api/campaigns/{campaign.pk}/assignments/", format="json")
    # No question of an image without its rendition is handed out (it waits for the rendition).
    assert "images/" not in first.content.decode()
    assert first.status_code != 201 or not first.json().get("questions"), first.content[:300]
    assert services.generation_sweep()["web_renditions"] == 4
    assert Image.objects.filter(campaign=campaign, web_file="").count() == 0
    for image in Image.objects.filter(campaign=campaign):
        assert default_storage.exists(image.web_file) and image.web_file.startswith("web/")
    hit = client.post(f"/api/campaigns/{campaign.pk}/assignments/", format="json")
    assert hit.status_code in (200, 201), hit.content[:300]
    urls = [q["image_url"] for q in hit.json()["questions"]]
    assert urls and all("/web/" in u and ".webp" in u and "images/" not in u for u in urls), urls
    task = client.get(f"/api/campaigns/{campaign.pk}/task/").content.decode()
    assert "images/" not in task


def test_an_unreadable_original_is_left_out_not_served(researcher: User, media: Any, engine: str) -> None:
    campaign = _originals_only(researcher, 2)
    broken = Image.objects.filter(campaign=campaign).order_by("pk").first()
    default_storage.delete(broken.file)
    default_storage.save(broken.file, io.BytesIO(b"not an image"))
    assert services.web_renditions_make() == 1
    broken.refresh_from_db()
    assert broken.excluded and broken.web_file == ""
    _, client = make_annotator("ulla", campaign=campaign)
    hit = client.post(f"/api/campaigns/{campaign.pk}/assignments/", format="json")
    assert "images/" not in hit.content.decode()
