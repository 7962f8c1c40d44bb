"""Estimated seconds of the report, the comparison and the replication package from their inputs,
read before any work starts (`common.budget`: inline, worker with 202, or a 400 naming the option).

Each per-unit cost below names the command, date and figure it was set from (bench/README.md section 12
has the same table). They are rounded up to about twice the measured figure: a request that the
estimate keeps inline should finish well inside the budget.
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

# Seconds per unit. "CPU" is the CPU time of the process plus its PostgreSQL backend's, measured on the
# shared 2-vCPU machine under load (its wall times were 2-5x the CPU times there): the best stand-in
# for a quiet machine's wall time. Unless said otherwise: `bench/budget_calibrate.py`, two runs on
# 2026-11-27, 17:23-17:26 and 17:27-17:29 UTC, load average 9-15, the report and compare code of main
# 899909b (PST calibration campaign: 88 images, 30 / 60 annotators, 4,560 / 9,120 answers, 18 pairs of
# named groups, 10 groups with their own figures; GEP: the paper's design, 2,560 images, 14,400 answers).
REPORT_FIXED_S = 0.2           # fixed part 0.05-0.11 s CPU; the whole report at 9,120 answers 0.10-0.17 s CPU
REPORT_PER_ANSWER_S = 3.0e-6   # 1M answers, default options: 2.47 s quiet wall (bench/report_scale.py, README
#                                "Today's figures", main 9c74c9a); the small campaigns' slope is noise
# The bootstraps, the tests and the annotators section, recalibrated on 2026-11-28 15:31-16:07 UTC (a quiet,
# fast 2-vCPU VM; main 62e3e27; wall time): each draw has a fixed part (its vectors, the interval's
# bookkeeping) and a part per image; at scale the per-image part is tens of times below what the small
# calibration campaign's figure implied (bench/README.md section 12, "Recalibration at scale"). Measured
# with `report_build` on extracted data, best of 2, one option on at a time, and `bench/budget_calibrate.py`:
# - PST: 88 images (the calibration campaign) 12 us per draw, 8.5 us per permutation of its tests; 1,720
#   images (the intervention design, 9,960 answers) n_boot 1,000 +0.153 s, 3,000 +0.442 s (0.145-0.153 ms
#   per draw), n_perm 1,000 +0.016 s.
# - GEP: 2,560 images (the paper's design) 44 us per draw; 1M answers / 500 annotators (22,208 images, 11
#   groups, 19 pairs) n_boot 1,000 +1.90 s over 12 bootstraps (0.158 ms per draw), n_perm 1,000 +1.46 s,
#   3,000 +2.67 s (32 us per pair-permutation; 0.86 s once: the groups' own statistics and the answers
#   prepared for every pair), the groups' figures without draws +1.6 s (0.15 us per answer and group);
#   10M answers (222,080 images; cProfile, 15:47 UTC) ~1 ms per group-draw, 0.18 ms per pair-permutation,
#   10.1 s once for the pairs (1.0 us per answer), the groups' figures without draws ~26 s (0.24 us).
# - Pairs of groups, 4,560 / 9,120 answers: 18 / 23 us per pair-permutation.
# Each constant about twice to three times its figures.
BOOT_PER_DRAW_S = 3.0e-5        # PST, per draw x (1 + groups): ~12 us fixed
BOOT_PER_IMAGE_DRAW_S = 1.5e-7  # ... per image: ~80 ns
GEP_BOOT_PER_DRAW_S = 6.0e-5    # GEP, per draw x (1 + groups): ~29 us fixed
GEP_BOOT_PER_IMAGE_DRAW_S = 1.2e-8  # ... per image: ~4-6 ns
PERM_PER_DRAW_S = 2.0e-5        # the report's PST tests (PST only), per permutation: ~8 us fixed
PERM_PER_IMAGE_DRAW_S = 2.0e-8  # ... per image: ~5-9 ns
PAIR_PERM_S = 5.0e-5            # one permutation of one pair of annotator groups: 18-32 us
PAIR_PERM_PER_ANSWER_S = 3.0e-11  # ... per answer: (0.18 ms - 32 us) over 10M answers
PAIRS_PER_ANSWER_S = 2.0e-6     # once when there are pairs to test: 0.86-1.0 us per answer
GROUP_PER_ANSWER_S = 5.0e-7     # each group's figures without draws (labels, frequencies, agreement), per
#                                 answer and group: 0.15-0.24 us
COMPARE_PER_IMAGE_DRAW_S = 1.0e-8  # per unit of `compare_work`: `bench/compare.py` 17:18-17:21 UTC (load 4.5-5.2),
#                                    the GEP authors' three models, 10,000 draws: 2.04-2.17 s CPU for
#                                    3.07e8 image-draws (6.6 ns, extraction included; 7.4-11.0 s wall)
COMPARE_PER_PAIR_DRAW_S = 3.0e-5  # per pair and draw, whatever the images (rows, BCa, p-values): two PST
#                                   campaigns of 88 images, 10,000 draws: 0.41-0.44 s CPU (1.0-1.8 s wall loaded)
PACKAGE_PER_ANSWER_S = 1.0e-5  # the replication package: 1M answers in 6.08 s quiet (bench/package_build.py
#                                --sizes 1000000, README "Today's figures", main 9c74c9a)

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
    pst = campaign.kind == Campaign.Kind.PST  # GEP's bootstrap is cheaper, and it has no image-level tests
    per_draw = (BOOT_PER_DRAW_S + images * BOOT_PER_IMAGE_DRAW_S if pst
                else GEP_BOOT_PER_DRAW_S + images * GEP_BOOT_PER_IMAGE_DRAW_S)
    boot = options.n_boot * per_draw * (1 + shape.groups)
    perm = options.n_perm * ((PERM_PER_DRAW_S + images * PERM_PER_IMAGE_DRAW_S if pst else 0.0)
                             + shape.pairs * (PAIR_PERM_S + shape.answers * PAIR_PERM_PER_ANSWER_S))
    if options.n_perm and shape.pairs:
        perm += shape.answers * PAIRS_PER_ANSWER_S
    raised = {name for name in ("n_boot", "n_perm") if getattr(options, name) > _DEFAULTS[name]}
    if options.min_group < _DEFAULTS["min_group"]:
        raised.add("n_perm")  # more, smaller groups: more pairs tested n_perm times each
    groups = shape.answers * shape.groups * GROUP_PER_ANSWER_S
    return Estimate(data=report_data_s(shape.answers) + groups, options={"n_boot": boot, "n_perm": perm},
                    raised=frozenset(raised))


REPORT_HINTS = {"n_boot": "ask for fewer draws (n_boot)",
                "n_perm": "ask for fewer permutations (n_perm=0 skips the tests) or a larger min_group"}


def compare_seconds(*, answers: int, work: int, pairs: int, draws: int) -> tuple[float, float]:
    """(data, draws) seconds of a comparison's tests: one extraction of `answers`; `work` image-draws
    (`compare_work`) and `pairs` x `draws` of per-pair work."""
    return report_data_s(answers), work * COMPARE_PER_IMAGE_DRAW_S + pairs * draws * COMPARE_PER_PAIR_DRAW_S


def compare_estimate(*, campaigns: list[Campaign], compare: CompareOptions, work: int) -> Estimate:
    """The comparison's tests: its data (one extraction per campaign) and `draws` (`work` is
    `metrics.compare.services.compare_work`: 2 x draws x images over the pairs; plus each pair's own
    work per draw)."""
    answers = sum(c.answers.count() for c in campaigns)
    pairs = 0 if not work else 1 if compare.settings else len(list(combinations(campaigns, 2)))
    data, draws = compare_seconds(answers=answers, work=work, pairs=pairs, draws=compare.draws)
    raised = frozenset({"draws"} if compare.draws > CompareOptions.draws else set())
    return Estimate(data=data, options={"draws": draws}, raised=raised)


COMPARE_HINTS = {"draws": "ask for fewer draws, or compare fewer campaigns at once"}


def package_estimate(campaign: Campaign) -> Estimate:
    """The replication package: its answers (tables, report.json, Parquet, zip)."""
    return Estimate(data=report_data_s(0) + campaign.answers.count() * PACKAGE_PER_ANSWER_S)
