"""The permutation loop of :func:`metrics.core.annotator_groups.permutation_test_groups`, vectorised
(issue 23: the annotators section over 500 annotators and millions of answers).

The answer-level headline statistics (:func:`~metrics.core.annotator_groups.pst_headline`,
:func:`~metrics.core.annotator_groups.gep_headline` with ``unit="answer"``) are ratios of sums over
answers: each answer adds a weight fixed by its question and its choice to one numerator and one
denominator cell (a PST setting; a GEP setting x gender x attribute). So a group's sums are the sum
of its annotators' sums: one ``bincount`` per annotator and cell once, then every permutation is a
row of a (permutations x annotators) 0/1 matrix times the (annotators x cells) sums, blocks of
permutations at a time. The weights are small integers (or halves), so the sums are exact and the
values those of the loop.

Krippendorff's alpha of a group is no such sum (a question's coincidences depend on how many of its
answers are in the group): :mod:`metrics.core.annotator_alpha` computes both groups' coincidence
matrices for every permutation exactly, a quadratic form in the annotators' memberships plus a
count, per permutation, of the three-answer questions entirely inside a group (64 permutations to a
machine word): O(pool answers) once per pair and O(three-answer questions x permutations / 64) word
operations, instead of a pass over every answer per permutation (bench/README.md section 4).

The shuffles are those of the loop (``rng.permutation`` of the side labels, in order), so the
p-values are the same.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .agreement_subsets import alpha_from_coincidences
from .annotator_alpha import AnswerPairs, answer_pairs, permuted_coincidences, pool_coincidences

__all__ = ["AnswersByAnnotator", "LinearParts", "LinearStatistic", "annotator_sums", "answers_by_annotator",
           "differences_from_sums", "members_mask", "permuted_differences", "permuted_studentized", "pool_positions",
           "studentized_from_sums"]

_BLOCK_CELLS = 4_000_000  # (permutations x annotators x cells) per block: bounds memory


# Annotator ids up to this many are looked up in a table (one gather per answer, 8 bytes per id) instead of
# by binary search (at 10M answers the 19 pairs' searches took 3.2 s of the annotators section).
_TABLE_IDS = 1 << 24


def members_mask(who: NDArray[np.int64], members: ArrayLike) -> NDArray[np.bool_]:
    """``np.isin(who, members)``: by a table over the ids when they are non-negative and below
    ``_TABLE_IDS`` (one gather per answer instead of a sort of the answers: 50 -> ~10 ms over 10M
    answers, once per group of the annotators section)."""
    who = np.asarray(who, dtype=np.int64)
    m = np.asarray(members, dtype=np.int64).reshape(-1)
    if who.size == 0 or m.size == 0:
        return np.zeros(who.size, dtype=bool)
    lo, top = int(min(who.min(), m.min())), int(max(who.max(), m.max()))
    if lo < 0 or top >= _TABLE_IDS:
        return np.isin(who, m)
    table = np.zeros(top + 1, dtype=bool)
    table[m] = True
    return table[who]


def pool_positions(who: NDArray[np.int64], pool: NDArray[np.int64]) -> tuple[NDArray[np.bool_], NDArray[np.intp]]:
    """(whether each answer's annotator ``who`` is in ``pool``, the pool position of each one that is):
    what ``np.isin`` and a binary search over the sorted pool give, by a table over the ids when they are
    non-negative, below ``_TABLE_IDS`` and the pool has no repeat."""
    if who.size == 0 or pool.size == 0:
        return np.zeros(who.size, dtype=bool), np.zeros(0, dtype=np.intp)
    lo, top = int(min(who.min(), pool.min())), int(max(who.max(), pool.max()))
    if lo >= 0 and top < _TABLE_IDS and np.unique(pool).size == pool.size:
        table = np.full(top + 1, -1, dtype=np.intp)
        table[pool] = np.arange(pool.size)
        slot = table[who]
        inside = slot >= 0
        return inside, slot[inside]
    inside = np.isin(who, pool)
    order = np.argsort(pool)
    return inside, order[np.searchsorted(pool[order], who[inside])].astype(np.intp, copy=False)


@dataclass(frozen=True)
class LinearParts:
    """``statistic(counts) = finish(acc)`` with ``acc[0, j] = sum counts[q, c] * weights[q, c, 0]``
    over the questions q of cell j (``cell[q] == j``; -1: no cell) and ``acc[1, j]`` the same with
    ``weights[..., 1]``. ``weights`` is (questions or 1) x choices x 2; ``finish`` maps (B, 2, cells)
    to (B, m)."""

    cell: NDArray[np.intp]
    weights: NDArray[np.float64]
    n_cells: int
    finish: Callable[[NDArray[np.float64]], NDArray[np.float64]]
    ratio_scale: float | None = None  # set when finish is ratio_scale * numerator / denominator per cell


class LinearStatistic:
    """A statistic of a count matrix (callable as before) that also carries its :class:`LinearParts`."""

    def __init__(self, stat: Callable[[NDArray[np.int64]], NDArray[np.float64]], parts: LinearParts) -> None:
        self._stat = stat
        self.parts = parts

    def __call__(self, counts: NDArray[np.int64]) -> NDArray[np.float64]:
        return self._stat(counts)


def annotator_sums(parts: LinearParts, q: NDArray[np.int64], code: NDArray[np.int64], pos: NDArray[np.intp],
                   n_pool: int) -> NDArray[np.float64]:
    """(pool annotators, 2, cells): each annotator's numerator and denominator sums."""
    cell = parts.cell[q]
    keep = cell >= 0
    w = parts.weights[q if parts.weights.shape[0] > 1 else np.zeros_like(q), code]  # answers x 2
    key = pos[keep] * parts.n_cells + cell[keep]
    size = n_pool * parts.n_cells
    out = np.stack([np.bincount(key, weights=w[keep, j], minlength=size) for j in (0, 1)], axis=1)
    return np.asarray(out.reshape(n_pool, parts.n_cells, 2).transpose(0, 2, 1), dtype=float)


def permuted_differences(q: NDArray[np.int64], code: NDArray[np.int64], pos: NDArray[np.intp], n_pool: int,
                         n_questions: int, n_choices: int, sides: NDArray[np.bool_], headline: LinearParts,
                         with_alpha: bool) -> NDArray[np.float64]:
    """(permutations, m) differences A - B of the headline statistics (and alpha last, when
    ``with_alpha``) for each row of ``sides`` (permutations x pool annotators, True: in A). ``q``,
    ``code``, ``pos``: question, choice and pool position of each answer of the pool."""
    diff = differences_from_sums(annotator_sums(headline, q, code, pos, n_pool), sides, headline)
    if not with_alpha:
        return diff
    return np.concatenate([diff, _alpha_differences(q, code, pos, n_questions, n_choices, sides)], axis=1)


def differences_from_sums(sums: NDArray[np.float64], sides: NDArray[np.bool_], headline: LinearParts
                          ) -> NDArray[np.float64]:
    """(permutations, m) headline differences A - B from the pool annotators' sums (pool, 2, cells), as
    :func:`annotator_sums` gives them (or rows of a set of sums built once for every annotator)."""
    flat = sums.reshape(sums.shape[0], -1)
    total = flat.sum(axis=0)
    out = []
    step = max(1, _BLOCK_CELLS // max(1, flat.size))
    for start in range(0, sides.shape[0], step):
        member = sides[start:start + step].astype(float)
        in_a = member @ flat
        a = headline.finish(in_a.reshape(-1, *sums.shape[1:]))
        b = headline.finish((total[None] - in_a).reshape(-1, *sums.shape[1:]))
        out.append(np.asarray(a, dtype=float) - np.asarray(b, dtype=float))
    return np.concatenate(out, axis=0) if out else np.zeros((0, 0))


def permuted_studentized(q: NDArray[np.int64], code: NDArray[np.int64], pos: NDArray[np.intp], n_pool: int,
                         sides: NDArray[np.bool_], headline: LinearParts) -> NDArray[np.float64]:
    """(rows of ``sides``, cells) studentized differences ``(R_A - R_B) / sqrt(V_A + V_B)`` of a ratio
    headline (``headline.ratio_scale`` set: R = scale * sum y / sum x per cell over a group's answers).
    V is the annotator-cluster-robust (linearised) variance of the ratio, ``scale^2 G / (G - 1)
    sum_j (y_j - R x_j)^2 / X^2`` over the G annotators of the group with answers in the cell. Every
    term is a sum over annotators, so each row is one matrix product, as for the raw difference.
    Studentizing makes the permutation test valid when the two groups differ in size and in the spread
    of their annotators (not only under exchangeability): the raw difference rejected a true
    equal-mean null 25% of the time for 5 against 160 annotators of unequal spread (bench/README.md
    section 10)."""
    return studentized_from_sums(annotator_sums(headline, q, code, pos, n_pool), sides, headline)


def studentized_from_sums(sums: NDArray[np.float64], sides: NDArray[np.bool_], headline: LinearParts
                          ) -> NDArray[np.float64]:
    """:func:`permuted_studentized` from the pool annotators' sums (pool, 2, cells)."""
    if headline.ratio_scale is None:
        raise ValueError("the headline is not a ratio of sums: no studentized statistic")
    y, x = sums[:, 0, :], sums[:, 1, :]
    feats = np.concatenate([y, x, y * y, x * y, x * x, (x > 0).astype(float)], axis=1)  # (pool, 6 cells)
    total = feats.sum(axis=0)
    n = headline.n_cells
    out = []
    step = max(1, _BLOCK_CELLS // max(1, feats.size))
    for start in range(0, sides.shape[0], step):
        in_a = sides[start:start + step].astype(float) @ feats
        parts = [_ratio_and_variance(f.reshape(-1, 6, n), headline.ratio_scale) for f in (in_a, total[None] - in_a)]
        (r_a, v_a), (r_b, v_b) = parts
        with np.errstate(invalid="ignore", divide="ignore"):
            out.append((r_a - r_b) / np.sqrt(np.maximum(v_a + v_b, 1e-12)))
    return np.concatenate(out, axis=0) if out else np.zeros((0, n))


def _ratio_and_variance(f: NDArray[np.float64], scale: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Ratio and its cluster-robust variance from summed (y, x, y^2, xy, x^2, clusters) per cell."""
    y, x, yy, xy, xx, g = (f[:, i, :] for i in range(6))
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.where(x > 0, y / np.where(x > 0, x, 1.0), np.nan)
        resid = np.maximum(yy - 2 * r * xy + r * r * xx, 0.0)
        v = np.where(g > 1, g / np.maximum(g - 1, 1) * resid / np.where(x > 0, x * x, 1.0), np.nan)
    return scale * r, scale * scale * v


def _alpha_differences(q: NDArray[np.int64], code: NDArray[np.int64], pos: NDArray[np.intp], n_questions: int,
                       n_choices: int, sides: NDArray[np.bool_]) -> NDArray[np.float64]:
    """(permutations, 1): alpha(A) - alpha(B), from both groups' coincidence matrices under every
    permutation (:func:`metrics.core.annotator_alpha.permuted_coincidences`)."""
    return _alpha_difference(*permuted_coincidences(q, code, pos, sides.shape[1], n_questions, max(1, n_choices),
                                                    sides))


def _alpha_difference(o_a: NDArray[np.float64], o_b: NDArray[np.float64]) -> NDArray[np.float64]:
    """(permutations, 1): alpha(A) - alpha(B) from both groups' coincidence matrices per permutation."""
    alpha = alpha_from_coincidences(np.stack([o_a, o_b]))  # (2, permutations)
    return (alpha[0] - alpha[1])[:, None]


@dataclass(frozen=True)
class AnswersByAnnotator:
    """What the permutation test of any pair of groups needs from one set of answers, built once for
    every pair (issue 23: the 10M report's 19 pairs rebuilt it from the answers per pair, 17 s of its
    annotators section): the annotators' ids (sorted), each one's headline sums (:func:`annotator_sums`;
    one more row of zeros, for a pool member without answers) and, when alpha is tested, the answers'
    pairs over the annotators' indices (:class:`~metrics.core.annotator_alpha.AnswerPairs`). A pool's
    rows of the sums are the sums :func:`annotator_sums` gives over the pool's answers (each annotator's
    answers summed in the same order: the same floats); the pool's alpha matrices are
    :func:`~metrics.core.annotator_alpha.pool_coincidences` of the pairs (integer counts: exact)."""

    ids: NDArray[np.int64]
    headline: LinearParts
    sums: NDArray[np.float64]
    pairs: AnswerPairs | None

    def index(self, pool: NDArray[np.int64]) -> NDArray[np.intp]:
        """Each pool member's row (``ids.size``, the zero row, for one without answers)."""
        n = self.ids.size
        at = np.minimum(np.searchsorted(self.ids, pool), max(n - 1, 0))
        found = self.ids[at] == pool if n else np.zeros(pool.size, dtype=bool)
        return np.where(found, at, n).astype(np.intp)

    def differences(self, rows: NDArray[np.intp], sides: NDArray[np.bool_]) -> NDArray[np.float64]:
        """:func:`permuted_differences` of the pool whose rows are ``rows`` (alpha last when the pairs
        were built)."""
        diff = differences_from_sums(self.sums[rows], sides, self.headline)
        if self.pairs is None:
            return diff
        return np.concatenate([diff, _alpha_difference(*pool_coincidences(self.pairs, rows, sides))], axis=1)

    def studentized(self, rows: NDArray[np.intp], sides: NDArray[np.bool_]) -> NDArray[np.float64]:
        """:func:`permuted_studentized` of the pool whose rows are ``rows``."""
        return studentized_from_sums(self.sums[rows], sides, self.headline)


def answers_by_annotator(q: NDArray[np.int64], who: NDArray[np.int64], code: NDArray[np.int64], n_questions: int,
                         n_choices: int, headline: LinearParts, with_alpha: bool) -> AnswersByAnnotator:
    """:class:`AnswersByAnnotator` of the answers (question, annotator id, choice)."""
    small = who.size > 0 and who.min() >= 0 and who.max() < _TABLE_IDS
    ids = np.flatnonzero(np.bincount(who)).astype(np.int64) if small else np.unique(who)
    _, idx = pool_positions(who, ids)  # every answer's annotator is among the ids
    n = int(ids.size)
    sums = annotator_sums(headline, q, code, idx, n)
    sums = np.concatenate([sums, np.zeros((1, *sums.shape[1:]))])
    pairs = answer_pairs(q, idx, code, n_questions, max(1, n_choices), n) if with_alpha else None
    return AnswersByAnnotator(ids, headline, sums, pairs)
