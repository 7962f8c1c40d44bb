"""Label sources compared across campaigns and settings (GEP Table 6 shape): the pure function on the
paper's published scores, and the compare endpoint's `source=`."""
from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient
from scipy import stats

from metrics.compare.sources import sources_comparison
from metrics.extract.data import CampaignFacts
from tests.builders.machine import TABLE_6, TABLE_6_HUMAN, machine_labels
from tests.builders.metrics import SMALL_GEP, annotators, answer_all, campaign_with_questions, gep_label


def _facts(i: int, name: str) -> CampaignFacts:
    return CampaignFacts(id=i, name=name, kind="gep", kind_display="GEP", status="done", seed=1, spec={})


def test_table_6_from_published_scores() -> None:
    models = ["CogView", "DALLE", "Stable"]
    facts = [_facts(i + 1, m) for i, m in enumerate(models)]
    human = [{"gep": {"neutral": {"score": TABLE_6_HUMAN[i]}, "explicit": {"score": TABLE_6_HUMAN[3 + i]}}}
             for i in range(3)]
    reports: dict[str, list[dict[str, Any]]] = {"human": human}
    for method, scores in TABLE_6.items():
        reports[method] = [{"gep": {}, "auto": {method: {"gep": {"neutral": {"score": scores[i]},
                                                                  "explicit": {"score": scores[3 + i]}}}}}
                           for i in range(3)]
    out = sources_comparison("gep", facts, reports)
    assert out["agreement"]["C"]["kendall_tau_b"] == pytest.approx(0.466, abs=0.001)
    assert out["agreement"]["CC"]["kendall_tau_b"] == pytest.approx(0.733, abs=0.001)
    assert out["agreement"]["CLS"]["kendall_tau_b"] == pytest.approx(1.000, abs=0.001)
    assert len(out["rows"]) == 6 and out["agreement"]["C"]["n"] == 6
    # the ranks in Table 6's parentheses
    by = {(r["name"], r["setting"]): r for r in out["rows"]}
    assert [by[(m, "neutral")]["C_rank"] for m in models] == [3, 2, 1]
    assert [by[(m, "explicit")]["human_rank"] for m in models] == [6, 4, 5]


@pytest.mark.django_db
def test_compare_endpoint_with_sources(api: APIClient, researcher: User) -> None:
    ids = []
    for k, flip in enumerate((0.0, 0.1, 0.3)):
        def label(q: Any, k: int = k) -> str:  # campaign k: men in a dress in k of their contexts
            men_dress = q.metadata["gender"] == "man" and q.metadata["attribute"] == "dress"
            return "Yes" if men_dress and q.metadata["context"] in SMALL_GEP["design"]["contexts"][:k] else gep_label(q)
        campaign, questions = campaign_with_questions(researcher, {**SMALL_GEP, "name": f"cmp-src-{k}"})
        answer_all(campaign, questions, label, annotators(3, f"cs{k}-"))
        machine_labels(campaign, "clip_cls", label, flip=flip, seed=k)
        ids.append(campaign.pk)
    q = ",".join(map(str, ids))
    r = api.get(f"/api/reports/compare/?campaigns={q}&source=clip_cls,hybrid:clip_cls&n_boot=50")
    assert r.status_code == 200, r.content
    body = r.json()
    assert body["source"] == "clip_cls" and body["sources"]["compared"] == ["human", "clip_cls", "hybrid:clip_cls"]
    rows = body["sources"]["rows"]
    assert len(rows) == 6
    got = body["sources"]["agreement"]["clip_cls"]
    ref = stats.kendalltau([x["clip_cls"] for x in rows], [x["human"] for x in rows], variant="b").statistic
    assert got["kendall_tau_b"] == pytest.approx(ref) and got["n"] == 6
    # the comparison's own rows come from the first source's reports (machine labels)
    human_only = api.get(f"/api/reports/compare/?campaigns={q}&n_boot=50").json()
    assert "sources" not in human_only
    assert r.status_code == 200 and human_only["rows"][0]["gep_neutral"] == rows[0]["human"]
    bad = api.get(f"/api/reports/compare/?campaigns={q}&source=clip_cls,nosuch")
    assert bad.status_code == 400 and "source" in bad.json()["errors"]
    bad = api.get(f"/api/reports/compare/?campaigns={q}&source=Bad Name")
    assert bad.status_code == 400 and "source" in bad.json()["errors"]
