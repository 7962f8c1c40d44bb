"""Coverage of the hybrid (prediction-powered) 95% intervals on simulated campaigns with known truth.

Each run draws a campaign from a generating model whose true value is known: humans label a uniform
random sample of the images (the human budget), a machine labeller labels every image with a known,
label-dependent error (it says "yes" to a true "yes" with probability ``sens`` and to a true "no" with
probability ``fpr``; for PST it mistakes the perceived gender at rates that differ by gender). Per
scenario and estimator the script reports the coverage of the truth, the mean interval width and the
bias of the hybrid (``metrics.core.hybrid``), the human-only and the machine-only estimates. No
database is needed.

Scenarios:
- ``frequency``: one attribute frequency f = 0.30, 1,000 images, 200 human labels (GEP f_ij);
- ``vector``: a GEP vector component f_w - f_m = 0.30 - 0.10 over two genders of 1,000 images each,
  200 human labels each, the machine's error the same for both genders (so its vector is biased down);
- ``sts``: PST paired STS (``excluded`` treatment: a ratio of totals over images, 2 persons per image,
  "Cannot identify" left out), 800 images, 160 human-labelled, the machine calling feminine persons
  masculine 20% of the time and masculine ones feminine 5%;
- ``gep_score``: the GEP score over 8 attributes (neutral: every image answers every attribute),
  400 images per gender, 100 human-labelled per gender, test inversion over prediction-powered signed
  components (``hybrid_intervals.ppi_gep_score``; the percentile ``ppboot`` it replaced undercovered
  near 0, issue 22). The sparse and near-zero cells are in bench/validity_cells/hybrid.py.

    .venv/bin/python bench/ppi_coverage.py                 # 400 runs per scenario (gep_score: 200)
    .venv/bin/python bench/ppi_coverage.py --runs 100 --json out.json

tests/metrics/core/test_hybrid.py runs the same scenarios (400 seeded runs) and asserts >= 93%.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from metrics.core import hybrid, hybrid_intervals  # noqa: E402

SENS, FPR = 0.90, 0.10


def _machine(rng: np.random.Generator, y: np.ndarray, sens: float = SENS, fpr: float = FPR) -> np.ndarray:
    return np.where(y == 1, rng.random(y.size) < sens, rng.random(y.size) < fpr).astype(float)


def _split(rng: np.random.Generator, n_total: int, n_human: int) -> np.ndarray:
    sampled = np.zeros(n_total, dtype=bool)
    sampled[rng.choice(n_total, n_human, replace=False)] = True
    return sampled


def _frequency_run(rng: np.random.Generator, p: float = 0.30, n_total: int = 1000, n_human: int = 200,
                   sens: float = SENS, fpr: float = FPR) -> dict[str, Any]:
    y = (rng.random(n_total) < p).astype(float)
    yhat = _machine(rng, y, sens, fpr)
    s = _split(rng, n_total, n_human)
    return hybrid.ppi_mean(y[s], yhat[s], yhat[~s])


def run_frequency(seed: int) -> tuple[dict[str, Any], float]:
    return _frequency_run(np.random.default_rng(seed)), 0.30


def run_vector(seed: int) -> tuple[dict[str, Any], float]:
    rng = np.random.default_rng(seed)
    a = _frequency_run(rng, p=0.30)
    b = _frequency_run(rng, p=0.10)
    return hybrid.ppi_difference(a, b), 0.20


def run_sts(seed: int, n_images: int = 800, n_human: int = 160) -> tuple[dict[str, Any], float]:
    """Paired PST: person 0 of each image has a feminine stereotype, person 1 a masculine one. True
    perceived gender: feminine with p_f (person 0: 0.6, person 1: 0.3), "cannot identify" 10%.
    s = +1 when the label is the stereotype, -1 otherwise; w = 0 for "cannot identify" (excluded)."""
    rng = np.random.default_rng(seed)
    p_fem = np.array([0.6, 0.3])
    stereo_fem = np.array([True, False])
    truth_num = truth_den = 0.0
    for j in range(2):
        p_s = p_fem[j] if stereo_fem[j] else 1 - p_fem[j]
        truth_num += 0.9 * (p_s - (1 - p_s))
        truth_den += 0.9
    truth = 100 * truth_num / truth_den

    def sums(lab: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # lab: (images, 2) codes 0 feminine, 1 masculine, 2 cannot identify
        w = (lab != 2).astype(float)
        stereo = np.where(stereo_fem[None, :], lab == 0, lab == 1)
        s = np.where(stereo, 1.0, -1.0) * w
        return s.sum(axis=1), w.sum(axis=1)

    cannot = rng.random((n_images, 2)) < 0.1
    fem = rng.random((n_images, 2)) < p_fem[None, :]
    human = np.where(cannot, 2, np.where(fem, 0, 1))
    flip = np.where(human == 0, rng.random(human.shape) < 0.20, rng.random(human.shape) < 0.05)
    machine = np.where(human == 2, np.where(rng.random(human.shape) < 0.5, 2, 1),
                       np.where(flip, 1 - human, human))
    s = _split(rng, n_images, n_human)
    hn, hd = sums(human)
    mn, md = sums(machine)
    return hybrid.ppi_ratio(hn[s], hd[s], mn[s], md[s], mn[~s], md[~s], scale=100.0), truth


GEP_W = np.array([0.50, 0.05, 0.30, 0.20, 0.10, 0.40, 0.15, 0.02])
GEP_M = np.array([0.10, 0.40, 0.25, 0.20, 0.30, 0.10, 0.05, 0.02])


def gep_score_of(rows: np.ndarray) -> float:
    """Rows: images; columns [present per attribute of a woman image, of a man image, is_woman, is_man]."""
    a = GEP_W.size
    t = rows.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        fw = t[:a] / t[2 * a]
        fm = t[a:2 * a] / t[2 * a + 1]
    return float(np.nanmean(np.abs(fw - fm)))


def run_gep_score(seed: int, n_images: int = 400, n_human: int = 100, n_boot: int = 500
                  ) -> tuple[dict[str, Any], float]:
    rng = np.random.default_rng(seed)
    a = GEP_W.size

    def rows(p: np.ndarray, woman: bool) -> tuple[np.ndarray, np.ndarray]:
        y = (rng.random((n_images, a)) < p[None, :]).astype(float)
        yh = _machine(rng, y.ravel()).reshape(y.shape)
        zeros = np.zeros_like(y)
        flag = np.tile([1.0, 0.0] if woman else [0.0, 1.0], (n_images, 1))
        mk = (lambda v: np.hstack([v, zeros, flag])) if woman else (lambda v: np.hstack([zeros, v, flag]))
        return mk(y), mk(yh)

    yw, yhw = rows(GEP_W, True)
    ym, yhm = rows(GEP_M, False)
    sw, sm = _split(rng, n_images, n_human), _split(rng, n_images, n_human)
    y = np.vstack([yw[sw], ym[sm]])
    yh = np.vstack([yhw[sw], yhm[sm]])
    yu = np.vstack([yhw[~sw], yhm[~sm]])
    return hybrid_intervals.ppi_gep_score(*(_cells(r) for r in (y, yh, yu)), a, n_boot=n_boot, seed=seed), float(
        np.mean(np.abs(GEP_W - GEP_M)))


def _cells(rows: np.ndarray) -> np.ndarray:
    """[present w, present m, is_woman, is_man] -> per-cell present sums, then per-cell counted sums."""
    a = GEP_W.size
    counted = np.hstack([np.repeat(rows[:, [2 * a]], a, axis=1), np.repeat(rows[:, [2 * a + 1]], a, axis=1)])
    return np.hstack([rows[:, :2 * a], counted])


SCENARIOS = {"frequency": run_frequency, "vector": run_vector, "sts": run_sts, "gep_score": run_gep_score}


def summarise(results: list[tuple[dict[str, Any], float]]) -> dict[str, Any]:
    out: dict[str, Any] = {"runs": len(results)}
    for name in ("hybrid", "human_only", "machine_only"):
        est, lo, hi, truth = [], [], [], []
        for r, t in results:
            part = r if name == "hybrid" else r[name]
            est.append(part["estimate"])
            lo.append(part["ci"][0])
            hi.append(part["ci"][1])
            truth.append(t)
        e, low, high, tr = (np.array(v, dtype=float) for v in (est, lo, hi, truth))
        out[name] = {"coverage": float(np.mean((low <= tr) & (tr <= high))), "mean_width": float(np.mean(high - low)),
                     "bias": float(np.mean(e - tr)), "mean_estimate": float(np.mean(e)), "truth": float(tr[0])}
    saved = np.array([r["human_labels_saved"] for r, _ in results], dtype=float)
    used = np.array([r["n_human"] for r, _ in results], dtype=float)
    out["mean_human_labels"] = float(np.mean(used))
    out["mean_human_labels_saved"] = float(np.nanmean(saved))
    return out


def run(scenario: str, runs: int, seed0: int = 0) -> dict[str, Any]:
    fn = SCENARIOS[scenario]
    started = time.monotonic()
    res = summarise([fn(seed0 + i) for i in range(runs)])
    res["seconds"] = round(time.monotonic() - started, 1)
    return res


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=400)
    ap.add_argument("--score-runs", type=int, default=200, help="runs of gep_score (a bootstrap per run)")
    ap.add_argument("--scenarios", default=",".join(SCENARIOS))
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    out = {}
    for name in args.scenarios.split(","):
        out[name] = run(name, args.score_runs if name == "gep_score" else args.runs)
        r = out[name]
        print(f"{name:10s} runs {r['runs']:4d}  truth {r['hybrid']['truth']:.4f}  ({r['seconds']} s)")
        for part in ("hybrid", "human_only", "machine_only"):
            p = r[part]
            print(f"   {part:12s} coverage {p['coverage']:.3f}  width {p['mean_width']:.4f}  bias {p['bias']:+.4f}")
        print(f"   human labels {r['mean_human_labels']:.0f}, saved (effective) {r['mean_human_labels_saved']:.0f}")
    print(json.dumps(out))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
    return out


if __name__ == "__main__":
    main()
