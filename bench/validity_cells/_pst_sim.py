"""Simulated PST campaigns with known truth (bench/validity_cells/pst.py).

Identities come in two groups (masculine- and feminine-stereotyped), `k` per group. Paired images:
every (masculine, feminine) pair in both orders, `paired_samples` times; each person of a paired
image is labelled with its stereotype with probability q_paired[identity]. Single images: `singles`
per identity, one person, probability q_single[identity]. The two persons of a paired image are
correlated through a shared uniform: with probability |rho| the second person reuses the first
person's uniform (rho > 0) or its mirror 1 - u (rho < 0); marginals stay exact. A share `cannot`
of persons is labelled "Cannot identify" whatever their appearance (counted -1 under the paper's
formula, so the truth is computed with it). Everything is a numpy array: no database.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FEM, MASC, CANNOT = "Feminine", "Masculine", "Cannot identify"


@dataclass(frozen=True)
class Design:
    k: int = 10                   # identities per group
    singles: int = 3              # single images per identity
    paired_samples: int = 1       # samples per ordered pair
    rho: float = 0.0              # within-image dependence of the two persons
    cannot: float = 0.0           # share labelled "Cannot identify"
    gap: float = 0.0              # q_paired - q_single for every identity (truth of the gap)
    q_range: tuple[float, float] = (0.45, 0.85)


@dataclass(frozen=True)
class Campaign:
    identities: list[str]
    stereotype_of: dict[str, str]
    group_of: dict[str, str]
    q_single: dict[str, float]
    q_paired: dict[str, float]
    cannot: float
    single: dict[str, np.ndarray]
    paired: dict[str, np.ndarray]

    def true_micro(self, setting: str, identity: str) -> float:
        """True micro STS (paper formula: Cannot identify counts -1)."""
        q = (self.q_paired if setting == "paired" else self.q_single)[identity]
        p = (1 - self.cannot) * q
        return 100.0 * (2 * p - 1)

    def true_overall(self, setting: str) -> float:
        """True overall STS: the person-weighted mean (each identity has the same persons per setting)."""
        return float(np.mean([self.true_micro(setting, i) for i in self.identities]))


def _labels(stereo: np.ndarray, stereotypes: np.ndarray, cannot: np.ndarray) -> np.ndarray:
    other = np.where(stereotypes == "masculine", FEM, MASC)
    own = np.where(stereotypes == "masculine", MASC, FEM)
    return np.where(cannot, CANNOT, np.where(stereo, own, other)).astype(object)


def simulate(design: Design, seed: int) -> Campaign:
    rng = np.random.default_rng(seed)
    masc = [f"m{i}" for i in range(design.k)]
    fem = [f"f{i}" for i in range(design.k)]
    ids = masc + fem
    stereotype_of = {i: ("masculine" if i.startswith("m") else "feminine") for i in ids}
    group_of = {i: ("male" if i.startswith("m") else "female") for i in ids}
    lo, hi = design.q_range
    q_single = {i: float(rng.uniform(lo, hi)) for i in ids}
    q_paired = {i: float(np.clip(q_single[i] + design.gap / 200.0, 0.01, 0.99)) for i in ids}
    # single
    s_ids = np.repeat(np.array(ids, dtype=object), design.singles)
    s_q = np.array([q_single[i] for i in s_ids])
    s_st = np.array([stereotype_of[i] for i in s_ids], dtype=object)
    s_stereo = rng.random(s_ids.size) < s_q
    s_cannot = rng.random(s_ids.size) < design.cannot
    single = {"image_ids": np.arange(s_ids.size) + 1_000_000, "identities": s_ids.astype(str),
              "stereotypes": s_st, "labels": _labels(s_stereo, s_st, s_cannot)}
    paired = two_person_images(rng, design, masc, fem, q_paired, stereotype_of, first_image=0)
    return Campaign(ids, stereotype_of, group_of, q_single, q_paired, design.cannot, single, paired)


def two_person_images(rng: np.random.Generator, design: Design, masc: list[str], fem: list[str],
                      q: dict[str, float], stereotype_of: dict[str, str], first_image: int) -> dict[str, np.ndarray]:
    """Person rows of (left, right) images over every masculine x feminine pair in both orders."""
    left, right = [], []
    for a in masc:
        for b in fem:
            for _ in range(design.paired_samples):
                left += [a, b]
                right += [b, a]
    n_img = len(left)
    u1 = rng.random(n_img)
    tie = rng.random(n_img) < abs(design.rho)
    u2 = np.where(tie, u1 if design.rho >= 0 else 1.0 - u1, rng.random(n_img))
    p_ids = np.array(left + right, dtype=object)
    u = np.concatenate([u1, u2])
    p_q = np.array([q[i] for i in p_ids])
    p_st = np.array([stereotype_of[i] for i in p_ids], dtype=object)
    p_cannot = rng.random(p_ids.size) < design.cannot
    images = first_image + np.concatenate([np.arange(n_img), np.arange(n_img)])
    return {"image_ids": images, "identities": p_ids.astype(str), "stereotypes": p_st,
            "labels": _labels(u < p_q, p_st, p_cannot)}


def intervention_images(c: Campaign, design: Design, seed: int, effect: float = 0.0) -> dict[str, np.ndarray]:
    """An intervention setting on every pair: the plain paired model with every identity's stereotype
    probability moved by `effect` STS points (0: no effect)."""
    rng = np.random.default_rng([seed, 8])
    q = {i: float(np.clip(v + effect / 200.0, 0.01, 0.99)) for i, v in c.q_paired.items()}
    masc = [i for i in c.identities if c.stereotype_of[i] == "masculine"]
    fem = [i for i in c.identities if c.stereotype_of[i] == "feminine"]
    return two_person_images(rng, design, masc, fem, q, c.stereotype_of, first_image=2_000_000)
