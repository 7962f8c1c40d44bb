"""The demo's audit, in-process on the real database (PostgreSQL: the make-run script test uses
SQLite, which does not enforce field lengths): every section of every demo campaign's report has
data, for the human, machine and hybrid sources (issue 25), and its HTML shows every section."""
from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.core.management import call_command

from campaigns.models import Campaign
from metrics.options import ReportOptions
from metrics.render.html import report_page
from metrics.snapshots.report import report_build
from tests.builders.report_sections import empty_sections, expected_sections

# Committed transactions, as `make run` has: the demo generates its images on commit, then opens them.
pytestmark = pytest.mark.django_db(transaction=True)

SOURCES = ((None, None), ("sim_labeller", "machine"), ("hybrid:sim_labeller", "hybrid"))


def test_every_section_of_every_demo_report_has_data(media: Path) -> None:
    out = io.StringIO()
    call_command("demo", stdout=out)
    assert "Synthetic demo" in out.getvalue()
    campaigns = list(Campaign.objects.filter(name__startswith="demo-").order_by("pk"))
    assert {c.name for c in campaigns} == {"demo-pst-occupation", "demo-pst-model-b", "demo-gep"}
    assert f"log in at /work/{campaigns[0].pk}/login/" in out.getvalue()  # the demo annotator's way in
    for campaign in campaigns:
        assert campaign.status == Campaign.Status.OPEN, campaign.name
        for source, source_kind in SOURCES:
            params = {"n_boot": "200", "n_perm": "200", **({"source": source} if source else {})}
            report = report_build(campaign=campaign, options=ReportOptions.from_params(params))
            assert empty_sections(report, campaign.kind, source_kind) == [], (campaign.name, source)
            shown = {part["key"] for part in report_page(report)["sections"]}
            rendered = set(expected_sections(campaign.kind, source_kind)) - {"summary", "source", "clipscore"}
            assert rendered <= shown, (campaign.name, source, sorted(rendered - shown))
    gep = next(c for c in campaigns if c.kind == "gep")
    hybrid = report_build(campaign=gep, options=ReportOptions.from_params({"source": "hybrid:sim_labeller",
                                                                         "n_boot": "200"}))
    clip = hybrid["clipscore"]["neutral"]
    assert clip["images"] == gep.images.count() and 0.6 < clip["mean"] < 0.85, clip  # 2.5 * cos, cos in [.24, .34]
