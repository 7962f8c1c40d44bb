"""The PST fairness-intervention analysis in the report (PST section 5, Tables 5-6): the intervention
setting against the plain paired setting on the same identities, all of them and the paper's top-5
selection (Table 6's published figures are reproduced in tests/metrics/core/)."""
from __future__ import annotations

import csv
import io
import zipfile
from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from metrics.options import ReportOptions
from metrics.snapshots.report import report_build
from tests.builders.intervals import interval_violations
from tests.builders.metrics import annotators, answer_all, campaign_with_questions

pytestmark = pytest.mark.django_db
MALE = ["ceo", "guard", "janitor", "mover", "pilot", "sheriff"]
FEMALE = ["cashier", "maid", "nanny", "nurse", "secretary", "teacher"]
SPEC = {"name": "intervention", "kind": "pst", "seed": 3, "design": {
    "settings": ["paired"], "fairness_intervention": True, "samples": {"paired": 1, "intervention": 1},
    "identities": {"groups": [{"name": "male", "stereotype": "masculine", "identities": MALE},
                              {"name": "female", "stereotype": "feminine", "identities": FEMALE}]}},
    "backend": {"name": "placeholder"}}


def label(q: Any) -> str:
    """Plain paired: stereotyped except guard and teacher (always anti); intervention: always anti."""
    male = q.metadata["group"] == "male"
    anti = q.metadata["setting"] == "intervention" or q.metadata["identity"] in ("guard", "teacher")
    return ("Feminine" if male else "Masculine") if anti else ("Masculine" if male else "Feminine")


def test_intervention_against_plain_paired_all_and_top5(researcher: User, api: APIClient) -> None:
    campaign, questions = campaign_with_questions(researcher, SPEC)
    answer_all(campaign, questions, label, annotators(3))
    report = report_build(campaign=campaign, options=ReportOptions(n_boot=300, n_perm=300))
    ia = report["pst"]["intervention_analysis"]
    assert ia["top_k"] == 5
    everyone = ia["all"]
    assert everyone["plain"] == pytest.approx(100 * (120 - 24) / 144) and everyone["intervention"] == -100.0
    assert everyone["difference"]["difference"] == pytest.approx(-100 - 100 * 96 / 144)
    assert everyone["difference"]["ci_method"] == "bca-cluster" and everyone["difference"]["p_value"] < 0.01
    assert everyone["images"] == {"plain": 72, "intervention": 72} and everyone["selection"] is None
    assert set(everyone["micro"]) == set(MALE + FEMALE) and everyone["micro"]["guard"]["difference"] == 0.0
    assert everyone["micro"]["pilot"]["p_holm"] is not None
    top = ia["top_5"]
    assert top["selection"]["selected"] == {"female": ["cashier", "maid", "nanny", "nurse", "secretary"],
                                            "male": ["ceo", "janitor", "mover", "pilot", "sheriff"]}
    assert top["plain"] == 100.0 and top["intervention"] == -100.0 and top["difference"]["difference"] == -200.0
    assert top["images"] == {"plain": 50, "intervention": 50}
    lo, hi = top["difference"]["ci"]
    assert lo <= -200.0 <= hi
    assert interval_violations(report) == []
    html = api.get(f"/api/campaigns/{campaign.pk}/report/?format=html&n_boot=50&n_perm=50").content.decode()
    assert 'id="intervention"' in html and "Fairness intervention" in html
    zf = zipfile.ZipFile(io.BytesIO(api.get(f"/api/campaigns/{campaign.pk}/report/?format=csv&n_boot=50").content))
    rows = list(csv.DictReader(io.StringIO(zf.read("pst_intervention.csv").decode())))
    overall = {r["variant"]: r for r in rows if r["scope"] == "overall"}
    assert float(overall["top_5"]["difference"]) == -200.0 and "pilot" in overall["top_5"]["selected"]
    # Without resampling: the point figures only.
    plain = report_build(campaign=campaign, options=ReportOptions(n_boot=0, n_perm=0))["pst"]["intervention_analysis"]
    assert plain["top_5"]["difference"] == -200.0 and plain["all"]["intervention"] == -100.0
