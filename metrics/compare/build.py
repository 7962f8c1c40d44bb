"""Building a comparison's tests (pooled agreement, significance): the computation shared by the
request (small comparisons) and the worker (the `metrics.compare_build` Celery task, large ones)."""
from __future__ import annotations

from typing import Any

from campaigns.models import Campaign
from metrics.extract import campaign_data
from metrics.models import ReportSnapshot
from metrics.options import ReportOptions
from metrics.sections.significance import pooled_agreement, significance
from metrics.snapshots.store import snapshot_build

from .options import CompareOptions


def compare_payload(*, campaigns: list[Campaign], options: ReportOptions, compare: CompareOptions) -> dict[str, Any]:
    """`pooled_agreement` (several campaigns) and `significance` (with `compare.test`): one extraction
    per campaign, then the vectorised draws."""
    datas = [campaign_data(c, exclude_blocked=options.exclude_blocked) for c in campaigns]
    out: dict[str, Any] = {}
    if not compare.settings:
        out["pooled_agreement"] = pooled_agreement(datas, compare)
    if compare.significance:
        out["significance"] = significance(datas, options, compare)
    return out


def compare_build_snapshot(*, snapshot_id: int, campaign_ids: list[int], report_options: dict[str, Any],
                           compare_options: dict[str, Any]) -> None:
    """Worker side of a large comparison; idempotent (a ready snapshot is left alone)."""

    def build(_snap: ReportSnapshot) -> dict[str, Any]:
        by_id = Campaign.objects.filter(pk__in=campaign_ids, deleted_at__isnull=True).in_bulk()
        campaigns = [by_id[i] for i in campaign_ids]
        settings = compare_options.get("settings")
        compare = CompareOptions(**{**compare_options, "settings": tuple(settings) if settings else None})
        return compare_payload(campaigns=campaigns, options=ReportOptions.from_dict(report_options), compare=compare)

    snapshot_build(snapshot_id=snapshot_id, build=build)
