"""Comparisons with significance tests: `GET /api/reports/compare/` beyond the side-by-side figures.

The side-by-side rows come from the campaigns' report snapshots (`metrics.snapshots.report.report_compare`). The
tests and the pooled agreement need the campaigns' data (one extraction each) and up to
`COMPARE_MAX_DRAWS` vectorised draws. Their result is kept in the existing `ReportSnapshot` table
(on the first campaign of the comparison, options key `compare:<sha256 of the campaigns, report
options and compare options>`, data version = sha256 of every campaign's data version), so the same
comparison on unchanged data is read back instead of recomputed, and any new answer, exclusion or
block in any of the campaigns makes it stale (older ones are deleted when a new one is stored).
The request work budget (`common.budget`, setting `REQUEST_WORK_BUDGET_S`) decides from the estimate
(`metrics.snapshots.budget.compare_estimate`: the campaigns' answers and draws x images summed over the
pairs) before any work starts: over it the tests are built by a worker (`metrics.compare_build`,
default queue) like a large report, and the API answers `202 {"status": "building", ...}` until they
are ready; a report of one of the campaigns that is itself over the budget is queued the same way
first. Draws that would take minutes even in a worker are a 400 naming `draws`.
"""
from __future__ import annotations

import hashlib
import time
from itertools import combinations
from typing import Any

from django.db import IntegrityError, transaction

from campaigns.models import Campaign
from common.budget import budget_decide
from common.errors import ApplicationError
from common.tasks import task_send
from generation.models import Image
from metrics.extract import CampaignFacts
from metrics.models import ReportSnapshot
from metrics.options import ReportOptions
from metrics.snapshots.budget import COMPARE_HINTS, compare_estimate
from metrics.snapshots.key import snapshot_key
from metrics.snapshots.report import report_compare, report_get

from .build import compare_payload
from .options import CompareOptions
from .rows import compare_from_reports, compare_kind


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def compare_work(*, campaigns: list[Campaign], compare: CompareOptions) -> int:
    """Draws x images of both sides, summed over the pairs (x 2 for the bootstrap and the permutations);
    0 when no test is asked for."""
    if not compare.significance:
        return 0
    images = {c.pk: Image.objects.filter(campaign=c, status=Image.Status.DONE, excluded=False).count()
              for c in campaigns}
    pairs = [(campaigns[0], campaigns[0])] if compare.settings else list(combinations(campaigns, 2))
    return 2 * compare.draws * sum(images[a.pk] + images[b.pk] for a, b in pairs)


def _tests(campaigns: list[Campaign], options: ReportOptions, compare: CompareOptions) -> dict[str, Any]:
    """The snapshot's payload (ready), or {"status": "building", ...} while a worker builds it."""
    ids = [c.pk for c in campaigns]
    key = "compare:" + _sha(f"{','.join(map(str, ids))}#{options.key()}#{compare.key()}")
    version = snapshot_key(campaigns=campaigns, options_key=key).data_version
    owner = campaigns[0]
    snap = ReportSnapshot.objects.filter(campaign=owner, options_key=key, data_version=version).first()
    if snap is not None and snap.status == ReportSnapshot.Status.READY:
        return snap.payload
    if snap is not None and snap.status == ReportSnapshot.Status.BUILDING:
        return {"status": "building", "progress": snap.progress, "snapshot": snap.pk}
    if snap is not None:  # a failed build: try again
        snap.delete()
    estimate = compare_estimate(campaigns=campaigns, compare=compare,
                                work=compare_work(campaigns=campaigns, compare=compare))
    if budget_decide(estimate, hints=COMPARE_HINTS) == "worker":
        try:
            with transaction.atomic():
                snap = ReportSnapshot.objects.create(campaign=owner, options_key=key, options=options.to_dict(),
                                                     data_version=version)
        except IntegrityError:  # another request claimed it
            return _tests(campaigns, options, compare)
        claimed = snap.pk
        transaction.on_commit(lambda: task_send("metrics.compare_build",
                                                args=[claimed, ids, options.to_dict(), compare.to_dict()]))
        return {"status": "building", "progress": 0.0, "snapshot": claimed}
    started = time.monotonic()
    payload = compare_payload(campaigns=campaigns, options=options, compare=compare)
    ReportSnapshot.objects.update_or_create(
        campaign=owner, options_key=key, data_version=version,
        defaults={"status": ReportSnapshot.Status.READY, "payload": payload, "progress": 1.0,
                  "build_seconds": time.monotonic() - started, "options": options.to_dict()})
    ReportSnapshot.objects.filter(campaign=owner, options_key=key).exclude(data_version=version).delete()
    return payload


def _reports_building(campaigns: list[Campaign], options: ReportOptions) -> dict[str, Any] | None:
    """Each campaign's report through the budget (small ones built now, stored as snapshots that the
    side-by-side rows then read): the first one a worker builds, as the comparison's 202 body."""
    building = None
    for campaign in campaigns:
        state, body = report_get(campaign=campaign, options=options)
        if state != "ready" and building is None:
            building = body
    return building


def compare_get(*, campaigns: list[Campaign], options: ReportOptions, compare: CompareOptions,
                sources: list[str] | None = None) -> dict[str, Any]:
    """The comparison of `campaigns` (one kind): side-by-side rows, the pooled agreement (two or more
    campaigns) and, with `compare.test`, the significance of every pairwise difference. With
    `compare.settings`: two settings of the one campaign given. While a worker builds the tests the
    result is `{"status": "building", "progress", "snapshot"}` (the API answers 202). `sources`: further
    label sources compared with the human one (Kendall tau-b, GEP Table 6: metrics.compare.sources)."""
    if compare.settings:
        if len(campaigns) != 1:
            raise ApplicationError("A settings comparison takes one campaign: campaign=ID&settings=A,B.",
                                   errors={"campaign": ["give exactly one campaign with settings="]})
        campaign = campaigns[0]
        present = set(campaign.questions.values_list("setting", flat=True).distinct())
        missing = [s for s in compare.settings if s not in present]
        if missing:
            raise ApplicationError(f"Campaign {campaign.pk} has no questions in setting {missing[0]}.",
                                   errors={"settings": [f"not in this campaign: {', '.join(missing)}"]})
        state, report = report_get(campaign=campaign, options=options)
        if state != "ready":  # over the budget: a worker builds it first
            return report
        result = compare_from_reports([(CampaignFacts.of(campaign), report)])
        result.update({"mode": "settings", "settings": list(compare.settings)})
    else:
        if len(campaigns) < 2 and compare.significance:
            raise ApplicationError("Significance tests need at least two campaigns (or campaign=ID&settings=A,B).",
                                   errors={"campaigns": ["give two or more campaign ids"]})
        compare_kind([CampaignFacts.of(c) for c in campaigns])
        building = _reports_building(campaigns, options)
        if building is not None:
            return building
        result = report_compare(campaigns=campaigns, options=options, sources=sources)
        result["mode"] = "campaigns"
        if len(campaigns) < 2:
            return result
    tests = _tests(campaigns, options, compare)
    if tests.get("status") == "building":
        return tests
    result.update(tests)
    return result
