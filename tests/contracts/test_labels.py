"""Contract: the majority labels the annotation app stores as answers arrive (`AggregatedLabel`, kept
current by the HIT engine on submit and by blocking / unblocking an annotator) equal the labels the
report computes from the answers themselves (labels.csv of the report export): same label, same tie
flag, same votes, for every question of the report, on random answers.

Everything goes through the public HTTP surface (open, gold, HITs, submit, block, resume, exclude,
report), through both HIT engines (prepared SQL and ORM), with ties (R = 4),
gold questions, a blocked annotator, corrections (through the service that writes them) and an
excluded image. The labels are compared twice: as the HIT engine alone wrote them (before any
block / resume step, which recomputes the labels of the annotator's questions through the ORM and
would hide a difference in the SQL engine's rule), and after every other writer."""
from __future__ import annotations

import csv
import io
import random
import zipfile
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.utils import timezone

from annotation.models import AggregatedLabel, Answer, Enrollment, Question
from annotation.services.answers import answer_correct
from campaigns.services import campaign_create
from generation.models import Image
from tests.builders.metrics import SMALL_GEP, annotators, make_images
from tests.conftest import token_client

pytestmark = pytest.mark.django_db


def _work(client: Any, campaign_id: int, rng: random.Random, bias: dict[int, float]) -> int:
    """Take and submit HITs until there is none left; returns the answers given."""
    given = 0
    while True:
        hit = client.post(f"/api/campaigns/{campaign_id}/assignments/")
        if hit.status_code == 204:
            return given
        assert hit.status_code in (200, 201), hit.content
        body = hit.json()
        answers = [{"question": q["id"], "time_ms": rng.randrange(500, 9000),
                    "choice": q["choices"][0] if rng.random() < bias.setdefault(q["id"], rng.choice([0.5, 0.8])) else
                    q["choices"][1]} for q in body["questions"]]
        done = client.post(f"/api/assignments/{body['id']}/submit/", {"answers": answers}, format="json")
        assert done.status_code == 200, done.content
        given += len(answers)


def _stored_equal_report(api: Any, campaign_id: int, expected: set[int]) -> dict[int, tuple[str, bool, dict[str, int]]]:
    """The stored labels equal the report's for every question of the report (those `expected`)."""
    report = _report_labels(api, campaign_id)
    stored = {lab.question_id: (lab.label, lab.tie, lab.votes)
              for lab in AggregatedLabel.objects.filter(question__campaign_id=campaign_id)}
    assert set(report) == expected
    for qid, (label, tie, votes) in report.items():
        assert stored.get(qid, ("", False, {})) == (label, tie, votes), qid
    return report


def _report_labels(api: Any, campaign_id: int) -> dict[int, tuple[str, bool, dict[str, int]]]:
    resp = api.get(f"/api/campaigns/{campaign_id}/report/?format=csv&n_boot=0&n_perm=0")
    assert resp.status_code == 200, resp.content
    text = zipfile.ZipFile(io.BytesIO(resp.content)).read("labels.csv").decode()
    out = {}
    for row in csv.DictReader(io.StringIO(text)):
        votes = dict(part.split("=") for part in row["votes"].split(";") if part)
        out[int(row["question_id"])] = (row["label"], row["tie"] == "True", {k: int(v) for k, v in votes.items()})
    return out


@pytest.mark.parametrize("engine", ["sql", "orm"])
@pytest.mark.parametrize("seed", [1, 2])
def test_stored_majority_labels_equal_the_report_labels(researcher: User, settings: Any, engine: str,
                                                         seed: int) -> None:
    if engine == "sql" and connection.vendor != "postgresql":
        pytest.skip("the SQL engine is PostgreSQL's; CI runs it there")
    settings.FASTPATHS = {**settings.FASTPATHS, "hit_engine": engine == "sql"}
    rng = random.Random(seed)
    campaign = campaign_create(owner=researcher, spec={**SMALL_GEP, "name": f"labels-{engine}-{seed}",
                                                       "annotation": {"redundancy": 4, "hit_size": 3}})
    images = make_images(campaign)
    Image.objects.filter(campaign=campaign).update(web_file="images/x.webp")
    api = token_client(researcher)
    assert api.post(f"/api/campaigns/{campaign.pk}/open/").status_code == 200
    questions = list(Question.objects.filter(campaign=campaign).order_by("pk"))
    gold = [{"question": q.pk, "answer": "Yes"} for q in rng.sample(questions, 2)]
    assert api.post(f"/api/campaigns/{campaign.pk}/questions/gold/", {"items": gold}, format="json").status_code == 200
    people = annotators(8, f"lab{engine}{seed}-")
    now = timezone.now()
    Enrollment.objects.bulk_create([Enrollment(campaign=campaign, annotator=a, consented_at=now) for a in people])
    bias: dict[int, float] = {}
    order = rng.sample(people, len(people))
    worked = [p for p in order if _work(token_client(p.user), campaign.pk, rng, bias)]
    assert len(worked) >= 4  # R = 4 (ties possible): the first four answer every question
    # First as the engine alone wrote them (prepared SQL or ORM): before any block / resume step,
    # which makes the ORM rewrite every label of the annotator's questions.
    pool = {q.pk for q in questions} - {g["question"] for g in gold}
    first = _stored_equal_report(api, campaign.pk, pool)
    assert any(tie for _, tie, _ in first.values()) and any(not tie and label for label, tie, _ in first.values())
    action = f"/api/campaigns/{campaign.pk}/annotators/"
    # Block one annotator for good; correct another's answers, then block and resume them (each
    # recomputes the labels of their questions).
    blocked, corrector = worked[0], worked[1]
    assert api.post(f"{action}{blocked.pk}/", {"action": "block"}, format="json").status_code == 200
    theirs = list(Answer.objects.filter(campaign=campaign, annotator=corrector, question__is_gold=False))
    for original in rng.sample(theirs, min(4, len(theirs))):
        answer_correct(answer_id=original.pk, choice="No" if original.choice == "Yes" else "Yes")
    for step in ("block", "resume"):
        assert api.post(f"{action}{corrector.pk}/", {"action": step}, format="json").status_code == 200
    excluded = rng.choice(images)
    assert api.post(f"/api/images/{excluded.pk}/exclude/", {"reason": "blurry"}, format="json").status_code == 200

    report = _stored_equal_report(api, campaign.pk, pool - {q.pk for q in questions if q.image_id == excluded.pk})
    # The random data held what the contract is about (ties: in the first comparison).
    assert any(not tie and label for label, tie, _ in report.values())
    assert Answer.objects.filter(campaign=campaign, annotator=blocked, question_id__in=list(report)).exists()
    assert Answer.objects.filter(campaign=campaign, annotator=corrector, corrects__isnull=False).count() >= 1
