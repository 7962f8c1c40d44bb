"""Validity cells of agreement under adaptive redundancy (issue 22, defect 6). Each run simulates a
campaign of binary questions (true "yes" share 0.5) answered by annotators of one accuracy, so that
the fixed-design Fleiss' kappa is 0.90; questions collect answers by the campaign's adaptive rule
(`annotation.redundancy.settled`, defaults min 2, max 5, threshold 0.75). The report's agreement
(`metrics.sections.report.agreement_data`: the first `min` answers of every question in order of arrival)
is computed, with a percentile bootstrap interval over questions (400 draws), and the cell says
whether it covers the true value (kappa / alpha 0.90, percent agreement a^2 + (1 - a)^2).
The old basis (every answer, kappa on the questions with the modal count) gave kappa 1.000.
"""
from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from bench.validity_cells import Cell
from bench.validity_cells.hybrid import django_ready

TRUE_KAPPA = 0.90
N_QUESTIONS = 800
CFG = {"min": 2, "max": 5, "rule": "confidence", "threshold": 0.75, "prior": 1.0}


def _accuracy() -> float:
    from metrics.core.planning import annotator_accuracy
    return annotator_accuracy(TRUE_KAPPA, 0.5)


def simulate(seed: int, n_questions: int = N_QUESTIONS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(question index, choice code, arrival order) of every answer of an adaptive campaign."""
    from annotation.redundancy import settled

    rng = np.random.default_rng(seed)
    a = _accuracy()
    truth = rng.random(n_questions) < 0.5
    q_idx, codes = [], []
    for q in range(n_questions):
        votes = [0, 0]
        while True:
            right = rng.random() < a
            code = int(truth[q]) if right else 1 - int(truth[q])
            votes[code] += 1
            q_idx.append(q)
            codes.append(code)
            n = sum(votes)
            if n >= CFG["min"] and settled({"No": votes[0], "Yes": votes[1]}, 2, CFG):
                break
    q = np.asarray(q_idx, dtype=np.int64)
    # arrival: a random interleaving of the questions that keeps each question's answers in sequence
    key = rng.random(q.size)
    pos = np.zeros(q.size, dtype=np.int64)
    pos[np.argsort(q, kind="stable")] = np.arange(q.size)
    sorted_keys = np.empty(q.size)
    for lo, hi in _runs(np.sort(q)):
        sorted_keys[lo:hi] = np.sort(key[lo:hi])
    arr = np.argsort(np.argsort(sorted_keys[pos], kind="stable"), kind="stable")
    return q, np.asarray(codes, dtype=np.int64), arr


def _runs(sorted_q: np.ndarray) -> list[tuple[int, int]]:
    edges = np.r_[0, np.flatnonzero(np.diff(sorted_q)) + 1, sorted_q.size]
    return list(zip(edges[:-1].tolist(), edges[1:].tolist()))


@functools.lru_cache(maxsize=2048)
def _figures(seed: int, legacy: bool = False) -> dict[str, tuple[float, float, float]]:
    django_ready()
    from metrics.extract.data import CampaignData, CampaignFacts
    from metrics.sections.report import agreement_data, agreement_section

    q, codes, arrival = simulate(seed)
    nq = N_QUESTIONS
    facts = CampaignFacts(id=1, name="sim", kind="gep", kind_display="GEP", status="done", seed=seed,
                          spec={"annotation": {"redundancy": dict(CFG)}})
    data = CampaignData(facts, np.arange(nq, dtype=np.int64), np.arange(nq, dtype=np.int64), np.full(nq, "neutral"),
                        {}, q, np.arange(q.size, dtype=np.int64), codes, ["No", "Yes"], a_arrival=arrival)
    sub = data if legacy else agreement_data(data)[0]  # legacy: every answer (the report before)
    est = agreement_section(sub)["overall"]
    counts = sub.vote_counts().astype(float)
    rng = np.random.default_rng(seed + 10_000)
    w = rng.multinomial(nq, np.full(nq, 1.0 / nq), size=400).astype(float)  # bootstrap over questions
    draws = _bootstrap(counts, w)
    if legacy:  # Fleiss on the questions with the modal answer count, as the report did
        modal = counts.sum(axis=1) == np.bincount(counts.sum(axis=1).astype(int)).argmax()
        draws = _bootstrap(counts[modal], w[:, modal])
    out = {}
    for key, d in draws.items():
        lo, hi = np.nanquantile(d, [0.025, 0.975])
        out[key] = (float(est[key]), float(lo), float(hi))
    return out


def _bootstrap(counts: np.ndarray, w: np.ndarray) -> dict[str, np.ndarray]:
    """Fleiss' kappa, Krippendorff's alpha (nominal) and percent agreement of the weighted questions
    (the textbook count formulas, vectorised over the draws; the estimate itself is the report's)."""
    n_i = counts.sum(axis=1)
    pairs = (counts * (counts - 1)).sum(axis=1)
    p_i = pairs / (n_i * (n_i - 1))
    w_items = w.sum(axis=1)
    p_bar = (w @ p_i) / w_items
    p_j = (w @ counts) / (w @ n_i)[:, None]
    pe = (p_j ** 2).sum(axis=1)
    n_tot = w @ n_i
    n_c = w @ counts
    d_o = (w @ ((counts * (n_i[:, None] - counts)).sum(axis=1) / (n_i - 1))) / n_tot
    d_e = (n_c * (n_tot[:, None] - n_c)).sum(axis=1) / (n_tot * (n_tot - 1))
    return {"fleiss_kappa": (p_bar - pe) / (1 - pe), "krippendorff_alpha": 1 - d_o / d_e,
            "percent_agreement": p_bar}


def truth(key: str) -> float:
    a = _accuracy()
    return a * a + (1 - a) * (1 - a) if key == "percent_agreement" else TRUE_KAPPA


def _cell(key: str, legacy: bool = False) -> Callable[[int], bool]:
    def run(seed: int) -> bool:
        _, lo, hi = _figures(seed, legacy)[key]
        return bool(lo <= truth(key) <= hi)
    return run


NOTE = ("report's agreement on the first min=2 answers of 800 questions (adaptive min 2, max 5, threshold 0.75), "
        "percentile bootstrap over questions")

CELLS = [
    Cell("adaptive.fleiss_kappa_first_min", "coverage", 0.95, _cell("fleiss_kappa"), NOTE),
    Cell("adaptive.krippendorff_alpha_first_min", "coverage", 0.95, _cell("krippendorff_alpha"), NOTE),
    Cell("adaptive.percent_agreement_first_min", "coverage", 0.95, _cell("percent_agreement"), NOTE),
    Cell("adaptive.fleiss_kappa_all_answers", "coverage", 0.95, _cell("fleiss_kappa", legacy=True),
         "LEGACY: kappa over every answer (questions with the modal count)", legacy=True),
]
