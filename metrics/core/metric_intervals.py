"""Intervals for the PST and GEP statistics from per-person / per-question rows, and the
test-inversion interval of a mean of absolute differences (the GEP score). The machinery
(:class:`metrics.core.intervals.CI`, BCa over image clusters, Wilson, Newcombe, the design
effect) and the method per statistic (:data:`metrics.core.intervals.METHODS`) are in
:mod:`metrics.core.intervals`; see its docstring for why each method was chosen.
Coverage: tests/metrics/core/test_interval_coverage.py and bench/README.md section 6.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._arrays import as_1d, encode
from .gep import Frequencies, GepTiePolicy, RowCodes
from .intervals import (
    CI,
    design_effect,
    newcombe_interval,
    stratified_cluster_bca,
    stratified_cluster_draws,
    wilson_interval,
)
from .pst import K_CANNOT, K_FEM, K_MASC, K_MISSING, K_TIE, Treatment, label_kinds, stereo_weights

__all__ = [
    "abs_mean_interval",
    "sts_interval",
    "micro_sts_intervals",
    "micro_gap_intervals",
    "group_sts_intervals",
    "percent_feminine_intervals",
    "gep_intervals",
]


# ------------------------------------------------------------ mean of absolute differences
def _constrained_null(v: NDArray[np.float64], s2: NDArray[np.float64], theta0: float) -> NDArray[np.float64]:
    """Closest vector to ``v`` (metric diag(1/s2)) whose mean absolute value is theta0:
    ``a_j = sign(v_j) max(|v_j| + mu s2_j, 0)`` (the Lagrange condition). The mean is
    piecewise linear and increasing in mu with breakpoints ``-|v_j| / s2_j``, so mu is
    solved exactly on the segment that holds the target (no iteration)."""
    av = np.abs(v)
    sg = np.where(v >= 0, 1.0, -1.0)
    if theta0 <= 0.0:
        return np.zeros_like(v)
    target = theta0 * v.size
    b = -av / s2
    order = np.argsort(b)
    cab = np.cumsum(av[order])
    cs2 = np.cumsum(s2[order])
    mu = (target - cab) / cs2  # mu if exactly the first k+1 sorted components are active
    upper = np.append(b[order][1:], np.inf)
    ok = (mu >= b[order]) & (mu <= upper)
    k = int(np.flatnonzero(ok)[0]) if ok.any() else v.size - 1
    return sg * np.maximum(av + mu[k] * s2, 0.0)


def abs_mean_interval(
    v_hat: ArrayLike,
    v_draws: ArrayLike,
    confidence: float = 0.95,
    variance_floor: ArrayLike | float = 0.0,
    n_clusters: int | None = None,
    seed: int | None = None,
) -> CI:
    """Interval for ``theta = mean_j |v_j|`` (the GEP score) by test inversion
    (method ``"gep-test-inversion"``).

    Why not a bootstrap percentile / BCa interval: ``mean |v_hat_j|`` is biased
    upward (E|v_hat_j| > |v_j|, by about 0.8 SE_j when v_j = 0), and the bootstrap
    adds the bias a second time, so near 0 nearly every draw exceeds the estimate;
    percentile intervals then exclude it and BCa's z0 breaks down (simulated
    coverage of a true GEP near 0: percentile 0-4%, bench/README.md; BCa 0-46% in the
    exploratory runs that led to this method).

    Method: the signed components are well behaved, so their bootstrap deviations
    ``e_b = v*_b - v_hat`` (B x n, carrying the covariance of the attributes of one
    image) are a good model of the noise. A candidate value theta0 is tested with the
    statistic ``T = mean_j |v_hat_j|`` against the null distribution of
    ``mean_j |a_j + e_bj|`` for a configuration ``a`` with ``mean |a| = theta0``; the
    distribution depends on how theta0 is spread over the attributes, so each side
    uses its own configuration:

    - lower end (is T too HIGH for theta0?): the constrained estimate, the vector
      closest to ``v_hat`` in the metric of the bootstrap variances among those with
      ``mean |a| = theta0`` (``a_j = sign(v_hat_j) max(|v_hat_j| + mu s_j^2, 0)``);
      theta0 is rejected when T exceeds the ``1 - alpha/2`` quantile, theta0 = 0 (a
      boundary: T cannot fall below that null) when T exceeds the ``1 - alpha`` one;
    - upper end (is T too LOW?): the least favourable configuration, every
      ``|a_j| = theta0`` (with the observed signs), which gives the smallest null for
      that theta0; rejected below the ``alpha/2`` quantile.

    The interval is the accepted range, found by bisection (the quantiles increase
    with theta0). Should the upper end fall below the estimate (T is improbably high
    for every theta0, which happens near 0) it is set to the estimate and ``extended``
    is True. No interval for a mean of absolute values has exact coverage for every
    configuration (it is a non-smooth functional); simulated coverage
    (bench/README.md, 1,000 runs): 94.7-97.7% on the GEP paper's frequencies from 0 to
    0.12 (about 97% just above 0, where the estimate's upward bias leaves only the
    lower end to miss); on stress configurations 92.1% when the whole difference sits
    in one attribute among 14 exact zeros, 93.7% in two, 95.6% when every attribute
    differs by 2 SE, 97.9% when a difference is spread thinly below the noise.

    ``variance_floor`` (scalar or per component) keeps s_j^2 > 0 for components
    whose bootstrap variance is 0 (frequency 0 or 1 in both genders); the default
    floor used by :func:`gep_intervals` is the variance of half a count. NaN
    components are left out (as in :func:`metrics.core.gep.gep_score`)."""
    v = np.asarray(v_hat, dtype=float)
    d = np.asarray(v_draws, dtype=float)
    if d.ndim != 2 or d.shape[1] != v.size:
        raise ValueError("v_draws must be (B, n) with n = len(v_hat)")
    keep = np.isfinite(v) & np.all(np.isfinite(d), axis=0)
    if not keep.any():
        nan = float("nan")
        return CI(nan, nan, nan, confidence, "gep-test-inversion", n_clusters, d.shape[0], seed)
    v, d = v[keep], d[:, keep]
    floor = np.broadcast_to(np.asarray(variance_floor, dtype=float), keep.shape)[keep]
    s2 = np.maximum(d.var(axis=0), np.maximum(floor, 1e-12))
    dev = d - v
    est = float(np.abs(v).mean())
    alpha = 1.0 - confidence
    # bisection tolerance: 1/1000 of the statistic's standard error (or of 1e-6)
    tol = max(1e-3 * float(np.sqrt(s2.sum())) / v.size, 1e-9)

    sign = np.where(v >= 0, 1.0, -1.0)

    def upper_q(theta0: float) -> float:
        # theta0 = 0 is a boundary: the statistic cannot fall below its null there, so
        # the whole alpha goes to the upper tail; elsewhere alpha/2 in each tail.
        t = np.abs(_constrained_null(v, s2, theta0) + dev).mean(axis=1)
        return float(np.quantile(t, 1 - alpha if theta0 == 0.0 else 1 - alpha / 2))

    def lower_q(theta0: float) -> float:
        # equal magnitudes: E mean|a_j + e_j| is convex in each |a_j|, so for a given
        # theta0 it is smallest when every |a_j| = theta0 (Jensen) - the least favourable
        # configuration for the upper end
        return float(np.quantile(np.abs(sign * theta0 + dev).mean(axis=1), alpha / 2))

    # lower end: smallest theta0 whose upper quantile reaches the estimate
    if est == 0.0 or upper_q(0.0) >= est:
        low = 0.0
    else:
        a_, b_ = 0.0, est
        if upper_q(b_) < est:
            low = est
        else:
            while b_ - a_ > tol:
                m = 0.5 * (a_ + b_)
                if upper_q(m) >= est:
                    b_ = m
                else:
                    a_ = m
            low = b_
    # upper end: largest theta0 whose lower quantile stays below the estimate
    span = est + 8.0 * float(np.sqrt(s2.sum())) / v.size + 1e-12
    if lower_q(0.0) > est:
        high = 0.0
    else:
        a_, b_ = 0.0, span
        while lower_q(b_) <= est:  # make sure the bracket holds the end
            a_, b_ = b_, 2.0 * b_
        while b_ - a_ > tol:
            m = 0.5 * (a_ + b_)
            if lower_q(m) <= est:
                a_ = m
            else:
                b_ = m
        high = a_
    extended = low > est or high < est
    return CI(est, min(low, est), max(high, est), confidence, "gep-test-inversion", n_clusters, d.shape[0], seed,
              extended, {"components": int(v.size)})


# ------------------------------------------------------------------------------- PST
def _pst_person_sums(image_ids: ArrayLike, keys: NDArray[np.intp] | None, n_keys: int,
                     values: list[NDArray[np.float64]],
                     coded: tuple[NDArray[np.intp], int] | None = None) -> tuple[NDArray[np.float64], int]:
    """Per-image sums (n_images, n_keys * len(values)): column ``key * V + v``. ``coded``: the images'
    codes and their number when the caller has them (``encode(image_ids)``)."""
    if coded is None:
        codes, ids = encode(as_1d(image_ids, "image_ids"))
        coded = codes, len(ids)
    codes, n_img = coded
    nv = len(values)
    k = np.zeros(codes.size, dtype=np.intp) if keys is None else keys
    out = np.zeros((n_img, n_keys * nv))
    for j, val in enumerate(values):
        flat = np.bincount(codes * n_keys + k, weights=val, minlength=n_img * n_keys)
        out[:, j::nv] = flat.reshape(n_img, n_keys)
    return out, n_img


def sts_interval(
    image_ids: ArrayLike,
    labels: ArrayLike,
    stereotypes: ArrayLike,
    treatment: Treatment = "paper",
    n_boot: int = 2000,
    confidence: float = 0.95,
    seed: int | None = 0,
) -> CI:
    """Overall STS (PST formula 1, percent) with a BCa interval over images
    (``"bca-cluster"``): the persons of one image move together. Treatment of
    Cannot identify / ties as in :mod:`metrics.core.pst`; missing labels dropped."""
    s, w = stereo_weights(labels, stereotypes, treatment)
    sums, _ = _pst_person_sums(image_ids, None, 1, [s.astype(float) * w, w.astype(float)])

    def stat(t: NDArray[np.float64]) -> NDArray[np.float64]:
        with np.errstate(invalid="ignore", divide="ignore"):
            return 100.0 * t[:, 0, 0] / t[:, 0, 1]

    res = stratified_cluster_bca(sums, stat, None, n_boot, confidence, seed)
    assert isinstance(res, CI)
    return res


def micro_sts_intervals(
    image_ids: ArrayLike,
    identities: ArrayLike,
    labels: ArrayLike,
    stereotypes: ArrayLike,
    treatment: Treatment = "paper",
    confidence: float = 0.95,
) -> dict[str, CI]:
    """Micro STS per identity (PST formula 2) with a Wilson interval
    (``"wilson-deff"``). STS = 100 (2q - 1) with q the share of counted persons
    labelled with their stereotype, so the interval for q maps to one for STS; the
    design effect of the identity's persons over images (usually 1: an identity
    appears once per image) widens it when persons of one image are correlated."""
    s, w = stereo_weights(labels, stereotypes, treatment)
    ident = as_1d(identities, "identities")
    codes, names = encode(ident)
    hit = (s == 1).astype(float) * w
    x = np.bincount(codes, weights=hit, minlength=len(names))
    n = np.bincount(codes, weights=w.astype(float), minlength=len(names))
    deff = np.atleast_1d(design_effect(image_ids, (s == 1).astype(float), w.astype(float), ident))
    lo, hi = wilson_interval(x, n, confidence, deff)
    out = {}
    for i, name in enumerate(names.tolist()):
        est = 100.0 * (2 * x[i] / n[i] - 1) if n[i] > 0 else float("nan")
        out[str(name)] = CI(est, 100.0 * (2 * lo[i] - 1), 100.0 * (2 * hi[i] - 1), confidence, "wilson-deff",
                            None, None, None, False, {"persons": int(n[i]), "deff": float(deff[i])})
    return out


#: Fewest counted persons per side and identity for which the per-identity gap interval is printed
#: (bench/validity_cells/pst.py: `gap.micro_ci.newcombe.*`).
MIN_GAP_PERSONS = 10


def _stereo_counts(side: Any, treatment: Treatment) -> tuple[NDArray[Any], NDArray[np.float64], NDArray[np.float64],
                                                               NDArray[np.float64]]:
    """(identity names, stereotyped persons, counted persons, design effect) per identity of one side."""
    s, w = stereo_weights(side["labels"], side["stereotypes"], treatment)
    ident = as_1d(side["identities"], "identities").astype(str)
    codes, names = encode(ident)
    x: NDArray[np.float64] = np.bincount(codes, weights=(s == 1).astype(float) * w, minlength=len(names)).astype(float)
    n: NDArray[np.float64] = np.bincount(codes, weights=w.astype(float), minlength=len(names)).astype(float)
    if ident.size == 0:
        return names, x, n, np.ones(0)
    deff = np.atleast_1d(np.asarray(design_effect(side["image_ids"], (s == 1).astype(float), w.astype(float), ident),
                                    dtype=float))
    return names, x, n, deff


def micro_gap_intervals(
    a: Any,
    b: Any,
    treatment: Treatment = "paper",
    confidence: float = 0.95,
) -> dict[str, CI]:
    """Per-identity difference of micro STS, side A minus side B (e.g. paired minus single), with
    Newcombe's hybrid score interval for a difference of two proportions (``"newcombe-deff"``).

    ``a`` / ``b``: per-person arrays ``image_ids``, ``identities``, ``labels``, ``stereotypes``.
    STS = 100 (2q - 1) with q the share of counted persons labelled with their stereotype, so the
    difference is 200 (q_A - q_B) and Newcombe's interval for q_A - q_B maps to it. Each side's
    counts are replaced by effective counts (x / deff, n / deff) with its design effect over images
    (Korn & Graubard), so persons of one image that are correlated widen the interval. A bootstrap
    over the few images of an identity (3 single images in the occupation preset) is degenerate;
    this interval is not, but its coverage was validated only from 10 counted persons per side
    (bench/README.md, "Validity"): the caller leaves smaller identities out, ``notes`` carries the
    persons of each side. Only identities present on both sides."""
    na, xa, ca, da = _stereo_counts(a, treatment)
    nb, xb, cb, db = _stereo_counts(b, treatment)
    out: dict[str, CI] = {}
    pos_b = {str(k): i for i, k in enumerate(nb.tolist())}
    pairs = [(i, pos_b[str(name)]) for i, name in enumerate(na.tolist())
             if str(name) in pos_b and ca[i] > 0 and cb[pos_b[str(name)]] > 0]
    ia = np.array([i for i, _ in pairs], dtype=np.intp)
    ib = np.array([j for _, j in pairs], dtype=np.intp)
    # One vectorised Newcombe call for every identity (the same interval as one call per identity).
    low, high = newcombe_interval(xa[ia] / da[ia], ca[ia] / da[ia], xb[ib] / db[ib], cb[ib] / db[ib], confidence)
    for (i, j), lo_k, hi_k in zip(pairs, low.tolist(), high.tolist()):
        name = na[i]
        est = 200.0 * (xa[i] / ca[i] - xb[j] / cb[j])
        out[str(name)] = CI(est, min(200.0 * lo_k, est), max(200.0 * hi_k, est), confidence,
                            "newcombe-deff", None, None, None, False,
                            {"persons_a": int(ca[i]), "persons_b": int(cb[j]),
                             "deff_a": float(da[i]), "deff_b": float(db[j])})
    return out


def group_sts_intervals(
    image_ids: ArrayLike,
    identities: ArrayLike,
    groups: ArrayLike,
    labels: ArrayLike,
    stereotypes: ArrayLike,
    treatment: Treatment = "paper",
    n_boot: int = 2000,
    confidence: float = 0.95,
    seed: int | None = 0,
) -> dict[str, CI]:
    """Group mean STS (unweighted mean of the micro STS of the group's identities,
    PST Tables 3-4) with BCa intervals over images (``"bca-cluster"``). Identities
    without a counted person in a draw are left out of that draw's mean."""
    s, w = stereo_weights(labels, stereotypes, treatment)
    id_codes, id_names = encode(as_1d(identities, "identities"))
    gr = as_1d(groups, "groups").astype(str)
    g_of: dict[int, str] = {}
    for i, g in zip(id_codes.tolist(), gr.tolist()):
        g_of.setdefault(i, g)
    g_names = sorted(set(g_of.values()))
    member = np.array([[g_of[i] == g for i in range(len(id_names))] for g in g_names], dtype=np.float64)
    sums, _ = _pst_person_sums(image_ids, id_codes, len(id_names), [s.astype(float) * w, w.astype(float)])

    def stat(t: NDArray[np.float64]) -> NDArray[np.float64]:
        tt = t[:, 0, :]
        with np.errstate(invalid="ignore", divide="ignore"):
            micro = 100.0 * tt[:, 0::2] / tt[:, 1::2]
        ok = np.isfinite(micro)
        num = np.where(ok, micro, 0.0) @ member.T
        den = ok.astype(float) @ member.T
        with np.errstate(invalid="ignore", divide="ignore"):
            return num / den

    ci = stratified_cluster_bca(sums, stat, None, n_boot, confidence, seed)
    assert isinstance(ci, CI)
    est, lo, hi = (np.atleast_1d(x) for x in (ci.estimate, ci.low, ci.high))
    ext = np.atleast_1d(ci.extended)
    return {g: CI(float(est[i]), float(lo[i]), float(hi[i]), confidence, ci.method, ci.n_clusters, n_boot, seed,
                  bool(ext[i])) for i, g in enumerate(g_names)}


def percent_feminine_intervals(
    image_ids: ArrayLike,
    identities: ArrayLike,
    labels: ArrayLike,
    treatment: Treatment = "paper",
    confidence: float = 0.95,
) -> dict[str, CI]:
    """%F per identity with a Wilson interval (``"wilson-deff"``), in percent.
    Denominator as :func:`metrics.core.pst.percent_feminine`: ``"paper"`` = every
    labelled person (Cannot identify and ties count in it), ``"excluded"`` =
    persons labelled Feminine or Masculine. Missing labels never count."""
    lk = label_kinds(labels)
    if treatment == "paper":
        w = (lk != K_MISSING).astype(float)
    elif treatment == "excluded":
        w = ((lk == K_FEM) | (lk == K_MASC)).astype(float)
    else:
        raise ValueError(f"unknown treatment {treatment!r}")
    fem = (lk == K_FEM).astype(float)
    ident = as_1d(identities, "identities")
    codes, names = encode(ident)
    x = np.bincount(codes, weights=fem * w, minlength=len(names))
    n = np.bincount(codes, weights=w, minlength=len(names))
    deff = np.atleast_1d(design_effect(image_ids, fem, w, ident))
    lo, hi = wilson_interval(x, n, confidence, deff)
    return {
        str(name): CI(100.0 * x[i] / n[i] if n[i] > 0 else float("nan"), 100.0 * lo[i], 100.0 * hi[i], confidence,
                      "wilson-deff", None, None, None, False,
                      {"persons": int(n[i]), "deff": float(deff[i]),
                       "undetermined": int(((lk == K_CANNOT) | (lk == K_TIE))[codes == i].sum())})
        for i, name in enumerate(names.tolist())
    }


# ------------------------------------------------------------------------------- GEP
def gep_intervals(
    image_ids: ArrayLike,
    genders: ArrayLike | None,
    attributes: ArrayLike | None,
    labels: ArrayLike,
    gender_order: Sequence[Any],
    attribute_order: Sequence[Any] | None = None,
    tie_policy: GepTiePolicy = "absent",
    n_boot: int = 2000,
    confidence: float = 0.95,
    seed: int | None = 0,
    frequencies: Frequencies | None = None,
    codes: RowCodes | None = None,
) -> dict[str, Any]:
    """GEP score, vector and frequencies (first two genders of ``gender_order``)
    with intervals: score by :func:`abs_mean_interval` (``"gep-test-inversion"``,
    bootstrap draws resample images within each gender), each v_j by
    :func:`newcombe_interval`, each f_ij by :func:`wilson_interval` (one row per
    image and attribute, so rows of a cell are independent images). Rows and tie /
    missing handling as :func:`metrics.core.gep.attribute_frequencies`.

    Returns ``{"score": CI, "vector": {attribute: CI}, "frequencies": {gender:
    {attribute: CI}}, "attributes": [...]}``. ``frequencies``: the
    :func:`metrics.core.gep.attribute_frequencies` of these same rows and orders when the caller has
    them (the report's GEP section: once per setting, not twice). ``codes``: :func:`metrics.core.gep.row_codes`
    of these rows in ``gender_order`` and ``attribute_order`` when the caller has them (an annotator group's
    figures: the setting's rows coded once for every group; then ``genders`` and ``attributes`` are not read
    and may be None)."""
    from .gep import attribute_frequencies, present_weights

    fr = frequencies if frequencies is not None else attribute_frequencies(
        genders, attributes, labels, gender_order, attribute_order, tie_policy, codes)
    na = len(fr.attributes)
    if codes is None:
        if genders is None or attributes is None:
            raise ValueError("gep_intervals needs the rows' genders and attributes, or their codes")
        g_codes, _ = encode(as_1d(genders, "genders"), gender_order)
        a_codes, _ = encode(as_1d(attributes, "attributes"), fr.attributes)
    else:
        g_codes, a_codes = codes.g_codes, codes.a_codes
    present, counted, _ = present_weights(labels, tie_policy)
    two = g_codes < 2
    img = as_1d(image_ids, "image_ids")[two]
    cell = g_codes[two] * na + a_codes[two]
    if codes is not None and bool(two.all()):  # every row of the first two genders: the caller's image codes
        i_codes, i_ids = codes.i_codes, codes.i_ids
    else:
        i_codes, i_ids = encode(img)
    sums, _ = _pst_person_sums(img, cell, 2 * na, [present[two].astype(float), counted[two].astype(float)],
                               (i_codes, len(i_ids)))
    img_gender = np.zeros(len(i_ids), dtype=np.intp)
    img_gender[i_codes] = g_codes[two]  # an image shows one gender indicator

    draws = stratified_cluster_draws(sums, img_gender, n_boot, seed).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        f = draws[:, 0::2] / draws[:, 1::2]
    v_draws = f[:, :na] - f[:, na:2 * na]
    v_hat = fr.freq[0] - fr.freq[1]
    n1, n2 = fr.total[0].astype(float), fr.total[1].astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        floor = np.where(n1 > 0, 0.5 / np.maximum(n1, 1) ** 2, 0.0) + np.where(n2 > 0, 0.5 / np.maximum(n2, 1) ** 2, 0)
    score = abs_mean_interval(v_hat, v_draws, confidence, floor, len(i_ids), seed)
    vlo, vhi = newcombe_interval(fr.present[0], fr.total[0], fr.present[1], fr.total[1], confidence)
    flo, fhi = wilson_interval(fr.present[:2].ravel(), fr.total[:2].ravel(), confidence)
    flo, fhi = flo.reshape(2, na), fhi.reshape(2, na)
    return {
        "attributes": list(fr.attributes),
        "score": score,
        "vector": {a: CI(float(v_hat[j]), float(vlo[j]), float(vhi[j]), confidence, "newcombe")
                   for j, a in enumerate(fr.attributes)},
        "frequencies": {g: {a: CI(float(fr.freq[i, j]), float(flo[i, j]), float(fhi[i, j]), confidence, "wilson",
                                  notes={"present": int(fr.present[i, j]), "total": int(fr.total[i, j])})
                            for j, a in enumerate(fr.attributes)}
                        for i, g in enumerate(fr.genders[:2])},
    }
