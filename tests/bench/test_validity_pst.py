"""CI-sized run of the PST cells of the validity harness (bench/validity.py, issue 22): each cell the
report prints (not the legacy ones kept to show a defect) runs with few seeds and a small bootstrap,
and its rate must fall in the issue's band widened by three Monte Carlo standard errors
(`bench.validity.tolerance`). The full grid's figures (400 runs) are in bench/README.md, "Validity"."""
from __future__ import annotations

import pytest

from bench.validity import all_cells, evaluate, markdown, select, tolerance

# "pst." also matches compare.pst.*: those cells are held by tests/bench/test_validity_gep.py (compare's tests)
PST = [(name, cell) for name, cell in select(all_cells(), "pst.") if not cell.legacy and name.startswith("pst.")]
RUNS = {"coverage": 60, "size": 100, "power": 40}


def test_the_grid_has_pst_cells_of_every_kind() -> None:
    assert {cell.kind for _, cell in PST} == {"coverage", "size", "power"}
    assert any(cell.legacy for _, cell in select(all_cells(), "pst."))


@pytest.mark.parametrize(("name", "cell"), PST, ids=[n for n, _ in PST])
def test_pst_cell_within_monte_carlo_tolerance(name: str, cell: object) -> None:
    from bench.validity_cells import Cell

    assert isinstance(cell, Cell)
    runs = 40 if ".intervention." in name else RUNS[cell.kind]  # the slowest cells: fewer runs, wider band
    result = evaluate(name, cell, runs, seed=10_000, fast=True)
    lo, hi = tolerance(result)
    assert lo <= result.rate <= hi, markdown([result])


def test_a_defective_method_is_flagged() -> None:
    legacy = dict(select(all_cells(), "pst.gap.micro_ci.bca.3_singles"))
    result = evaluate("pst.gap.micro_ci.bca.3_singles", legacy["pst.gap.micro_ci.bca.3_singles"], 40, fast=True)
    assert result.flag == "under 93%" and result.rate < tolerance(result)[0]


def test_the_test_only_intervention_cell_computes_the_reports_p_value() -> None:
    from bench.validity_cells.pst import INTERVENTION, _intervention, intervention_all_p

    for seed in (0, 3):
        report = _intervention(INTERVENTION, 20, 199, seed)["all"]["difference"]["p_value"]
        assert intervention_all_p(INTERVENTION, 199, seed) == report
