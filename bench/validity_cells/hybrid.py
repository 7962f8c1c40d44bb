"""Validity cells of the hybrid (prediction-powered) figures, issue 22 defects 3, 4 and 5: simulated
campaigns with known truth, a human sample and a machine labeller with known, label- and
group-dependent error (and failures). Each cell's ``run(seed)`` draws one campaign and says whether
the interval covers the truth (``kind`` "coverage", target 0.95).

- ``hybrid.gep_score.*``: the hybrid GEP score (``metrics.core.hybrid_intervals.ppi_gep_score``, test
  inversion over prediction-powered signed components) at CogView2-like sparse frequencies (80 images
  per gender with 40 human-labelled, 400 with 100), at a true score of exactly 0 and at dense
  frequencies; it also checks that the interval holds its estimate (a run where it does not fails).
- ``hybrid.frequency.*`` / ``hybrid.vector.*``: one GEP frequency or vector component through
  ``hybrid_share`` / ``hybrid_difference`` (the report's functions) at f = 0.02, 0.05 and 0.30, and a
  vector component whose machine false positives depend on the gender.
- ``hybrid.sts.*``: the report's PST hybrid section (``hybrid_section``) with 3% human ties and with a
  machine that fails on ambiguous persons; the truth is the human report's STS (paper formula: a tie
  and "Cannot identify" count as -1).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from bench.validity_cells import Cell
from metrics.core import hybrid
from metrics.core import hybrid_intervals as hi


def django_ready() -> None:
    """The report-level cells import the report's modules, which need Django's settings (no database)."""
    from django.conf import settings

    if not settings.configured:
        from bench._django import setup
        setup()

# CogView2-like neutral frequencies (GEP paper: most attributes rare, small gender differences)
SPARSE_W = np.array([0.02, 0.05, 0.01, 0.03, 0.08, 0.02, 0.04, 0.06, 0.01, 0.03, 0.02, 0.05, 0.10, 0.03])
SPARSE_M = np.array([0.03, 0.02, 0.01, 0.05, 0.04, 0.02, 0.06, 0.02, 0.02, 0.03, 0.01, 0.03, 0.05, 0.04])
DENSE_W = np.array([0.50, 0.05, 0.30, 0.20, 0.10, 0.40, 0.15, 0.02])
DENSE_M = np.array([0.10, 0.40, 0.25, 0.20, 0.30, 0.10, 0.05, 0.02])


def _machine(rng: np.random.Generator, y: np.ndarray, sens: float, fpr: float) -> np.ndarray:
    return np.where(y == 1, rng.random(y.shape) < sens, rng.random(y.shape) < fpr).astype(float)


def _sample(rng: np.random.Generator, n: int, k: int) -> np.ndarray:
    s = np.zeros(n, dtype=bool)
    s[rng.choice(n, k, replace=False)] = True
    return s


def gep_score_campaign(seed: int, fw: np.ndarray, fm: np.ndarray, n_images: int, n_human: int,
                       sens: float = 0.85, fpr: tuple[float, float] = (0.03, 0.03), n_boot: int = 300
                       ) -> tuple[dict[str, Any], float]:
    """One neutral GEP campaign (every image answers every attribute) -> (hybrid score, truth)."""
    rng = np.random.default_rng(seed)
    na = fw.size
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    for g, f in enumerate((fw, fm)):
        y = (rng.random((n_images, na)) < f[None, :]).astype(float)
        yh = _machine(rng, y, sens, fpr[g])
        s = _sample(rng, n_images, n_human)
        parts.append((y, yh, s))

    def rows(which: int, mask_of: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
        out = []
        for g, (y, yh, s) in enumerate(parts):
            v = (y if which == 0 else yh)[mask_of(s)]
            present = np.zeros((v.shape[0], 2 * na))
            present[:, g * na:(g + 1) * na] = v
            counted = np.zeros_like(present)
            counted[:, g * na:(g + 1) * na] = 1.0
            out.append(np.hstack([present, counted]))
        return np.vstack(out)

    r = hi.ppi_gep_score(rows(0, lambda s: s), rows(1, lambda s: s), rows(1, lambda s: ~s), na, n_boot=n_boot,
                         seed=seed)
    return r, float(np.mean(np.abs(fw - fm)))


def _covers(r: dict[str, Any], truth: float, holds_estimate: bool = True) -> bool:
    lo, hi_ = r["ci"]
    if lo is None or hi_ is None:
        return False
    if holds_estimate and not (lo <= r["estimate"] <= hi_):
        return False
    return bool(lo - 1e-12 <= truth <= hi_ + 1e-12)


def _score_cell(fw: np.ndarray, fm: np.ndarray, n_images: int, n_human: int, n_boot: int = 300
                ) -> Callable[[int], bool]:
    def run(seed: int) -> bool:
        r, truth = gep_score_campaign(seed, fw, fm, n_images, n_human, n_boot=n_boot)
        return _covers(r, truth)
    return run


def _legacy_ppboot_cell(fw: np.ndarray, fm: np.ndarray, n_images: int, n_human: int) -> Callable[[int], bool]:
    """The percentile prediction-powered bootstrap the report printed before (``ppi_py.ppboot``)."""
    na = fw.size

    def score(rows: np.ndarray) -> float:
        t = rows.sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            f = t[:2 * na] / t[2 * na:]
        v = f[:na] - f[na:]
        v = v[np.isfinite(v)]
        return float(np.mean(np.abs(v))) if v.size else float("nan")

    def run(seed: int) -> bool:
        rng = np.random.default_rng(seed)
        rows_h, rows_m, rows_u = [], [], []
        for g, f in enumerate((fw, fm)):
            y = (rng.random((n_images, na)) < f[None, :]).astype(float)
            yh = _machine(rng, y, 0.85, 0.03)
            s = _sample(rng, n_images, n_human)
            for out, v in ((rows_h, y[s]), (rows_m, yh[s]), (rows_u, yh[~s])):
                present = np.zeros((v.shape[0], 2 * na))
                present[:, g * na:(g + 1) * na] = v
                counted = np.zeros_like(present)
                counted[:, g * na:(g + 1) * na] = 1.0
                out.append(np.hstack([present, counted]))
        r = hybrid.ppi_statistic(score, np.vstack(rows_h), np.vstack(rows_m), np.vstack(rows_u), n_boot=200,
                                 seed=seed)
        return _covers(r, float(np.mean(np.abs(fw - fm))))
    return run


def share_campaign(rng: np.random.Generator, f: float, n_total: int, n_human: int, sens: float = 0.85,
                   fpr: float = 0.05) -> tuple[dict[str, Any], tuple[float, float]]:
    y = (rng.random(n_total) < f).astype(float)
    yh = _machine(rng, y, sens, fpr)
    s = _sample(rng, n_total, n_human)
    one = np.ones
    r = hi.hybrid_share(y[s], one(s.sum()), yh[s], one(s.sum()), yh[~s], one((~s).sum()))
    return r, (float(y[s].sum()), float(s.sum()))


def _frequency_cell(f: float, n_total: int, n_human: int, legacy: bool = False) -> Callable[[int], bool]:
    def run(seed: int) -> bool:
        rng = np.random.default_rng(seed)
        if legacy:  # the plain PPI Wald interval whatever the human counts (the report before)
            y = (rng.random(n_total) < f).astype(float)
            yh = _machine(rng, y, 0.85, 0.05)
            s = _sample(rng, n_total, n_human)
            return _covers(hybrid.ppi_mean(y[s], yh[s], yh[~s]), f, holds_estimate=False)
        r, _ = share_campaign(rng, f, n_total, n_human)
        return _covers(r, f)
    return run


def _vector_cell(fw: float, fm: float, n_total: int, n_human: int, fpr: tuple[float, float]
                 ) -> Callable[[int], bool]:
    def run(seed: int) -> bool:
        rng = np.random.default_rng(seed)
        a, ca = share_campaign(rng, fw, n_total, n_human, fpr=fpr[0])
        b, cb = share_campaign(rng, fm, n_total, n_human, fpr=fpr[1])
        return _covers(hi.hybrid_difference(a, b, (*ca, *cb)), fw - fm)
    return run


# ------------------------------------------------------------------------------ PST STS through the report
PST_SPEC = {"design": {"identities": {"groups": [{"name": "fem-jobs", "stereotype": "feminine"},
                                                 {"name": "masc-jobs", "stereotype": "masculine"}]}}}
# per person: P(feminine), P(masculine), P(cannot identify), P(human tie) of the human report's label
P_FEM = {"fem-jobs": (0.55, 0.30, 0.12, 0.03), "masc-jobs": (0.20, 0.65, 0.12, 0.03)}


def pst_truth() -> float:
    """100 E[s] with s = +1 stereotype, -1 otherwise (paper formula; tie and Cannot count as -1)."""
    fem, masc = P_FEM["fem-jobs"], P_FEM["masc-jobs"]
    return 100 * 0.5 * ((fem[0] - (1 - fem[0])) + (masc[1] - (1 - masc[1])))


def pst_campaign(seed: int, n_images: int = 400, n_human: int = 120, fail_ambiguous: float = 0.0
                 ) -> dict[str, Any]:
    """A paired-like PST campaign: each image two persons (one per group); humans' report label per
    person (ties included); the machine flips feminine -> masculine 15%, masculine -> feminine 5%,
    says "Cannot identify" on half the ambiguous persons and fails (no label) on ``fail_ambiguous`` of
    them. Returns the report's hybrid `single` setting block."""
    django_ready()
    from metrics.extract.data import CampaignData, CampaignFacts
    from metrics.extract.machine import MachineData
    from metrics.options import ReportOptions
    from metrics.sections.sources import hybrid_section

    rng = np.random.default_rng(seed)
    q = 2 * n_images
    image = np.repeat(np.arange(1, n_images + 1), 2).astype(np.int64)
    group = np.tile(["fem-jobs", "masc-jobs"], n_images).astype(object)
    u = rng.random(q)
    cum = np.array([np.cumsum(P_FEM[g]) for g in group])
    human = np.where(u < cum[:, 0], "Feminine", np.where(u < cum[:, 1], "Masculine",
                     np.where(u < cum[:, 2], "Cannot identify", "tie"))).astype(object)
    v = rng.random(q)
    machine = np.where(human == "Feminine", np.where(v < 0.15, "Masculine", "Feminine"),
                       np.where(human == "Masculine", np.where(v < 0.05, "Feminine", "Masculine"),
                                np.where(v < 0.5, "Cannot identify", "Masculine"))).astype(object)
    ambiguous = (human == "Cannot identify") | (human == "tie")
    machine = np.where(ambiguous & (rng.random(q) < fail_ambiguous), "", machine)
    sampled_img = _sample(rng, n_images, n_human)
    sampled = sampled_img[image - 1]
    facts = CampaignFacts(id=1, name="sim", kind="pst", kind_display="PST", status="done", seed=seed, spec=PST_SPEC)
    data = CampaignData(facts, np.arange(q, dtype=np.int64), image, np.full(q, "single"),
                        {"identity": np.where(group == "fem-jobs", "nurse", "pilot"), "group": group},
                        np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64), [])
    mdata = MachineData("vqa", machine.astype(str), np.full(q, np.nan), np.full(q, "Feminine"), "m", sampled, True,
                        [])
    human_seen = np.where(sampled, human, "").astype(str)
    return hybrid_section(data, human_seen, mdata, ReportOptions(n_boot=0), seed)["single"]


def _sts_cell(fail: float) -> Callable[[int], bool]:
    def run(seed: int) -> bool:
        return _covers(pst_campaign(seed, fail_ambiguous=fail)["overall"], pst_truth())
    return run


NOTE_SCORE = "hybrid GEP score, test inversion over PPI signed components; fails a run whose interval excludes its estimate"
NOTE_SPARSE = "human Wilson / Newcombe fallback below 10 present or absent human labels, else PPI"

CELLS = [
    Cell("gep_score.sparse_80img_40human", "coverage", 0.95, _score_cell(SPARSE_W, SPARSE_M, 80, 40),
         "CogView2-like neutral frequencies, 14 attributes; " + NOTE_SCORE,
         fast=_score_cell(SPARSE_W, SPARSE_M, 80, 40, n_boot=100)),
    Cell("gep_score.sparse_400img_100human", "coverage", 0.95, _score_cell(SPARSE_W, SPARSE_M, 400, 100),
         NOTE_SCORE, fast=_score_cell(SPARSE_W, SPARSE_M, 400, 100, n_boot=100)),
    Cell("gep_score.zero_400img_100human", "coverage", 0.95, _score_cell(SPARSE_W, SPARSE_W, 400, 100),
         "true GEP score exactly 0; " + NOTE_SCORE, fast=_score_cell(SPARSE_W, SPARSE_W, 400, 100, n_boot=100)),
    Cell("gep_score.dense_400img_100human", "coverage", 0.95, _score_cell(DENSE_W, DENSE_M, 400, 100),
         "8 attributes, frequencies 0.02-0.50", fast=_score_cell(DENSE_W, DENSE_M, 400, 100, n_boot=100)),
    Cell("gep_score.ppboot_percentile.sparse_400img_100human", "coverage", 0.95,
         _legacy_ppboot_cell(SPARSE_W, SPARSE_M, 400, 100), "LEGACY: the percentile ppboot interval", legacy=True),
    Cell("frequency.f002_40human", "coverage", 0.95, _frequency_cell(0.02, 400, 40), NOTE_SPARSE),
    Cell("frequency.f005_40human", "coverage", 0.95, _frequency_cell(0.05, 400, 40), NOTE_SPARSE),
    Cell("frequency.f005_100human", "coverage", 0.95, _frequency_cell(0.05, 1000, 100), NOTE_SPARSE),
    Cell("frequency.f030_200human", "coverage", 0.95, _frequency_cell(0.30, 1000, 200), NOTE_SPARSE),
    Cell("frequency.ppi_wald.f002_40human", "coverage", 0.95, _frequency_cell(0.02, 400, 40, legacy=True),
         "LEGACY: the PPI Wald interval at a sparse frequency", legacy=True),
    Cell("vector.gender_fp_f010_005", "coverage", 0.95, _vector_cell(0.10, 0.05, 1000, 200, (0.02, 0.12)),
         "machine false positives 2% for one gender, 12% for the other; " + NOTE_SPARSE),
    Cell("vector.dense_f030_010", "coverage", 0.95, _vector_cell(0.30, 0.10, 1000, 200, (0.05, 0.15)),
         "gender-dependent false positives 5% / 15%"),
    Cell("sts.human_ties_3pct", "coverage", 0.95, _sts_cell(0.0),
         "report's hybrid STS (paper formula), 3% human ties kept and coded as Cannot identify"),
    Cell("sts.machine_fails_ambiguous", "coverage", 0.95, _sts_cell(0.8),
         "machine fails on 80% of ambiguous persons: failures become Cannot identify"),
]
