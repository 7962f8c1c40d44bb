"""Contract: the majority labels the annotation app stores as answers arrive (`AggregatedLabel`, kept
current by the HIT engine on submit and by blocking / unblocking an annotator) equal the labels the
report computes from the answers themselves (labels.csv of the report export): same label, same tie
flag, same votes, for every question of the report, on random answers.

Everything goes through the public HTTP surface (open, gold, HITs, submit, block, resume, exclude,
report), through both HIT engines (prepared SQL and ORM), with ties (R = 5, one annotator blocked),
gold questions, a blocked annotator, corrections (taken into account when their annotator is
blocked and resumed) and an excluded image."""
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
                                                       "annotation": {"redundancy": 5, "hit_size": 3}})
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
    assert len(worked) >= 5  # R = 5: the first five answer every question
    action = f"/api/campaigns/{campaign.pk}/annotators/"
    # Block one annotator for good; correct another's answers, then block and resume them (each
    # recomputes the labels of their questions).
    blocked, corrector = worked[0], worked[1]
    assert api.post(f"{action}{blocked.pk}/", {"action": "block"}, format="json").status_code == 200
    theirs = list(Answer.objects.filter(campaign=campaign, annotator=corrector, question__is_gold=False))
    for original in rng.sample(theirs, min(4, len(theirs))):
        Answer.objects.create(campaign=campaign, question_id=original.question_id, annotator=corrector,
                              choice="No" if original.choice == "Yes" else "Yes", corrects=original,
                              source="correction")
    for step in ("block", "resume"):
        assert api.post(f"{action}{corrector.pk}/", {"action": step}, format="json").status_code == 200
    excluded = rng.choice(images)
    assert api.post(f"/api/images/{excluded.pk}/exclude/", {"reason": "blurry"}, format="json").status_code == 200

    report = _report_labels(api, campaign.pk)
    stored = {lab.question_id: (lab.label, lab.tie, lab.votes)
              for lab in AggregatedLabel.objects.filter(question__campaign=campaign)}
    assert set(report) == {q.pk for q in questions if not q.is_gold and q.image_id != excluded.pk} - {
        g["question"] for g in gold}
    for qid, (label, tie, votes) in report.items():
        assert stored.get(qid, ("", False, {})) == (label, tie, votes), qid
    # The random data held what the contract is about.
    assert any(tie for _, tie, _ in report.values()) and any(not tie and label for label, tie, _ in report.values())
    assert Answer.objects.filter(campaign=campaign, annotator=blocked, question_id__in=list(report)).exists()
    assert Answer.objects.filter(campaign=campaign, annotator=corrector, corrects__isnull=False).count() >= 1
