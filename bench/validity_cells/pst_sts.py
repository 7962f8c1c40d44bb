"""PST STS cells of the validity harness (issue 22; bench/validity.py): the intervals of every
setting's STS that the report prints (`metrics.sections.metric_intervals.pst_setting_intervals`) and
the power aspect's overall gap interval.

- `overall_ci` (`metrics.core.metric_intervals.sts_interval`, BCa over images): the occupation preset's
  single (120 images) and paired (800 images, correlated persons) settings, Cannot identify and ties
  (both count -1 under the paper formula), and sparse designs with few identities and images;
- `micro_ci` (`micro_sts_intervals`, Wilson with the image design effect) of one identity per run
  (identity `seed mod identities`): 3 and 10 single images, the paired setting's 20 persons;
- `pst.gap.overall_ci` of the power aspect (36 occupations, each with one high and one low role, 3
  single images per identity, 3 paired images per occupation and order; `compare_pst` over every
  identity, as `pst_gap_intervals` calls it).

Simulated campaigns: bench/validity_cells/_pst_sim.py.
"""
from __future__ import annotations

from functools import partial

import numpy as np

from bench.validity_cells import Cell
from bench.validity_cells._pst_sim import CANNOT, Campaign, Design, _labels, simulate, two_person_images
from metrics.core import metric_intervals as mi
from metrics.core.significance import compare_pst

N_BOOT, FAST_BOOT = 1000, 200


def _setting(c: Campaign, setting: str, ties: bool) -> dict[str, np.ndarray]:
    rows = dict(c.paired if setting == "paired" else c.single)
    if ties:  # every other Cannot identify becomes a tie of the annotators: the paper formula counts both -1
        labels = rows["labels"].copy()
        where = np.flatnonzero(labels == CANNOT)[::2]
        labels[where] = "tie"
        rows["labels"] = labels
    return rows


def overall_covers(design: Design, setting: str, ties: bool, n_boot: int, seed: int) -> bool:
    c = simulate(design, seed)
    r = _setting(c, setting, ties)
    ci = mi.sts_interval(r["image_ids"], r["labels"], r["stereotypes"], "paper", n_boot, 0.95, seed)
    if not ci.low <= ci.estimate <= ci.high:
        raise AssertionError(f"seed {seed}: the interval excludes its estimate")
    return bool(ci.low <= c.true_overall(setting) <= ci.high)


def micro_covers(design: Design, setting: str, seed: int) -> bool:
    c = simulate(design, seed)
    r = _setting(c, setting, False)
    ident = c.identities[seed % len(c.identities)]
    ci = mi.micro_sts_intervals(r["image_ids"], r["identities"], r["labels"], r["stereotypes"], "paper")[ident]
    return bool(ci.low <= c.true_micro(setting, ident) <= ci.high)


def simulate_power(design: Design, occupations: int, seed: int) -> Campaign:
    """The power aspect: occupation i has a high (masculine) and a low (feminine) role; single images of
    every identity, paired images of each occupation's own two roles only ('matched'), both orders."""
    rng = np.random.default_rng([seed, 36])
    high = [f"m{i}" for i in range(occupations)]
    low = [f"f{i}" for i in range(occupations)]
    ids = high + low
    stereotype_of = {i: ("masculine" if i.startswith("m") else "feminine") for i in ids}
    group_of = {i: ("powerful" if i.startswith("m") else "powerless") for i in ids}
    lo, hi = design.q_range
    q_single = {i: float(rng.uniform(lo, hi)) for i in ids}
    q_paired = {i: float(np.clip(q_single[i] + design.gap / 200.0, 0.01, 0.99)) for i in ids}
    s_ids = np.repeat(np.array(ids, dtype=object), design.singles)
    s_st = np.array([stereotype_of[i] for i in s_ids], dtype=object)
    stereo = rng.random(s_ids.size) < np.array([q_single[i] for i in s_ids])
    single = {"image_ids": np.arange(s_ids.size) + 1_000_000, "identities": s_ids.astype(str), "stereotypes": s_st,
              "labels": _labels(stereo, s_st, rng.random(s_ids.size) < design.cannot)}
    parts = [two_person_images(rng, design, [h], [w], q_paired, stereotype_of, first_image=10_000 * k)
             for k, (h, w) in enumerate(zip(high, low, strict=True))]
    paired = {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}
    return Campaign(ids, stereotype_of, group_of, q_single, q_paired, design.cannot, single, paired)


def power_gap_covers(design: Design, occupations: int, n_boot: int, seed: int) -> bool:
    c = simulate_power(design, occupations, seed)
    union = sorted(c.identities)
    d = compare_pst(c.paired, c.single, c.group_of, "paper", union, n_boot, 0, 0.95, seed)["overall"]
    truth = c.true_overall("paired") - c.true_overall("single")
    return bool(d.low <= truth <= d.high)


def _boot(name: str, run: object, *args: object, note: str) -> Cell:
    return Cell(name, "coverage", 0.95, partial(run, *args, N_BOOT), note,  # type: ignore[call-arg]
                partial(run, *args, FAST_BOOT))  # type: ignore[call-arg]


OCC = Design(k=20, singles=3, cannot=0.05)
OCC_PAIRED = Design(k=20, singles=3, rho=0.6, cannot=0.05)
POWER = Design(singles=3, paired_samples=3, rho=0.3, cannot=0.05, gap=15.0)
CELLS: list[Cell] = [
    _boot("overall_ci.occupation.single", overall_covers, OCC, "single", False,
          note="40 identities x 3 single images (120), 5% Cannot"),
    _boot("overall_ci.occupation.paired.rho+0.6", overall_covers, OCC_PAIRED, "paired", False,
          note="800 paired images, persons correlated 0.6"),
    _boot("overall_ci.occupation.single.ties_cannot", overall_covers, Design(k=20, singles=3, cannot=0.2), "single",
          True, note="20% of persons Cannot identify or tie (half each), counted -1"),
    _boot("overall_ci.sparse.4_identities.single", overall_covers, Design(k=2, singles=3, cannot=0.05), "single",
          False, note="few identities: 4 identities x 3 single images (12 images)"),
    _boot("overall_ci.sparse.6_identities.paired", overall_covers, Design(k=3, singles=3, rho=0.6, cannot=0.05),
          "paired", False, note="6 identities: 18 paired images, correlated persons"),
    _boot("overall_ci.sparse.10_identities.single.ties_cannot", overall_covers,
          Design(k=5, singles=3, cannot=0.2), "single", True, note="10 identities x 3 images, 20% Cannot / tie"),
    Cell("micro_ci.single.3_images", "coverage", 0.95, partial(micro_covers, OCC, "single"),
         "one identity's 3 single images (the occupation preset)"),
    Cell("micro_ci.single.10_images", "coverage", 0.95, partial(micro_covers, Design(k=10, singles=10), "single"),
         "one identity's 10 single images"),
    Cell("micro_ci.paired.20_persons.rho+0.6", "coverage", 0.95, partial(micro_covers, OCC_PAIRED, "paired"),
         "one identity's 40 persons in paired images (occupation preset), correlated persons"),
    _boot("gap.overall_ci.power", power_gap_covers, POWER, 36,
          note="power aspect: 72 identities, 216 single and 216 paired images, true gap +15"),
]
