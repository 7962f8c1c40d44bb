"""Coverage of the Neutrality interval (test inversion, its noise from a bootstrap over images within
each identity, `metrics.core.vlm`) on simulated settings with a known truth, at a CI-sized number of
seeded runs.

Each identity p has answer probabilities (male, female, neutral); its true Neutrality is
`(min(m, f) + n) / (max(m, f) + 1)` and the truth of the setting the mean over identities. Designs: one
person per image (the single setting), and two persons of one identity per image that share the
image's tendency (clustered, like the persons of a paired image): the interval resamples images, so it
must hold its coverage there too. Runs are seeded; 95% intervals always hold their estimate and cover
the truth in 90-98% of the runs (400 runs: a binomial standard error of 1.1 points). The cluster BCa
interval it replaced covered 92.3% (40 images per identity, one person) and 91.7% (30 images, two
persons) over 1,500 runs, and far less with many balanced identities; the full grid of designs is
bench/validity_cells/neutrality.py (bench/README.md section 10).
"""
from __future__ import annotations

import numpy as np
import pytest

from metrics.core import vlm

RUNS = 400
IDENTITIES = np.array([[0.60, 0.25, 0.15], [0.20, 0.65, 0.15], [0.50, 0.20, 0.30], [0.15, 0.55, 0.30],
                       [0.70, 0.10, 0.20], [0.30, 0.45, 0.25]])
LABELS = np.array(["Masculine", "Feminine", "Cannot identify"], dtype=object)


def _truth() -> float:
    m, f, n = IDENTITIES.T
    return float(np.mean((np.minimum(m, f) + n) / (np.maximum(m, f) + 1)))


def _setting(rng: np.random.Generator, images: int, persons: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    groups, labels, image_ids = [], [], []
    for k, p in enumerate(IDENTITIES):
        # Clustered: an image leans to one answer (Dirichlet around p), its persons draw from that lean.
        lean = rng.dirichlet(p * 8, size=images) if persons > 1 else np.broadcast_to(p, (images, 3))
        u = rng.random((images, persons))
        kinds = (u[..., None] > np.cumsum(lean, axis=1)[:, None, :]).sum(axis=2)
        groups.append(np.full(images * persons, f"id{k}"))
        labels.append(LABELS[np.minimum(kinds, 2)].ravel())
        image_ids.append(np.repeat(k * 10_000 + np.arange(images), persons))
    return np.concatenate(groups), np.concatenate(labels), np.concatenate(image_ids)


@pytest.mark.parametrize(("images", "persons"), [(40, 1), (30, 2)])
def test_neutrality_interval_covers_the_truth(images: int, persons: int) -> None:
    rng = np.random.default_rng([images, persons])
    truth, covered, holds = _truth(), 0, 0
    for run in range(RUNS):
        groups, labels, image_ids = _setting(rng, images, persons)
        res = vlm.neutrality(groups, labels, image_ids, n_boot=500, seed=run)
        lo, hi = res["ci"]
        covered += lo <= truth <= hi
        holds += lo <= res["neutrality"] <= hi
        assert res["method"] == vlm.NEUTRALITY_METHOD
    assert holds == RUNS
    assert 0.90 <= covered / RUNS <= 0.98, covered / RUNS
