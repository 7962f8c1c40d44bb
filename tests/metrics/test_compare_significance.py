"""Significance between campaigns and between settings through `GET /api/reports/compare/`: every
headline metric with its difference, interval, permutation p-value and Holm family; JSON, CSV, HTML;
the draws bound; owner-only; cached in the report snapshots until the data changes."""
from __future__ import annotations

import csv
import io
import zipfile
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import override_settings
from rest_framework.test import APIClient

from campaigns.models import Campaign
from metrics.models import ReportSnapshot
from tests.builders.metrics import SMALL_GEP, SMALL_PST, annotators, answer_all, campaign_with_questions
from tests.conftest import token_client

pytestmark = pytest.mark.django_db
URL = "/api/reports/compare/"


def stereotyped(q: Any) -> str:
    return "Masculine" if q.metadata["group"] == "male" else "Feminine"


def gep_label(q: Any) -> str:
    return "Yes" if (q.metadata["gender"], q.metadata["attribute"]) in {("woman", "dress"), ("man", "tie")} else "No"


def _pst(owner: User, name: str, label: Any) -> Campaign:
    spec = {**SMALL_PST, "name": name, "design": {**SMALL_PST["design"], "samples": {"single": 6, "paired": 3}}}
    campaign, questions = campaign_with_questions(owner, spec)
    answer_all(campaign, questions, label, annotators(3))
    return campaign


def _rows(comp: dict[str, Any]) -> dict[tuple[str, str, str], dict[str, Any]]:
    return {(r["section"], r["metric"], r["name"]): r for r in comp["rows"]}


def test_two_pst_campaigns_every_metric_with_interval_p_and_holm(api: APIClient, researcher: User) -> None:
    a = _pst(researcher, "stereotyped", stereotyped)
    b = _pst(researcher, "all-masculine", lambda q: "Masculine")
    body = api.get(f"{URL}?campaigns={a.pk},{b.pk}&test=permutation&draws=400&seed=3").json()
    assert [r["name"] for r in body["rows"]] == ["stereotyped", "all-masculine"]  # the side-by-side stays
    sig = body["significance"]
    assert sig["test"] == "permutation" and sig["draws"] == 400 and sig["seed"] == 3 and sig["unit"].startswith("image")
    (comp,) = sig["comparisons"]
    assert comp["a"]["id"] == a.pk and comp["b"]["id"] == b.pk
    rows = _rows(comp)
    # Every headline metric: overall, groups, identities of each setting, and the gap.
    for section in ("pst.single", "pst.paired", "pst.gap"):
        assert {(m, n) for s, m, n in rows if s == section} == {
            ("overall", ""), ("group", "male"), ("group", "female"), ("micro", "pilot"), ("micro", "ceo"),
            ("micro", "nurse"), ("micro", "nanny")}, section
    nurse = rows[("pst.single", "micro", "nurse")]
    # A: nurse always Feminine (+100 with a dissent that never flips the majority); B: always Masculine (-100).
    assert nurse["a"] == 100.0 and nurse["b"] == -100.0 and nurse["difference"] == 200.0
    assert nurse["ci"][0] <= 200.0 <= nurse["ci"][1] and nurse["ci_method"] == "bca-cluster"
    assert nurse["p_value"] < 0.05 and nurse["family"] == "pst.single.micro"
    pilot = rows[("pst.single", "micro", "pilot")]
    assert pilot["difference"] == 0.0 and pilot["p_value"] == 1.0 and pilot["p_holm"] == 1.0
    # Holm within the family: adjusted >= raw, and the headline rows are not in a family.
    micro = [r for r in comp["rows"] if r["family"] == "pst.single.micro"]
    assert all(r["p_holm"] >= r["p_value"] for r in micro)
    assert min(r["p_holm"] for r in micro) == pytest.approx(min(r["p_value"] for r in micro) * 4)
    overall = rows[("pst.single", "overall", "")]
    assert overall["p_holm"] is None and overall["family"] is None
    assert overall["difference"] == pytest.approx(overall["a"] - overall["b"])
    # Same request, same p-values (fixed seed), read from the snapshot table.
    again = api.get(f"{URL}?campaigns={a.pk},{b.pk}&test=permutation&draws=400&seed=3").json()
    assert again["significance"] == sig
    assert ReportSnapshot.objects.filter(campaign=a, options_key__startswith="compare:").count() == 1


def test_three_campaigns_are_compared_pairwise(api: APIClient, researcher: User) -> None:
    gs = []
    for name, label in (("m1", gep_label), ("m2", lambda q: "No"), ("m3", gep_label)):
        c, questions = campaign_with_questions(researcher, {**SMALL_GEP, "name": name})
        answer_all(c, questions, label, annotators(3))
        gs.append(c)
    body = api.get(f"{URL}?campaigns={','.join(str(c.pk) for c in gs)}&test=permutation&draws=200").json()
    pairs = [(c["a"]["name"], c["b"]["name"]) for c in body["significance"]["comparisons"]]
    assert pairs == [("m1", "m2"), ("m1", "m3"), ("m2", "m3")]
    first = _rows(body["significance"]["comparisons"][0])
    assert first[("gep.neutral", "score", "")]["difference"] == 1.0
    assert {n for s, m, n in first if s == "gep.explicit" and m == "vector"} == {"dress", "tie"}
    same = _rows(body["significance"]["comparisons"][1])
    assert same[("gep.neutral", "score", "")]["difference"] == 0.0
    assert same[("gep.neutral", "score", "")]["p_value"] == 1.0
    assert body["pooled_agreement"]["krippendorff_alpha"] is not None
    assert set(body["pooled_agreement"]["by_campaign"]) == {str(c.pk) for c in gs}


def test_two_settings_of_one_campaign(api: APIClient, researcher: User) -> None:
    a = _pst(researcher, "settings", lambda q: stereotyped(q) if q.setting == "paired" else "Masculine")
    body = api.get(f"{URL}?campaign={a.pk}&settings=paired,single&draws=300").json()
    assert body["mode"] == "settings" and body["settings"] == ["paired", "single"]
    (comp,) = body["significance"]["comparisons"]
    assert comp["a"]["setting"] == "paired" and comp["b"]["setting"] == "single"
    rows = _rows(comp)
    nanny = rows[("pst.paired-single", "micro", "nanny")]
    assert nanny["difference"] == 200.0 and nanny["p_value"] < 0.05
    assert rows[("pst.paired-single", "micro", "ceo")]["difference"] == 0.0
    missing = api.get(f"{URL}?campaign={a.pk}&settings=paired,intervention")
    assert missing.status_code == 400 and "intervention" in missing.json()["errors"]["settings"][0]


def test_csv_and_html_like_the_report(api: APIClient, researcher: User) -> None:
    a = _pst(researcher, "a-model", stereotyped)
    b = _pst(researcher, "b-model", lambda q: "Masculine")
    q = f"campaigns={a.pk},{b.pk}&test=permutation&draws=200"
    blob = api.get(f"{URL}?{q}&format=csv")
    assert blob.status_code == 200 and blob["Content-Type"] == "application/zip"
    z = zipfile.ZipFile(io.BytesIO(blob.content))
    assert {"comparison.csv", "significance.csv", "agreement.csv", "README.txt"} <= set(z.namelist())
    rows = list(csv.DictReader(io.StringIO(z.read("significance.csv").decode())))
    nurse = next(r for r in rows if r["section"] == "pst.paired" and r["name"] == "nurse")
    assert float(nurse["difference"]) == 200.0 and nurse["a_name"] == "a-model" and nurse["p_holm"] != ""
    page = api.get(f"{URL}?{q}&format=html")
    html = page.content.decode()
    assert page.status_code == 200 and "Differences and significance" in html and "pooled-alpha" in html
    assert "A = a-model, B = b-model" in html and "<svg" in html


def test_bad_parameters_are_400_naming_the_field(api: APIClient, researcher: User) -> None:
    a = _pst(researcher, "x", stereotyped)
    b = _pst(researcher, "y", stereotyped)
    with override_settings(COMPARE_MAX_DRAWS=500):
        too_many = api.get(f"{URL}?campaigns={a.pk},{b.pk}&test=permutation&draws=501")
    assert too_many.status_code == 400 and "500" in too_many.json()["errors"]["draws"][0]
    for query, field in (("test=bootstrap", "test"), ("draws=abc", "draws"), ("seed=-1", "seed"),
                         ("settings=paired", "settings"), ("settings=paired,paired", "settings")):
        r = api.get(f"{URL}?campaigns={a.pk},{b.pk}&{query}")
        assert r.status_code == 400 and field in r.json()["errors"], query
    one = api.get(f"{URL}?campaigns={a.pk}&test=permutation")
    assert one.status_code == 400 and "campaigns" in one.json()["errors"]
    assert ReportSnapshot.objects.filter(options_key__startswith="compare:").count() == 0


def test_another_researchers_campaign_is_404(researcher: User, other_researcher: User) -> None:
    a = _pst(researcher, "mine", stereotyped)
    theirs, questions = campaign_with_questions(other_researcher, {**SMALL_PST, "name": "theirs"})
    client = token_client(researcher)
    assert client.get(f"{URL}?campaigns={a.pk},{theirs.pk}&test=permutation&draws=50").status_code == 404
    assert client.get(f"{URL}?campaign={theirs.pk}&settings=single,paired").status_code == 404


def test_console_compare_page_shows_the_tests(researcher: User) -> None:
    from tests.builders.console import login

    a = _pst(researcher, "console-a", stereotyped)
    b = _pst(researcher, "console-b", lambda q: "Masculine")
    html = login(researcher).get(f"/console/compare/?campaigns={a.pk},{b.pk}&draws=200").content.decode()
    assert 'id="significance"' in html and 'id="pooled-alpha"' in html and "A = console-a, B = console-b" in html
    assert "format=csv" in html and "test=permutation" in html
    plain = login(researcher).get(f"/console/compare/?campaigns={a.pk},{b.pk}&test=none").content.decode()
    assert 'id="significance"' not in plain and 'id="comparison"' in plain


def test_compare_rendering_runs_no_query(api: APIClient, researcher: User, django_assert_num_queries: Any) -> None:
    from metrics.render.compare import compare_csv_zip, compare_html

    a = _pst(researcher, "<b>a</b>", stereotyped)
    b = _pst(researcher, "b", lambda q: "Masculine")
    result = api.get(f"{URL}?campaigns={a.pk},{b.pk}&test=permutation&draws=100").json()
    with django_assert_num_queries(0):
        html = compare_html(result)
        blob = compare_csv_zip(result)
    assert "&lt;b&gt;a&lt;/b&gt;" in html and "<b>a</b>" not in html  # names are escaped
    assert zipfile.ZipFile(io.BytesIO(blob)).read("significance.csv").decode().count("\n") == 1 + len(
        result["significance"]["comparisons"][0]["rows"])
