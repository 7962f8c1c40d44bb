"""Krippendorff's alpha of two groups of annotators under every permutation, exactly and without a
pass over every answer per permutation (issue 23: the annotators section at 10M answers).

Alpha (nominal) is a function of the coincidence matrix ``o``, a sum over questions of
``o_cd += n_c (n_d - [c = d]) / (m - 1)`` (m: the group's answers to the question, m >= 2): equivalently
every ordered pair of two of the group's answers to a question adds ``1 / (m - 1)`` to the cell of
their two choices. With ``x`` the 0/1 membership of the pool's annotators in group A:

- a question with two answers of the pool (annotators i, j) gives A its pair when ``x_i x_j``;
- a question with three (i, j, l) gives A the pair (i, j) with weight 1 when only i and j are in A and
  all three pairs with weight 1/2 when the three are: ``sum_pairs x_i x_j pair_ij - 1/2 x_i x_j x_l full_q``
  (``full_q``: the question's three pairs, both orders).

So A's matrix is a quadratic form in ``x`` (one pool x pool matrix per cell, every pair of every such
question counted once: a matrix product for all permutations at once) minus half the ``full`` matrices
of the three-answer questions entirely in A, counted per pattern of choices (the multiset of the three
codes fixes ``full``). Those counts are the only per-question work: the permutations' memberships are
packed 64 to a machine word, a question is in A for the permutations where the AND of its three
annotators' words has a bit, and the bits are added column-wise by a carry-save adder tree
(O(questions x permutations / 64) word operations). Group B is the same with ``1 - x``. Questions
with four or more answers of the pool (adaptive redundancy) keep the direct computation
(:func:`coincidences_direct`: one sparse product per block of permutations). The matrices are
integer sums (halves for the triples), so the values are exact; the direct computation sums
``1 / (m - 1)`` weights in floating point (equal up to the last bits, far inside the 1e-12 that the
p-value's comparison allows).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = ["AnswerPairs", "answer_pairs", "coincidences_direct", "column_counts", "permuted_coincidences",
           "pool_coincidences"]

_BLOCK_CELLS = 4_000_000  # (question-choices x permutations) per block of the direct computation
_CHUNK_QUESTIONS = 1 << 17  # three-answer questions per packed-word chunk: bounds memory
_DENSE_POOL = 1500  # up to this many pool annotators the pair matrices are dense (BLAS), above sparse


def coincidences_direct(q: NDArray[np.int64], code: NDArray[np.int64], pos: NDArray[np.intp], k: int,
                        sides: NDArray[np.bool_]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(permutations, k*k) coincidence matrices of A and of B for the answers given (every question
    with >= 2 of them), blocks of permutations at once: A's counts are one sparse product (answers x
    question-choice incidence times answers x permutations membership), B's the pool's minus A's."""
    from scipy import sparse

    uq, q_rel = np.unique(q, return_inverse=True)
    n_rel = int(uq.size)
    key = q_rel * k + code
    pool = np.bincount(key, minlength=n_rel * k).reshape(n_rel, k).astype(float)
    incidence = sparse.csr_matrix((np.ones(key.size), (key, np.arange(key.size))), shape=(n_rel * k, key.size))
    out_a, out_b = np.zeros((sides.shape[0], k * k)), np.zeros((sides.shape[0], k * k))
    step = max(1, _BLOCK_CELLS // max(1, n_rel * k))
    for start in range(0, sides.shape[0], step):
        member = sides[start:start + step][:, pos].T.astype(float)  # answers x permutations
        a = np.asarray(incidence @ member).reshape(n_rel, k, -1)  # question x choice x permutation
        out_a[start:start + step] = _coincidences(a)
        out_b[start:start + step] = _coincidences(pool[:, :, None] - a)
    return out_a, out_b


def _coincidences(counts: NDArray[np.float64]) -> NDArray[np.float64]:
    """Coincidence matrices (permutations, k*k) of question x choice x permutation counts:
    ``o_cd = sum_q w_q (n_qc n_qd - [c = d] n_qc)``, ``w = 1 / (m - 1)`` for m >= 2 answers."""
    k = counts.shape[1]
    m = counts.sum(axis=1)
    w = np.where(m >= 2, 1.0 / np.where(m >= 2, m - 1, 1), 0.0)
    out = np.empty((counts.shape[2], k, k))
    for c in range(k):
        wc = w * counts[:, c]
        for d in range(k):
            out[:, c, d] = np.einsum("qp,qp->p", wc, counts[:, d])
        out[:, c, c] -= wc.sum(axis=0)
    return out.reshape(counts.shape[2], k * k)


@dataclass(frozen=True)
class AnswerPairs:
    """What the permutations of any pool need from one set of answers, built once (O(answers)):
    annotators as indices ``0..n-1`` (``n``: a row of zeros for an annotator without answers);
    ``m2`` the pair matrices (annotator x cell x annotator: every ordered pair of answers to a question
    with two or three answers, by their choices); the three-answer questions' annotators (``tri``) and
    pattern of choices (``pattern``, whose ``full`` is ``fulls[pattern]``); the answers of questions with
    four or more answers (``direct``: question, choice, annotator), computed directly."""

    k: int
    n: int
    m2: NDArray[np.float64]
    tri: tuple[NDArray[np.intp], NDArray[np.intp], NDArray[np.intp]]
    pattern: NDArray[np.intp]
    fulls: NDArray[np.float64]
    direct: tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.intp]]


def answer_pairs(q: NDArray[np.int64], who: NDArray[np.intp], code: NDArray[np.int64], n_questions: int, k: int,
                 n: int) -> AnswerPairs:
    """:class:`AnswerPairs` of the answers (question, annotator index ``0..n-1``, choice)."""
    m = np.bincount(q, minlength=n_questions)[q]
    many = m >= 4
    direct = (q[many], code[many], who[many])
    few = (m == 2) | (m == 3)
    q_f, code_f, who_f, m_f = q[few], code[few], who[few], m[few]
    if q_f.size > 1 and bool((q_f[1:] < q_f[:-1]).any()):  # the extraction's answers come by question
        order = np.argsort(q_f, kind="stable")
        q_f, code_f, who_f, m_f = q_f[order], code_f[order], who_f[order], m_f[order]
    two, three = _answers_of(q_f, m_f, 2), _answers_of(q_f, m_f, 3)
    pairs = np.concatenate([two, three[:, [0, 1]], three[:, [0, 2]], three[:, [1, 2]]])
    kk = k * k
    pw, pc = who_f[pairs], code_f[pairs]
    m2 = np.zeros((n + 1) * kk * (n + 1))
    for a, b in ((0, 1), (1, 0)):  # both orders of every pair
        m2 += np.bincount((pw[:, a] * kk + pc[:, a] * k + pc[:, b]) * (n + 1) + pw[:, b], minlength=m2.size)
    tri_code = np.sort(code_f[three], axis=1)
    pattern_code = (tri_code[:, 0] * k + tri_code[:, 1]) * k + tri_code[:, 2]
    codes, pattern = np.unique(pattern_code, return_inverse=True)
    fulls = _full(np.stack([codes // (k * k), codes // k % k, codes % k], axis=1), k)
    tri = who_f[three]
    return AnswerPairs(k, n, m2.reshape(n + 1, kk, n + 1), (tri[:, 0].copy(), tri[:, 1].copy(), tri[:, 2].copy()),
                       pattern.reshape(-1).astype(np.intp), fulls, direct)


def permuted_coincidences(q: NDArray[np.int64], code: NDArray[np.int64], pos: NDArray[np.intp], n_pool: int,
                          n_questions: int, k: int, sides: NDArray[np.bool_]
                          ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(permutations, k*k) coincidence matrices of group A (``sides[p]``: True for the pool positions
    in A) and of group B (the rest of the pool) for every permutation (the module docstring).
    ``q``, ``code``, ``pos``: question, choice and pool position of each answer of the pool."""
    pairs = answer_pairs(q, pos, code, n_questions, k, n_pool)
    return pool_coincidences(pairs, np.arange(n_pool), sides)


def pool_coincidences(pairs: AnswerPairs, pool: NDArray[np.intp], sides: NDArray[np.bool_]
                      ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(permutations, k*k) coincidence matrices of A and B for a pool of annotators (``pool``: their
    indices in ``pairs``, ``pairs.n`` for one without answers) and its permutations ``sides``."""
    k, kk, n_pool = pairs.k, pairs.k * pairs.k, pool.size
    slot = np.full(pairs.n + 1, -1, dtype=np.intp)  # annotator index -> pool position
    slot[pool] = np.arange(n_pool)
    slot[pairs.n] = -1
    dq, dcode, dwho = pairs.direct
    inside = slot[dwho] >= 0
    if inside.any():
        out_a, out_b = coincidences_direct(dq[inside], dcode[inside], slot[dwho[inside]], k, sides)
    else:
        out_a, out_b = np.zeros((sides.shape[0], kk)), np.zeros((sides.shape[0], kk))
    t0, t1, t2 = slot[pairs.tri[0]], slot[pairs.tri[1]], slot[pairs.tri[2]]
    keep = np.flatnonzero((t0 >= 0) & (t1 >= 0) & (t2 >= 0))
    tri, pattern = np.stack([t0[keep], t1[keep], t2[keep]], axis=1), pairs.pattern[keep]
    m2 = pairs.m2[pool][:, :, pool]
    # B's count of three-answer questions wholly in B (the pool's minus A's) by inclusion-exclusion:
    # N - x.L + x'M3x - (wholly in A), so only the questions wholly in A are counted per permutation.
    n_pat = pairs.fulls.shape[0]
    counts3 = np.zeros((n_pat, n_pool, n_pool))
    for a, b in ((0, 1), (0, 2), (1, 2)):
        counts3 += np.bincount((pattern * n_pool + tri[:, a]) * n_pool + tri[:, b],
                               minlength=counts3.size).reshape(counts3.shape)
    m3 = np.einsum("tab,tc->acb", counts3, pairs.fulls)
    lin = np.zeros((n_pat, n_pool))
    for a in range(3):
        lin += np.bincount(pattern * n_pool + tri[:, a], minlength=lin.size).reshape(lin.shape)
    g2, g3 = _forms(sides, np.concatenate([m2, m3], axis=1), kk)
    cube_a = _triples(tri, pattern, pairs.fulls, sides)
    x = sides.astype(float)
    out_a += g2 - 0.5 * cube_a
    b_quad = m2.sum(axis=(0, 2))[None] - x @ m2.sum(axis=2) - x @ m2.sum(axis=0).T + g2  # (1 - x)' M2 (1 - x)
    total = np.bincount(pattern, minlength=n_pat) @ pairs.fulls
    in_b = total[None] - x @ (lin.T @ pairs.fulls) + g3 - cube_a
    out_b += b_quad - 0.5 * in_b
    return out_a, out_b


def _full(codes: NDArray[np.int64], k: int) -> NDArray[np.float64]:
    """(questions, k*k): every ordered pair of a three-answer question's answers, by their choices:
    ``n_c n_d - [c = d] n_c``."""
    n = np.stack([(codes == c).sum(axis=1) for c in range(k)], axis=1).astype(float)
    return (n[:, :, None] * n[:, None, :] - np.eye(k)[None] * n[:, :, None]).reshape(codes.shape[0], k * k)


def _answers_of(q_sorted: NDArray[np.int64], m_sorted: NDArray[np.int64], m: int) -> NDArray[np.intp]:
    """(questions, m): the rows of each question's answers among answers sorted by question, for the
    questions with exactly m of them."""
    starts = np.flatnonzero((m_sorted == m) & np.r_[True, q_sorted[1:] != q_sorted[:-1]])
    return starts[:, None] + np.arange(m)[None, :]


def _forms(sides: NDArray[np.bool_], mats: NDArray[np.float64], kk: int
           ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``x' M x`` per permutation (x: its row of ``sides``) for each block of ``mats`` (pool x blocks x
    pool): the first ``kk`` blocks and the rest. One matrix product, in float32 where every partial sum
    is an integer below 2**24 (exact), else float64."""
    n_pool, blocks = mats.shape[0], mats.shape[1]
    exact32 = mats.sum(axis=0).max(initial=0.0) < 2.0 ** 24  # integer sums (counts, and `full` x counts)
    x = sides.astype(np.float32 if exact32 else float)
    flat = mats.reshape(n_pool, blocks * n_pool).astype(x.dtype)
    if n_pool <= _DENSE_POOL:
        prod = x @ flat
    else:
        from scipy import sparse

        prod = np.asarray(x @ sparse.csr_matrix(flat))
    forms = np.einsum("pcj,pj->pc", prod.reshape(x.shape[0], blocks, n_pool).astype(float), sides.astype(float))
    return forms[:, :kk], forms[:, kk:]


def _triples(tri: NDArray[np.intp], pattern: NDArray[np.intp], fulls: NDArray[np.float64],
             sides: NDArray[np.bool_]) -> NDArray[np.float64]:
    """(permutations, k*k): the sum of ``full`` over the three-answer questions (pool positions ``tri``)
    entirely in A, per permutation: per pattern of choices (which fixes ``full``), the count per
    permutation from the AND of the three annotators' packed membership words."""
    n_perm = sides.shape[0]
    packed = np.packbits(sides.T, axis=1, bitorder="little")  # pool x bytes; bit i of byte b: permutation 8b + i
    words = np.zeros((packed.shape[0], -(-packed.shape[1] // 8) * 8), dtype=np.uint8)
    words[:, :packed.shape[1]] = packed
    xw = words.view(np.uint64)  # pool x words (little-endian bytes: bit i of word w is permutation 64w + i)
    out = np.zeros((n_perm, fulls.shape[1]))
    order = np.argsort(pattern, kind="stable")
    bounds = np.searchsorted(pattern[order], np.arange(fulls.shape[0] + 1))
    for t in range(fulls.shape[0]):
        rows = order[bounds[t]:bounds[t + 1]]
        inside = np.zeros(n_perm)
        for start in range(0, rows.size, _CHUNK_QUESTIONS):
            r = rows[start:start + _CHUNK_QUESTIONS]
            inside += column_counts(xw[tri[r, 0]] & xw[tri[r, 1]] & xw[tri[r, 2]])[:n_perm]
        out += inside[:, None] * fulls[t][None, :]
    return out


def column_counts(words: NDArray[np.uint64]) -> NDArray[np.int64]:
    """(words per row x 64,) the number of rows with each bit set (bit i of word w: position 64w + i):
    a carry-save adder tree, the rows' bit planes added pairwise, so O(rows x words) word operations."""
    planes = [np.asarray(words, dtype=np.uint64)]  # binary digits (least significant first) of per-bit counts
    while planes[0].shape[0] > 1:
        if planes[0].shape[0] % 2:
            planes = [np.concatenate([p, np.zeros((1, p.shape[1]), dtype=np.uint64)]) for p in planes]
        half = planes[0].shape[0] // 2
        added: list[NDArray[np.uint64]] = []
        carry: NDArray[np.uint64] | None = None
        for p in planes:
            x, y = p[:half], p[half:]
            s = x ^ y
            if carry is None:
                added.append(s)
                carry = x & y
            else:
                added.append(s ^ carry)
                carry = (x & y) | (carry & s)
        assert carry is not None
        added.append(carry)
        planes = added
    if planes[0].shape[0] == 0:
        return np.zeros(words.shape[1] * 64, dtype=np.int64)
    total = np.zeros(planes[0].shape[1] * 64, dtype=np.int64)
    for b, p in enumerate(planes):
        total += np.unpackbits(np.ascontiguousarray(p[0]).view(np.uint8), bitorder="little").astype(np.int64) << b
    return total
