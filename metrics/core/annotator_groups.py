"""Figures per group of annotators ("do women and men perceive these images differently?").

Each group's figures come from that group's answers only: per question, the majority of the
group's answers (ties kept as a tie, questions the group did not answer are missing), and the
headline statistics of the report computed on those labels. The difference between two groups is
tested by permutation of the annotators: under the null "which group an annotator belongs to does
not matter", the annotators of the two groups are shuffled between them (group sizes kept) ``n_perm``
times (seeded); each shuffle recomputes both groups' statistics. The report tests the answer-level
statistics (``unit="answer"``: every answer of the group counted as a label of its question): a
majority flattens a mixed group into the label of whichever members dominate it, so under
permutation it swings between the two groups' extremes and the test loses its power (a 5 vs 5 split
where every woman answers one way and every man the other gives p = 1 on the majority figures,
p < 0.01 on the answer-level ones; tests/metrics/core/test_annotator_groups.py). Two-sided
``p = (1 + #{|D_perm| >= |D_obs|}) / (n_perm + 1)`` per statistic (never 0; NaN where the observed
difference is undefined), the convention of :mod:`metrics.core.significance`.

Statistics work on label codes per question: ``0..k-1`` a choice, ``k`` a tie, ``k+1`` no answer.
:func:`pst_headline` and :func:`gep_headline` build them from the per-question facts with the
functions of :mod:`metrics.core.pst` and :mod:`metrics.core.gep`, so their values equal the
report's (STS in percent per setting, GEP score per setting); :func:`alpha_stat` adds
Krippendorff's alpha of the group's answers (:mod:`metrics.core.agreement_subsets`).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._arrays import distinct_values, row_totals
from .aggregation import majority_codes
from .agreement_subsets import alpha_from_coincidences, coincidence_total
from .annotator_permutations import (
    AnswersByAnnotator,
    LinearParts,
    LinearStatistic,
    answers_by_annotator,
    members_mask,
    permuted_differences,
    permuted_studentized,
    pool_positions,
)
from .gep import GepTiePolicy, present_weights
from .pst import Treatment, stereo_weights

__all__ = ["GroupTest", "HeadlineWithAlpha", "alpha_stat", "answers_prepared", "gep_headline", "group_counts",
           "group_statistic", "majority_codes", "members_mask", "permutation_test_groups", "pool_positions",
           "pst_headline"]

Statistic = Callable[[NDArray[np.int64]], NDArray[np.float64]]  # counts (questions x choices) -> (m,)
Unit = Literal["majority", "answer"]


def group_counts(a_qidx: ArrayLike, a_code: ArrayLike, member: ArrayLike, n_questions: int,
                 n_choices: int) -> NDArray[np.int64]:
    """questions x choices vote counts of the answers where ``member`` is true (one bincount)."""
    q = np.asarray(a_qidx, dtype=np.int64)[np.asarray(member, dtype=bool)]
    c = np.asarray(a_code, dtype=np.int64)[np.asarray(member, dtype=bool)]
    k = max(1, n_choices)
    return np.bincount(q * k + c, minlength=n_questions * k).reshape(n_questions, k)


def _label_names(choices: Sequence[str]) -> list[str]:
    return [*choices, "tie", ""]


def _per_setting(settings: ArrayLike, order: Sequence[str]) -> tuple[NDArray[np.intp], int]:
    s = np.asarray(settings).astype(str)
    idx = np.full(s.shape, -1, dtype=np.intp)
    for i, name in enumerate(order):
        idx[s == name] = i
    return idx, len(order)


def _stereo_or_nothing(name: str, stereotypes: NDArray[np.str_], treatment: Treatment
                       ) -> tuple[NDArray[np.int8], NDArray[np.int8]]:
    """Stereo and weight of every person if labelled `name`; zeros for a value that is no label (an
    answer outside the question's choices, which the services refuse): it counts nowhere."""
    try:
        return stereo_weights(np.full(stereotypes.shape, name, dtype=object), stereotypes, treatment)
    except ValueError:
        zero = np.zeros(stereotypes.shape, dtype=np.int8)
        return zero, zero


def pst_headline(choices: Sequence[str], stereotypes: ArrayLike, settings: ArrayLike, order: Sequence[str],
                 treatment: Treatment, unit: Unit = "majority") -> Statistic:
    """Overall STS (percent) per setting in ``order`` from a count matrix: Stereo and its weight of
    every possible label of every person looked up in a table built once with
    :func:`metrics.core.pst.stereo_weights`. ``unit="majority"``: one label per person, the majority
    of the counts (the report's STS); ``"answer"``: every answer counted as a label of its person."""
    names = _label_names(choices)
    st = np.asarray(stereotypes)
    sw = [_stereo_or_nothing(name, st, treatment) for name in names]
    s_tab = np.stack([s for s, _ in sw], axis=1).astype(float)  # persons x codes
    w_tab = np.stack([w for _, w in sw], axis=1).astype(float)
    idx, n = _per_setting(settings, order)
    keep = idx >= 0
    rows = np.arange(st.size)

    k = len(choices)

    def stat(counts: NDArray[np.int64]) -> NDArray[np.float64]:
        if unit == "answer":
            c = np.asarray(counts, dtype=float)
            sw, w = (s_tab[:, :k] * w_tab[:, :k] * c).sum(axis=1), (w_tab[:, :k] * c).sum(axis=1)
        else:
            codes = majority_codes(counts)
            s, w = s_tab[rows, codes], w_tab[rows, codes]
            sw = s * w
        num = np.bincount(idx[keep], weights=sw[keep], minlength=n)
        den = np.bincount(idx[keep], weights=w[keep], minlength=n)
        return finish(np.asarray([num, den], dtype=float)[None])[0]

    def finish(acc: NDArray[np.float64]) -> NDArray[np.float64]:  # (B, 2, settings): numerators, denominators
        num, den = acc[:, 0], acc[:, 1]
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(den > 0, 100.0 * num / np.where(den > 0, den, 1), np.nan)

    if unit != "answer":
        return stat
    weights = np.stack([s_tab[:, :k] * w_tab[:, :k], w_tab[:, :k]], axis=2)
    return LinearStatistic(stat, LinearParts(np.where(keep, idx, -1), weights, n, finish, ratio_scale=100.0))


def gep_headline(choices: Sequence[str], genders: ArrayLike, attributes: ArrayLike, settings: ArrayLike,
                 order: Sequence[str], gender_order: Sequence[str], tie_policy: GepTiePolicy,
                 unit: Unit = "majority") -> Statistic:
    """GEP score per setting in ``order`` (mean over the attributes present of |f_first - f_second|,
    f = present / counted per gender and attribute under ``tie_policy``, as
    :func:`metrics.core.gep.gep_report`) from a count matrix; ``unit`` as in :func:`pst_headline`."""
    names = _label_names(choices)
    present, counted = np.zeros(len(names)), np.zeros(len(names))
    for i, name in enumerate(names):
        try:
            p_i, c_i, _ = present_weights(np.asarray([name], dtype=object), tie_policy)
        except ValueError:  # an answer that is no choice of the question (refused by the services): not counted
            continue
        present[i], counted[i] = float(p_i[0]), float(c_i[0])
    g = np.asarray(genders).astype(str)
    a = np.asarray(attributes).astype(str)
    gi = np.full(g.shape, -1, dtype=np.intp)
    gi[g == gender_order[0]] = 0
    gi[g == gender_order[1]] = 1
    attrs = sorted(distinct_values(a))
    ai = np.searchsorted(np.asarray(attrs), a) if attrs else np.zeros(0, dtype=np.intp)
    idx, n = _per_setting(settings, order)
    keep = (idx >= 0) & (gi >= 0)
    na = max(1, len(attrs))
    cell = (idx * 2 + gi) * na + ai  # setting x gender x attribute

    k = len(choices)

    def stat(counts: NDArray[np.int64]) -> NDArray[np.float64]:
        if unit == "answer":
            c = np.asarray(counts, dtype=float)
            pres, coun = row_totals(c * present[:k]), row_totals(c * counted[:k])
        else:
            codes = majority_codes(counts)
            pres, coun = present[codes], counted[codes]
        p = np.bincount(cell[keep], weights=pres[keep], minlength=n * 2 * na)
        t = np.bincount(cell[keep], weights=coun[keep], minlength=n * 2 * na)
        return finish(np.asarray([p, t], dtype=float)[None])[0]

    def finish(acc: NDArray[np.float64]) -> NDArray[np.float64]:  # (B, 2, cells): present, counted
        p = acc[:, 0].reshape(-1, n, 2, na)
        t = acc[:, 1].reshape(-1, n, 2, na)
        with np.errstate(invalid="ignore", divide="ignore"):
            f = np.where(t > 0, p / np.where(t > 0, t, 1), np.nan)
            v = np.abs(f[:, :, 0, :] - f[:, :, 1, :])
            ok = np.isfinite(v)
            return np.where(ok.any(axis=2), np.where(ok, v, 0).sum(axis=2) / np.maximum(ok.sum(axis=2), 1), np.nan)

    if unit != "answer":
        return stat
    weights = np.stack([present[:k], counted[:k]], axis=1)[None]  # the same for every question
    return LinearStatistic(stat, LinearParts(np.where(keep, cell, -1), weights, n * 2 * na, finish))


def alpha_stat(counts: NDArray[np.int64]) -> NDArray[np.float64]:
    """Krippendorff's alpha (nominal) of a count matrix, as a one-element array."""
    return np.atleast_1d(alpha_from_coincidences(coincidence_total(counts))).astype(float)


class HeadlineWithAlpha:
    """``concatenate([headline(counts), alpha_stat(counts)])``: the annotators section's statistic. With
    an answer-level headline (a :class:`LinearStatistic`) the permutation test runs vectorised."""

    def __init__(self, headline: Statistic) -> None:
        self.headline = headline

    def __call__(self, counts: NDArray[np.int64]) -> NDArray[np.float64]:
        return np.concatenate([self.headline(counts), alpha_stat(counts)])


def _fast_parts(statistic: Statistic) -> tuple[LinearParts, bool] | None:
    if isinstance(statistic, LinearStatistic):
        return statistic.parts, False
    if isinstance(statistic, HeadlineWithAlpha) and isinstance(statistic.headline, LinearStatistic):
        return statistic.headline.parts, True
    return None


def _studentize(t: NDArray[np.float64], d_all: NDArray[np.float64], observed: NDArray[np.float64]
                ) -> tuple[NDArray[np.float64], NDArray[np.float64], int]:
    """Replace the ratio headline's columns of the permuted and observed differences by their studentized
    versions ``t`` (row 0 the observed split, then one row per shuffle: `permuted_studentized`). A cell
    whose observed statistic cannot be studentized (a group with fewer than two annotators answering in
    it) keeps its raw difference; a shuffle that cannot counts as at least as extreme as the observation
    (conservative)."""
    n = t.shape[1]
    ok = np.isfinite(t[0])
    d_all, compare = d_all.copy(), observed.copy()
    d_all[:, :n] = np.where(ok, np.where(np.isfinite(t[1:]), t[1:], np.inf), d_all[:, :n])
    compare[:n] = np.where(ok, t[0], observed[:n])
    return d_all, compare, n


def answers_prepared(a_qidx: ArrayLike, a_annotator: ArrayLike, a_code: ArrayLike, n_questions: int,
                     n_choices: int, statistic: Statistic) -> AnswersByAnnotator | None:
    """These answers by annotator for :func:`permutation_test_groups`'s ``prepared`` (built once for the many
    pairs tested on the same answers with the same statistic); None when ``statistic`` has no vectorised
    path (it is then computed per shuffle)."""
    fast = _fast_parts(statistic)
    if fast is None:
        return None
    return answers_by_annotator(np.asarray(a_qidx, dtype=np.int64), np.asarray(a_annotator, dtype=np.int64),
                                np.asarray(a_code, dtype=np.int64), n_questions, n_choices, *fast)


def group_statistic(a_qidx: ArrayLike, a_annotator: ArrayLike, a_code: ArrayLike, n_questions: int, n_choices: int,
                    annotators: Sequence[int], statistic: Statistic) -> NDArray[np.float64]:
    """``statistic`` of the answers of ``annotators``: what :func:`permutation_test_groups` computes for each
    side of a pair (the group's vote counts are the same whichever pool they are counted in)."""
    member = members_mask(np.asarray(a_annotator, dtype=np.int64), annotators)
    return statistic(group_counts(a_qidx, a_code, member, n_questions, n_choices))


@dataclass(frozen=True)
class GroupTest:
    """``difference = statistic(A) - statistic(B)`` per statistic, with permutation p-values."""

    a: NDArray[np.float64]
    b: NDArray[np.float64]
    difference: NDArray[np.float64]
    p_value: NDArray[np.float64]
    n_perm: int
    studentized: int = 0  # the first `studentized` statistics were tested on the studentized difference


def permutation_test_groups(a_qidx: ArrayLike, a_annotator: ArrayLike, a_code: ArrayLike, n_questions: int,
                            n_choices: int, annotators_a: Sequence[int], annotators_b: Sequence[int],
                            statistic: Statistic, n_perm: int = 1000, seed: int | None = 0,
                            group_statistics: tuple[NDArray[np.float64], NDArray[np.float64]] | None = None,
                            prepared: AnswersByAnnotator | None = None) -> GroupTest:
    """Permutation test of the difference of ``statistic`` between the groups of annotators A and B
    (see the module docstring). Answers of annotators in neither group are ignored. ``group_statistics``: the
    statistic of A's and of B's answers when the caller has them (:func:`group_statistic`, once per group
    for the many pairs a group is in); else computed here, the same values. ``prepared``: these answers
    by annotator (:func:`~metrics.core.annotator_permutations.answers_by_annotator` with the statistic's
    headline, and alpha's pairs when it has alpha), built once for the many pairs tested on them; used by
    the vectorised path when both groups' figures are given and no annotator is in both groups."""
    pool = np.asarray([*annotators_a, *annotators_b], dtype=np.int64)
    if not len(annotators_a) or not len(annotators_b):
        raise ValueError("both groups need at least one annotator")
    n_a = len(annotators_a)
    observed_side = np.arange(pool.size) < n_a
    fast = _fast_parts(statistic)
    if (prepared is not None and fast is not None and group_statistics is not None and n_perm > 0
            and prepared.headline is fast[0] and (prepared.pairs is not None) == fast[1]
            and np.unique(pool).size == pool.size):
        rows = prepared.index(pool)
        return _vectorised(group_statistics, observed_side, _shuffles(seed, observed_side, n_perm),
                           fast[0].ratio_scale is not None,
                           lambda sides: prepared.differences(rows, sides),
                           lambda sides: prepared.studentized(rows, sides))
    q = np.asarray(a_qidx, dtype=np.int64)
    who = np.asarray(a_annotator, dtype=np.int64)
    code = np.asarray(a_code, dtype=np.int64)
    inside, pos = pool_positions(who, pool)  # answer -> position of its annotator in the pool
    q, code = q[inside], code[inside]

    def both(in_a: NDArray[np.bool_]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        member = in_a[pos]
        return (statistic(group_counts(q, code, member, n_questions, n_choices)),
                statistic(group_counts(q, code, ~member, n_questions, n_choices)))

    sa, sb = both(observed_side) if group_statistics is None else group_statistics
    if fast is not None and n_perm > 0:  # the same shuffles, every statistic at once (annotator_permutations)
        parts, with_alpha = fast
        return _vectorised((sa, sb), observed_side, _shuffles(seed, observed_side, n_perm),
                           parts.ratio_scale is not None,
                           lambda sides: permuted_differences(q, code, pos, pool.size, n_questions, n_choices, sides,
                                                              parts, with_alpha),
                           lambda sides: permuted_studentized(q, code, pos, pool.size, sides, parts))
    observed = sa - sb
    rng = np.random.default_rng(seed)
    hits = np.zeros(observed.shape, dtype=np.int64)
    for _ in range(n_perm):
        d = np.subtract(*both(rng.permutation(observed_side)))
        with np.errstate(invalid="ignore"):
            hits += (np.abs(d) >= np.abs(observed) - 1e-12)
    return _result(sa, sb, observed, hits, n_perm, 0)


def _shuffles(seed: int | None, observed_side: NDArray[np.bool_], n_perm: int) -> NDArray[np.bool_]:
    """The loop's shuffles, in its order (``rng.permutation`` of the side labels), as rows."""
    rng = np.random.default_rng(seed)
    return np.stack([rng.permutation(observed_side) for _ in range(n_perm)])


def _vectorised(group_statistics: tuple[NDArray[np.float64], NDArray[np.float64]], observed_side: NDArray[np.bool_],
                sides: NDArray[np.bool_], ratio: bool, differences: Callable[[NDArray[np.bool_]], NDArray[np.float64]],
                studentized: Callable[[NDArray[np.bool_]], NDArray[np.float64]]) -> GroupTest:
    """The test from every shuffle's differences at once (``differences(sides)``); a ratio headline is
    compared on its studentized difference (``studentized`` of the observed split, then the shuffles)."""
    sa, sb = group_statistics
    observed = sa - sb
    d_all, compare, n_studentized = differences(sides), observed, 0
    if ratio:  # ratio headlines: the studentized difference (unequal groups)
        t = studentized(np.vstack([observed_side[None], sides]))
        d_all, compare, n_studentized = _studentize(t, d_all, observed)
    n_perm = sides.shape[0]
    return _result(sa, sb, observed, _hits(d_all, compare), n_perm, n_studentized)


def _hits(d_all: NDArray[np.float64], compare: NDArray[np.float64]) -> NDArray[np.int64]:
    with np.errstate(invalid="ignore"):
        return (np.abs(d_all) >= np.abs(compare) - 1e-12).sum(axis=0)


def _result(sa: NDArray[np.float64], sb: NDArray[np.float64], observed: NDArray[np.float64], hits: NDArray[np.int64],
            n_perm: int, studentized: int) -> GroupTest:
    p = (1 + hits) / (n_perm + 1)
    p = np.where(np.isfinite(observed), p, np.nan)
    return GroupTest(sa, sb, observed, p, n_perm, studentized)
