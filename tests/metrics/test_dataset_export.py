"""The replication package (`GET /api/campaigns/{id}/export/dataset/`, `manage.py report ID --format
dataset`): loaded back with pandas and with the `datasets` library's Parquet loader, the headline
score recomputed from the answers equals the report's; annotators are pseudonyms; owner only."""
from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from rest_framework.test import APIClient

from annotation.models import Answer, Enrollment
from autolabel.models import MachineLabel
from generation.models import Image
from metrics.options import ReportOptions
from metrics.snapshots.report import report_build
from tests.builders.machine import machine_labels
from tests.builders.metrics import SMALL_GEP, SMALL_PST, annotators, answer_all, campaign_with_questions
from tests.conftest import token_client

pytestmark = pytest.mark.django_db


def stereotyped(q: Any) -> str:
    return "Masculine" if q.metadata["group"] == "male" else "Feminine"


def _zip(api: APIClient, campaign_id: int) -> zipfile.ZipFile:
    r = api.get(f"/api/campaigns/{campaign_id}/export/dataset/")
    assert r.status_code == 200 and r["Content-Type"] == "application/zip", r
    assert f"campaign-{campaign_id}-dataset.zip" in r["Content-Disposition"]
    return zipfile.ZipFile(io.BytesIO(b"".join(r.streaming_content)))


def _majority(counted: pd.DataFrame) -> pd.Series:
    """Majority label per question ('tie' when the top counts are equal), from the answer rows."""
    votes = counted.groupby(["question_id", "choice"]).size().unstack(fill_value=0)
    top = votes.max(axis=1)
    ties = (votes.eq(top, axis=0)).sum(axis=1) > 1
    return votes.idxmax(axis=1).where(~ties, "tie")


def _sts(answers: pd.DataFrame, groups: dict[str, str], setting: str) -> float:
    counted = answers[answers.counted & (answers.setting == setting)]
    label = _majority(counted)
    q = counted.drop_duplicates("question_id").set_index("question_id")
    stereo = q["group"].map(groups)  # the stereotyped choice of each person's group
    s = np.where(label.reindex(q.index) == stereo, 1, -1)  # the paper's formula: anything else is -1
    return 100.0 * s.mean()


def test_pst_dataset_loads_back_and_gives_the_reports_score(api: APIClient, researcher: User, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # the Parquet loader needs no network
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    campaign, questions = campaign_with_questions(researcher, {**SMALL_PST, "dataset": {"license": "CC-BY-4.0"}})
    raters = annotators(4)
    answer_all(campaign, questions, stereotyped, raters[:3])
    # Messier data: a blocked annotator's answers, a correction, an excluded image.
    answer_all(campaign, questions[:6], lambda q: "Cannot identify", raters[3:], dissent_every=0)
    Enrollment.objects.create(campaign=campaign, annotator=raters[3], status=Enrollment.Status.BLOCKED)
    first = Answer.objects.filter(campaign=campaign, annotator=raters[0]).order_by("id").first()
    assert first is not None
    Answer.objects.create(campaign=campaign, question=first.question, annotator=raters[0], choice="Cannot identify",
                          corrects=first)
    Image.objects.filter(pk=questions[-1].image_id).update(excluded=True)
    report = report_build(campaign=campaign, options=ReportOptions())
    machine_labels(campaign, "clip_gender", stereotyped, flip=0.2)

    z = _zip(api, campaign.pk)
    names = set(z.namelist())
    assert {"README.md", "spec.json", "report.json", "data/answers.parquet", "data/questions.parquet",
            "data/images.parquet"} <= names
    z.extractall(tmp_path)
    machine = pd.read_parquet(tmp_path / "data" / "machine_labels.parquet")  # the autolabel app's labels
    stored = MachineLabel.objects.filter(question__campaign=campaign)
    assert len(machine) == stored.count() > 0 and set(machine["labeller"]) == {"clip_gender"}
    assert sorted(machine["question_id"]) == sorted(stored.values_list("question_id", flat=True))
    answers = pd.read_parquet(tmp_path / "data" / "answers.parquet")
    assert len(answers) == Answer.objects.filter(campaign=campaign).count()
    assert answers.counted.sum() == report["counts"]["answers"]
    assert answers.annotator.str.fullmatch(r"annotator_\d{4}").all() and answers.annotator.nunique() == 4
    stored_ids = {str(a.pk) for a in raters} | {a.user.username for a in raters}
    assert not set(answers.annotator) & stored_ids
    assert answers[answers.annotator_blocked].counted.sum() == 0 and answers.superseded.sum() == 1
    assert {"identity", "group", "position", "sample_index", "image_key", "created_at"} <= set(answers.columns)
    groups = {"male": "Masculine", "female": "Feminine"}
    for setting in ("single", "paired"):
        assert _sts(answers, groups, setting) == pytest.approx(report["pst"][setting]["overall"]), setting
    # The `datasets` library's Parquet loader reads the same rows.
    from datasets import load_dataset

    hf = {name: load_dataset("parquet", data_files=str(tmp_path / "data" / f"{name}.parquet"), split="train",
                             cache_dir=str(tmp_path / "hf-cache")) for name in ("answers", "questions")}
    assert hf["answers"].num_rows == len(answers)
    via_hf = hf["answers"].to_pandas()
    assert _sts(via_hf, groups, "paired") == pytest.approx(report["pst"]["paired"]["overall"])
    qs = hf["questions"].to_pandas()
    assert qs[qs.counted & (qs.label == "tie")].shape[0] == report["counts"]["ties"]
    card = (tmp_path / "README.md").read_text()
    assert "license: CC-BY-4.0" in card and "pd.read_parquet" in card and 'load_dataset("parquet"' in card
    assert f"Krippendorff's alpha (nominal): {report['agreement']['overall']['krippendorff_alpha']}" in card
    assert json.loads((tmp_path / "spec.json").read_text())["name"] == "small-pst"
    images = pd.read_parquet(tmp_path / "data" / "images.parquet")
    assert len(images) == Image.objects.filter(campaign=campaign).count() and images.excluded.sum() == 1


def test_gep_dataset_by_the_command_and_default_license(researcher: User, tmp_path: Path) -> None:
    campaign, questions = campaign_with_questions(researcher, SMALL_GEP)
    answer_all(campaign, questions, lambda q: "Yes" if q.metadata["attribute"] == "dress" else "No", annotators(3))
    out = tmp_path / "gep.zip"
    call_command("report", str(campaign.pk), "--format", "dataset", "--out", str(out))
    with zipfile.ZipFile(out) as z:
        z.extractall(tmp_path / "gep")
    answers = pd.read_parquet(tmp_path / "gep" / "data" / "answers.parquet")
    assert {"gender", "attribute", "context"} <= set(answers.columns)
    report = json.loads((tmp_path / "gep" / "report.json").read_text())
    # GEP score from the answers: share of "Yes" labels per (gender, attribute), first minus second gender.
    neutral = answers[answers.counted & (answers.setting == "neutral")]
    label = _majority(neutral)
    q = neutral.drop_duplicates("question_id").set_index("question_id").assign(yes=(label == "Yes"))
    f = q.groupby(["gender", "attribute"]).yes.mean().unstack()
    assert (f.loc["woman"] - f.loc["man"]).abs().mean() == pytest.approx(report["gep"]["neutral"]["score"])
    assert "license: unknown" in (tmp_path / "gep" / "README.md").read_text()


def test_dataset_is_owner_only(researcher: User, other_researcher: User, plain_user: User) -> None:
    campaign, _ = campaign_with_questions(researcher, SMALL_PST)
    url = f"/api/campaigns/{campaign.pk}/export/dataset/"
    assert token_client(other_researcher).get(url).status_code == 404
    assert token_client(plain_user).get(url).status_code == 403
    assert APIClient().get(url).status_code == 401
    assert not Enrollment.objects.exists()


def test_spec_dataset_section_is_validated(api: APIClient) -> None:
    r = api.post("/api/specs/preview/", {**SMALL_PST, "dataset": {"license": 5, "doi": "x"}}, format="json")
    errors = r.json()["errors"]
    assert r.status_code == 400 and "dataset.license" in errors and "dataset.doi" in errors
