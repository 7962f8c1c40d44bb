"""Report building, caching (until the data changes) and background builds.

The flow is one way: the edge parses `ReportOptions`; `report_get` finds the snapshot of the current
data for those options or builds it (extract -> sections), storing the options as data with it; the
worker side reads them back with `ReportOptions.from_dict`. The claim / build / store and the key are
`metrics.snapshots.store`'s, shared with the comparisons. Rendering (`metrics.render`) formats a built
report and never reads the database.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from django.conf import settings

from campaigns.models import Campaign
from common.budget import budget_decide
from metrics.extract import campaign_data
from metrics.extract.data import CampaignData
from metrics.extract.machine import MachineData, machine_data, machine_labeller_check
from metrics.options import ReportOptions
from metrics.sections.schema import report_validate
from metrics.sections.sources import source_report
from metrics.sections.summary import summary_or_warning

from .budget import REPORT_HINTS, report_estimate
from .key import snapshot_key
from .store import snapshot_build, snapshot_get


def report_build(*, campaign: Campaign, options: ReportOptions, data: CampaignData | None = None) -> dict[str, Any]:
    """Build the report now (no cache): extract (unless `data`, an extraction of this campaign with
    these options' `exclude_blocked`, is given), then the sections from the data only."""
    if data is None:
        data = campaign_data(campaign, exclude_blocked=options.exclude_blocked)
    mdata = machine_data(campaign, data, options.labeller) if options.labeller else None
    return report_compute(data, mdata, options)


def report_compute(data: CampaignData, mdata: MachineData | None, options: ReportOptions, *,
                   redundancy: dict[str, Any] | None = None) -> dict[str, Any]:
    """The report from the extracted data (no database): what `report_build` and the replication
    package's `metrics.package.read` both run, so their figures are the same by construction.
    The `redundancy` section comes with the data (`CampaignData.redundancy`, read by the extraction);
    `redundancy`, when given, is that block from elsewhere (`{"redundancy": ...}`, {} for a fixed
    design: the package's own counts)."""
    report = source_report(data, mdata, options)
    if redundancy is not None:
        report.update(redundancy)
    # Last: the plain-words summary reads every section above (metrics/sections/summary.py).
    report["summary"] = summary_or_warning(report, aspect=(data.campaign.spec.get("design") or {}).get("aspect"))
    # Round-trip through JSON so cached and fresh reports are identical (NaN -> None already).
    report = json.loads(json.dumps(report))
    if settings.REPORT_SCHEMA_CHECK:  # on in the tests: the published JSON Schema holds every report
        report_validate(report)
    return report


def report_get(*, campaign: Campaign, options: ReportOptions, allow_async: bool = True,
               data: CampaignData | None = None,
               extract: Callable[[], CampaignData] | None = None) -> tuple[str, dict[str, Any]]:
    """The report for these options: ("ready", report) from the snapshot of the current data, built
    now if needed (from `data`, or `extract()`, when given: an export that needs more of the data reads
    it once; see `report_build`); or ("building", progress) when a worker builds it: the request work
    budget (`common.budget`) decides from the estimate before any work starts, and refuses (400 naming
    the option) options that would take minutes even in a worker. `allow_async=False` (the CLI, the
    package's worker): built here whatever it costs."""
    if options.labeller:  # a 400 naming `source` for a labeller without labels, before any snapshot
        machine_labeller_check(campaign, options.labeller)
    key = snapshot_key(campaigns=[campaign], options_key=options.key())

    def large() -> bool:
        return allow_async and budget_decide(report_estimate(campaign, options), hints=REPORT_HINTS) == "worker"

    def build() -> dict[str, Any]:
        given = data if data is not None else extract() if extract is not None else None
        return report_build(campaign=campaign, options=options, data=given)

    return snapshot_get(campaign, key, options=options, background=large, task="metrics.report_build",
                        task_args=lambda snapshot_id: [snapshot_id], build=build)


def report_build_snapshot(*, snapshot_id: int) -> None:
    """Worker side of a background build; idempotent (a ready snapshot is left alone). The options
    are the snapshot's stored ones (data), not parsed from its key."""
    snapshot_build(snapshot_id=snapshot_id, build=lambda snap: report_build(
        campaign=snap.campaign, options=ReportOptions.from_dict(snap.options)))
