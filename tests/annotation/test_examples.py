"""Example images of the instructions (issue 17): `GET/POST /api/campaigns/{id}/examples/` and
`DELETE .../examples/{eid}/` (owner only), at most 10 per family, answers from the family's choices,
uploads checked like imports, shown in the task data, and never asked as questions."""
from __future__ import annotations

import io
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from PIL import Image as PILImage

from annotation.models import ExampleImage, Question
from generation.models import Image
from tests.builders.campaigns import make_annotator, make_campaign, make_images, open_campaign
from tests.conftest import make_researcher, token_client

pytestmark = [pytest.mark.django_db]


def _png(colour: tuple[int, int, int] = (10, 200, 30)) -> bytes:
    buf = io.BytesIO()
    PILImage.new("RGB", (32, 24), colour).save(buf, "PNG")
    return buf.getvalue()


@pytest.fixture
def gep(researcher: Any) -> Any:
    campaign = make_campaign(researcher, settings=["explicit"], annotation={"hit_size": 10, "redundancy": 1})
    make_images(campaign, "explicit", 14)
    return open_campaign(campaign)


def _families(campaign: Any) -> dict[int, str]:
    return dict(Question.objects.filter(campaign=campaign).values_list("image_id", "family"))


def test_examples_are_added_listed_shown_and_never_asked(api: Any, gep: Any, media: Any, hit_engine: str) -> None:
    url = f"/api/campaigns/{gep.pk}/examples/"
    families = _families(gep)
    image, family = next(iter(families.items()))
    created = api.post(url, {"family": family, "image": image, "answer": "Yes", "caption": "Worn, not held."},
                       format="json")
    assert created.status_code == 201, created.content
    body = created.json()
    assert (body["family"], body["image"], body["answer"], body["caption"]) == (family, image, "Yes", "Worn, not held.")
    assert body["image_url"]
    upload = api.post(url, {"family": family, "answer": "No", "file": SimpleUploadedFile("x.png", _png())},
                      format="multipart")
    assert upload.status_code == 201, upload.content
    assert upload.json()["image"] is None and upload.json()["image_url"]
    listed = api.get(url).json()
    assert [e["answer"] for e in listed["examples"]] == ["Yes", "No"] and listed["per_family"] == 10
    assert family in listed["families"]

    # The task data carries them with their answers; annotators can load the uploaded one.
    annotator, client = make_annotator("ann", campaign=gep)
    task = client.get(f"/api/campaigns/{gep.pk}/task/").json()
    shown = [e for e in task["examples"] if e.get("family") == family]
    assert [(e["answer"], e["caption"]) for e in shown] == [("Yes", "Worn, not held."), ("No", "")]
    assert "image" not in shown[0] and "id" not in shown[0]
    assert client.get(shown[1]["image_url"]).status_code == 200

    # The example's question is never asked: 13 of the 14 images, then nothing left.
    asked: set[int] = set()
    while True:
        response = client.post(f"/api/campaigns/{gep.pk}/assignments/")
        if response.status_code == 204:
            break
        hit = response.json()
        assert all(q["family"] for q in hit["questions"])
        asked |= {q["id"] for q in hit["questions"]}
        answers = [{"question": q["id"], "choice": "No", "time_ms": 500} for q in hit["questions"]]
        assert client.post(f"/api/assignments/{hit['id']}/submit/", {"answers": answers}, format="json").status_code == 200
    example_question = Question.objects.get(campaign=gep, image_id=image)
    assert example_question.pk not in asked and len(asked) == 13

    # Removed: the image's question is asked again.
    assert api.delete(f"{url}{body['id']}/").status_code == 204
    assert api.delete(f"{url}{body['id']}/").status_code == 404
    again = client.post(f"/api/campaigns/{gep.pk}/assignments/").json()
    assert [q["id"] for q in again["questions"]] == [example_question.pk]


def test_bad_examples_are_refused_naming_the_field(api: Any, gep: Any, media: Any) -> None:
    url = f"/api/campaigns/{gep.pk}/examples/"
    families = _families(gep)
    image, family = next(iter(families.items()))

    def refused(body: dict[str, Any], field: str, *, multipart: bool = False) -> None:
        response = api.post(url, body, format="multipart" if multipart else "json")
        assert response.status_code == 400, response.content
        assert field in response.json()["errors"], response.json()

    refused({"family": "attribute:nothing", "image": image, "answer": "Yes"}, "family")
    refused({"family": family, "image": image, "answer": "Feminine"}, "answer")
    refused({"family": family, "answer": "Yes"}, "image")
    refused({"family": family, "image": 10**9, "answer": "Yes"}, "image")
    refused({"family": family, "image": image, "answer": "Yes", "caption": "x" * 301}, "caption")
    refused({"family": family, "answer": "Yes", "file": SimpleUploadedFile("x.png", b"not an image")}, "file",
            multipart=True)
    other = make_campaign(make_researcher("olga"), settings=["explicit"])
    other_image = make_images(other, "explicit", 1)[0]
    refused({"family": family, "image": other_image.pk, "answer": "Yes"}, "image")
    pending = Image.objects.filter(campaign=gep).exclude(pk=image).first()
    Image.objects.filter(pk=pending.pk).update(status=Image.Status.FAILED)
    refused({"family": families[pending.pk], "image": pending.pk, "answer": "Yes"}, "image")
    assert not ExampleImage.objects.exists()  # nothing half-written

    # Ten per family, the eleventh is refused; the same image twice in a family too.
    for n in range(10):
        response = api.post(url, {"family": family, "answer": "Yes" if n % 2 else "No",
                                   "file": SimpleUploadedFile(f"{n}.png", _png((n, 9, 9)))}, format="multipart")
        assert response.status_code == 201
    refused({"family": family, "image": image, "answer": "Yes"}, "family")
    ExampleImage.objects.filter(family=family).last().delete()
    assert api.post(url, {"family": family, "image": image, "answer": "Yes"}, format="json").status_code == 201
    ExampleImage.objects.filter(family=family).first().delete()
    refused({"family": family, "image": image, "answer": "No"}, "image")
    assert ExampleImage.objects.filter(family=family).count() == 9


def test_examples_are_the_owners(gep: Any, other_researcher: Any) -> None:
    url = f"/api/campaigns/{gep.pk}/examples/"
    image, family = next(iter(_families(gep).items()))
    stranger = token_client(other_researcher)
    assert stranger.get(url).status_code == 404
    assert stranger.post(url, {"family": family, "image": image, "answer": "Yes"}, format="json").status_code == 404
    _, annotator = make_annotator("ann", campaign=gep)
    assert annotator.get(url).status_code == 403
    assert annotator.post(url, {"family": family, "image": image, "answer": "Yes"}, format="json").status_code == 403
    assert not ExampleImage.objects.exists()


def test_pst_families_are_its_settings(researcher: Any) -> None:
    campaign = make_campaign(researcher, kind="pst")
    api = token_client(researcher)
    listed = api.get(f"/api/campaigns/{campaign.pk}/examples/").json()
    assert listed["families"] == ["person:single", "person:paired"] and listed["examples"] == []
    image = make_images(campaign, "paired", 1)[0]
    bad = api.post(f"/api/campaigns/{campaign.pk}/examples/", {"family": "person:paired", "image": image.pk,
                                                                "answer": "Yes"}, format="json")
    assert bad.status_code == 400 and "answer" in bad.json()["errors"]
    good = api.post(f"/api/campaigns/{campaign.pk}/examples/", {"family": "person:paired", "image": image.pk,
                                                                 "answer": "Cannot identify"}, format="json")
    assert good.status_code == 201


def test_examples_travel_with_the_campaign_archive(api: Any, gep: Any, media: Any) -> None:
    import json
    import zipfile

    url = f"/api/campaigns/{gep.pk}/examples/"
    image, family = next(iter(_families(gep).items()))
    assert api.post(url, {"family": family, "image": image, "answer": "Yes", "caption": "c"}, format="json").status_code == 201
    assert api.post(url, {"family": family, "answer": "No", "file": SimpleUploadedFile("u.png", _png())},
                    format="multipart").status_code == 201
    archive = api.get(f"/api/campaigns/{gep.pk}/export/").content
    imported = api.post("/api/campaigns/import/", {"archive": io.BytesIO(archive)}, format="multipart")
    assert imported.status_code == 201, imported.content
    copy = imported.json()["id"]
    rows = list(ExampleImage.objects.filter(campaign_id=copy).order_by("order"))
    assert [(e.family, e.answer, e.caption, e.image is not None) for e in rows] == [
        (family, "Yes", "c", True), (family, "No", "", False)]
    assert rows[0].image.campaign_id == copy and rows[0].image.sha256 == Image.objects.get(pk=image).sha256
    assert rows[1].file == ExampleImage.objects.get(campaign=gep, image__isnull=True).file

    # An uploaded example must name content-addressed keys: anything else is refused, nothing written.
    buf = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(archive)) as src, zipfile.ZipFile(buf, "w") as dst:
        for item in src.infolist():
            data = src.read(item.filename)
            if item.filename == "examples.jsonl":
                data = (json.dumps({"family": family, "image": None, "file": "../../etc/passwd", "web_file": "x",
                                    "answer": "No"}) + "\n").encode()
            dst.writestr(item.filename, data)
    before = ExampleImage.objects.count()
    bad = api.post("/api/campaigns/import/", {"archive": io.BytesIO(buf.getvalue())}, format="multipart")
    assert bad.status_code == 400 and "examples.jsonl line 1" in bad.json()["detail"]
    assert ExampleImage.objects.count() == before
