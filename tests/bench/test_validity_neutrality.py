"""CI-sized run of the Neutrality cells of the validity harness (bench/validity.py, issue 22): the report's
Neutrality interval (`metrics.core.vlm.neutrality`, test inversion) on every design of
bench/validity_cells/neutrality.py, with few seeds and a small bootstrap; its coverage must fall in the
issue's band widened by three Monte Carlo standard errors (`bench.validity.tolerance`), and every interval
holds its estimate (the cell raises otherwise). The 400-run figures are in bench/README.md section 10."""
from __future__ import annotations

import numpy as np
import pytest

from bench.validity import all_cells, evaluate, markdown, select, tolerance
from bench.validity_cells import Cell
from bench.validity_cells.neutrality import Groups, _campaign
from metrics.core import vlm

NEUTRALITY = [(name, cell) for name, cell in select(all_cells(), "neutrality.") if not cell.legacy]


def test_the_grid_covers_the_designs_the_issue_names() -> None:
    names = " ".join(name for name, _ in NEUTRALITY)
    for part in ("balanced", "mild", "strong", "mixed", "one_person", "two_persons", "pst_paired", "6x", "100x"):
        assert part in names, part


@pytest.mark.parametrize(("name", "cell"), NEUTRALITY, ids=[n for n, _ in NEUTRALITY])
def test_neutrality_cell_within_monte_carlo_tolerance(name: str, cell: Cell) -> None:
    result = evaluate(name, cell, 40, seed=20_000, fast=True)
    lo, hi = tolerance(result)
    assert lo <= result.rate <= hi, markdown([result])


def test_the_former_bca_interval_is_flagged_on_many_balanced_groups() -> None:
    name = "neutrality.bca.100x10.one_person.balanced"
    result = evaluate(name, dict(select(all_cells(), name))[name], 20, fast=True)
    assert result.flag == "under 93%" and result.rate < 0.5


def test_the_interval_holds_its_estimate_at_the_extremes() -> None:
    # every answer neutral, every answer male, one group, and a single image per group
    for labels in (["Cannot identify"] * 6, ["Masculine"] * 6, ["Masculine", "Feminine"] * 3):
        res = vlm.neutrality(["a", "a", "a", "b", "b", "b"], labels, [1, 2, 3, 4, 5, 6], n_boot=200, seed=1)
        assert res["ci"][0] <= res["neutrality"] <= res["ci"][1] and res["method"] == vlm.NEUTRALITY_METHOD
        assert 0.0 <= res["ci"][0] and res["ci"][1] <= 1.0
    truth, groups, labels, images = _campaign(Groups(40, 15, balance="balanced"), 3)
    res = vlm.neutrality(groups, labels, images, n_boot=300, seed=3)
    assert res["neutrality"] < truth <= res["ci"][1]  # the estimate is biased down; the interval reaches up
    with pytest.raises(ValueError, match="totals must be"):
        vlm.neutrality_inversion(np.ones((3, 2)), np.ones((5, 3, 2)), np.ones(3))
