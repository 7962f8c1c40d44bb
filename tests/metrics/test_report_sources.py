"""Reports from machine and hybrid label sources (issue 15): `?source=<labeller>`,
`?source=hybrid:<labeller>`, the `auto`, `hybrid` and `clipscore` keys, bad sources, query counts."""
from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from campaigns.models import Campaign
from generation.models import Image
from tests.builders.machine import gep_sources_campaign, machine_labels
from tests.builders.metrics import SMALL_PST, annotators, answer_all, campaign_with_questions, stereotyped

pytestmark = pytest.mark.django_db


@pytest.fixture
def gep_campaign(researcher: User) -> Campaign:
    return gep_sources_campaign(researcher)


def test_machine_source_report_has_the_auto_keys(api: APIClient, gep_campaign: Campaign) -> None:
    r = api.get(f"/api/campaigns/{gep_campaign.pk}/report/?source=clip_cls&n_boot=200")
    assert r.status_code == 200, r.content
    body = r.json()
    assert body["source"] == {"name": "clip_cls", "kind": "machine", "labeller": "clip_cls", "model": body["source"]["model"],
                              "questions_labelled": gep_campaign.questions.count()}
    agreement = body["auto"]["clip_cls"]["agreement"]
    neutral = agreement["by_setting"]["neutral"]
    for key in ("cohen_kappa", "accuracy", "mcc", "roc_auc", "n"):
        assert key in neutral and f"{key}_ci" in neutral or key == "n"
    assert 0.6 < neutral["accuracy"] <= 1 and neutral["cohen_kappa_ci"][0] <= neutral["cohen_kappa"]
    assert set(neutral["attributes"]) == {"dress", "tie"}
    assert neutral["attributes"]["dress"]["roc_auc"] is not None and neutral["roc_auc_mean"] is not None
    gep = body["auto"]["clip_cls"]["gep"]["neutral"]
    for key in ("score", "vector", "kendall_tau_b", "mcc", "pearson", "basis", "human_vector"):
        assert key in gep
    assert gep["basis"] == "scores" and set(gep["vector"]) == {"dress", "tie"}
    # the GEP section itself comes from the machine labels: every image counted, not only the sample
    assert body["gep"]["neutral"]["images"] == Image.objects.filter(campaign=gep_campaign,
                                                                    prompt__metadata__setting="neutral").count()
    assert body["clipscore"]["neutral"]["mean"] == pytest.approx(
        sum(0.5 + 0.01 * (k % 10) for k in range(Image.objects.filter(campaign=gep_campaign).count()))
        / Image.objects.filter(campaign=gep_campaign).count(), abs=0.01)
    assert "hybrid" not in body


def test_hybrid_source_report(api: APIClient, gep_campaign: Campaign) -> None:
    human = api.get(f"/api/campaigns/{gep_campaign.pk}/report/?n_boot=100").json()
    r = api.get(f"/api/campaigns/{gep_campaign.pk}/report/?source=hybrid:clip_cls&n_boot=100")
    assert r.status_code == 200, r.content
    body = r.json()
    assert body["gep"] == human["gep"]  # the human sections are the human report's
    hy = body["hybrid"]["clip_cls"]
    assert hy["sample"]["kind"] == "human_sample" and hy["sample"]["machine_only_questions"] > 0
    neutral = hy["neutral"]
    f = neutral["frequencies"]["woman"]["dress"]
    for key in ("estimate", "ci", "human_only", "machine_only", "effective_human_labels", "human_labels_saved",
                "method", "lambda"):
        assert key in f
    assert f["human_only"]["estimate"] == pytest.approx(1.0)  # humans: every woman wears the dress
    assert f["ci"][0] <= f["estimate"] <= f["ci"][1]
    assert set(neutral["vector"]) == {"dress", "tie"} and neutral["vector"]["dress"]["estimate"] > 0.5
    assert neutral["score"]["method"] == "ppi-gep-test-inversion" and neutral["score"]["estimate"] > 0.5
    assert "clip_cls" in body["auto"] and "clipscore" in body


def test_pst_machine_and_hybrid_sources(api: APIClient, researcher: User) -> None:
    campaign, questions = campaign_with_questions(researcher, {**SMALL_PST, "name": "pst-sources"})
    answer_all(campaign, questions, stereotyped, annotators(3))
    machine_labels(campaign, "vqa", stereotyped, flip=0.25, scores=False)
    r = api.get(f"/api/campaigns/{campaign.pk}/report/?source=vqa&n_boot=100")
    assert r.status_code == 200, r.content
    body = r.json()
    single = body["auto"]["vqa"]["agreement"]["by_setting"]["single"]
    assert single["roc_auc"] is None and single["n"] > 0 and single["cohen_kappa"] is not None
    assert body["pst"]["single"]["overall"] < 100.0  # the machine's flips show in its STS
    assert "clipscore" not in body and "gep" not in body["auto"]["vqa"]
    hy = api.get(f"/api/campaigns/{campaign.pk}/report/?source=hybrid:vqa&n_boot=100").json()["hybrid"]["vqa"]
    assert hy["sample"]["kind"].startswith("answered questions")
    assert set(hy) >= {"single", "paired"} and "overall" in hy["paired"] and "pilot" in hy["single"]["micro"]
    page = api.get(f"/api/campaigns/{campaign.pk}/report/?source=hybrid:vqa&n_boot=50&format=html")
    text = page.content.decode()
    assert page.status_code == 200 and 'id="machine-agreement"' in text and 'id="hybrid"' in text
    assert "percent_feminine[pilot]" in text and 'id="machine-gep"' not in text


@pytest.mark.parametrize("source", ["nosuch", "hybrid:nosuch", "Bad Name", "hybrid:", "hybrid:human"])
def test_unknown_source_is_a_400_naming_source(api: APIClient, gep_campaign: Campaign, source: str) -> None:
    r = api.get(f"/api/campaigns/{gep_campaign.pk}/report/", {"source": source})
    assert r.status_code == 400, r.content
    assert "source" in r.json()["errors"]
    assert "auto" not in api.get(f"/api/campaigns/{gep_campaign.pk}/report/?source=human&n_boot=0").json()


def test_csv_zip_and_html_of_a_hybrid_source(api: APIClient, gep_campaign: Campaign) -> None:
    import csv
    import io
    import zipfile

    r = api.get(f"/api/campaigns/{gep_campaign.pk}/report/?source=hybrid:clip_cls&n_boot=50&format=csv")
    assert r.status_code == 200
    z = zipfile.ZipFile(io.BytesIO(r.content))
    names = set(z.namelist())
    assert {"machine_agreement.csv", "machine_gep_vectors.csv", "hybrid.csv", "gep_frequencies.csv"} <= names
    rows = list(csv.DictReader(io.StringIO(z.read("hybrid.csv").decode())))
    estimands = {row["estimand"] for row in rows}
    assert {"score", "vector[dress]", "frequency[woman, dress]"} <= estimands
    agreement = list(csv.DictReader(io.StringIO(z.read("machine_agreement.csv").decode())))
    assert {"overall", "neutral", "neutral / tie"} <= {row["scope"] for row in agreement}
    html = api.get(f"/api/campaigns/{gep_campaign.pk}/report/?source=hybrid:clip_cls&n_boot=50&format=html")
    text = html.content.decode()
    assert 'id="machine-agreement"' in text and 'id="hybrid"' in text and "Human vs clip_cls GEP vector" in text


def test_console_report_page_keeps_the_source_and_names_a_bad_one(researcher: User, gep_campaign: Campaign) -> None:
    from django.test import Client

    client = Client()
    client.force_login(researcher)
    ok = client.get(f"/console/campaigns/{gep_campaign.pk}/report/?source=clip_cls&n_boot=20")
    assert ok.status_code == 200
    html = ok.content.decode()
    assert 'name="source"' in html and 'value="clip_cls"' in html and 'id="machine-agreement"' in html
    bad = client.get(f"/console/campaigns/{gep_campaign.pk}/report/?source=nosuch")
    assert bad.status_code == 400 and "<code>source</code>" in bad.content.decode()
