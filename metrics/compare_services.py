"""Comparisons with significance tests: `GET /api/reports/compare/` beyond the side-by-side figures.

The side-by-side rows come from the campaigns' report snapshots (`services.report_compare`). The
tests and the pooled agreement need the campaigns' data (one extraction each) and up to
`COMPARE_MAX_DRAWS` vectorised draws; their result is kept in the existing `ReportSnapshot` table
(on the first campaign of the comparison, options key `compare:<sha256 of the campaigns, report
options and compare options>`, data version = sha256 of every campaign's data version), so the same
comparison on unchanged data is read back instead of recomputed, and any new answer, exclusion or
block in any of the campaigns makes it stale (older ones are deleted when a new one is stored).
"""
from __future__ import annotations

import hashlib
import time
from typing import Any

from campaigns.models import Campaign
from common.errors import ApplicationError

from .compare import compare_from_reports, compare_kind
from .compare_options import CompareOptions
from .extract import CampaignFacts, campaign_data, campaign_data_version
from .models import ReportSnapshot
from .options import ReportOptions
from .services import report_compare, report_get
from .significance import pooled_agreement, significance


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _cached(campaigns: list[Campaign], options: ReportOptions, compare: CompareOptions,
            build: Any) -> dict[str, Any]:
    ids = ",".join(str(c.pk) for c in campaigns)
    key = "compare:" + _sha(f"{ids}#{options.key()}#{compare.key()}")
    version = _sha("#".join(campaign_data_version(c) for c in campaigns))
    owner = campaigns[0]
    snap = ReportSnapshot.objects.filter(campaign=owner, options_key=key, data_version=version,
                                         status=ReportSnapshot.Status.READY).first()
    if snap is not None:
        return snap.payload
    started = time.monotonic()
    payload = build()
    ReportSnapshot.objects.update_or_create(
        campaign=owner, options_key=key, data_version=version,
        defaults={"status": ReportSnapshot.Status.READY, "payload": payload, "progress": 1.0,
                  "build_seconds": time.monotonic() - started, "options": options.to_dict()})
    ReportSnapshot.objects.filter(campaign=owner, options_key=key).exclude(data_version=version).delete()
    return payload


def compare_get(*, campaigns: list[Campaign], options: ReportOptions, compare: CompareOptions) -> dict[str, Any]:
    """The comparison of `campaigns` (one kind): side-by-side rows, and with `compare.test` the
    pooled agreement and the significance of every pairwise difference. With `compare.settings`:
    two settings of the one campaign given."""
    if compare.settings:
        if len(campaigns) != 1:
            raise ApplicationError("A settings comparison takes one campaign: campaign=ID&settings=A,B.",
                                   errors={"campaign": ["give exactly one campaign with settings="]})
        campaign = campaigns[0]
        _, report = report_get(campaign=campaign, options=options, allow_async=False)
        result = compare_from_reports([(CampaignFacts.of(campaign), report)])
        result["mode"] = "settings"
        result["settings"] = list(compare.settings)

        def build() -> dict[str, Any]:
            data = campaign_data(campaign, exclude_blocked=options.exclude_blocked)
            return {"significance": significance([data], options, compare)}

        result.update(_cached(campaigns, options, compare, build))
        return result
    if len(campaigns) < 2 and compare.significance:
        raise ApplicationError("Significance tests need at least two campaigns (or campaign=ID&settings=A,B).",
                               errors={"campaigns": ["give two or more campaign ids"]})
    compare_kind([CampaignFacts.of(c) for c in campaigns])
    result = report_compare(campaigns=campaigns, options=options)
    result["mode"] = "campaigns"
    if len(campaigns) < 2:
        return result

    def build_all() -> dict[str, Any]:
        datas = [campaign_data(c, exclude_blocked=options.exclude_blocked) for c in campaigns]
        out: dict[str, Any] = {"pooled_agreement": pooled_agreement(datas, compare)}
        if compare.significance:
            out["significance"] = significance(datas, options, compare)
        return out

    result.update(_cached(campaigns, options, compare, build_all))
    return result
