"""CI-sized run of the PST STS cells of the validity harness (bench/validity.py, issue 22): every setting's
overall STS interval (BCa over images, incl. Cannot identify / ties and sparse designs), the per-identity
micro STS interval (Wilson with the design effect) and the power aspect's overall gap interval, with few
seeds and a small bootstrap, within the issue's band widened by three Monte Carlo standard errors
(`bench.validity.tolerance`). The 400-run figures are in bench/README.md section 10."""
from __future__ import annotations

import numpy as np
import pytest

from bench.validity import all_cells, evaluate, markdown, select, tolerance
from bench.validity_cells import Cell
from bench.validity_cells.pst_sts import POWER, simulate_power

STS = select(all_cells(), "pst_sts.")


@pytest.mark.parametrize(("name", "cell"), STS, ids=[n for n, _ in STS])
def test_sts_cell_within_monte_carlo_tolerance(name: str, cell: Cell) -> None:
    result = evaluate(name, cell, 60, seed=30_000, fast=True)
    lo, hi = tolerance(result)
    assert lo <= result.rate <= hi, markdown([result])


def test_the_power_design_pairs_each_occupations_own_roles() -> None:
    c = simulate_power(POWER, 36, 0)
    assert len(c.identities) == 72 and c.single["image_ids"].size == 216
    images = c.paired["image_ids"]
    assert np.unique(images).size == 216 and images.size == 432
    first = c.paired["identities"][images == images[0]]
    assert sorted(first) == ["f0", "m0"]  # an occupation's high and low role, nothing else
