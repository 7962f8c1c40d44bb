"""Adaptive redundancy, the pure part: when has a question collected enough answers?

A campaign's `annotation.redundancy` is either an integer R (fixed: every question gets exactly R
answers, the papers' design and the default) or an object

    {"min": 2, "max": 5, "rule": "confidence", "threshold": 0.75, "prior": 1.0}

with which a question starts out wanting `min` answers and wants one more (up to `max`) each time
its answers are all in and its majority is not settled. The question's `required` column holds the
current number, so the engine's invariant `assigned <= required` (a CHECK in the database) keeps
holding while it grows: both engines call :func:`required_next` at submit, on the question rows they
have locked.

The rule "confidence": with `votes` the counts of the question's K choices (zeros included) and a
symmetric Dirichlet(`prior`) prior on the shares of the choices among all annotators, the posterior
is Dirichlet(votes + prior). The majority is settled when

    P(the current majority choice has the largest share | votes) >= threshold

and at least `min` answers are in. The probability is exact: Dirichlet shares are independent Gamma
variables divided by their sum, so P(G_top > G_j for all j) = integral of gamma.pdf(x; a_top) times
the product of gamma.cdf(x; a_j) (scipy.stats + scipy.integrate.quad; deterministic, cached per
count pattern). Ties (2-2, 1-1-1) are never settled. With the defaults (uniform prior 1,
threshold 0.75): 2-0 is settled (0.79 with three choices, 0.875 with two), 2-1 is not (0.64 / 0.69),
3-1 is (0.78 / 0.81), so unanimous pairs stop at 2 and disagreements go on up to `max`. The
defaults come from `bench/redundancy.py` (figures in bench/README.md).
"""
from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import numpy as np
from scipy import integrate, stats

RULES = ("confidence",)
DEFAULT_ADAPTIVE: dict[str, Any] = {"min": 2, "max": 5, "rule": "confidence", "threshold": 0.75, "prior": 1.0}
MAX_REDUNDANCY = 50
FIXED_DEFAULT = 3


def is_adaptive(redundancy: Any) -> bool:
    """Whether a normalised `annotation.redundancy` is the adaptive object (else a fixed integer R)."""
    return isinstance(redundancy, Mapping)


def initial_required(redundancy: Any) -> int:
    """How many answers a new question wants: R, or `min`."""
    return int(redundancy["min"]) if is_adaptive(redundancy) else int(redundancy)


def max_required(redundancy: Any) -> int:
    """The most answers a question can get: R, or `max` (MTurk MaxAssignments, cost upper bounds)."""
    return int(redundancy["max"]) if is_adaptive(redundancy) else int(redundancy)


def validate_redundancy(raw: Any, problems: Any) -> int | dict[str, Any]:
    """Normalise `annotation.redundancy`: an integer 1-50, or the adaptive object with its defaults
    filled; each problem recorded as `annotation.redundancy[.<field>]` (`problems.add(path, msg)`)."""
    path = "annotation.redundancy"
    if raw is None:
        return FIXED_DEFAULT
    if not isinstance(raw, Mapping):
        if isinstance(raw, bool) or not isinstance(raw, int):
            problems.add(path, f"must be an integer R or an object {{min, max, rule, threshold, prior}}, got {raw!r}")
            return FIXED_DEFAULT
        if not 1 <= raw <= MAX_REDUNDANCY:
            problems.add(path, f"must be between 1 and {MAX_REDUNDANCY}, got {raw!r}")
            return FIXED_DEFAULT
        return raw
    out = dict(DEFAULT_ADAPTIVE)
    for key in raw:
        if key not in DEFAULT_ADAPTIVE:
            problems.add(f"{path}.{key}", f"unknown key {key!r} (allowed: {', '.join(DEFAULT_ADAPTIVE)})")
    checks: dict[str, tuple[tuple[type, ...], float, float]] = {
        "min": ((int,), 1, MAX_REDUNDANCY), "max": ((int,), 1, MAX_REDUNDANCY),
        "threshold": ((int, float), 0.5, 0.9999), "prior": ((int, float), 0.01, 100)}
    for key, (types, lo, hi) in checks.items():
        value = raw.get(key, DEFAULT_ADAPTIVE[key])
        if isinstance(value, bool) or not isinstance(value, types):
            problems.add(f"{path}.{key}", f"must be a number, got {value!r}")
        elif not lo <= value <= hi:
            problems.add(f"{path}.{key}", f"must be between {lo} and {hi}, got {value!r}")
        else:
            out[key] = value
    rule = raw.get("rule", DEFAULT_ADAPTIVE["rule"])
    if rule not in RULES:
        problems.add(f"{path}.rule", f"must be one of {', '.join(RULES)}, got {rule!r}")
    if out["min"] > out["max"]:
        problems.add(f"{path}.max", f"must be at least min ({out['min']}), got {out['max']}")
        out["max"] = out["min"]
    out["prior"] = float(out["prior"])
    out["threshold"] = float(out["threshold"])
    return out


@lru_cache(maxsize=4096)
def _top_probability(alphas: tuple[float, ...]) -> float:
    top, rest = alphas[0], alphas[1:]
    if not rest:
        return 1.0

    def density(x: float) -> float:
        return float(stats.gamma.pdf(x, top) * np.prod([stats.gamma.cdf(x, a) for a in rest]))

    # The integrand lives where Gamma(top) has its mass; split there so quad does not miss it.
    upper = float(stats.gamma.ppf(1 - 1e-12, max(alphas)))
    value = integrate.quad(density, 0, upper, points=[top], limit=200)[0]
    return min(1.0, max(0.0, value))


def majority_posterior(counts: Mapping[str, int], choices: int, *, prior: float = 1.0) -> float:
    """P(the most voted choice has the largest share | counts) under a symmetric Dirichlet(`prior`)
    prior over `choices` choices (choices without votes count as 0). With a tie at the top, the
    probability of one of the tied choices."""
    values = sorted((int(n) for n in counts.values()), reverse=True)
    values += [0] * max(0, choices - len(values))
    return _top_probability(tuple(round(v + prior, 9) for v in values))


def settled(counts: Mapping[str, int], choices: int, cfg: Mapping[str, Any]) -> bool:
    """Whether a question's majority is settled under the adaptive `cfg` (the normalised object):
    `max` answers in, or at least `min`, no tie at the top, and the posterior >= `threshold`."""
    answers = sum(counts.values())
    if answers >= cfg["max"]:
        return True
    if answers < cfg["min"] or not counts:
        return False
    top = sorted(counts.values(), reverse=True)
    if len(top) > 1 and top[0] == top[1]:
        return False
    return majority_posterior(counts, choices, prior=cfg["prior"]) >= cfg["threshold"]


def required_next(*, required: int, completed: int, counts: Mapping[str, int], choices: int,
                  cfg: Mapping[str, Any]) -> int:
    """A question's new `required` after a submit: one more while all wanted answers are in
    (`completed >= required`), the majority is not settled and `max` is not reached; else unchanged
    (never lowered: answers in flight keep their seats)."""
    if completed >= required and required < cfg["max"] and not settled(counts, choices, cfg):
        return required + 1
    return required


def questions_to_grow(rows: Any, cfg: Mapping[str, Any]) -> list[int]:
    """The questions (of rows `(id, required, completed, number of choices, votes or None)` read
    after a submit's labels) whose `required` grows by one (:func:`required_next`)."""
    return sorted(qid for qid, required, completed, choices, votes in rows
                  if required_next(required=required, completed=completed, counts=votes or {}, choices=choices,
                                   cfg=cfg) > required)


def redundancy_summary(redundancy: Any, *, questions: Mapping[str, int], answers: Mapping[str, int],
                       fixed_r: int | None = None) -> dict[str, Any]:
    """`annotation.selectors.redundancy_spent` from its two counts per setting (non-gold questions;
    original answers to them): pure, so the replication package recomputes the same block."""
    r = fixed_r if fixed_r is not None else (FIXED_DEFAULT if is_adaptive(redundancy) else int(redundancy))

    def block(n_questions: int, n_answers: int) -> dict[str, Any]:
        planned = n_questions * r
        return {"questions": n_questions, "answers": n_answers, "fixed_r_answers": planned,
                "saved_fraction": (1 - n_answers / planned) if planned else None}

    by_setting = {s: block(n, answers.get(s, 0)) for s, n in sorted(questions.items())}
    return {"rule": redundancy, "fixed_r": r, **block(sum(questions.values()), sum(answers.values())),
            "by_setting": by_setting}
