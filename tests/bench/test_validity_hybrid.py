"""CI-sized run of the hybrid and agreement cells of the validity harness (bench/validity.py, issue 22
defects 3-6): each cell the report prints runs with few seeds (and a small bootstrap where it has
one), and its rate must fall in the issue's band widened by three Monte Carlo standard errors
(`bench.validity.tolerance`); the legacy methods the report no longer prints are flagged. The full
grid's figures (400 runs) are in bench/README.md, "Validity"."""
from __future__ import annotations

import pytest

from bench.validity import all_cells, evaluate, markdown, select, tolerance
from bench.validity_cells import Cell

CELLS = [(name, cell) for name, cell in select(all_cells(), "hybrid.,agreement.") if not cell.legacy]
RUNS = 60


def test_the_grid_covers_defects_3_to_6() -> None:
    names = [n for n, _ in CELLS]
    for part in ("hybrid.gep_score.zero", "hybrid.gep_score.sparse_80img", "hybrid.frequency.f002",
                 "hybrid.vector.gender_fp", "hybrid.sts.human_ties", "hybrid.sts.machine_fails",
                 "agreement.adaptive.fleiss_kappa", "agreement.adaptive.krippendorff_alpha",
                 "agreement.adaptive.percent_agreement"):
        assert any(part in n for n in names), part


@pytest.mark.parametrize(("name", "cell"), CELLS, ids=[n for n, _ in CELLS])
def test_cell_within_monte_carlo_tolerance(name: str, cell: Cell) -> None:
    result = evaluate(name, cell, RUNS, seed=20_000, fast=True)
    lo, hi = tolerance(result)
    assert lo <= result.rate <= hi, markdown([result])


@pytest.mark.parametrize("name", ["hybrid.frequency.ppi_wald.f002_40human",
                                  "agreement.adaptive.fleiss_kappa_all_answers"])
def test_the_defective_methods_are_flagged(name: str) -> None:
    cell = dict(select(all_cells(), name))[name]
    result = evaluate(name, cell, 40, seed=20_000, fast=True)
    assert result.flag == "under 93%" and result.rate < tolerance(result)[0], markdown([result])
