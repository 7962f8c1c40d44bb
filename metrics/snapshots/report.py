"""Report building, caching (until the data changes) and background builds.

The flow is one way: the edge parses `ReportOptions`; `report_get` finds the snapshot of the current
data for those options or builds it (extract -> report), storing the options as data with it; the
worker side reads them back with `ReportOptions.from_dict`. Rendering (`metrics.render`) formats a
built report and never reads the database.
"""
from __future__ import annotations

import dataclasses
import json
import time
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction

from campaigns.models import Campaign
from common.budget import budget_decide
from common.tasks import task_send
from metrics.compare.rows import compare_from_reports, compare_kind
from metrics.compare.sources import sources_comparison
from metrics.extract import CampaignFacts, campaign_data
from metrics.extract.data import CampaignData
from metrics.extract.machine import MachineData, machine_data, machine_labeller_check
from metrics.models import ReportSnapshot
from metrics.options import ReportOptions
from metrics.sections.report import redundancy_section
from metrics.sections.schema import report_validate
from metrics.sections.sources import source_report
from metrics.sections.summary import summary_or_warning
from metrics.snapshots.key import snapshot_key

from .budget import REPORT_HINTS, report_estimate


def report_build(*, campaign: Campaign, options: ReportOptions, data: CampaignData | None = None) -> dict[str, Any]:
    """Build the report now (no cache); `data`: the campaign's data already extracted with the options'
    `exclude_blocked` (the replication package's build passes the one it reads with the answer table)."""
    if data is None:
        data = campaign_data(campaign, exclude_blocked=options.exclude_blocked)
    mdata = machine_data(campaign, data, options.labeller) if options.labeller else None
    return report_compute(data, mdata, options, redundancy=redundancy_section(campaign))


def report_compute(data: CampaignData, mdata: MachineData | None, options: ReportOptions, *,
                   redundancy: dict[str, Any]) -> dict[str, Any]:
    """The report from the extracted data (no database): what `report_build` and the replication
    package's `metrics.package.read` both run, so their figures are the same by construction.
    `redundancy` is `redundancy_section`'s block ({} for a fixed design)."""
    report = source_report(data, mdata, options)
    report.update(redundancy)
    # Last: the plain-words summary reads every section above (metrics/sections/summary.py).
    report["summary"] = summary_or_warning(report, aspect=(data.campaign.spec.get("design") or {}).get("aspect"))
    # Round-trip through JSON so cached and fresh reports are identical (NaN -> None already).
    report = json.loads(json.dumps(report))
    if settings.REPORT_SCHEMA_CHECK:  # on in the tests: the published JSON Schema holds every report
        report_validate(report)
    return report


def report_get(*, campaign: Campaign, options: ReportOptions, allow_async: bool = True,
               data: CampaignData | None = None) -> tuple[str, dict[str, Any]]:
    """The report for these options: ("ready", report) from the snapshot of the current data, built
    now if needed (from `data` when given: see `report_build`); or ("building", progress) when a worker
    builds it: the request work budget (`common.budget`) decides from the estimate before any work
    starts, and refuses (400 naming the option) options that would take minutes even in a worker.
    `allow_async=False` (the CLI, the package's worker): built here whatever it costs."""
    if options.labeller:  # a 400 naming `source` for a labeller without labels, before any snapshot
        machine_labeller_check(campaign, options.labeller)
    found = snapshot_key(campaigns=[campaign], options_key=options.key())
    key, version = found.options_key, found.data_version
    snap = ReportSnapshot.objects.filter(campaign=campaign, options_key=key, data_version=version).first()
    if snap and snap.status == ReportSnapshot.Status.READY:
        return "ready", snap.payload
    if snap and snap.status == ReportSnapshot.Status.BUILDING:
        return "building", {"status": "building", "progress": snap.progress, "snapshot": snap.pk}
    if allow_async and budget_decide(report_estimate(campaign, options), hints=REPORT_HINTS) == "worker":
        snap = _snapshot_claim(campaign, options, version)
        if snap is not None:
            transaction.on_commit(lambda: task_send("metrics.report_build", args=[snap.pk]))
            return "building", {"status": "building", "progress": 0.0, "snapshot": snap.pk}
        return report_get(campaign=campaign, options=options, allow_async=False)
    started = time.monotonic()
    report = report_build(campaign=campaign, options=options, data=data)
    _snapshot_store(campaign, options, version, report, time.monotonic() - started)
    return "ready", report


def _snapshot_claim(campaign: Campaign, options: ReportOptions, version: str) -> ReportSnapshot | None:
    try:
        with transaction.atomic():
            return ReportSnapshot.objects.create(campaign=campaign, options_key=options.key(),
                                                 options=options.to_dict(), data_version=version)
    except IntegrityError:
        return None


def _snapshot_store(campaign: Campaign, options: ReportOptions, version: str, report: dict[str, Any],
                    seconds: float) -> None:
    key = options.key()
    ReportSnapshot.objects.update_or_create(
        campaign=campaign, options_key=key, data_version=version,
        defaults={"status": ReportSnapshot.Status.READY, "payload": report, "progress": 1.0, "build_seconds": seconds,
                  "options": options.to_dict()},
    )
    # Older snapshots of this campaign and options are stale: keep the table small.
    ReportSnapshot.objects.filter(campaign=campaign, options_key=key).exclude(data_version=version).delete()


def report_build_snapshot(*, snapshot_id: int) -> None:
    """Worker side of a background build; idempotent (a ready snapshot is left alone). The options
    are the snapshot's stored ones (data), not parsed from its key."""
    snap = ReportSnapshot.objects.select_related("campaign").filter(pk=snapshot_id).first()
    if snap is None or snap.status == ReportSnapshot.Status.READY:
        return
    started = time.monotonic()
    try:
        options = ReportOptions.from_dict(snap.options)
        ReportSnapshot.objects.filter(pk=snap.pk).update(progress=0.1)
        report = report_build(campaign=snap.campaign, options=options)
    except Exception as exc:  # record, then let Celery log it
        ReportSnapshot.objects.filter(pk=snap.pk).update(status=ReportSnapshot.Status.FAILED, error=str(exc)[:2000])
        raise
    ReportSnapshot.objects.filter(pk=snap.pk).update(status=ReportSnapshot.Status.READY, payload=report, progress=1.0,
                                                     build_seconds=time.monotonic() - started)


def report_compare(*, campaigns: list[Campaign], options: ReportOptions,
                   sources: list[str] | None = None) -> dict[str, Any]:
    """Headline figures of campaigns of one kind side by side (like GEP Table 3); each report from its
    snapshot, built now when missing (never queued: the comparison needs them all). With `sources`
    (label sources besides the human one: labellers, `hybrid:<labeller>`), also `sources`: each
    source's score per campaign and setting and its Kendall tau-b with the human scores (GEP Table 6)."""
    facts = [CampaignFacts.of(c) for c in campaigns]
    kind = compare_kind(facts)  # mixed kinds are refused before any report is built

    def reports(opts: ReportOptions) -> list[dict[str, Any]]:
        return [report_get(campaign=c, options=opts, allow_async=False)[1] for c in campaigns]

    by_source = {options.source: reports(options)}
    result = compare_from_reports(list(zip(facts, by_source[options.source], strict=True)))
    wanted = list(dict.fromkeys(["human", options.source, *(sources or [])]))
    if len(wanted) > 1:
        for s in wanted:
            if s not in by_source:
                by_source[s] = reports(dataclasses.replace(options, source=s))
        result["source"] = options.source
        result["sources"] = sources_comparison(kind, facts, {s: by_source[s] for s in wanted})
    return result
