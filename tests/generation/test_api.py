"""Start, watch, stop: the generation API and CLI (tasks run eagerly here; see test_worker.py for
real worker processes), the image list, exclusion, and the placeholder backend's images."""
from __future__ import annotations

import io
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from django.contrib.auth.models import User
from django.core.files.storage import default_storage
from django.core.management import call_command
from PIL import Image as PILImage

from campaigns.models import Campaign
from generation.backends import GenerationItem, GenerationOutput, OutOfMemory, PermanentError, TransientError
from generation.backends.placeholder import PlaceholderBackend
from generation.models import Image
from generation.services import generation_start, images_claim, images_generate_batch
from tests.conftest import token_client

pytestmark = pytest.mark.django_db


def _start(api: Any, campaign: Campaign, capture: Any) -> Any:
    with capture(execute=True) as callbacks:
        response = api.post(f"/api/campaigns/{campaign.pk}/generate/")
    return response, callbacks


def test_generate_creates_every_image_and_completes_the_campaign(api: Any, campaign: Campaign, eager: None,
                                                                 django_capture_on_commit_callbacks: Any,
                                                                 media: Path) -> None:
    response, callbacks = _start(api, campaign, django_capture_on_commit_callbacks)
    assert response.status_code == 202, response.content
    assert response.data["created"] == 8 and response.data["queued"] == 8
    assert response.data["batches"] == 2 and len(callbacks) == 2  # placeholder batch size 4
    images = list(Image.objects.filter(campaign=campaign))
    assert len(images) == 8 and {i.status for i in images} == {"done"}
    assert all(i.synthetic and i.backend == "placeholder" and i.attempts == 1 for i in images)
    first = images[0]
    assert first.file == f"images/{first.sha256[:2]}/{first.sha256}.png"
    assert first.web_file == f"web/{first.sha256[:2]}/{first.sha256}.webp"
    assert (media / first.file).is_file() and (media / first.web_file).is_file()
    with default_storage.open(first.file) as handle:
        assert PILImage.open(handle).size == (64, 48)
    assert len({i.sha256 for i in images}) == 8  # different seeds, different images
    detail = api.get(f"/api/campaigns/{campaign.pk}/").data
    assert detail["status"] == "generated"
    assert detail["progress"]["images_done"] == 8 and detail["progress"]["images_pending"] == 0
    assert detail["progress"]["eta_seconds"] == 0

    # Again: nothing to do, no new rows.
    response, callbacks = _start(api, campaign, django_capture_on_commit_callbacks)
    assert response.status_code == 202 and response.data["created"] == 0 and response.data["queued"] == 0
    assert not callbacks and Image.objects.filter(campaign=campaign).count() == 8


def test_placeholder_is_deterministic() -> None:
    backend = PlaceholderBackend()
    params = {"width": 32, "height": 32, "delay_s": 0}
    a, b, c = backend.generate([GenerationItem(1, "a cat", 5), GenerationItem(2, "a cat", 5),
                                GenerationItem(3, "a cat", 6)], params)
    assert a.data == b.data and a.data != c.data and a.synthetic


def test_progress_moves_as_images_land(api: Any, campaign: Campaign, django_capture_on_commit_callbacks: Any) -> None:
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = api.post(f"/api/campaigns/{campaign.pk}/generate/")
    assert response.status_code == 202 and len(callbacks) == 2
    progress = api.get(f"/api/campaigns/{campaign.pk}/").data
    assert progress["status"] == "generating"
    assert progress["progress"]["images_pending"] == 8 and progress["progress"]["images_done"] == 0
    first_batch = list(Image.objects.filter(campaign=campaign).order_by("id").values_list("id", flat=True))[:4]
    images_generate_batch(image_ids=first_batch, task_id="t-1")
    progress = api.get(f"/api/campaigns/{campaign.pk}/").data["progress"]
    assert progress["images_done"] == 4 and progress["images_pending"] == 4
    assert api.get(f"/api/campaigns/{campaign.pk}/").data["status"] == "generating"


def test_duplicate_and_redelivered_messages_never_create_or_redo_images(campaign: Campaign) -> None:
    generation_start(campaign=campaign)
    ids = list(Image.objects.filter(campaign=campaign).values_list("id", flat=True))[:4]
    claimed = images_claim(image_ids=ids, task_id="first")
    assert len(claimed) == 4
    # Another message for the same images (generate pressed twice) leaves them to the first task.
    assert images_claim(image_ids=ids, task_id="second") == []
    # The first message redelivered after its worker died takes its running images back.
    assert len(images_claim(image_ids=ids, task_id="first")) == 4
    assert images_generate_batch(image_ids=ids, task_id="first")["recorded"] == 4
    # Redelivery of a finished message: a no-op.
    assert images_generate_batch(image_ids=ids, task_id="first") == {"claimed": 0, "recorded": 0}
    assert Image.objects.filter(campaign=campaign).count() == 8
    assert Image.objects.filter(pk__in=ids, status="done", attempts=3).count() == 4


def test_cancel_then_resume(api: Any, campaign: Campaign, django_capture_on_commit_callbacks: Any, eager: None) -> None:
    with django_capture_on_commit_callbacks(execute=False):
        api.post(f"/api/campaigns/{campaign.pk}/generate/")
    ids = list(Image.objects.filter(campaign=campaign).order_by("id").values_list("id", flat=True))
    calls: list[int] = []

    class CancelledMidBatch(PlaceholderBackend):
        def batch_size(self, params: Any) -> int:
            return 2

        def generate(self, items: Any, params: Any) -> list[GenerationOutput]:
            calls.append(len(items))
            response = api.post(f"/api/campaigns/{campaign.pk}/generate/cancel/")  # while the model runs
            assert response.status_code == 200 and response.data["cancelled"] == 8
            assert response.data["status"] == "draft"
            return super().generate(items, params)

    with mock.patch("generation.services.backend_get", return_value=CancelledMidBatch()):
        result = images_generate_batch(image_ids=ids[:4], task_id="busy")
    # The running task stores nothing it generated after the cancel and stops before the next batch.
    assert result == {"claimed": 4, "recorded": 0} and calls == [2]
    assert set(Image.objects.filter(campaign=campaign).values_list("status", flat=True)) == {"cancelled"}
    assert not default_storage.exists("images")
    response, _ = _start(api, campaign, django_capture_on_commit_callbacks)
    assert response.data["resumed"] == 8 and Campaign.objects.get(pk=campaign.pk).status == "generated"
    assert Image.objects.filter(campaign=campaign, status="done").count() == 8


class _Flaky(PlaceholderBackend):
    """Fails the way a real backend does, then works."""

    def __init__(self, errors: list[Exception]):
        self.errors = errors
        self.batches: list[int] = []

    def batch_size(self, params: Any) -> int:
        return 4

    def generate(self, items: Any, params: Any) -> list[GenerationOutput]:
        self.batches.append(len(items))
        if self.errors:
            error = self.errors.pop(0)
            if isinstance(error, OutOfMemory) and len(items) == 1:
                raise AssertionError("halved below 1")
            raise error
        return super().generate(items, params)


def test_transient_errors_retry_and_oom_halves_the_batch(campaign: Campaign, eager: None, settings: Any,
                                                        django_capture_on_commit_callbacks: Any) -> None:
    flaky = _Flaky([TransientError("HTTP 503", retry_after=0), OutOfMemory("CUDA out of memory")])
    with mock.patch("generation.services.backend_get", return_value=flaky), \
            django_capture_on_commit_callbacks(execute=True):
        generation_start(campaign=campaign)
    # Batch 1: 503 -> retried (same task id) -> OOM at 4 -> 2 + 2; batch 2: 4.
    assert flaky.batches == [4, 4, 2, 2, 4]
    assert Image.objects.filter(campaign=campaign, status="done").count() == 8
    assert Campaign.objects.get(pk=campaign.pk).status == "generated"


def test_permanent_errors_fail_images_with_the_reason_and_retry_failed_requeues(
        api: Any, campaign: Campaign, eager: None, django_capture_on_commit_callbacks: Any) -> None:
    flaky = _Flaky([PermanentError("unknown scheduler 'Nope'")] * 2)
    with mock.patch("generation.services.backend_get", return_value=flaky):
        response, _ = _start(api, campaign, django_capture_on_commit_callbacks)
    assert response.data["status"] == "generating"  # the tasks run after the response (on commit)
    assert Campaign.objects.get(pk=campaign.pk).status == "generated"
    failed = Image.objects.filter(campaign=campaign, status="failed")
    assert failed.count() == 8 and failed.first().error == "unknown scheduler 'Nope'"
    assert api.get(f"/api/campaigns/{campaign.pk}/").data["progress"]["images_failed"] == 8
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(f"/api/campaigns/{campaign.pk}/generate/retry-failed/")
    assert response.status_code == 202 and response.data["reset"] == 8
    assert Image.objects.filter(campaign=campaign, status="done").count() == 8


def test_retries_exhausted_fail_the_images(campaign: Campaign, eager: None, settings: Any,
                                           django_capture_on_commit_callbacks: Any) -> None:
    settings.GENERATION_MAX_RETRIES = 1
    flaky = _Flaky([TransientError("timeout", retry_after=0)] * 10)
    with mock.patch("generation.services.backend_get", return_value=flaky), \
            django_capture_on_commit_callbacks(execute=True):
        generation_start(campaign=campaign)
    errors = set(Image.objects.filter(campaign=campaign).values_list("error", flat=True))
    assert errors == {"gave up after 2 attempts: timeout"}


def test_generation_is_owner_and_researcher_only(campaign: Campaign, other_researcher: User, plain_user: User) -> None:
    for path in ("generate/", "generate/cancel/", "generate/retry-failed/", "images/"):
        method = "get" if path == "images/" else "post"
        assert getattr(token_client(other_researcher), method)(f"/api/campaigns/{campaign.pk}/{path}").status_code == 404
        assert getattr(token_client(plain_user), method)(f"/api/campaigns/{campaign.pk}/{path}").status_code == 403
        assert getattr(token_client(None), method)(f"/api/campaigns/{campaign.pk}/{path}").status_code in (401, 403)
    assert not Image.objects.exists()


def test_import_backend_campaign_cannot_be_generated(api: Any, researcher: User) -> None:
    from campaigns.services import campaign_create

    from .conftest import small_spec

    campaign = campaign_create(owner=researcher, spec=small_spec(name="import", model="sdxl-elsewhere"))
    response = api.post(f"/api/campaigns/{campaign.pk}/generate/")
    assert response.status_code == 400 and "import" in response.data["detail"]


def test_image_list_filters_and_exclusion(api: Any, campaign: Campaign, eager: None, other_researcher: User,
                                          django_capture_on_commit_callbacks: Any) -> None:
    _start(api, campaign, django_capture_on_commit_callbacks)
    data = api.get(f"/api/campaigns/{campaign.pk}/images/?page_size=5").data
    assert data["count"] == 8 and len(data["results"]) == 5
    row = data["results"][0]
    assert row["status"] == "done" and row["url"].endswith(".png") and row["web_url"].endswith(".webp")
    assert row["prompt_key"].startswith("neutral:") and row["params"]["width"] == 64
    # URLs name the content hash only, never the prompt or the model.
    assert "woman" not in row["url"] and "placeholder" not in row["web_url"]
    assert api.get(f"/api/campaigns/{campaign.pk}/images/?status=failed").data["count"] == 0
    assert api.get(f"/api/campaigns/{campaign.pk}/images/?setting=neutral").data["count"] == 8
    assert api.get(f"/api/campaigns/{campaign.pk}/images/?status=nope").status_code == 400

    image_id = row["id"]
    assert api.post(f"/api/images/{image_id}/exclude/", {"reason": ""}, format="json").status_code == 400
    assert token_client(other_researcher).post(f"/api/images/{image_id}/exclude/", {"reason": "x"},
                                               format="json").status_code == 404
    response = api.post(f"/api/images/{image_id}/exclude/", {"reason": "shows one person"}, format="json")
    assert response.status_code == 200 and response.data["excluded"] is True
    assert Image.objects.get(pk=image_id).exclusion_reason == "shows one person"
    assert api.get(f"/api/campaigns/{campaign.pk}/images/?excluded=true").data["count"] == 1
    assert api.get(f"/api/campaigns/{campaign.pk}/").data["progress"]["images_excluded"] == 1
    response = api.post(f"/api/images/{image_id}/include/")
    assert response.status_code == 200 and response.data["excluded"] is False
    assert not Image.objects.get(pk=image_id).excluded


@pytest.mark.django_db(transaction=True)  # on_commit enqueues at once: the command's own transaction commits
def test_cli_generate_wait_shows_progress(campaign: Campaign, eager: None) -> None:
    out = io.StringIO()
    call_command("campaign", "generate", str(campaign.pk), "--wait", "--interval", "0.01", "--timeout", "60",
                 stdout=out)
    text = out.getvalue()
    assert "8 images created, 8 queued in 2 batches" in text
    assert "[##############################] 8/8  done 8" in text
    assert f"Campaign {campaign.pk} is generated" in text
    with pytest.raises(Exception, match="not found"):
        call_command("campaign", "generate", "999999", stdout=io.StringIO())


def test_rate_holds_once_generation_has_finished(campaign: Campaign, eager: None,
                                                 django_capture_on_commit_callbacks: Any) -> None:
    """The rate is measured over the recent images up to the last one once nothing is left to do:
    reading the progress a minute later gives the same rate (it used to keep falling with the clock)."""
    from datetime import timedelta

    from django.utils import timezone

    from generation.selectors import image_progress

    with django_capture_on_commit_callbacks(execute=True):
        generation_start(campaign=campaign)
    images = list(Image.objects.filter(campaign=campaign).order_by("pk"))
    assert images and all(i.status == Image.Status.DONE for i in images)
    start = timezone.now() - timedelta(minutes=5)
    for n, image in enumerate(images):  # one image every 6 s
        Image.objects.filter(pk=image.pk).update(finished_at=start + timedelta(seconds=6 * n))
    expected = round(len(images) * 60.0 / (6 * (len(images) - 1)), 2)
    first = image_progress(campaign)
    with mock.patch("generation.selectors.timezone.now", return_value=timezone.now() + timedelta(minutes=1)):
        later = image_progress(campaign)
    assert first["images_per_minute"] == later["images_per_minute"] == expected
    assert first["eta_seconds"] == 0
