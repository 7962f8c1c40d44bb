"""Validity harness (issue 22): coverage, size and power of the report's intervals and tests on a
grid of simulated campaigns with known truth.

Cells live in `bench/validity_cells/<topic>.py`, each module exposing `CELLS: list[Cell]`
(`bench/validity_cells/__init__.py`). For every selected cell the driver runs `run(seed)` for
seeds 0..runs-1, and reports the rate (coverage, or rejection rate under the null = size, or under
the alternative = power) with its Monte Carlo standard error sqrt(p(1-p)/runs). A coverage cell
outside 93-97% or a size cell above 6% is flagged; a power cell below its target is flagged. No
database is needed.

    .venv/bin/python bench/validity.py                          # every cell, 400 runs each
    .venv/bin/python bench/validity.py --runs 200 --only pst.gap --out validity.md
    .venv/bin/python bench/validity.py --list

`--only` takes comma-separated substrings of `<topic>.<cell name>`; `--fast` uses each cell's
small-bootstrap variant (the CI-sized tests' setting).
"""
from __future__ import annotations

import argparse
import importlib
import math
import pkgutil
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import validity_cells  # noqa: E402
from bench.validity_cells import COVERAGE_BAND, SIZE_LIMIT, Cell  # noqa: E402


@dataclass(frozen=True)
class Result:
    name: str
    kind: str
    target: float
    runs: int
    hits: int
    seconds: float
    note: str = ""

    @property
    def rate(self) -> float:
        return self.hits / self.runs if self.runs else math.nan

    @property
    def mc_se(self) -> float:
        p = self.rate
        return math.sqrt(p * (1 - p) / self.runs) if self.runs else math.nan

    @property
    def flag(self) -> str:
        """'' when the cell is inside the stated band, else why not."""
        p = self.rate
        if self.kind == "coverage" and not COVERAGE_BAND[0] <= p <= COVERAGE_BAND[1]:
            return "under 93%" if p < COVERAGE_BAND[0] else "over 97%"
        if self.kind == "size" and p > SIZE_LIMIT:
            return "size over 6%"
        if self.kind == "power" and p < self.target:
            return f"power under {self.target:.0%}"
        return ""


def all_cells() -> list[tuple[str, Cell]]:
    """(`<topic>.<name>`, cell) of every module of bench/validity_cells, in module then list order."""
    out: list[tuple[str, Cell]] = []
    for info in sorted(pkgutil.iter_modules(validity_cells.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"bench.validity_cells.{info.name}")
        out.extend((f"{info.name}.{cell.name}", cell) for cell in getattr(module, "CELLS", []))
    return out


def select(cells: Iterable[tuple[str, Cell]], only: str | None) -> list[tuple[str, Cell]]:
    wanted = [w.strip() for w in (only or "").split(",") if w.strip()]
    return [(n, c) for n, c in cells if not wanted or any(w in n for w in wanted)]


def evaluate(name: str, cell: Cell, runs: int, *, seed: int = 0, fast: bool = False) -> Result:
    """Run the cell on seeds seed..seed+runs-1 and count the hits."""
    run = cell.fast if fast and cell.fast is not None else cell.run
    start = time.perf_counter()
    hits = sum(bool(run(seed + i)) for i in range(runs))
    return Result(name, cell.kind, cell.target, runs, hits, time.perf_counter() - start, cell.note)


def tolerance(result: Result, z: float = 3.0) -> tuple[float, float]:
    """The band a CI-sized run must fall in: the issue's band widened by z Monte Carlo standard
    errors at the band's edge (so a valid method fails it with probability well under 1%)."""
    n = result.runs
    if result.kind == "coverage":
        lo, hi = COVERAGE_BAND
        return lo - z * math.sqrt(lo * (1 - lo) / n), hi + z * math.sqrt(hi * (1 - hi) / n)
    if result.kind == "size":
        return 0.0, SIZE_LIMIT + z * math.sqrt(SIZE_LIMIT * (1 - SIZE_LIMIT) / n)
    t = result.target
    return t - z * math.sqrt(t * (1 - t) / n), 1.0


def markdown(results: list[Result]) -> str:
    lines = ["| cell | kind | target | runs | rate | MC s.e. | flag | seconds | note |",
             "|---|---|---:|---:|---:|---:|---|---:|---|"]
    for r in results:
        lines.append(f"| `{r.name}` | {r.kind} | {r.target:.2f} | {r.runs} | {r.rate:.3f} | {r.mc_se:.3f} | "
                     f"{r.flag or 'ok'} | {r.seconds:.0f} | {r.note} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=400)
    parser.add_argument("--only", default=None, help="comma-separated substrings of <topic>.<cell>")
    parser.add_argument("--out", default=None, help="write the markdown table here too")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--fast", action="store_true", help="the cells' small-bootstrap variants")
    parser.add_argument("--list", action="store_true", help="list the cells and stop")
    args = parser.parse_args(argv)
    cells = select(all_cells(), args.only)
    if args.list:
        for name, cell in cells:
            print(f"{name}\t{cell.kind}\t{cell.target}\t{cell.note}")
        return 0
    results = []
    for name, cell in cells:
        result = evaluate(name, cell, args.runs, seed=args.seed, fast=args.fast)
        results.append(result)
        print(f"{name}: {result.kind} {result.rate:.3f} ± {result.mc_se:.3f} ({result.runs} runs, "
              f"{result.seconds:.0f} s) {result.flag}", file=sys.stderr, flush=True)
    table = markdown(results)
    print(table)
    if args.out:
        Path(args.out).write_text(table)
    print(f"{sum(bool(r.flag) for r in results)} of {len(results)} cells flagged", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
