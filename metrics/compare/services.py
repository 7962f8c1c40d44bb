"""Comparisons with significance tests: `GET /api/reports/compare/` beyond the side-by-side figures.

The side-by-side rows come from the campaigns' report snapshots (`report_compare`). The
tests and the pooled agreement need the campaigns' data (one extraction each) and up to
`COMPARE_MAX_DRAWS` vectorised draws. Their result is kept in the existing `ReportSnapshot` table
(on the first campaign of the comparison, options key `compare:<sha256 of the campaigns, report options
and compare options>`, data version = every campaign's data revision (`metrics.snapshots.key.snapshot_key`);
claimed, built and stored by `metrics.snapshots.store`), so the same
comparison on unchanged data is read back instead of recomputed, and any new answer, exclusion or
block in any of the campaigns makes it stale (older ones are deleted when a new one is stored).
The request work budget (`common.budget`, setting `REQUEST_WORK_BUDGET_S`) decides from the estimate
(`metrics.snapshots.budget.compare_estimate`: the campaigns' answers and draws x images summed over the
pairs) before any work starts: over it the tests are built by a worker (`metrics.compare_build`,
default queue) like a large report, and the API answers `202 {"status": "building", ...}` until they
are ready; a report of one of the campaigns that is itself over the budget (for any label source of
`sources=`) is queued the same way first. Draws that would take minutes even in a worker are a 400 naming `draws`.
"""
from __future__ import annotations

import dataclasses
import hashlib
from itertools import combinations
from typing import Any

from campaigns.models import Campaign
from common.budget import budget_decide
from common.errors import ApplicationError
from generation.models import Image
from metrics.extract import CampaignFacts
from metrics.options import ReportOptions
from metrics.snapshots.budget import COMPARE_HINTS, compare_estimate
from metrics.snapshots.key import snapshot_key
from metrics.snapshots.report import report_get
from metrics.snapshots.store import snapshot_get

from .build import compare_payload
from .options import CompareOptions
from .rows import compare_from_reports, compare_kind
from .sources import sources_comparison


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
    options_key = "compare:" + hashlib.sha256(f"{','.join(map(str, ids))}#{options.key()}#{compare.key()}".encode()
                                              ).hexdigest()
    key = snapshot_key(campaigns=campaigns, options_key=options_key)
    _, payload = snapshot_get(
        campaigns[0], key, options=options, task="metrics.compare_build",
        background=lambda: budget_decide(compare_estimate(
            campaigns=campaigns, compare=compare, work=compare_work(campaigns=campaigns, compare=compare)),
            hints=COMPARE_HINTS) == "worker",
        task_args=lambda snapshot_id: [snapshot_id, ids, options.to_dict(), compare.to_dict()],
        build=lambda: compare_payload(campaigns=campaigns, options=options, compare=compare))
    return payload


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


def _source_options(options: ReportOptions, sources: list[str] | None) -> list[ReportOptions]:
    """The report options `report_compare` reads: the asked-for source's, and with `sources` the human
    one's and each further source's."""
    wanted = list(dict.fromkeys([options.source, *(["human", *sources] if sources else [])]))
    return [options if s == options.source else dataclasses.replace(options, source=s) for s in wanted]


def _reports_building(campaigns: list[Campaign], options: ReportOptions,
                      sources: list[str] | None = None) -> dict[str, Any] | None:
    """Each campaign's report, for every label source compared (`sources=`), through the budget (small
    ones built now, stored as snapshots that the side-by-side rows then read): the first one a worker
    builds, as the comparison's 202 body. So `report_compare` only ever reads stored snapshots."""
    building = None
    for opts in _source_options(options, sources):
        for campaign in campaigns:
            state, body = report_get(campaign=campaign, options=opts)
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
        building = _reports_building(campaigns, options, sources)
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
