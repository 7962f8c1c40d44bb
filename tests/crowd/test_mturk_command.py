"""`manage.py mturk` (publish, qualify, sync, import-batch) with a stubbed boto3 client, and the
batch-import API: a good file is imported, a bad one is a 400 naming the rows and writes nothing."""
from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.models import Answer, Assignment
from annotation.services.qualification import qualification_create
from campaigns.models import Campaign
from crowd import mturk, services
from crowd.models import MTurkAssignmentRecord, MTurkHit, MTurkQualificationType
from tests.builders.crowd import MAPPING, M, W, small  # noqa: F401  (fixture)
from tests.builders.crowd import batch_csv as _csv
from tests.conftest import make_researcher, token_client

pytestmark = pytest.mark.django_db
GOOD = [["H1", "A1", "X1", "Submitted", "20", "in boots", W, M, "false", "true", "true", "false"],
        ["H1", "A2", "X2", "Approved", "30", "in boots", W, M, "false", "true", "true", "false"]]
BAD = ["H1", "A3", "X3", "Submitted", "20", "in boots", "https://img.example/nope.png", M,
       "true", "true", "false", "false"]


@pytest.fixture
def stubbed(monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Stubber, list[Any]]:
    client = boto3.client("mturk", region_name="us-east-1", endpoint_url=mturk.SANDBOX_ENDPOINT,
                          aws_access_key_id="test", aws_secret_access_key="test")
    stub = Stubber(client)
    asked: list[Any] = []

    def factory(**kwargs: Any) -> Any:
        asked.append(kwargs.get("sandbox"))
        return client

    monkeypatch.setattr(services, "mturk_client_factory", factory)
    return client, stub, asked


def run(*args: str) -> dict[str, Any]:
    out = io.StringIO()
    call_command("mturk", *args, stdout=out)
    return json.loads(out.getvalue())


def test_publish_qualify_and_sync(campaign: Campaign, stubbed: Any) -> None:
    _client, stub, asked = stubbed
    image = campaign.images.order_by("pk").first()
    qual = qualification_create(campaign=campaign, name="t",
                                                    family=campaign.questions.first().family,
                                                    items=[{"image": image.pk, "correct": "Yes"}])
    stub.add_response("create_qualification_type", {"QualificationType": {"QualificationTypeId": "QT1"}},
                      {"Name": ANY, "Keywords": ANY, "Description": ANY, "QualificationTypeStatus": "Active",
                       "RetryDelayInSeconds": 3600, "Test": ANY, "AnswerKey": ANY, "TestDurationInSeconds": 1800})
    for n in range(3):  # 6 questions / HITs of 2
        stub.add_response("create_hit", {"HIT": {"HITId": f"HIT{n}", "HITTypeId": "T"}},
                          {"MaxAssignments": 3, "AutoApprovalDelayInSeconds": ANY, "LifetimeInSeconds": ANY,
                           "AssignmentDurationInSeconds": ANY, "Reward": "0.10", "Title": ANY, "Keywords": ANY,
                           "Description": ANY, "Question": ANY, "RequesterAnnotation": f"campaign:{campaign.pk}",
                           "QualificationRequirements": ANY,
                           "UniqueRequestToken": mturk._token("create_hit", campaign.pk, n)})
    for n in range(3):
        stub.add_response("list_assignments_for_hit", {"Assignments": []}, {
            "HITId": f"HIT{n}", "MaxResults": 100, "AssignmentStatuses": ["Submitted", "Approved", "Rejected"]})
    with stub:
        qualified = run("qualify", str(campaign.pk))
        published = run("publish", str(campaign.pk), "--production")
        synced = run("sync", str(campaign.pk), "--sandbox")
    stub.assert_no_pending_responses()
    assert qualified["qualification_types"] == [{"qualification": qual.pk, "family": qual.family,
                                                 "qualification_type_id": "QT1"}]
    assert MTurkQualificationType.objects.get().qualification == qual
    assert published["published"] == 3 and published["hit_ids"] == ["HIT0", "HIT1", "HIT2"]
    assert published["task_url"].endswith(f"/mturk/{campaign.pk}/")
    assert MTurkHit.objects.filter(campaign=campaign).count() == 3
    assert synced["listed"] == 0
    assert asked == [None, False, True]  # default (MTURK_SANDBOX), --production, --sandbox
    # Everything published already: nothing more unless --hits asks for it.
    assert run("publish", str(campaign.pk))["published"] == 0


def test_publish_refuses_a_draft(researcher: User, stubbed: Any) -> None:
    from tests.builders.campaigns import make_campaign

    draft = make_campaign(researcher)
    with pytest.raises(CommandError, match="Open the campaign"):
        run("publish", str(draft.pk), "--hits", "1")


def test_import_batch_command(small: Campaign, tmp_path: Path) -> None:  # noqa: F811
    good = tmp_path / "good.csv"
    good.write_bytes(_csv(GOOD))
    bad = tmp_path / "bad.csv"
    bad.write_bytes(_csv(GOOD + [BAD]))
    with pytest.raises(CommandError) as info:
        run("import-batch", str(small.pk), str(bad), "--mapping", json.dumps(MAPPING))
    message = str(info.value)
    assert "row 4: Input.image_url0: unknown image URL https://img.example/nope.png" in message
    assert Answer.objects.count() == 0
    dry = run("import-batch", str(small.pk), str(good), "--mapping", json.dumps(MAPPING), "--dry-run")
    assert dry["answers"] == 4 and Answer.objects.count() == 0
    mapping_file = tmp_path / "mapping.json"
    mapping_file.write_text(json.dumps(MAPPING))
    result = run("import-batch", str(small.pk), str(good), "--mapping", str(mapping_file))
    assert result == {"campaigns": [small.pk], "dry_run": False, "rows": 2, "assignments": 2, "answers": 4,
                      "skipped_rows": 0, "skipped_by_status": {}, "workers": 2, "questions": 2}
    assert Answer.objects.filter(campaign=small).count() == 4
    with pytest.raises(CommandError, match="no such file"):
        run("import-batch", str(small.pk), str(tmp_path / "missing.csv"))


def test_import_api(small: Campaign, researcher: User) -> None:  # noqa: F811
    api = token_client(researcher)
    url = f"/api/campaigns/{small.pk}/mturk/import/"
    bad = api.post(url, {"file": SimpleUploadedFile("b.csv", _csv(GOOD + [BAD])), "mapping": json.dumps(MAPPING)},
                   format="multipart")
    assert bad.status_code == 400
    assert any("unknown image URL" in m for m in bad.json()["errors"]["row 4"])
    assert Answer.objects.count() == Assignment.objects.count() == MTurkAssignmentRecord.objects.count() == 0
    missing = api.post(url, {"mapping": json.dumps(MAPPING)}, format="multipart")
    assert missing.status_code == 400 and missing.json()["errors"] == {"file": ["required"]}
    assert api.post(url, {"file": SimpleUploadedFile("g.csv", _csv(GOOD)), "mapping": "{nope"},
                    format="multipart").status_code == 400
    # Only the owner: another researcher gets 404, an annotator 403.
    other = token_client(make_researcher("olga"))
    assert other.post(url, {"file": SimpleUploadedFile("g.csv", _csv(GOOD)), "mapping": json.dumps(MAPPING)},
                      format="multipart").status_code == 404
    annotator_user = User.objects.create_user(username="ann", password="x")
    assert token_client(annotator_user).post(url, {"file": SimpleUploadedFile("g.csv", _csv(GOOD))},
                                             format="multipart").status_code == 403
    assert Answer.objects.count() == 0
    good = api.post(url, {"file": SimpleUploadedFile("g.csv", _csv(GOOD)), "mapping": json.dumps(MAPPING)},
                    format="multipart")
    assert good.status_code == 200, good.json()
    assert good.json() | {} == {"campaigns": [small.pk], "rows": 2, "assignments": 2, "answers": 4, "skipped_rows": 0,
                                "skipped_by_status": {}, "workers": 2, "questions": 2}
    assert Answer.objects.filter(campaign=small, source="mturk-import").count() == 4
    assert set(MTurkAssignmentRecord.objects.values_list("mturk_assignment_id", flat=True)) == {"X1", "X2"}
    again = api.post(url, {"file": SimpleUploadedFile("g.csv", _csv(GOOD)), "mapping": json.dumps(MAPPING)},
                     format="multipart")
    assert again.status_code == 400 and "already imported" in again.json()["detail"]
