"""Data safety: answers are append-only (corrections are linked rows), deleting a campaign is a
soft delete after a stored export, and a campaign's full archive round-trips (report figures equal)."""
from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.storage import default_storage
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.models import AggregatedLabel, Answer, Question
from annotation.services.review import answer_correct
from campaigns.models import Campaign, Prompt
from metrics.options import ReportOptions
from metrics.snapshots.report import report_build
from tests.builders.metrics import (
    SMALL_GEP,
    SMALL_PST,
    annotators,
    answer_all,
    campaign_with_questions,
    gep_label,
    stereotyped,
)
from tests.conftest import token_client

from .conftest import World
from .test_access_matrix import endpoints

pytestmark = pytest.mark.django_db
OPTIONS = {"n_boot": "50", "n_perm": "50", "seed": "3"}


# --- append-only answers ------------------------------------------------------------------------
def test_no_endpoint_updates_or_deletes_answers() -> None:
    writers = {(e.key, m) for e in endpoints() if not e.key.startswith("admin") for m in e.methods
               if m in ("put", "patch", "delete")}
    # the only non-POST writes: the annotator's own profile, their demographics withdrawal (erases
    # demographics, never answers: tests/annotation/test_demographics.py), a campaign's soft delete,
    # the login FormView, removing an example image from the instructions (no answer touched)
    assert writers == {("annotation:annotator-me", "patch"), ("annotation:annotator-demographics", "delete"),
                       ("campaigns:campaign-detail", "delete"), ("annotation-pages:login", "put"), ("login", "put"),
                       ("annotation:campaign-example", "delete")}


def test_a_correction_is_a_new_linked_row(researcher: User) -> None:
    campaign, questions = campaign_with_questions(researcher, SMALL_GEP)
    raters = annotators(3)
    answer_all(campaign, questions[:1], lambda q: "Yes", raters, dissent_every=0)
    from annotation.labels import labels_recompute

    labels_recompute(campaign_id=campaign.pk)
    q = questions[0]
    assert AggregatedLabel.objects.get(question=q).label == "Yes"
    originals = list(Answer.objects.filter(question=q).order_by("pk"))
    first = answer_correct(answer_id=originals[0].pk, choice="No")
    second = answer_correct(answer_id=originals[1].pk, choice="No")
    assert first.corrects_id == originals[0].pk and second.corrects_id == originals[1].pk
    assert Answer.objects.filter(question=q).count() == 5  # nothing overwritten or deleted
    assert [a.choice for a in Answer.objects.filter(pk__in=[a.pk for a in originals]).order_by("pk")] == ["Yes"] * 3
    assert AggregatedLabel.objects.get(question=q).label == "No"  # the corrections count, not the originals
    from common.errors import ApplicationError, ConflictError

    with pytest.raises(ConflictError):
        answer_correct(answer_id=originals[0].pk, choice="Yes")  # correct the newest one instead
    with pytest.raises(ApplicationError, match="not one of"):
        answer_correct(answer_id=first.pk, choice="Maybe")
    assert answer_correct(answer_id=first.pk, choice="Yes").corrects_id == first.pk


# --- soft delete ------------------------------------------------------------------------------------
def test_delete_stores_an_archive_and_hides_the_campaign(world: World) -> None:
    c = world.campaign.pk
    owner = world.client("researcher_x")
    answers_before = Answer.objects.filter(campaign_id=c).count()
    assert world.client("researcher_y").delete(f"/api/campaigns/{c}/").status_code == 404
    response = owner.delete(f"/api/campaigns/{c}/")
    assert response.status_code == 204
    campaign = Campaign.objects.get(pk=c)  # still in the database
    assert campaign.deleted_at is not None
    assert Answer.objects.filter(campaign_id=c).count() == answers_before
    _dirs, files = default_storage.listdir("archives")
    archive = [f for f in files if f.startswith(f"campaign-{c}-")]
    assert archive
    with default_storage.open(f"archives/{archive[-1]}") as fh, zipfile.ZipFile(fh) as zf:
        manifest = json.loads(zf.read("manifest.json"))
        assert manifest["campaign"]["id"] == c and manifest["counts"]["questions"] == campaign.questions.count()
    # hidden everywhere
    assert owner.get(f"/api/campaigns/{c}/").status_code == 404
    assert c not in [x["id"] for x in owner.get("/api/campaigns/").json()["results"]]
    assert world.client("staff").get(f"/api/campaigns/{c}/report/").status_code == 404
    assert world.client("annotator_a").get(f"/api/campaigns/{c}/task/").status_code == 404
    assert world.client("annotator_a").post(f"/api/campaigns/{c}/assignments/").status_code == 404
    assert world.session_client("annotator_a").get(f"/work/{c}/").status_code == 404
    assert owner.delete(f"/api/campaigns/{c}/").status_code == 404


# --- export / import round trip -------------------------------------------------------------------------
def _figures(campaign: Campaign) -> dict[str, Any]:
    report = report_build(campaign=campaign, options=ReportOptions.from_params(OPTIONS))
    return {k: v for k, v in report.items() if k in ("agreement", "pst", "gep", "labels", "counts")}


@pytest.mark.parametrize(("spec", "label_of"), [(SMALL_PST, stereotyped), (SMALL_GEP, gep_label)], ids=["pst", "gep"])
def test_export_import_round_trip_keeps_the_report(researcher: User, other_researcher: User, spec: dict[str, Any],
                                                   label_of: Any) -> None:
    campaign, questions = campaign_with_questions(researcher, spec)
    answer_all(campaign, questions, label_of, annotators(3))
    first = Answer.objects.filter(campaign=campaign).order_by("pk").first()
    answer_correct(answer_id=first.pk, choice=[c for c in first.question.choices if c != first.choice][0])
    Campaign.objects.filter(pk=campaign.pk).update(status=Campaign.Status.CLOSED)
    campaign.refresh_from_db()
    exported = token_client(researcher).get(f"/api/campaigns/{campaign.pk}/export/")
    assert exported.status_code == 200 and exported["Content-Type"] == "application/zip"
    archive = exported.content
    names = set(zipfile.ZipFile(io.BytesIO(archive)).namelist())
    assert {"manifest.json", "prompts.jsonl", "images.jsonl", "questions.jsonl", "answers.jsonl",
            "annotators.jsonl", "qualifications.jsonl"} <= names
    assert b"ann-0" not in archive  # usernames stay home: annotators by pseudonym only
    client = token_client(other_researcher)
    response = client.post("/api/campaigns/import/", {"archive": io.BytesIO(archive)}, format="multipart")
    assert response.status_code == 201, response.content
    imported = Campaign.objects.get(pk=response.json()["id"])
    assert imported.owner == other_researcher and imported.pk != campaign.pk
    assert imported.status == Campaign.Status.CLOSED
    assert Answer.objects.filter(campaign=imported).count() == Answer.objects.filter(campaign=campaign).count()
    assert Answer.objects.filter(campaign=imported, corrects__isnull=False).count() == 1
    assert Question.objects.filter(campaign=imported).count() == len(questions)
    figures = _figures(campaign)
    assert figures["agreement"] and (figures.get("pst") or figures.get("gep"))
    assert _figures(imported) == figures


def test_cli_export_import(researcher: User, tmp_path: Path) -> None:
    campaign, questions = campaign_with_questions(researcher, SMALL_GEP)
    answer_all(campaign, questions, gep_label, annotators(3))
    out = tmp_path / "c.zip"
    call_command("campaign", "export", str(campaign.pk), "--out", str(out))
    buf = io.StringIO()
    call_command("campaign", "import", str(out), "--owner", researcher.username, stdout=buf)
    new_id = json.loads(buf.getvalue().strip().splitlines()[-1])["id"]
    assert Answer.objects.filter(campaign_id=new_id).count() == Answer.objects.filter(campaign=campaign).count()


def _zip(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return out.getvalue()


def test_bad_archives_are_400_naming_the_problem_and_write_nothing(researcher: User) -> None:
    campaign, questions = campaign_with_questions(researcher, SMALL_GEP)
    answer_all(campaign, questions[:5], gep_label, annotators(3))
    good = token_client(researcher).get(f"/api/campaigns/{campaign.pk}/export/").content
    members = {n: zipfile.ZipFile(io.BytesIO(good)).read(n) for n in zipfile.ZipFile(io.BytesIO(good)).namelist()}
    broken_answers = members["answers.jsonl"].replace(b'"question": ', b'"question": 999999', 1)
    cases = {
        "not a zip": b"hello",
        "manifest.json is missing": _zip({"prompts.jsonl": b""}),
        "format must be": _zip({**members, "manifest.json": b'{"format": "other"}'}),
        "not UTF-8": _zip({**members, "prompts.jsonl": b"\xff\xfe{}"}),
        "answers.jsonl line 1: not JSON": _zip({**members, "answers.jsonl": b"{oops\n"}),
        "unknown question": _zip({**members, "answers.jsonl": broken_answers}),
    }
    client = token_client(researcher)
    counts = (Campaign.objects.count(), Prompt.objects.count(), Answer.objects.count(), User.objects.count())
    for message, data in cases.items():
        response = client.post("/api/campaigns/import/", {"archive": io.BytesIO(data)}, format="multipart")
        assert response.status_code == 400, (message, response.content)
        assert message in response.json()["detail"], (message, response.json())
    assert client.post("/api/campaigns/import/", {}, format="multipart").json()["errors"] == {
        "archive": ["This field is required."]}
    assert (Campaign.objects.count(), Prompt.objects.count(), Answer.objects.count(), User.objects.count()) == counts
    with pytest.raises(CommandError, match="not a zip"):
        path = Path(default_storage.path("")).parent / "bad-archive-test.zip"
        path.write_bytes(b"nope")
        try:
            call_command("campaign", "import", str(path), "--owner", researcher.username)
        finally:
            path.unlink()
