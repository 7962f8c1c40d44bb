"""MOVER intervals of a linear combination of independent proportions (metrics.core.mover) and their use
for compare's sparse GEP vector components (issue 22: the BCa interval there covered 85%)."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from metrics.core.mover import MOVER_METHOD, mover_interval, mover_pvalue
from metrics.core.significance import SPARSE_COMPONENT_COUNT, compare_gep


def _jeffreys(x: float, n: float, conf: float) -> tuple[float, float]:
    """Jeffreys' interval from scipy's Beta quantiles (independent of statsmodels)."""
    a = 1 - conf
    lo = 0.0 if x == 0 else stats.beta.ppf(a / 2, x + 0.5, n - x + 0.5)
    hi = 1.0 if x == n else stats.beta.ppf(1 - a / 2, x + 0.5, n - x + 0.5)
    return float(lo), float(hi)


@pytest.mark.parametrize(("x", "n", "w"), [([2, 1, 3, 8], [40, 40, 400, 400], [1, -1, -1, 1]),
                                           ([0, 5], [40, 40], [1, -1]), ([17, 0, 40], [60, 30, 40], [0.5, 2, -1])])
def test_limits_are_the_mover_formula_over_jeffreys_limits(x: list[float], n: list[float], w: list[float]) -> None:
    est, lo, hi = mover_interval(np.array([x], float), np.array([n], float), w, 0.9)
    p = np.array(x, float) / np.array(n, float)
    lim = [_jeffreys(a, b, 0.9) for a, b in zip(x, n)]
    down = sum((wi * (pi - (li if wi > 0 else ui))) ** 2 for wi, pi, (li, ui) in zip(w, p, lim))
    up = sum((wi * ((ui if wi > 0 else li) - pi)) ** 2 for wi, pi, (li, ui) in zip(w, p, lim))
    truth = float(np.dot(w, p))
    assert est[0] == pytest.approx(truth)
    assert lo[0] == pytest.approx(truth - np.sqrt(down), abs=1e-12)
    assert hi[0] == pytest.approx(truth + np.sqrt(up), abs=1e-12)


def test_p_value_inverts_the_interval() -> None:
    x = np.array([[3.0, 9.0, 2.0, 2.0], [1.0, 1.0, 5.0, 5.0], [0.0, 12.0, 3.0, 1.0]])
    n = np.array([[40.0, 40.0, 400.0, 400.0]] * 3)
    w = [1, -1, -1, 1]
    p = mover_pvalue(x, n, w)
    est, lo, hi = mover_interval(x, n, w, 1 - p)
    assert p[1] == 1.0  # the estimate is the null
    for k in (0, 2):
        assert 0 < p[k] < 1
        assert min(abs(lo[k]), abs(hi[k])) < 1e-9  # at level 1 - p the null sits on an end
    _, lo95, hi95 = mover_interval(x, n, w, 0.95)
    assert (((lo95 > 0) | (hi95 < 0)) == (p < 0.05)).all()


def test_bad_counts_are_refused_and_empty_cells_give_nan() -> None:
    with pytest.raises(ValueError, match="between 0 and"):
        mover_interval(np.array([[5.0, 1.0]]), np.array([[4.0, 10.0]]), [1, -1])
    with pytest.raises(ValueError, match="one weight per proportion"):
        mover_interval(np.array([[1.0, 1.0]]), np.array([[4.0, 10.0]]), [1, -1, 1])
    est, lo, hi = mover_interval(np.array([[0.0, 1.0]]), np.array([[0.0, 10.0]]), [1, -1])
    assert np.isnan(est[0]) and np.isnan(lo[0]) and np.isnan(hi[0])
    assert np.isnan(mover_pvalue(np.array([[0.0, 1.0]]), np.array([[0.0, 10.0]]), [1, -1])[0])


def test_four_term_interval_covers_sparse_differences() -> None:
    """Compare's sparse design: the same frequencies 0.01-0.08 on both sides, 40 vs 400 questions a gender."""
    rng = np.random.default_rng(5)
    f0, f1 = np.array([0.02, 0.05, 0.01, 0.08]), np.array([0.03, 0.02, 0.01, 0.04])
    runs = 400
    n = np.array([40.0, 40.0, 400.0, 400.0])
    p = np.stack([f0, f1, f0, f1], axis=1)  # (attributes, 4)
    x = rng.binomial(n.astype(int), p[None].repeat(runs, axis=0)).astype(float)
    _, lo, hi = mover_interval(x, np.broadcast_to(n, x.shape), [1, -1, -1, 1])
    cover = (lo <= 1e-12) & (hi >= -1e-12)  # the truth is 0 for every attribute
    se = np.sqrt(0.95 * 0.05 / cover.size)
    assert 0.95 - 3 * se <= cover.mean() <= 0.985, cover.mean()


def _gep_side(rng: np.random.Generator, f: tuple[np.ndarray, np.ndarray], n_images: int, first: int
              ) -> dict[str, np.ndarray]:
    na = f[0].size
    parts = []
    for g, name in enumerate(("woman", "man")):
        shown = rng.random((n_images, na)) < f[g][None, :]
        image = first + g * n_images + np.repeat(np.arange(n_images), na)
        parts.append((image, np.full(image.size, name), np.tile([f"a{j}" for j in range(na)], n_images),
                      np.where(shown.reshape(-1), "yes", "no")))
    return {k: np.concatenate([p[i] for p in parts]) for i, k in enumerate(("image_ids", "genders", "attributes",
                                                                          "labels"))}


@pytest.mark.usefixtures("no_full_gc")
def test_compare_gep_uses_mover_for_sparse_components_only() -> None:
    rng = np.random.default_rng(3)
    dense = (np.array([0.5, 0.02]), np.array([0.4, 0.03]))
    a, b = _gep_side(rng, dense, 60, 0), _gep_side(rng, dense, 300, 10_000)
    res = compare_gep(a, b, ["woman", "man"], ["a0", "a1"], "absent", n_boot=200, n_perm=199, seed=1)
    assert res["vector"]["a0"].ci_method == "bca-cluster"  # about 24-30 present of 60 in each gender
    sparse = res["vector"]["a1"]
    assert sparse.ci_method == MOVER_METHOD and sparse.low <= sparse.difference <= sparse.high
    present = [int((s["labels"][(s["attributes"] == "a1") & (s["genders"] == g)] == "yes").sum())
               for s in (a, b) for g in ("woman", "man")]
    assert min(present) < SPARSE_COMPONENT_COUNT
    p = [res["vector"][k].p_value for k in ("a0", "a1")]
    assert [res["vector"][k].p_holm for k in ("a0", "a1")] == pytest.approx(
        list(multipletests(p, method="holm")[1]))
    raw = compare_gep(a, b, ["woman", "man"], ["a0", "a1"], "absent", n_boot=200, n_perm=199, seed=1,
                      studentized=False)
    assert raw["vector"]["a1"].ci_method == "bca-cluster"  # the legacy method is kept as it was
