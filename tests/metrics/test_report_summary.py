"""The report's plain-words summary (issue 25): headline figures with their intervals and what they
mean on the papers' scales, the comparison with the other setting and the reference, agreement, the
data the figures rest on, and every warning; at the top of the JSON, the HTML export, the console's
report page and the replication package's card."""
from __future__ import annotations

import io
import zipfile
from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from metrics.sections.summary import report_summary, summary_or_warning
from tests.builders.console import login
from tests.builders.metrics import SMALL_GEP, SMALL_PST, annotators, answer_all, campaign_with_questions, gep_label

PST_REPORT: dict[str, Any] = {
    "campaign": {"kind": "pst", "synthetic": False},
    "counts": {"answers": 900, "annotators": 12, "questions": 300, "questions_labelled": 298, "images": 200,
               "images_excluded": 2, "ties": 4},
    "agreement": {"overall": {"krippendorff_alpha": 0.82, "fleiss_kappa": 0.8, "fleiss_items_used": 290,
                              "percent_agreement": 0.9}},
    "pst": {"single": {"overall": 5.0, "overall_ci": [-8.0, 18.0], "persons": 120, "images": 120},
            "paired": {"overall": 47.0, "overall_ci": [38.0, 55.0], "persons": 160, "images": 80},
            "gap": {"overall": 42.0, "overall_ci": [27.0, 57.0], "permutation_test": {"p_value": 0.0005}}},
    "amplification": {"bls": {"source": "BLS 2023", "average": 6.5, "average_ci": [1.5, 11.0],
                              "ttest": {"p_value": 0.01}}},
    "warnings": [{"path": "pst.gap.micro_ci", "message": "3 identities have fewer than 10 persons"}],
}


def test_pst_summary_reads_like_a_finding() -> None:
    s = report_summary(PST_REPORT, aspect="occupation")
    assert s["headline"][1].startswith("Paired STS 47 [38, 55] (160 persons in 80 images): the model follows "
                                       "occupational stereotypes in most paired images")
    assert "no association with occupational stereotypes can be told" in s["headline"][0]
    assert "Paired minus single: 42 [27, 57] STS points, permutation test p = < 0.001: paired images are more " \
           "stereotyped" in s["comparison"][0]
    assert "BLS 2023: bias amplification 6.5 [1.5, 11.0]" in s["comparison"][1]
    assert "amplifies the reference's gender skew" in s["comparison"][1]
    assert "Krippendorff's alpha 0.82 (reliable)" in s["agreement"][0]
    assert s["data"][0].startswith("The figures rest on 900 answers from 12 annotators on 298 labelled questions")
    assert s["warnings"] == ["pst.gap.micro_ci: 3 identities have fewer than 10 persons"]
    assert s["lines"] == s["headline"] + s["comparison"] + s["agreement"] + s["data"] + s["warnings"]


def test_gep_hybrid_and_machine_agreement_and_an_empty_report() -> None:
    report = {"campaign": {"kind": "gep", "synthetic": True}, "counts": {"answers": 10},
              "agreement": {"overall": {"krippendorff_alpha": 0.5}},
              "gep": {"genders": ["woman", "man"],
                      "neutral": {"score": 0.12, "score_ci": [0.08, 0.16], "images": 90,
                                  "vector": {"dress": 0.4, "tie": -0.3, "hat": 0.01}}},
              "source": {"kind": "hybrid", "labeller": "clip_cls", "model": "m", "questions_labelled": 90},
              "auto": {"clip_cls": {"agreement": {"overall": {"accuracy": 0.9, "accuracy_ci": [0.85, 0.94], "n": 60,
                                                              "cohen_kappa": 0.7, "cohen_kappa_ci": [0.6, 0.8]}}}},
              "hybrid": {"clip_cls": {"sample": {"human_images": 30, "machine_only_images": 60},
                                      "neutral": {"score": {"estimate": 0.11, "ci": [0.09, 0.14], "method": "ppboot",
                                                            "human_only": {"estimate": 0.13, "ci": [0.07, 0.2]}}}}}}
    s = report_summary(report)
    assert s["headline"] == ["GEP score (neutral) 0.120 [0.080, 0.160] over 90 images (0 = the same for both genders): "
                             "on average an attribute's frequency differs by 12 percentage points between woman and "
                             "man images; largest: “dress” 40 points more often for woman, “tie” 30 points more "
                             "often for man."]
    assert "Hybrid neutral GEP score (human sample + clip_cls, ppboot): 0.110 [0.090, 0.140], against 0.130 " \
           "[0.070, 0.200] from the human sample alone" in s["comparison"][0]
    assert "(low: read the figures with care)" in s["agreement"][0]
    assert "clip_cls agrees with the human majority on 90% [85, 94] of 60 questions" in s["agreement"][1]
    assert any("machine labeller clip_cls (model m)" in x for x in s["data"])
    assert any(x.startswith("Synthetic data") for x in s["data"])
    empty = report_summary({"campaign": {"kind": "pst"}, "counts": {}, "agreement": {}, "pst": {}})
    assert empty["headline"][0].startswith("No headline figure yet") and empty["warnings"] == []


@pytest.mark.django_db
def test_the_summary_heads_the_json_html_console_page_and_the_package_card(api: APIClient, researcher: User) -> None:
    campaign, questions = campaign_with_questions(researcher, SMALL_PST)
    answer_all(campaign, questions, lambda q: "Masculine" if q.metadata["group"] == "male" else "Feminine",
               annotators(3))
    report = api.get(f"/api/campaigns/{campaign.pk}/report/").json()
    summary = report["summary"]
    assert summary["headline"][0].startswith("Single STS 100") and "[" in summary["headline"][0]
    assert any("paired images" in line for line in summary["headline"])
    html = api.get(f"/api/campaigns/{campaign.pk}/report/", {"format": "html"}).content.decode()
    assert 'id="summary"' in html and html.index('id="summary"') < html.index("<h2", html.index('id="summary"') + 30)
    assert summary["headline"][0].split(":")[0] in html
    page = login(researcher).get(f"/console/campaigns/{campaign.pk}/report/").content.decode()
    assert 'id="summary"' in page and summary["headline"][0].split(":")[0] in page
    r = api.get(f"/api/campaigns/{campaign.pk}/export/dataset/")
    card = zipfile.ZipFile(io.BytesIO(b"".join(r.streaming_content))).read("README.md").decode()
    assert "## Summary" in card and f"- {summary['headline'][0]}" in card
    assert card.index("## Summary") < card.index("## Design")


@pytest.mark.django_db
def test_a_gep_summary_from_the_api(api: APIClient, researcher: User) -> None:
    campaign, questions = campaign_with_questions(researcher, SMALL_GEP)
    answer_all(campaign, questions, gep_label, annotators(3))
    summary = api.get(f"/api/campaigns/{campaign.pk}/report/").json()["summary"]
    assert summary["headline"][0].startswith("GEP score (neutral)") and "Krippendorff" in summary["agreement"][0]


def test_a_report_shape_the_summary_does_not_know_leaves_the_report_standing() -> None:
    odd: dict[str, Any] = {"campaign": {"kind": "pst"}, "pst": {"single": {"overall": 10.0, "persons": 1}},
                           "counts": ["not an object"], "warnings": []}
    summary = summary_or_warning(odd)
    assert summary["lines"][0].startswith("Summary not written (AttributeError")
    assert odd["warnings"][0]["path"] == "summary"
    assert summary_or_warning(PST_REPORT)["headline"] == report_summary(PST_REPORT)["headline"]
