"""Rendering (`metrics/render/`) never touches the database, imports nothing that could, and lets a new
report section add its HTML, CSV tables and charts by registering a renderer; chart and page text is
researcher-controlled and must come out literally (no mathtext, escaped HTML and SVG)."""
from __future__ import annotations

import ast
import io
import zipfile
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from metrics import render
from metrics.compare.services import report_compare
from metrics.extract import CampaignFacts, campaign_data
from metrics.options import ReportOptions
from metrics.package.exports import report_csv_zip
from metrics.render import registry as section_registry
from metrics.sections.labels import label_table
from metrics.snapshots.report import report_build
from tests.builders.metrics import (
    FORMULA,
    MARKUP,
    MATH,
    SMALL_GEP,
    SMALL_PST,
    annotators,
    answer_all,
    assert_names_literal,
    campaign_with_questions,
    gep_label,
    odd_gep,
    odd_gep_label,
    odd_pst,
    odd_pst_label,
    stereotyped,
)

pytestmark = pytest.mark.django_db
RENDER = Path(render.__file__).resolve().parent


def _built(owner: User, spec: dict[str, Any], label: Any) -> tuple[Any, dict[str, Any], Any]:
    campaign, questions = campaign_with_questions(owner, spec)
    answer_all(campaign, questions, label, annotators(3, f"{spec['kind']}-r-"))
    options = ReportOptions(n_boot=20, n_perm=20)
    data = campaign_data(campaign, table=True)
    return campaign, report_build(campaign=campaign, options=options), (data, label_table(data, options))


def test_rendering_runs_no_query(researcher: User, django_assert_num_queries: Any) -> None:
    pst, pst_report, (pst_data, pst_labels) = _built(researcher, SMALL_PST, stereotyped)
    gep, gep_report, (gep_data, gep_labels) = _built(researcher, SMALL_GEP, gep_label)
    facts = CampaignFacts.of(pst)
    with django_assert_num_queries(0):
        blob = render.report_csv_zip(report=pst_report, data=pst_data, labels=pst_labels)
        gep_blob = render.report_csv_zip(report=gep_report, data=gep_data, labels=gep_labels)
        html = render.report_html(campaign=facts, report=pst_report, query="n_boot=20")
        page = render.report_page(gep_report)
        compare = render.compare_page({"kind": "pst", "metrics": ["sts_single"], "rows": [
            {"label": "a", "sts_single": 1.0, "sts_single_ci": [0.0, 2.0]}]})
    assert "pst_identity.csv" in zipfile.ZipFile(io.BytesIO(blob)).namelist()
    assert "gep_context.csv" in zipfile.ZipFile(io.BytesIO(gep_blob)).namelist()
    assert html.count("<svg") >= 3 and [s["key"] for s in page["sections"]] == ["agreement", "gep", "annotators"]
    assert len(compare["figures"]) == 1
    # The API's export is the extraction (database) then exactly this rendering.
    exported = zipfile.ZipFile(io.BytesIO(report_csv_zip(campaign=pst, report=pst_report,
                                                         options=ReportOptions(n_boot=20, n_perm=20))))
    rendered = zipfile.ZipFile(io.BytesIO(blob))
    assert exported.namelist() == rendered.namelist()
    assert all(exported.read(n) == rendered.read(n) for n in rendered.namelist())


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.add(node.module)
    return out


def test_the_render_package_imports_nothing_that_reads_the_database() -> None:
    allowed_metrics = {"metrics.extract.data", "metrics.sections.labels", "metrics.compare.rows"}
    files = sorted(RENDER.rglob("*.py"))
    assert len(files) >= 7
    for path in files:
        for module in _imports(path):
            assert not module.startswith("django.db"), (path, module)
            # campaigns.spec is the one vocabulary (setting and kind names), pure Python with no model.
            assert module == "campaigns.spec" or not module.endswith(".models") and module.split(".")[0] not in (
                "annotation", "campaigns", "generation", "crowd", "console"), (path, module)
            if module.startswith("metrics."):
                assert module in allowed_metrics, (path, module)


def test_a_new_section_registers_its_html_tables_and_charts(researcher: User, settings: Any, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """What the next sections (amplification, per-template breakdowns, ...) do: one renderer, one
    partial; the pages, the zip and the charts pick it up with no central change."""
    (tmp_path / "example.html").write_text(
        '<h2>Example section</h2><table id="amp">{% for name, v in rows %}<tr><td>{{ name }}</td><td>{{ v }}</td>'
        "</tr>{% endfor %}</table>")
    settings.TEMPLATES = [{**settings.TEMPLATES[0], "DIRS": [*settings.TEMPLATES[0]["DIRS"], tmp_path]}]
    monkeypatch.setattr(section_registry, "_REGISTRY", dict(section_registry._REGISTRY))
    section_registry.register(section_registry.SectionRenderer(
        key="example", order=15, template="example.html",
        rows=lambda sec: sorted(sec["by_identity"].items()),
        tables=lambda sec, campaign: [section_registry.Table("example.csv", ["identity", "amplification"],
                                                             sorted(map(list, sec["by_identity"].items())))],
        charts=lambda sec: [("Amplification per identity", "<svg id='amp-chart'></svg>")]))
    campaign, report, (data, labels) = _built(researcher, SMALL_PST, stereotyped)
    report = {**report, "example": {"by_identity": {"nurse": 0.25, "pilot": -0.5}}}
    html = render.report_html(campaign=CampaignFacts.of(campaign), report=report)
    assert html.index("Agreement") < html.index("Example section") < html.index("Stereotype Test Scores")
    assert "<td>nurse</td><td>0.25</td>" in html and "amp-chart" in html
    zf = zipfile.ZipFile(io.BytesIO(render.report_csv_zip(report=report, data=data, labels=labels)))
    assert zf.read("example.csv").decode() == '"identity","amplification"\n"nurse",0.25\n"pilot",-0.5\n'  # text quoted (issue 24)
    assert zf.namelist().index("agreement.csv") < zf.namelist().index("example.csv") < zf.namelist().index(
        "pst_identity.csv")
    # A report without the section renders as before.
    assert "Example section" not in render.report_html(campaign=CampaignFacts.of(campaign),
                                                       report={k: v for k, v in report.items() if k != "example"})
    with pytest.raises(ValueError, match="registered already"):
        section_registry.register(section_registry.SectionRenderer(key="pst", order=1, template="x.html",
                                                                   rows=lambda sec: []))


def test_names_with_mathtext_and_markup_render_literally_in_the_html_report(researcher: User, api: APIClient) -> None:
    pst, questions = campaign_with_questions(researcher, odd_pst())
    answer_all(pst, questions, odd_pst_label, annotators(3, "odd-"))
    gep, questions = campaign_with_questions(researcher, odd_gep())
    answer_all(gep, questions, odd_gep_label, annotators(3, "odd-"))
    resp = api.get(f"/api/campaigns/{pst.pk}/report/?format=html&n_boot=20")
    assert resp.status_code == 200, resp.content[:500]
    html = resp.content.decode()
    assert_names_literal(html, [MATH, MARKUP, FORMULA, f"men {FORMULA}"], svgs=3)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html.split("<svg")[0]  # title and tables, escaped
    resp = api.get(f"/api/campaigns/{gep.pk}/report/?format=html&n_boot=20")
    assert resp.status_code == 200, resp.content[:500]
    assert_names_literal(resp.content.decode(), [f"dress {MATH}", MARKUP], svgs=2)
    csv_resp = api.get(f"/api/campaigns/{gep.pk}/report/?format=csv&n_boot=20")
    assert f"at {FORMULA}".encode() in zipfile.ZipFile(io.BytesIO(csv_resp.content)).read("gep_context.csv")
    compared = report_compare(campaigns=[gep, gep], options=ReportOptions(n_boot=10))
    page = render.compare_page({**compared, "rows": [{**r, "label": f"{MATH} {MARKUP}"} for r in compared["rows"]]})
    assert_names_literal("".join(svg for _, svg in page["figures"]), [f"{MATH} {MARKUP}"], svgs=2)
