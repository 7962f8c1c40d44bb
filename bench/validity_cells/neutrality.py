"""Neutrality cells of the validity harness (issue 22; bench/validity.py): the report's Neutrality
interval (`metrics.core.vlm.neutrality`, printed as `pst.gender_balance.<setting>.neutrality_ci`).

Neutrality of a group is `(min(m, f) + n) / (max(m, f) + T) = (1 - M) / (1 + M)` with M the larger of
the male and female shares: not smooth where the two are equal, so the estimate is biased downward
there and the bias adds up over groups. Designs: balanced groups (male share = female share), mildly
(10 points) and strongly (50 points) unbalanced ones and a mix; few (10-20) and many (40-100) images
per group; few (6) and many (40-100) groups; one person per image, or two persons of one group per
image that share the image's lean (a Dirichlet around the group's probabilities: correlated persons);
and the PST paired design (two identities per image, persons correlated, 10% Cannot identify,
`_pst_sim`). The truth is the mean over groups of `(1 - M) / (1 + M)` at the true shares.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np

from bench.validity_cells import Cell
from bench.validity_cells._pst_sim import Design, simulate
from metrics.core import vlm
from metrics.core.intervals import stratified_cluster_bca

LABELS = np.array(["Masculine", "Feminine", "Cannot identify"], dtype=object)
N_BOOT, FAST_BOOT = 1000, 200


@dataclass(frozen=True)
class Groups:
    groups: int
    images: int
    persons: int = 1         # persons of one group per image (2: correlated through the image's lean)
    balance: str = "mild"    # balanced | mild | strong | mixed


def _shares(rng: np.random.Generator, design: Groups) -> np.ndarray:
    """(groups, 3) probabilities of male, female, neutral."""
    s = rng.uniform(0.6, 0.9, design.groups)  # non-neutral share
    side = rng.choice([-1.0, 1.0], design.groups)
    a = {"balanced": np.zeros(design.groups), "mild": side * 0.1, "strong": side * 0.5,
         "mixed": np.where(np.arange(design.groups) % 2 == 0, 0.0, side * 0.4)}[design.balance]
    a = np.clip(a, -s, s)
    return np.stack([(s + a) / 2, (s - a) / 2, 1 - s], axis=1)


def _truth(p: np.ndarray) -> float:
    mx = np.maximum(p[:, 0], p[:, 1])
    return float(np.mean((1 - mx) / (1 + mx)))


def _rows(rng: np.random.Generator, p: np.ndarray, design: Groups) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    groups, labels, images = [], [], []
    for k, probs in enumerate(p):
        n_img, per = design.images, design.persons
        lean = rng.dirichlet(probs * 8 + 1e-9, size=n_img) if per > 1 else np.broadcast_to(probs, (n_img, 3))
        kinds = (rng.random((n_img, per))[..., None] > np.cumsum(lean, axis=1)[:, None, :]).sum(axis=2)
        groups.append(np.full(n_img * per, f"g{k}"))
        labels.append(LABELS[np.minimum(kinds, 2)].ravel())
        images.append(np.repeat(k * 100_000 + np.arange(n_img), per))
    return np.concatenate(groups), np.concatenate(labels), np.concatenate(images)


def _campaign(design: Groups | Design, seed: int) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
    """(truth, groups, labels, image ids) of one simulated setting."""
    if isinstance(design, Design):  # the PST paired setting: two identities per image
        c = simulate(design, seed)
        share = {i: (1 - c.cannot) * q for i, q in c.q_paired.items()}
        mx = np.array([max(v, (1 - c.cannot) - v) for v in share.values()])
        return (float(np.mean((1 - mx) / (1 + mx))), c.paired["identities"], c.paired["labels"],
                c.paired["image_ids"])
    rng = np.random.default_rng([seed, design.groups, design.images, design.persons])
    p = _shares(rng, design)
    return (_truth(p), *_rows(rng, p, design))


def covers(design: Groups | Design, n_boot: int, seed: int) -> bool:
    truth, groups, labels, images = _campaign(design, seed)
    res = vlm.neutrality(groups, labels, images, n_boot=n_boot, seed=seed)
    lo, hi = res["ci"]
    if not lo <= res["neutrality"] <= hi:
        raise AssertionError(f"seed {seed}: the interval {res['ci']} excludes its estimate {res['neutrality']}")
    return bool(lo <= truth <= hi)


def covers_bca(design: Groups | Design, n_boot: int, seed: int) -> bool:
    """The interval the report printed before (cluster BCa within each group), for the record."""
    truth, groups, labels, images = _campaign(design, seed)
    res = vlm.neutrality(groups, labels, images, n_boot=0)
    names = sorted(res["groups"])
    g_code = {g: i for i, g in enumerate(names)}
    codes = np.array([g_code[g] for g in groups.astype(str)])
    kind = np.select([labels == "Masculine", labels == "Feminine"], [0, 1], 2)
    unit, unit_codes = np.unique(codes * 10_000_000 + images.astype(np.int64), return_inverse=True)
    sums = np.zeros((unit.size, 3))
    np.add.at(sums, (unit_codes, kind), 1.0)

    def stat(t: np.ndarray) -> np.ndarray:
        return np.nanmean(vlm.neutrality_value(t[..., 0], t[..., 1], t[..., 2]), axis=1)

    ci = stratified_cluster_bca(sums, stat, unit // 10_000_000, n_boot, 0.95, seed)
    return bool(ci.low <= truth <= ci.high)  # type: ignore[union-attr]


def _cell(name: str, design: Groups | Design, note: str, legacy: bool = False) -> Cell:
    run = covers_bca if legacy else covers
    return Cell(name, "coverage", 0.95, partial(run, design, N_BOOT), note, partial(run, design, FAST_BOOT), legacy)


PAIRED = Design(k=10, singles=0, rho=0.6, cannot=0.1, q_range=(0.45, 0.55))
CELLS: list[Cell] = [
    _cell("bca.6x40.one_person.mild", Groups(6, 40), "the pre-issue-22 interval (cluster BCa), 6 groups x 40 images",
          legacy=True),
    _cell("bca.100x10.one_person.balanced", Groups(100, 10, balance="balanced"),
          "the pre-issue-22 interval, 100 balanced groups x 10 images", legacy=True),
    _cell("6x40.one_person.mild", Groups(6, 40), "6 groups x 40 images, male - female 10 points"),
    _cell("6x15.one_person.balanced", Groups(6, 15, balance="balanced"), "6 groups x 15 images, balanced"),
    _cell("6x30.two_persons.mild", Groups(6, 30, persons=2), "6 groups x 30 two-person images (correlated)"),
    _cell("6x20.one_person.strong", Groups(6, 20, balance="strong"), "6 groups x 20 images, 50 points apart"),
    _cell("40x15.one_person.balanced", Groups(40, 15, balance="balanced"), "40 balanced groups x 15 images"),
    _cell("100x10.one_person.balanced", Groups(100, 10, balance="balanced"), "100 balanced groups x 10 images"),
    _cell("40x15.two_persons.strong", Groups(40, 15, persons=2, balance="strong"),
          "40 groups x 15 two-person images, 50 points apart"),
    _cell("20x60.two_persons.mixed", Groups(20, 60, persons=2, balance="mixed"),
          "20 groups x 60 two-person images, half balanced, half 40 points apart"),
    _cell("100x40.one_person.mixed", Groups(100, 40, balance="mixed"), "100 groups x 40 images, half balanced"),
    _cell("pst_paired.20_identities.rho+0.6", PAIRED,
          "PST paired setting: 20 identities x 20 two-identity images, rho 0.6, 10% Cannot, near balance"),
]
