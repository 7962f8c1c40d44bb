"""Spec `references` (reference %F per identity with provenance): validation naming the field, the
occupation preset's default (the shipped labour statistics), the CSV upload (all or nothing, 409 once
closed) and the report's `amplification.<reference>` section in JSON, HTML and CSV."""
from __future__ import annotations

import copy
import csv
import io
import zipfile
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from campaigns import presets
from campaigns.models import Campaign
from metrics.core.amplification import amplification
from tests.builders.metrics import SMALL_GEP, SMALL_PST, annotators, answer_all, campaign_with_questions

pytestmark = pytest.mark.django_db


def _post_csv(api: APIClient, campaign: Campaign, text: str) -> Any:
    upload = SimpleUploadedFile("refs.csv", text.encode(), content_type="text/csv")
    return api.post(f"/api/campaigns/{campaign.pk}/references/", {"file": upload}, format="multipart")


@pytest.mark.parametrize(("references", "field"), [
    ("bls", "references"),
    ([{"name": "a b", "source": "BLS", "percent_female": {"nurse": 80}}], "references[0].name"),
    ([{"name": "bls", "source": "", "percent_female": {"nurse": 80}}], "references[0].source"),
    ([{"name": "bls", "source": "BLS", "percent_female": {"nurse": 180}}], "references[0].percent_female.nurse"),
    ([{"name": "bls", "source": "BLS", "percent_female": {"nurse": "lots"}}], "references[0].percent_female.nurse"),
    ([{"name": "bls", "source": "BLS", "percent_female": {}}], "references[0].percent_female"),
    ([{"name": "bls", "source": "BLS", "percent_female": {"nurse": 1}, "year": 2023}], "references[0].year"),
    ([{"name": "bls", "source": "BLS", "percent_female": {"nurse": 1}},
      {"name": "bls", "source": "BLS 2", "percent_female": {"nurse": 2}}], "references[1].name"),
])
def test_bad_references_are_refused_naming_the_field(api: APIClient, references: Any, field: str) -> None:
    resp = api.post("/api/campaigns/", {**SMALL_PST, "references": references}, format="json")
    assert resp.status_code == 400 and field in resp.json()["errors"], resp.json()
    assert Campaign.objects.count() == 0


def test_references_are_for_pst_campaigns(api: APIClient) -> None:
    resp = api.post("/api/campaigns/", {**SMALL_GEP, "references": [
        {"name": "x", "source": "y", "percent_female": {"a": 1}}]}, format="json")
    assert resp.status_code == 400 and "references" in resp.json()["errors"]


def test_the_occupation_preset_defaults_to_the_labour_statistics(api: APIClient) -> None:
    resp = api.post("/api/campaigns/", {"name": "occ", "kind": "pst", "design": {"aspect": "occupation"},
                                        "backend": {"name": "placeholder"}}, format="json")
    assert resp.status_code == 201, resp.json()
    refs = api.get(f"/api/campaigns/{resp.json()['id']}/references/").json()
    assert refs["default"] is True and [r["name"] for r in refs["references"]] == ["labor_statistics"]
    assert refs["references"][0]["percent_female"]["nurse"] == 87.9
    assert refs["uncovered"]["labor_statistics"] == ["chief"]
    # A design of its own has no default reference.
    own = api.post("/api/campaigns/", SMALL_PST, format="json").json()
    assert api.get(f"/api/campaigns/{own['id']}/references/").json()["references"] == []


def label(q: Any) -> str:
    """Single setting: pilot 1 of 2 feminine (50%), ceo masculine, nurse feminine, nanny masculine."""
    identity, sample = q.metadata["identity"], q.metadata["sample_index"]
    if identity == "pilot":
        return "Feminine" if sample == 0 else "Masculine"
    return {"ceo": "Masculine", "nurse": "Feminine", "nanny": "Masculine"}[identity]


CSV_OK = ("name,source,identity,percent_female\n"
          "bls_2023,BLS 2023,pilot,10\nbls_2023,BLS 2023,ceo,30\nbls_2023,BLS 2023,nurse,88\n"
          "bls_2023,BLS 2023,nanny,N/A\nbls_2023,BLS 2023,astronaut,12\n")


def test_csv_upload_adds_a_reference_and_the_report_compares_with_it(api: APIClient, researcher: Any) -> None:
    campaign, questions = campaign_with_questions(researcher, SMALL_PST)
    answer_all(campaign, questions, label, annotators(3))
    before = api.get(f"/api/campaigns/{campaign.pk}/report/?n_boot=100").json()
    assert "amplification" not in before
    resp = _post_csv(api, campaign, CSV_OK)
    assert resp.status_code == 200, resp.json()
    body = resp.json()
    assert body["uploaded"] == ["bls_2023"] and body["uncovered"] == {"bls_2023": ["nanny"]}
    assert body["not_in_design"] == {"bls_2023": ["astronaut"]}
    campaign.refresh_from_db()
    assert campaign.spec["references"] == [{"name": "bls_2023", "source": "BLS 2023", "percent_female": {
        "pilot": 10.0, "ceo": 30.0, "nurse": 88.0, "nanny": None, "astronaut": 12.0}}]
    # The cached report is rebuilt: the spec changed.
    report = api.get(f"/api/campaigns/{campaign.pk}/report/?n_boot=100").json()
    amp = report["amplification"]["bls_2023"]
    # generated %F (single, 2 samples): pilot 50, ceo 0, nurse 100; pilot's 50 has no direction -> excluded
    expected = amplification({"1": {"pilot": 50.0, "ceo": 0.0, "nurse": 100.0, "nanny": 0.0}},
                             {"pilot": 10, "ceo": 30, "nurse": 88, "nanny": None})
    assert amp["templates"]["1"]["excluded"] == {"pilot": "direction change"} == expected["templates"]["1"]["excluded"]
    assert amp["templates"]["1"]["rows"]["ceo"]["amplification"] == 30.0  # male-skewed: 30 - 0
    assert amp["templates"]["1"]["rows"]["nurse"]["amplification"] == 12.0  # female-skewed: 100 - 88
    assert amp["average"] == pytest.approx(21.0) == pytest.approx(expected["average"])
    assert amp["uncovered"] == ["nanny"] and amp["not_in_design"] == ["astronaut"]
    assert amp["ttest"]["n"] == 2 and amp["average_ci_method"] == "bca-cluster"
    html = api.get(f"/api/campaigns/{campaign.pk}/report/?format=html&n_boot=50").content.decode()
    assert 'id="amplification-bls_2023"' in html and "Excluded for a change of direction: pilot" in html
    assert "Not covered by this reference: nanny" in html
    zf = zipfile.ZipFile(io.BytesIO(api.get(f"/api/campaigns/{campaign.pk}/report/?format=csv&n_boot=50").content))
    detail = list(csv.DictReader(io.StringIO(zf.read("amplification.csv").decode())))
    assert {(r["identity"], r["excluded"]) for r in detail} >= {("pilot", "direction change"), ("ceo", ""),
                                                                ("nanny", "not covered by the reference")}
    summary = list(csv.DictReader(io.StringIO(zf.read("amplification_summary.csv").decode())))
    assert [r["template"] for r in summary] == ["1", "average"] and float(summary[1]["mean_amplification"]) == 21.0
    # A second upload of the same name replaces it; another name is added beside it.
    again = _post_csv(api, campaign, "name,source,identity,percent_female\nbls_2023,BLS 2024,nurse,90\n"
                                     "laion,LAION naive sample,nurse,70\n")
    assert again.status_code == 200
    campaign.refresh_from_db()
    assert [(r["name"], r["source"]) for r in campaign.spec["references"]] == [("bls_2023", "BLS 2024"),
                                                                                ("laion", "LAION naive sample")]


@pytest.mark.parametrize(("text", "field", "message"), [
    ("name,source,identity\nbls,BLS,nurse\n", "file", "missing column"),
    ("name,source,identity,percent_female\nbls,BLS,nurse,80\nbls,BLS,pilot,abc\n", "rows.3", "number"),
    ("name,source,identity,percent_female\nbls,BLS,nurse,80\nbls,BLS,pilot,101\n", "rows.3", "between 0 and 100"),
    ("name,source,identity,percent_female\nbls,BLS,nurse,80\nbls,BLS,nurse,70\n", "rows.3", "twice"),
    ("name,source,identity,percent_female\nbls,BLS,nurse,80\nbls,,pilot,7\n", "rows.3", "source is empty"),
    ("name,source,identity,percent_female\nb l s,BLS,nurse,80\n", "rows.2", "letters"),
])
def test_a_bad_csv_is_refused_row_by_row_and_nothing_is_written(api: APIClient, researcher: Any, text: str,
                                                                 field: str, message: str) -> None:
    campaign, _ = campaign_with_questions(researcher, SMALL_PST)
    spec = copy.deepcopy(campaign.spec)
    resp = _post_csv(api, campaign, text)
    assert resp.status_code == 400 and any(message in m for m in resp.json()["errors"][field]), resp.json()
    campaign.refresh_from_db()
    assert campaign.spec == spec


def test_references_are_frozen_once_the_campaign_is_closed(api: APIClient, researcher: Any) -> None:
    campaign, _ = campaign_with_questions(researcher, SMALL_PST)
    Campaign.objects.filter(pk=campaign.pk).update(status=Campaign.Status.CLOSED)
    resp = _post_csv(api, campaign, CSV_OK)
    assert resp.status_code == 409
    campaign.refresh_from_db()
    assert "references" not in campaign.spec
    assert presets.labor_stats_source().startswith("PST paper Table 14")
