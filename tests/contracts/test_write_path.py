"""Contract (issue 21): one write path for everything derived from answers.

Every writer runs through the public API (or its service where there is no endpoint), one after
the other on one campaign: HITs through the engine, the MTurk batch import, gold marking, a
correction, blocking and resuming, exclusion, demographics answers and their withdrawal, a
machine-label import, examples, R for a subset, the archive import; references on a PST campaign.
After each writer:
  - the stored majority labels equal the labels the report computes (labels.csv of the report);
  - the counters equal the rows: `completed` = original answers, `assigned` = live or answered leases;
  - the campaign's data revision moved (the report is never served from the snapshot before).
"""
from __future__ import annotations

import csv
import io
import json
import random
import zipfile
from collections import Counter
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile

from annotation.models import AggregatedLabel, Annotator, Answer, AssignmentItem, Question
from annotation.services.answers import answer_correct
from annotation.services.derived import data_revision
from campaigns.models import Campaign
from campaigns.services import campaign_create
from generation.importer import images_import
from tests.builders.campaigns import make_annotator, make_campaign
from tests.conftest import token_client

pytestmark = pytest.mark.django_db
CONTEXTS = ["sitting at a table", "walking in a park"]
URLS = {(g, c): f"https://img.example/{g}-{n}.png" for n, c in enumerate(CONTEXTS) for g in ("woman", "man")}
HEADER = ["HITId", "WorkerId", "AssignmentId", "AssignmentStatus", "WorkTimeInSeconds", "Input.attribute",
          "Input.image_url0", "Input.image_url1", "Answer.No0.0", "Answer.No1.0", "Answer.Yes0.1", "Answer.Yes1.1"]


def _campaign(owner: User) -> Campaign:
    spec = {"name": "write path", "kind": "gep", "seed": 5, "backend": {"name": "import"},
            "design": {"settings": ["neutral"], "samples": 1, "contexts": CONTEXTS,
                       "attributes": [{"name": "boots", "phrase": "in boots"}]},
            "annotation": {"redundancy": 3, "hit_size": 2, "demographics": True}}
    campaign = campaign_create(owner=owner, spec=spec)
    manifest = "prompt_key,sample_index,url\n" + "".join(
        f"neutral:{g}|{c},0,{url}\n" for (g, c), url in URLS.items())
    images_import(campaign=campaign, manifest_name="m.csv", manifest=manifest.encode())
    return campaign


def _report_labels(api: Any, campaign_id: int) -> dict[int, tuple[str, bool, dict[str, int]]]:
    resp = api.get(f"/api/campaigns/{campaign_id}/report/?format=csv&n_boot=0&n_perm=0")
    assert resp.status_code == 200, resp.content
    text = zipfile.ZipFile(io.BytesIO(resp.content)).read("labels.csv").decode()
    out = {}
    for row in csv.DictReader(io.StringIO(text)):
        votes = dict(part.split("=") for part in row["votes"].split(";") if part)
        out[int(row["question_id"])] = (row["label"], row["tie"] == "True", {k: int(v) for k, v in votes.items()})
    return out


def _holds(api: Any, campaign_id: int, *, leases: bool = True) -> dict[int, tuple[str, bool, dict[str, int]]]:
    """Stored labels == the report's; counters == rows (questions that are not gold). An archive holds
    no leases: `assigned` of an imported campaign is its answers, at most `required`."""
    report = _report_labels(api, campaign_id)
    stored = {lab.question_id: (lab.label, lab.tie, lab.votes)
              for lab in AggregatedLabel.objects.filter(question__campaign_id=campaign_id)}
    for qid, (label, tie, votes) in report.items():
        assert stored.get(qid, ("", False, {})) == (label, tie, votes), qid
    assert not any(stored.get(q) for q in Question.objects.filter(campaign_id=campaign_id, is_gold=True)
                   .values_list("pk", flat=True))
    answers = Counter(Answer.objects.filter(campaign_id=campaign_id, corrects__isnull=True)
                      .values_list("question_id", flat=True))
    held = Counter(AssignmentItem.objects.filter(question__campaign_id=campaign_id,
                                                   status__in=[AssignmentItem.Status.LEASED,
                                                               AssignmentItem.Status.ANSWERED])
                     .values_list("question_id", flat=True))
    for qid, assigned, completed in Question.objects.filter(campaign_id=campaign_id, is_gold=False).values_list(
            "pk", "assigned", "completed"):
        assert (assigned if leases else None, completed) == (held[qid] if leases else None, answers[qid]), qid
    return report


class Steps:
    """Runs each writer, then checks the contract and that the revision moved."""

    def __init__(self, api: Any, campaign: Campaign) -> None:
        self.api, self.campaign = api, campaign
        self.revision = data_revision(campaign_id=campaign.pk)
        self.names: list[str] = []

    def __call__(self, name: str, response: Any = None, ok: tuple[int, ...] = (200, 201, 204)) -> None:
        if response is not None:
            assert response.status_code in ok, (name, response.content)
        now = data_revision(campaign_id=self.campaign.pk)
        assert now != self.revision, f"{name}: the data revision did not move"
        self.revision = now
        _holds(self.api, self.campaign.pk)
        self.names.append(name)


def _work(client: Any, campaign_id: int, choose: Any) -> int:
    given = 0
    while True:
        hit = client.post(f"/api/campaigns/{campaign_id}/assignments/")
        if hit.status_code == 204:
            return given
        assert hit.status_code in (200, 201), hit.content
        body = hit.json()
        answers = [{"question": q["id"], "choice": choose(q), "time_ms": 1500} for q in body["questions"]]
        assert client.post(f"/api/assignments/{body['id']}/submit/", {"answers": answers},
                           format="json").status_code == 200
        given += len(answers)


def test_every_writer_keeps_labels_counters_and_the_revision(researcher: User) -> None:
    api = token_client(researcher)
    campaign = _campaign(researcher)
    step = Steps(api, campaign)
    step("open", api.post(f"/api/campaigns/{campaign.pk}/open/"))
    questions = list(Question.objects.filter(campaign=campaign).order_by("pk"))
    assert len(questions) == 4
    rng = random.Random(3)
    people = [make_annotator(n, campaign=campaign) for n in ("ann", "ben")]
    for _, client in people:
        assert _work(client, campaign.pk, lambda q: rng.choice(q["choices"])) == 4
    step("HIT submits")
    url = {(g, c): u for (g, c), u in URLS.items()}
    rows = [["H1", "A1", "X1", "Approved", "20", "in boots", url["woman", CONTEXTS[0]], url["man", CONTEXTS[0]],
             "false", "true", "true", "false"],
            ["H2", "A2", "X2", "Approved", "20", "in boots", url["woman", CONTEXTS[1]], url["man", CONTEXTS[1]],
             "true", "false", "false", "true"],
            ["H1", "A3", "X3", "Submitted", "20", "in boots", url["woman", CONTEXTS[0]], url["man", CONTEXTS[0]],
             "true", "true", "false", "false"]]
    out = io.StringIO()
    csv.writer(out).writerows([HEADER, *rows])
    step("MTurk batch import", api.post(f"/api/campaigns/{campaign.pk}/mturk/import/", {
        "file": SimpleUploadedFile("batch.csv", out.getvalue().encode()), "mapping": json.dumps({"slots": 2})},
        format="multipart"))
    assert AggregatedLabel.objects.filter(question__campaign=campaign).count() == 4
    gold = questions[0]
    step("gold", api.post(f"/api/campaigns/{campaign.pk}/questions/gold/",
                          {"items": [{"question": gold.pk, "answer": "Yes"}]}, format="json"))
    ann = people[0][0]
    original = Answer.objects.filter(annotator=ann, question=questions[1]).get()
    answer_correct(answer_id=original.pk, choice="No" if original.choice == "Yes" else "Yes")
    step("correction")
    action = f"/api/campaigns/{campaign.pk}/annotators/"
    step("block", api.post(f"{action}{people[1][0].pk}/", {"action": "block"}, format="json"))
    step("resume", api.post(f"{action}{people[1][0].pk}/", {"action": "resume"}, format="json"))
    step("exclude", api.post(f"/api/images/{questions[3].image_id}/exclude/", {"reason": "blurry"}, format="json"))
    step("include", api.post(f"/api/images/{questions[3].image_id}/include/"))
    client = people[0][1]
    step("demographics", client.post(f"/api/campaigns/{campaign.pk}/demographics/", {
        "consent": True, "consent_version": "1", "answers": {"gender": "woman"}}, format="json"))
    step("withdrawal", client.post("/api/annotators/me/demographics/withdraw/"))
    step("profile demographics", client.patch("/api/annotators/me/", {"demographics": {"age_band": "25-34"}},
                                              format="json"))
    labels = "image,attribute,choice,score,model\n" + "".join(f"{q.image_id},boots,Yes,0.9,m\n" for q in questions[1:])
    step("machine-label import", api.post(f"/api/campaigns/{campaign.pk}/machine-labels/import/", {
        "file": SimpleUploadedFile("labels.csv", labels.encode()), "labeller": "ext"}, format="multipart"))
    example = api.post(f"/api/campaigns/{campaign.pk}/examples/",
                       {"family": "attribute:boots", "image": questions[2].image_id, "answer": "Yes"}, format="json")
    step("example", example)
    step("example removed", api.delete(f"/api/campaigns/{campaign.pk}/examples/{example.json()['id']}/"))
    step("redundancy", api.post(f"/api/campaigns/{campaign.pk}/questions/redundancy/",
                                {"questions": [questions[1].pk], "required": 5}, format="json"))
    step("pause", api.post(f"/api/campaigns/{campaign.pk}/pause/"))
    # The archive import: a new campaign whose derived data is the write path's too.
    archive = api.get(f"/api/campaigns/{campaign.pk}/export/")
    assert archive.status_code == 200
    imported = api.post("/api/campaigns/import/", {"archive": SimpleUploadedFile("a.zip", archive.content)},
                        format="multipart")
    assert imported.status_code == 201, imported.content
    copy = imported.json()["id"]
    assert data_revision(campaign_id=copy) != "0.0.0"
    assert sorted(map(repr, _holds(api, copy, leases=False).values())) == sorted(map(repr, _holds(api, campaign.pk).values()))
    assert len(step.names) == 17
    assert Annotator.objects.filter(mturk_worker_id__in=["A1", "A2", "A3"]).count() == 3


def test_references_move_the_revision(researcher: User) -> None:
    campaign = make_campaign(researcher, kind="pst")
    before = data_revision(campaign_id=campaign.pk)
    api = token_client(researcher)
    text = "name,source,identity,percent_female\nbls,BLS 2023,nurse,87.0\n"
    resp = api.post(f"/api/campaigns/{campaign.pk}/references/", {"file": SimpleUploadedFile("r.csv", text.encode())},
                    format="multipart")
    assert resp.status_code == 200, resp.content
    assert data_revision(campaign_id=campaign.pk) != before


WRITES = {"create", "bulk_create", "bulk_update", "update", "delete", "get_or_create", "update_or_create"}


def _root(node: Any) -> Any:
    import ast

    while isinstance(node, (ast.Attribute, ast.Call, ast.Subscript)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node


def test_crowd_writes_no_table_of_annotation() -> None:
    """`crowd` goes through annotation's services (answers, HITs, annotators): no ORM write on a model
    of `annotation.models` in any crowd module."""
    import ast
    from pathlib import Path

    found = []
    for path in sorted(Path("crowd").rglob("*.py")):
        tree = ast.parse(path.read_text())
        models = {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                  and n.module == "annotation.models" for a in n.names}
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in WRITES:
                root = _root(node.func)
                if isinstance(root, ast.Name) and root.id in models:
                    found.append(f"{path}:{node.lineno} {root.id}...{node.func.attr}")
    assert found == []
    assert Path("crowd/mturk_batch.py").read_text().count("answers_import(") == 1  # the check sees the importer
