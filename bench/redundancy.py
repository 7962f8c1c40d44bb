"""Adaptive redundancy on simulated label sets: answers saved against a fixed R = 3, and how many
majority labels stay what a fixed R = 5 design (the gold standard here) would have said.

Label sets are drawn like the papers' and like a noisier crowd:

- ``pst``: the PST paper's 3-way question (Feminine / Masculine / Cannot identify), true labels
  47% / 47% / 6%; Fleiss' kappa about 0.9 (the paper reports 0.88-0.92);
- ``gep``: the GEP paper's binary attribute questions (Yes / No), 30% Yes; kappa about 0.9;
- ``pst_noisy`` and ``gep_noisy``: the same questions from a crowd with kappa about 0.5.

Each question gets five answers in the order annotators would give them. An annotator gives the
true label with probability ``a`` (``a_hard`` = 0.65 on the 15% hard questions), else one of the
other choices at random; ``a`` is set by bisection so that Fleiss' kappa of the five answers
(statsmodels) hits the target. Fixed R = 3 reads the first three answers, fixed R = 5 all five;
adaptive redundancy (``annotation.redundancy`` with the product's own rule,
``annotation.redundancy.settled``) reads answers one at a time from ``min`` until the majority is
settled or ``max`` is reached. A label is the majority, or "tie" (the product's tie policy);
"agreement" is the share of questions whose label equals the R = 5 label.

    .venv/bin/python bench/redundancy.py                       # 20,000 questions per scenario
    .venv/bin/python bench/redundancy.py --grid                # + thresholds x priors x min
    .venv/bin/python bench/redundancy.py --items 2000 --json out.json

No database is needed. Figures in bench/README.md (section 7); tests/bench/test_redundancy_bench.py
runs it small.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
from statsmodels.stats.inter_rater import fleiss_kappa

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from annotation.redundancy import DEFAULT_ADAPTIVE, settled  # noqa: E402  (path set above)

SCENARIOS: dict[str, dict[str, Any]] = {
    "pst": {"truth": [0.47, 0.47, 0.06], "kappa": 0.9},
    "gep": {"truth": [0.3, 0.7], "kappa": 0.9},
    "pst_noisy": {"truth": [0.47, 0.47, 0.06], "kappa": 0.5},
    "gep_noisy": {"truth": [0.3, 0.7], "kappa": 0.5},
}
PAPERS = ("pst", "gep")
HARD_SHARE, A_HARD, MAX_R = 0.1, 0.75, 5


def draw(truth: list[float], accuracy: float, items: int, rng: np.random.Generator) -> np.ndarray:
    """items x 5 answers (choice indices) in the order they come in."""
    k = len(truth)
    true = rng.choice(k, size=items, p=truth)
    acc = np.where(rng.random(items) < HARD_SHARE, A_HARD, accuracy)[:, None]
    right = rng.random((items, MAX_R)) < acc
    shift = rng.integers(1, k, size=(items, MAX_R))  # a wrong answer: one of the other k - 1 choices
    return np.where(right, true[:, None], (true[:, None] + shift) % k)


def kappa_of(answers: np.ndarray, k: int) -> float:
    table = np.stack([(answers == c).sum(axis=1) for c in range(k)], axis=1)
    return float(fleiss_kappa(table, method="fleiss"))


@cache
def _calibrate(truth: tuple[float, ...], target: float, seed: int) -> float:
    lo, hi = 1.0 / len(truth), 1.0
    for _ in range(30):
        mid = (lo + hi) / 2
        got = kappa_of(draw(list(truth), mid, 20_000, np.random.default_rng(seed)), len(truth))
        lo, hi = (mid, hi) if got < target else (lo, mid)
    return (lo + hi) / 2


def calibrate(truth: list[float], target: float, seed: int) -> float:
    """The easy questions' accuracy that gives Fleiss' kappa `target` (bisection on 20,000 draws)."""
    return _calibrate(tuple(truth), target, seed)


def majority(row: np.ndarray | list[int]) -> str:
    counts = Counter(int(x) for x in row).most_common()
    if len(counts) > 1 and counts[0][1] == counts[1][1]:
        return "tie"
    return str(counts[0][0])


def adaptive(row: np.ndarray, k: int, cfg: dict[str, Any]) -> tuple[str, int]:
    """(label, answers used) for one question under the product's rule."""
    n = cfg["min"]
    while True:
        votes = Counter(str(int(x)) for x in row[:n])
        if n >= cfg["max"] or settled(votes, k, cfg):
            return majority(row[:n]), n
        n += 1


def evaluate(answers: np.ndarray, k: int, cfg: dict[str, Any]) -> dict[str, Any]:
    gold = [majority(r) for r in answers]
    fixed3 = [majority(r[:3]) for r in answers]
    adapt = [adaptive(r, k, cfg) for r in answers]
    used = sum(n for _, n in adapt)
    items = len(answers)
    return {
        "answers_per_question": used / items,
        "saved_vs_r3": 1 - used / (3 * items),
        "agreement_with_r5": sum(a == g for (a, _), g in zip(adapt, gold, strict=True)) / items,
        "r3_agreement_with_r5": sum(a == g for a, g in zip(fixed3, gold, strict=True)) / items,
        "ties": sum(a == "tie" for a, _ in adapt) / items,
    }


def run(items: int, seed: int, cfg: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, sc in SCENARIOS.items():
        accuracy = calibrate(sc["truth"], sc["kappa"], seed)
        answers = draw(sc["truth"], accuracy, items, np.random.default_rng(seed + 1))
        k = len(sc["truth"])
        out[name] = {"kappa_target": sc["kappa"], "kappa": round(kappa_of(answers, k), 3),
                     "accuracy_easy": round(accuracy, 4), "items": items, **evaluate(answers, k, cfg)}
    return out


def meets_target(result: dict[str, Any]) -> bool:
    """The issue's target at the papers' agreement: >= 25% fewer answers than R = 3, >= 99% of
    majority labels as R = 5 has them."""
    return all(result[s]["saved_vs_r3"] >= 0.25 and result[s]["agreement_with_r5"] >= 0.99 for s in PAPERS)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--grid", action="store_true", help="also thresholds x priors x min")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    started = time.monotonic()
    cfg = dict(DEFAULT_ADAPTIVE)
    report: dict[str, Any] = {"setting": cfg, "scenarios": run(args.items, args.seed, cfg)}
    report["meets_target"] = meets_target(report["scenarios"])
    print(f"annotation.redundancy = {json.dumps(cfg)}  ({args.items} questions per scenario, seed {args.seed})")
    print(f"{'scenario':10} {'kappa':>6} {'ans/q':>6} {'saved vs R3':>12} {'agree R5':>9} {'R3 agree R5':>12}")
    for name, r in report["scenarios"].items():
        print(f"{name:10} {r['kappa']:6.3f} {r['answers_per_question']:6.3f} {r['saved_vs_r3']:12.1%} "
              f"{r['agreement_with_r5']:9.2%} {r['r3_agreement_with_r5']:12.2%}")
    print(f"target (papers' agreement: >= 25% saved, >= 99% unchanged): {'met' if report['meets_target'] else 'NOT met'}")
    if args.grid:
        grid = []
        for minimum in (2, 3):
            for prior in (0.5, 1.0):
                for threshold in (0.7, 0.75, 0.8, 0.85, 0.9):
                    c = {**cfg, "min": minimum, "prior": prior, "threshold": threshold}
                    res = run(args.items, args.seed, c)
                    grid.append({"min": minimum, "prior": prior, "threshold": threshold,
                                 **{f"{s}_{m}": round(res[s][m], 4) for s in SCENARIOS
                                    for m in ("saved_vs_r3", "agreement_with_r5")},
                                 "meets_target": meets_target(res)})
        report["grid"] = grid
        print("\nmin prior threshold | " + " | ".join(f"{s}: saved agree" for s in SCENARIOS) + " | target")
        for g in grid:
            cells = " | ".join(f"{g[f'{s}_saved_vs_r3']:6.1%} {g[f'{s}_agreement_with_r5']:6.2%}" for s in SCENARIOS)
            print(f"{g['min']:3} {g['prior']:5} {g['threshold']:9} | {cells} | {'met' if g['meets_target'] else '-'}")
    report["seconds"] = round(time.monotonic() - started, 1)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
