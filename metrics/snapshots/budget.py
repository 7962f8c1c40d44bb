"""Estimated seconds of the report, the comparison and the replication package from their inputs,
read before any work starts (`common.budget`: inline, worker with 202, or a 400 naming the option).

Per-unit costs measured with `bench/budget_calibrate.py` and `bench/report_scale.py` /
`bench/package_build.py` (figures and machine in bench/README.md "Request work budget"). They are
rounded up: a request that the estimate keeps inline should finish well inside the budget.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from itertools import combinations
from typing import Any

from annotation.demographics import FIELDS, NOT_REPORTED, OTHER, group_of, merge_small_groups
from campaigns.models import Campaign
from common.budget import Estimate
from generation.models import Image
from metrics.compare.options import CompareOptions
from metrics.extract.demographics import demographics_read
from metrics.options import ReportOptions

# Seconds per unit (see the module docstring).
REPORT_FIXED_S = 0.2           # a report's queries and sections on an empty campaign
REPORT_PER_ANSWER_S = 2.0e-6   # extraction, agreement, labels (1M answers: 1.57 s quiet, with 1,000 draws)
BOOT_PER_IMAGE_DRAW_S = 1.5e-6  # every interval's bootstrap, summed (PST with intervention: the costliest)
PERM_PER_IMAGE_DRAW_S = 1.0e-6  # the report's PST permutation tests (paired vs single, intervention)
PAIR_PERM_S = 1.0e-3           # one permutation of one pair of annotator groups: two statistics
PAIR_PERM_PER_ANSWER_S = 1.0e-7  # ... and its per-answer part (counts of both groups)
COMPARE_PER_IMAGE_DRAW_S = 2.0e-7  # compare's vectorised resampling, per unit of `compare_work`
PACKAGE_PER_ANSWER_S = 8.0e-5  # the replication package build (1M answers: 80.6 s on the shared machine)

_DEFAULTS: dict[str, Any] = {f.name: f.default for f in fields(ReportOptions)}


@dataclass(frozen=True)
class GroupShape:
    """The annotators section's size: pairs of named groups tested, groups with their own figures."""

    pairs: int
    groups: int
    answers: int


def annotator_pairs(campaign: Campaign, *, min_group: int) -> GroupShape:
    """From the latest demographics release (its members' answers; its `min_group` is a floor) and the
    grouping rule the section applies; no release: no groups, no tests."""
    release, reported = demographics_read(campaign.pk)
    answers = campaign.answers.count()
    if release is None:
        return GroupShape(pairs=0, groups=0, answers=answers)
    floor = max(min_group, int(release["min_group"]))
    pairs = groups = 0
    for name in FIELDS:
        _, counts = merge_small_groups({a: group_of(reported.get(a), name) for a in release["members"]}, floor)
        named = [g for g, n in counts.items() if n is not None and g not in (OTHER, NOT_REPORTED)]
        pairs += len(list(combinations(named, 2)))
        groups += sum(1 for n in counts.values() if n is not None)
    return GroupShape(pairs=pairs, groups=groups, answers=answers)


def _images(campaign: Campaign) -> int:
    return Image.objects.filter(campaign=campaign, status=Image.Status.DONE, excluded=False).count()


def report_data_s(answers: int) -> float:
    return REPORT_FIXED_S + answers * REPORT_PER_ANSWER_S


def report_estimate(campaign: Campaign, options: ReportOptions) -> Estimate:
    """The report's seconds: its data, `n_boot` (the report's intervals and each demographic group's),
    `n_perm` (the PST tests and the annotators section's tests between every pair of named groups)."""
    shape = annotator_pairs(campaign, min_group=options.min_group)
    images = _images(campaign)
    boot = options.n_boot * images * BOOT_PER_IMAGE_DRAW_S * (1 + shape.groups)
    perm = options.n_perm * (images * PERM_PER_IMAGE_DRAW_S
                             + shape.pairs * (PAIR_PERM_S + shape.answers * PAIR_PERM_PER_ANSWER_S))
    raised = {name for name in ("n_boot", "n_perm") if getattr(options, name) > _DEFAULTS[name]}
    if options.min_group < _DEFAULTS["min_group"]:
        raised.add("n_perm")  # more, smaller groups: more pairs tested n_perm times each
    return Estimate(data=report_data_s(shape.answers), options={"n_boot": boot, "n_perm": perm},
                    raised=frozenset(raised))


REPORT_HINTS = {"n_boot": "ask for fewer draws (n_boot)",
                "n_perm": "ask for fewer permutations (n_perm=0 skips the tests) or a larger min_group"}


def compare_estimate(*, campaigns: list[Campaign], compare: CompareOptions, work: int) -> Estimate:
    """The comparison's tests: its data (one extraction per campaign) and `draws` (`work` is
    `metrics.compare.services.compare_work`: 2 x draws x images over the pairs)."""
    answers = sum(c.answers.count() for c in campaigns)
    raised = frozenset({"draws"} if compare.draws > CompareOptions.draws else set())
    return Estimate(data=report_data_s(answers), options={"draws": work * COMPARE_PER_IMAGE_DRAW_S}, raised=raised)


COMPARE_HINTS = {"draws": "ask for fewer draws, or compare fewer campaigns at once"}


def package_estimate(campaign: Campaign) -> Estimate:
    """The replication package: its answers (tables, report.json, Parquet, zip)."""
    return Estimate(data=report_data_s(0) + campaign.answers.count() * PACKAGE_PER_ANSWER_S)
