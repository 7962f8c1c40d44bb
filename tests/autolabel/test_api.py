"""The public API: run / cancel a labeller (202, progress in the campaign), list labels, import
labels (all or nothing, every bad row kind named by its line), owner-only access; and the CLI."""
from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from rest_framework.test import APIClient

from annotation.models import Answer, Question
from autolabel.models import MachineLabel
from campaigns.models import Campaign
from tests.conftest import token_client

pytestmark = pytest.mark.django_db


def _upload(api: APIClient, campaign: Campaign, text: str, *, name: str = "labels.csv",
            labeller: str | None = "ext") -> Any:
    data: dict[str, Any] = {"file": SimpleUploadedFile(name, text.encode())}
    if labeller is not None:
        data["labeller"] = labeller
    return api.post(f"/api/campaigns/{campaign.pk}/machine-labels/import/", data, format="multipart")


def _questions(campaign: Campaign) -> list[Question]:
    return list(Question.objects.filter(campaign=campaign).select_related("image__prompt").order_by("image_id"))


def test_import_csv_and_jsonl_then_list(api: APIClient, gep_campaign: Campaign) -> None:
    qs = _questions(gep_campaign)
    lines = ["image,attribute,choice,score,model"]
    lines += [f"{q.image_id},{q.slot},{'Yes' if n % 2 else 'No'},{n / 10},ext-model" for n, q in enumerate(qs[:4])]
    resp = _upload(api, gep_campaign, "\n".join(lines) + "\n")
    assert resp.status_code == 201, resp.json()
    assert resp.json() == {"rows": 4, "labeller": "ext"}
    # JSONL, by prompt_key + sample_index, replacing one label and adding two.
    rows = [{"prompt_key": q.image.prompt.key, "sample_index": 0, "family": q.family, "labeller": "ext",
             "choice": "Yes", "score": 1} for q in qs[3:6]]
    resp = _upload(api, gep_campaign, "\n".join(json.dumps(r) for r in rows), name="labels.jsonl")
    assert resp.status_code == 201 and resp.json()["rows"] == 3
    assert MachineLabel.objects.filter(campaign=gep_campaign, labeller="ext").count() == 6
    assert MachineLabel.objects.get(question=qs[3], labeller="ext").choice == "Yes"
    body = api.get(f"/api/campaigns/{gep_campaign.pk}/machine-labels/?labeller=ext&page_size=2").json()
    assert body["count"] == 6 and len(body["results"]) == 2
    first = body["results"][0]
    assert set(first) >= {"question", "labeller", "choice", "score", "model"}
    assert first["question"] == qs[0].pk and first["choice"] == "No" and first["score"] == 0.0
    assert first["model"] == "ext-model"
    assert api.get(f"/api/campaigns/{gep_campaign.pk}/machine-labels/?labeller=none").json()["count"] == 0
    # Machine labels never become human answers; the campaign's progress lists the imported labeller.
    assert Answer.objects.filter(campaign=gep_campaign).count() == 0
    progress = api.get(f"/api/campaigns/{gep_campaign.pk}/").json()["progress"]
    assert progress["autolabel"]["ext"]["done"] == 6


def test_import_rejects_every_bad_row_kind_and_stores_nothing(api: APIClient, gep_campaign: Campaign) -> None:
    q = _questions(gep_campaign)
    text = "\n".join([
        "image,prompt_key,sample_index,attribute,slot,labeller,choice,score",
        f"{q[0].image_id},,,{q[0].slot},,,Yes,0.5",          # 2: fine
        "999999,,,dress,,,Yes,",                             # 3: unknown image
        f",nokey,0,{q[0].slot},,,Yes,",                      # 4: unknown prompt key
        ",,,dress,,,Yes,",                                   # 5: no image reference
        f"{q[1].image_id},,,hat,,,Yes,",                     # 6: no such question
        f"{q[1].image_id},,,{q[1].slot},,,Maybe,",           # 7: not a choice
        f"{q[1].image_id},,,{q[1].slot},,,Yes,1.5",          # 8: score out of range
        f"{q[1].image_id},,,{q[1].slot},,,Yes,abc",          # 9: score not a number
        f"{q[1].image_id},,,{q[1].slot},,other,Yes,",        # 10: another labeller
        f"{q[0].image_id},,,{q[0].slot},,,No,",              # 11: the same question as row 2
        f"{q[2].image_id},,,{q[2].slot},,,,",                # 12: no choice
    ])
    resp = _upload(api, gep_campaign, text)
    assert resp.status_code == 400
    errors = resp.json()["errors"]
    assert set(errors) == {f"rows.{n}" for n in range(3, 13)}, errors
    assert "not an image of this campaign" in errors["rows.3"][0]
    assert "no image 'nokey'" in errors["rows.4"][0]
    assert "give image" in errors["rows.5"][0]
    assert "no question" in errors["rows.6"][0]
    assert "not one of Yes, No" in errors["rows.7"][0]
    assert "[0, 1]" in errors["rows.8"][0] and "[0, 1]" in errors["rows.9"][0]
    assert "upload's labeller" in errors["rows.10"][0]
    assert "same question as row 2" in errors["rows.11"][0]
    assert "choice is missing" in errors["rows.12"][0]
    assert MachineLabel.objects.count() == 0
    # File-level problems.
    assert "rows.1" in _upload(api, gep_campaign, "image,colour\n1,red\n").json()["errors"]
    assert "rows.2" in _upload(api, gep_campaign, '{"image": 1}\nnot json', name="x.jsonl").json()["errors"]
    assert _upload(api, gep_campaign, "image,choice\n").json()["errors"] == {"file": ["the file has no rows"]}
    assert "labeller" in _upload(api, gep_campaign, "image,choice\n", labeller=None).json()["errors"]
    assert "labeller" in _upload(api, gep_campaign, "image,choice\n", labeller="hybrid").json()["errors"]
    resp = api.post(f"/api/campaigns/{gep_campaign.pk}/machine-labels/import/", {"labeller": "x"}, format="multipart")
    assert resp.status_code == 400 and "file" in resp.json()["errors"]
    assert MachineLabel.objects.count() == 0


def test_paired_images_need_a_slot(api: APIClient, researcher: User, media: Path) -> None:
    from tests.builders.autolabel import add_images, make_campaign, opened

    campaign = make_campaign(researcher, kind="pst", name="pst")
    add_images(campaign, "paired", 1)
    opened(campaign)
    image = Question.objects.filter(campaign=campaign).first().image_id
    resp = _upload(api, campaign, f"image,family,choice\n{image},person,Feminine\n")
    assert resp.status_code == 400 and "give slot" in resp.json()["errors"]["rows.2"][0]
    resp = _upload(api, campaign, f"image,slot,choice\n{image},left,Feminine\n{image},right,Cannot identify\n")
    assert resp.status_code == 201 and resp.json()["rows"] == 2


def test_autolabel_start_progress_cancel(api: APIClient, researcher: User, media: Path, tiny_clip: Path,
                                         monkeypatch: pytest.MonkeyPatch, django_capture_on_commit_callbacks) -> None:
    from tests.builders.autolabel import SMALL_GEP, add_images, make_campaign, opened

    campaign = make_campaign(researcher, autolabel={"labellers": [{"name": "clip", "model": str(tiny_clip)}]},
                             **SMALL_GEP)
    add_images(campaign, "explicit", 6)
    url = f"/api/campaigns/{campaign.pk}/autolabel/"
    assert api.post(url, {"labeller": "clip"}, format="json").status_code == 409   # not opened yet
    opened(campaign)
    published: list[Any] = []
    monkeypatch.setattr("autolabel.services._publish", lambda *args: published.append(args))
    with django_capture_on_commit_callbacks(execute=True):
        resp = api.post(url, {"labeller": "clip"}, format="json")
    assert resp.status_code == 202, resp.json()
    assert resp.json()["queued"] == 6 and resp.json()["status"] == "running" and len(published) == 1
    with django_capture_on_commit_callbacks(execute=True):
        again = api.post(url, {"labeller": "clip"}, format="json")
    assert again.status_code == 202 and again.json()["queued"] == 0 and len(published) == 1   # idempotent
    progress = api.get(f"/api/campaigns/{campaign.pk}/").json()["progress"]["autolabel"]["clip"]
    assert progress == {"done": 0, "total": 6, "failed": 0, "status": "running"}
    resp = api.post(f"{url}cancel/", {"labeller": "clip"}, format="json")
    assert resp.status_code == 200 and resp.json()["status"] == "cancelled"
    # Bad input names the field.
    resp = api.post(url, {"labeller": "nope"}, format="json")
    assert resp.status_code == 400 and "labeller" in resp.json()["errors"]
    assert "labeller" in api.post(url, {}, format="json").json()["errors"]
    resp = api.post(url, {"labeller": "vlm"}, format="json")   # needs options from the spec
    assert resp.status_code == 400 and "endpoint" in resp.json()["errors"]["labeller"][0]


def test_owner_only(gep_campaign: Campaign, other_researcher: User) -> None:
    other = token_client(other_researcher)
    base = f"/api/campaigns/{gep_campaign.pk}"
    assert other.get(f"{base}/machine-labels/").status_code == 404
    assert other.post(f"{base}/autolabel/", {"labeller": "clip"}, format="json").status_code == 404
    assert other.post(f"{base}/machine-labels/import/", {"labeller": "x"}, format="multipart").status_code == 404
    assert token_client(None).get(f"{base}/machine-labels/").status_code in (401, 403)


def test_cli_import_and_autolabel(gep_campaign: Campaign, tmp_path: Path, tiny_clip: Path,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    q = _questions(gep_campaign)
    path = tmp_path / "labels.csv"
    path.write_text("image,attribute,choice\n" + "".join(f"{x.image_id},{x.slot},No\n" for x in q))
    out = io.StringIO()
    call_command("campaign", "import-machine-labels", str(gep_campaign.pk), str(path), "--labeller", "ext", stdout=out)
    assert "6 machine labels imported as ext" in out.getvalue()
    bad = tmp_path / "bad.csv"
    bad.write_text("image,attribute,choice\n1,dress,Maybe\n")
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="rows.2"):
        call_command("campaign", "import-machine-labels", str(gep_campaign.pk), str(bad), "--labeller", "ext")
    # autolabel with --wait, the batches computed in-process as the worker would.
    from autolabel.services import labels_compute

    monkeypatch.setattr("autolabel.services._publish", lambda job_id, run, batches: [
        labels_compute(job_id=job_id, run=run, question_ids=b) for b in batches])
    # The test runs inside one transaction: publish at once instead of on commit.
    monkeypatch.setattr("autolabel.services.transaction.on_commit", lambda fn, *a, **k: fn())
    spec = dict(gep_campaign.spec)
    spec["autolabel"] = {"labellers": [{"name": "clip", "model": str(tiny_clip), "revision": None,
                                        "threshold": 0.2}], "human_sample": None}
    Campaign.objects.filter(pk=gep_campaign.pk).update(spec=spec)
    out = io.StringIO()
    call_command("campaign", "autolabel", str(gep_campaign.pk), "clip", "--wait", "--interval", "0.01", "--timeout", "60",
                 stdout=out)
    text = out.getvalue()
    assert "6/6" in text and "clip done: 6 labelled, 0 failed of 6" in text, text


def test_import_clipscore_column_stores_one_per_image(api: APIClient, researcher: User, media: Path) -> None:
    """Issue 25: CLIPScores computed elsewhere come with the labels (`clipscore`, 2.5 * cos in [0, 2.5],
    the same on every row of an image); the report's clipscore section reads them."""
    from autolabel.models import ImageClipScore
    from autolabel.selectors import clipscore_rows
    from tests.builders.autolabel import SMALL_GEP, add_images, make_campaign, opened

    gep_campaign = make_campaign(researcher, **{**SMALL_GEP, "settings": ["neutral"]})  # every attribute per image
    add_images(gep_campaign, "neutral", 2)
    opened(gep_campaign)
    qs = _questions(gep_campaign)
    a, b = qs[0].image_id, next(q.image_id for q in qs if q.image_id != qs[0].image_id)
    same = [q for q in qs if q.image_id == a][:2]
    bad = "\n".join(["image,attribute,choice,clipscore", f"{same[0].image_id},{same[0].slot},Yes,0.7",
                     f"{same[1].image_id},{same[1].slot},No,0.8", f"{b},{qs[-1].slot},No,3"])
    errors = _upload(api, gep_campaign, bad).json()["errors"]
    assert "differs from row 2" in errors["rows.3"][0] and "[0, 2.5]" in errors["rows.4"][0], errors
    assert not ImageClipScore.objects.exists()
    good = "\n".join(["image,attribute,choice,model,clipscore", f"{same[0].image_id},{same[0].slot},Yes,m,0.7",
                      f"{same[1].image_id},{same[1].slot},No,m,0.7"])
    assert _upload(api, gep_campaign, good).status_code == 201
    rows = clipscore_rows(gep_campaign)
    assert [(r["image"], r["model"], r["score"]) for r in rows] == [(a, "m", 0.7)]
    # A re-upload replaces the score.
    assert _upload(api, gep_campaign, good.replace("0.7", "0.75")).status_code == 201
    assert [r["score"] for r in clipscore_rows(gep_campaign)] == [0.75]
