"""`significance.holm` gives statsmodels' Holm values bit for bit (it mirrors `multipletests(method="holm")`
without its trailing `gc.collect()`, issue 23)."""
from __future__ import annotations

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests

from metrics.core.significance import holm


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.usefixtures("no_full_gc")
def test_holm_equals_statsmodels(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    p = rng.random(n) ** 3
    p[rng.random(n) < 0.2] = p[0]  # ties
    p[rng.random(n) < 0.1] = 1.0
    with_nan = p.copy()
    with_nan[rng.random(n) < 0.2] = np.nan
    ok = np.isfinite(with_nan)
    got = holm(with_nan)
    assert np.array_equal(np.isnan(got), ~ok)
    if ok.any():
        assert np.array_equal(got[ok], multipletests(with_nan[ok], method="holm")[1])
    assert np.array_equal(holm(p), multipletests(p, method="holm")[1])


@pytest.mark.usefixtures("no_full_gc")
def test_holm_empty_and_all_nan() -> None:
    assert holm([]).shape == (0,)
    assert np.isnan(holm([np.nan, np.nan])).all()
    assert holm([0.01, 0.04, 0.03]).tolist() == multipletests([0.01, 0.04, 0.03], method="holm")[1].tolist()
