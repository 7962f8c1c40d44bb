"""Differences between two campaigns, or two settings of one campaign, with a bootstrap
interval, a permutation p-value and Holm-adjusted p-values over a family of tests.

Every comparison here is built from per-image column sums (the images of each side
are the resampling units, all persons / questions of an image move together):

- **difference** = statistic(side A) - statistic(side B);
- **interval**: BCa bootstrap of the difference (``"bca-cluster"``), resampling images
  within each side (and within each stratum of a side, e.g. the gender of a GEP image
  or the setting of a PST gap), acceleration from the leave-one-image-out jackknife of
  both sides (:func:`metrics.core.intervals.stratified_cluster_bca`);
- **permutation p-value**: under the null "the side label is exchangeable between the
  images of a stratum", the labels are shuffled within each stratum (side sizes kept)
  ``n_perm`` times (seeded); two-sided ``p = (1 + #{|D_perm| >= |D_obs|}) / (n_perm + 1)``
  (never 0). One permutation set serves every metric of the family, so the p-values
  are computed on the same shuffles;
- **Holm**: ``p_holm`` adjusts the p-values of a family (per identity, per attribute)
  with Holm's step-down method (the values of statsmodels ``multipletests(method="holm")``); the
  headline metrics (overall, score) are reported unadjusted and marked as such.

The statistics are those of :mod:`metrics.core.pst` and :mod:`metrics.core.gep`,
computed from column totals, so their values equal the report's. A metric undefined
on one side (NaN, e.g. an identity without any counted person) gets NaN difference
and p-value and is left out of the Holm family.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._arrays import as_1d, encode, index_in
from .intervals import CI
from .pst import Treatment, stereo_weights
from .resampling import pattern_cluster_bca, permutation_totals
from .studentize import studentizer

__all__ = [
    "Difference",
    "holm",
    "stratified_permutation_pvalues",
    "compare_sums",
    "pst_image_sums",
    "pst_statistic",
    "compare_pst",
    "compare_pst_gap",
    "gep_image_sums",
    "gep_statistic",
    "compare_gep",
]


@dataclass(frozen=True)
class Difference:
    """One metric's comparison: ``difference = a - b`` with its interval and tests."""

    name: str
    a: float
    b: float
    difference: float
    low: float
    high: float
    p_value: float
    p_holm: float | None
    confidence: float
    ci_method: str
    n_boot: int
    n_perm: int
    extended: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "a": self.a, "b": self.b, "difference": self.difference, "ci": [self.low, self.high],
            "ci_method": self.ci_method, "confidence": self.confidence, "p_value": self.p_value,
            "p_holm": self.p_holm, "n_boot": self.n_boot, "n_perm": self.n_perm, "extended": self.extended,
        }


def holm(p_values: ArrayLike) -> NDArray[np.float64]:
    """Holm step-down adjusted p-values: sorted ascending, ``p_(i) * (m - i)`` (i from 0), running
    maximum, capped at 1; NaN entries stay NaN and are not counted in the family.

    The same values as statsmodels ``multipletests(p, method="holm")[1]`` (a test holds them equal),
    computed here because that branch of statsmodels 0.15 runs ``gc.collect()`` on every call: a full
    collection of the process, about 0.13 s in a Django worker, for families of 15 p-values."""
    p = np.asarray(p_values, dtype=float)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(np.isfinite(p))
    if ok.size:
        order = np.argsort(p[ok], kind="stable")
        ranked = p[ok][order] * (ok.size - np.arange(ok.size))
        out[ok[order]] = np.minimum(1.0, np.maximum.accumulate(ranked))
    return out


def stratified_permutation_pvalues(
    sums: ArrayLike,
    side: ArrayLike,
    strata: ArrayLike | None,
    statistic: Callable[[NDArray[np.float64]], NDArray[np.float64]],
    n_perm: int = 2000,
    seed: int | None = 0,
    studentized: bool = False,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Two-sided permutation p-values of ``statistic(A) - statistic(B)`` (``studentized``: of that
    difference over its standard error, :func:`metrics.core.studentize.studentizer`).

    ``sums``: per-cluster column sums (n, k); ``side``: 0 (A) / 1 (B) per cluster;
    ``strata``: stratum per cluster (None: one). ``statistic`` maps stratum totals
    ``(P, n_strata, k)`` to ``(P, m)``. Each permutation shuffles the side labels of
    the clusters of every stratum (keeping how many each side has there): ``n_A`` of
    the stratum's clusters, drawn without replacement, go to A
    (:func:`metrics.core.resampling.permutation_totals`: by distinct rows, multivariate
    hypergeometric). Returns ``(observed difference (m,), p-values (m,))``."""
    s = np.asarray(sums, dtype=float)
    sd = np.asarray(side).astype(int)
    if s.ndim == 1:
        s = s[:, None]
    if strata is None:
        st = np.zeros(s.shape[0], dtype=np.intp)
    else:
        st, _ = encode(np.asarray(strata))
    n_strata = int(st.max()) + 1 if st.size else 0
    rows = [np.flatnonzero(st == j) for j in range(n_strata)]
    tot = np.stack([s[r].sum(axis=0) for r in rows], axis=0)
    obs_a = np.stack([s[r][sd[r] == 0].sum(axis=0) for r in rows], axis=0)[None]
    observed = np.asarray(statistic(obs_a), dtype=float).reshape(1, -1)[0] - np.asarray(
        statistic(tot[None] - obs_a), dtype=float).reshape(1, -1)[0]
    k = s.shape[1]
    target, scale = observed, None
    if studentized:
        s, scale, se_obs = studentizer(s, sd, rows, tot, obs_a[0], statistic)
        with np.errstate(invalid="ignore", divide="ignore"):
            target = np.where(se_obs > 0, observed / np.where(se_obs > 0, se_obs, 1.0),
                              np.where(observed == 0, 0.0, np.inf))
    rng = np.random.default_rng(seed)
    # Side-A totals of every permutation, stratum by stratum (resampling.permutation_totals: the
    # number of side-A images of each distinct row is multivariate hypergeometric).
    ta = np.stack([permutation_totals(s[r], int((sd[r] == 0).sum()), n_perm, rng) for r in rows], axis=1)
    hits = np.zeros(observed.size)
    step = max(1, 2_000_000 // max(1, ta[0].size))
    for done in range(0, n_perm, step):
        a = ta[done:done + step]
        m = a.shape[0]
        d = np.asarray(statistic(a[..., :k]), dtype=float).reshape(m, -1) - np.asarray(
            statistic(tot[None] - a[..., :k]), dtype=float).reshape(m, -1)
        if scale is not None:
            with np.errstate(invalid="ignore", divide="ignore"):
                se = scale(a)
                d = np.where(se > 0, d / np.where(se > 0, se, 1.0), np.where(d == 0, 0.0, np.inf))
        with np.errstate(invalid="ignore"):
            hits += np.sum(np.abs(d) >= np.abs(target) - 1e-12 * np.maximum(1.0, np.abs(target)), axis=0)
    p = (1.0 + hits) / (n_perm + 1.0)
    p[~np.isfinite(observed)] = np.nan
    return observed, p


def compare_sums(
    sums_a: ArrayLike,
    sums_b: ArrayLike,
    statistic: Callable[[NDArray[np.float64]], NDArray[np.float64]],
    names: Sequence[str],
    strata_a: ArrayLike | None = None,
    strata_b: ArrayLike | None = None,
    family: Sequence[str] | None = None,
    n_boot: int = 2000,
    n_perm: int = 2000,
    confidence: float = 0.95,
    seed: int | None = 0,
    studentized: bool = True,
) -> dict[str, Difference]:
    """Compare side A with side B on every metric ``statistic`` returns.

    ``sums_a`` / ``sums_b``: per-image column sums with the same columns on both sides
    (n_a, k), (n_b, k); ``strata_a`` / ``strata_b``: stratum codes 0..S-1 per image (None:
    one stratum); ``statistic``: stratum totals ``(B, S, k)`` -> ``(B, m)`` metric values
    of ONE side; ``names``: the m metric names; ``family``: names whose p-values are
    Holm-adjusted together (the rest get ``p_holm = None``). ``studentized`` (default): the
    permutation test shuffles the difference over its delta-method standard error (issue 22: the raw
    difference rejected a true null 15-45% of the time when the sides differ in size and variance,
    bench/README.md section 10); False: the raw difference.
    Seeds: the bootstrap uses ``seed``, the permutations ``seed + 1``."""
    a = np.asarray(sums_a, dtype=float)
    b = np.asarray(sums_b, dtype=float)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1]:
        raise ValueError("sums_a and sums_b must be 2-D with the same columns")
    if a.shape[0] == 0 or b.shape[0] == 0:
        raise ValueError("both sides need at least one image")
    sa = np.zeros(a.shape[0], dtype=np.intp) if strata_a is None else np.asarray(strata_a, dtype=np.intp)
    sb = np.zeros(b.shape[0], dtype=np.intp) if strata_b is None else np.asarray(strata_b, dtype=np.intp)
    n_strata = int(max(sa.max(initial=0), sb.max(initial=0))) + 1
    sums = np.concatenate([a, b])
    side = np.concatenate([np.zeros(a.shape[0], int), np.ones(b.shape[0], int)])
    strata = np.concatenate([sa, sb])

    def diff(t: NDArray[np.float64]) -> NDArray[np.float64]:
        ta, tb = t[:, :n_strata, :], t[:, n_strata:, :]
        return np.asarray(statistic(ta), dtype=float).reshape(t.shape[0], -1) - np.asarray(
            statistic(tb), dtype=float).reshape(t.shape[0], -1)

    tot = np.zeros((2 * n_strata, sums.shape[1]))
    np.add.at(tot, side * n_strata + strata, sums)
    if n_boot > 0:
        # Side A's strata are 0..S-1, side B's S..2S-1: every draw resamples within both.
        ci = pattern_cluster_bca(sums, diff, side * n_strata + strata, n_boot, confidence, seed)
    else:  # no resampling asked for: the differences without an interval
        point = diff(tot[None])[0]
        nan = np.full(point.shape, np.nan)
        ci = CI(point, nan, nan, confidence, "none", int(sums.shape[0]), 0, seed, np.zeros(point.shape, bool))
    val_a = np.asarray(statistic(tot[None, :n_strata]), dtype=float).reshape(-1)
    val_b = np.asarray(statistic(tot[None, n_strata:]), dtype=float).reshape(-1)
    if n_perm > 0:
        _, p = stratified_permutation_pvalues(sums, side, strata, statistic, n_perm,
                                              None if seed is None else seed + 1, studentized)
    else:
        p = np.full(val_a.size, np.nan)
    if len(names) != val_a.size:
        raise ValueError(f"statistic returned {val_a.size} metrics for {len(names)} names")
    fam = set(family or ())
    idx = [i for i, n in enumerate(names) if n in fam]
    adj = np.full(val_a.size, np.nan)
    if idx:
        adj[idx] = holm(p[idx])
    est, lo, hi = (np.atleast_1d(x) for x in (ci.estimate, ci.low, ci.high))
    ext = np.atleast_1d(ci.extended)
    out = {}
    for i, n in enumerate(names):
        out[n] = Difference(
            n, float(val_a[i]), float(val_b[i]), float(est[i]), float(lo[i]), float(hi[i]), float(p[i]),
            (None if not np.isfinite(adj[i]) else float(adj[i])) if n in fam else None,
            confidence, ci.method, n_boot, n_perm, bool(ext[i]))
    return out


# ------------------------------------------------------------------------------------ PST
def pst_image_sums(
    image_ids: ArrayLike,
    identities: ArrayLike,
    labels: ArrayLike,
    stereotypes: ArrayLike,
    identity_order: Sequence[str],
    treatment: Treatment = "paper",
) -> NDArray[np.float64]:
    """Per-image sums (n_images, 2 * len(identity_order)): for identity i, column 2i =
    sum of w*Stereo and 2i+1 = sum of w over the image's persons of that identity
    (w, Stereo as :func:`metrics.core.pst.stereo_weights`). Persons whose identity is
    not in ``identity_order`` are dropped."""
    s, w = stereo_weights(labels, stereotypes, treatment)
    pos = index_in(as_1d(identities, "identities").astype(str), list(identity_order))
    codes, ids = encode(as_1d(image_ids, "image_ids"))
    keep = pos >= 0
    n_img, n_id = len(ids), len(identity_order)
    out = np.zeros((n_img, 2 * n_id))
    cells = codes[keep] * n_id + pos[keep]
    out[:, 0::2] = np.bincount(cells, weights=(s * w)[keep].astype(float), minlength=n_img * n_id).reshape(n_img, n_id)
    out[:, 1::2] = np.bincount(cells, weights=w[keep].astype(float), minlength=n_img * n_id).reshape(n_img, n_id)
    return out


def pst_statistic(identity_order: Sequence[str], groups: Mapping[str, str] | None = None
                  ) -> tuple[Callable[[NDArray[np.float64]], NDArray[np.float64]], list[str]]:
    """``(statistic, names)`` for :func:`compare_sums` on :func:`pst_image_sums` columns:
    ``overall`` (formula 1), ``group:<g>`` (mean micro STS of the group's identities)
    and ``micro:<identity>`` (formula 2), in percent; stratum totals are summed."""
    ids = list(identity_order)
    g_names = sorted(set(groups[i] for i in ids if i in groups)) if groups else []
    member = np.array([[1.0 if groups and groups.get(i) == g else 0.0 for i in ids] for g in g_names]).reshape(
        len(g_names), len(ids))

    def stat(t: NDArray[np.float64]) -> NDArray[np.float64]:
        tt = t.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            overall = 100.0 * tt[:, 0::2].sum(axis=1) / tt[:, 1::2].sum(axis=1)
            micro = 100.0 * tt[:, 0::2] / tt[:, 1::2]
            ok = np.isfinite(micro)
            grp = (np.where(ok, micro, 0.0) @ member.T) / (ok.astype(float) @ member.T)
        return np.concatenate([overall[:, None], grp, micro], axis=1)

    return stat, ["overall", *[f"group:{g}" for g in g_names], *[f"micro:{i}" for i in ids]]


def _pst_side(side: Mapping[str, ArrayLike], ids: list[str], treatment: Treatment) -> NDArray[np.float64]:
    return pst_image_sums(side["image_ids"], side["identities"], side["labels"], side["stereotypes"], ids, treatment)


def compare_pst(
    a: Mapping[str, ArrayLike],
    b: Mapping[str, ArrayLike],
    groups: Mapping[str, str] | None = None,
    treatment: Treatment = "paper",
    identities: Sequence[str] | None = None,
    n_boot: int = 2000,
    n_perm: int = 2000,
    confidence: float = 0.95,
    seed: int | None = 0,
    studentized: bool = True,
) -> dict[str, Any]:
    """PST side A vs side B (two campaigns, or two settings such as ``intervention`` vs
    ``paired``): overall, group and per-identity STS differences (A - B).

    ``a`` / ``b``: dicts of per-person arrays ``image_ids``, ``identities``, ``labels``,
    ``stereotypes``. ``identities``: compare on these only (default: those present on
    both sides; identities of one side only are listed under ``only_a`` / ``only_b``,
    not silently dropped). The per-identity tests form the Holm family.
    Returns ``{"overall": Difference, "groups": {g: Difference}, "micro": {id:
    Difference}, "identities": [...], "only_a": [...], "only_b": [...], "treatment"}``."""
    ia = sorted(set(as_1d(a["identities"]).astype(str).tolist()))
    ib = sorted(set(as_1d(b["identities"]).astype(str).tolist()))
    ids = sorted(set(ia) & set(ib)) if identities is None else list(identities)
    stat, names = pst_statistic(ids, groups)
    res = compare_sums(_pst_side(a, ids, treatment), _pst_side(b, ids, treatment), stat, names,
                       family=[n for n in names if n.startswith("micro:")], n_boot=n_boot, n_perm=n_perm,
                       confidence=confidence, seed=seed, studentized=studentized)
    return {
        "treatment": treatment,
        "identities": ids,
        "only_a": sorted(set(ia) - set(ids)),
        "only_b": sorted(set(ib) - set(ids)),
        "overall": res["overall"],
        "groups": {n[6:]: d for n, d in res.items() if n.startswith("group:")},
        "micro": {n[6:]: d for n, d in res.items() if n.startswith("micro:")},
    }


def compare_pst_gap(
    a_single: Mapping[str, ArrayLike],
    a_paired: Mapping[str, ArrayLike],
    b_single: Mapping[str, ArrayLike],
    b_paired: Mapping[str, ArrayLike],
    groups: Mapping[str, str] | None = None,
    treatment: Treatment = "paper",
    n_boot: int = 2000,
    n_perm: int = 2000,
    confidence: float = 0.95,
    seed: int | None = 0,
) -> dict[str, Any]:
    """Difference of the paired-minus-single gaps of two campaigns:
    ``(paired_A - single_A) - (paired_B - single_B)``, overall, per group and per
    identity. The setting is a stratum: draws resample images within (campaign,
    setting) and permutations swap campaign labels between images of the same
    setting. Identities: those present in all four inputs."""
    sets = [set(as_1d(x["identities"]).astype(str).tolist()) for x in (a_single, a_paired, b_single, b_paired)]
    ids = sorted(set.intersection(*sets))
    stat1, names = pst_statistic(ids, groups)

    def gap(t: NDArray[np.float64]) -> NDArray[np.float64]:  # strata: 0 single, 1 paired
        return stat1(t[:, 1:2, :]) - stat1(t[:, 0:1, :])

    sa = np.concatenate([_pst_side(a_single, ids, treatment), _pst_side(a_paired, ids, treatment)])
    sb = np.concatenate([_pst_side(b_single, ids, treatment), _pst_side(b_paired, ids, treatment)])
    na_s = len(np.unique(as_1d(a_single["image_ids"])))
    nb_s = len(np.unique(as_1d(b_single["image_ids"])))
    st_a = (np.arange(sa.shape[0]) >= na_s).astype(np.intp)
    st_b = (np.arange(sb.shape[0]) >= nb_s).astype(np.intp)
    res = compare_sums(sa, sb, gap, names, st_a, st_b, [n for n in names if n.startswith("micro:")],
                       n_boot, n_perm, confidence, seed)
    return {
        "treatment": treatment,
        "identities": ids,
        "overall": res["overall"],
        "groups": {n[6:]: d for n, d in res.items() if n.startswith("group:")},
        "micro": {n[6:]: d for n, d in res.items() if n.startswith("micro:")},
    }


# ------------------------------------------------------------------------------------ GEP
def gep_image_sums(
    image_ids: ArrayLike,
    genders: ArrayLike,
    attributes: ArrayLike,
    labels: ArrayLike,
    gender_order: Sequence[str],
    attribute_order: Sequence[str],
    tie_policy: str = "absent",
) -> tuple[NDArray[np.float64], NDArray[np.intp]]:
    """Per-image sums (n_images, 4 * n_attributes): for gender g (0, 1) and attribute j,
    column ``2 (g n + j)`` = present and ``+1`` = counted (as
    :func:`metrics.core.gep.present_weights`), plus the image's gender index (the
    stratum). Rows of other genders / attributes are dropped."""
    from .gep import present_weights

    present, counted, _ = present_weights(labels, tie_policy)  # type: ignore[arg-type]
    g = index_in(as_1d(genders, "genders").astype(str), list(gender_order)[:2])
    a = index_in(as_1d(attributes, "attributes").astype(str), list(attribute_order))
    keep = (g >= 0) & (a >= 0)
    codes, ids = encode(as_1d(image_ids, "image_ids")[keep])
    na = len(attribute_order)
    n_img = len(ids)
    cells = codes * (2 * na) + g[keep] * na + a[keep]
    out = np.zeros((n_img, 4 * na))
    out[:, 0::2] = np.bincount(cells, weights=present[keep].astype(float), minlength=n_img * 2 * na).reshape(n_img, -1)
    out[:, 1::2] = np.bincount(cells, weights=counted[keep].astype(float), minlength=n_img * 2 * na).reshape(n_img, -1)
    gender = np.zeros(n_img, dtype=np.intp)
    gender[codes] = g[keep]
    return out, gender


def gep_statistic(attribute_order: Sequence[str]) -> tuple[Callable[[NDArray[np.float64]], NDArray[np.float64]],
                                                           list[str]]:
    """``(statistic, names)`` on :func:`gep_image_sums` columns: ``score`` (mean |v_j|
    over the attributes defined for both genders) and ``vector:<attribute>``."""
    na = len(attribute_order)

    def stat(t: NDArray[np.float64]) -> NDArray[np.float64]:
        tt = t.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            f = tt[:, 0::2] / tt[:, 1::2]
        v = f[:, :na] - f[:, na:]
        ok = np.isfinite(v)
        with np.errstate(invalid="ignore", divide="ignore"):
            score = np.where(ok, np.abs(v), 0.0).sum(axis=1) / ok.sum(axis=1)
        return np.concatenate([score[:, None], v], axis=1)

    return stat, ["score", *[f"vector:{x}" for x in attribute_order]]


def compare_gep(
    a: Mapping[str, ArrayLike],
    b: Mapping[str, ArrayLike],
    gender_order: Sequence[str],
    attribute_order: Sequence[str],
    tie_policy: str = "absent",
    n_boot: int = 2000,
    n_perm: int = 2000,
    confidence: float = 0.95,
    seed: int | None = 0,
    studentized: bool = True,
) -> dict[str, Any]:
    """GEP side A vs side B (two campaigns / models, same setting): the GEP score and
    every vector component (A - B). ``a`` / ``b``: dicts of per-question arrays
    ``image_ids``, ``genders``, ``attributes``, ``labels``. The image's gender is a
    stratum (draws and permutations stay within a gender). Vector components form the
    Holm family. The score difference uses the BCa interval: the upward bias of each
    score near 0 largely cancels in a difference of two scores of the same design, but
    not when one model is near 0 and the other is not; the permutation p-value does not
    depend on that and is the test to read there."""
    sa, ga = gep_image_sums(a["image_ids"], a["genders"], a["attributes"], a["labels"], gender_order,
                            attribute_order, tie_policy)
    sb, gb = gep_image_sums(b["image_ids"], b["genders"], b["attributes"], b["labels"], gender_order,
                            attribute_order, tie_policy)
    stat, names = gep_statistic(attribute_order)
    res = compare_sums(sa, sb, stat, names, ga, gb, [n for n in names if n.startswith("vector:")], n_boot, n_perm,
                       confidence, seed, studentized)
    vector = {n[7:]: d for n, d in res.items() if n.startswith("vector:")}
    if studentized:  # the current method; the raw test (studentized=False) stays as it was printed before
        vector = _sparse_components_by_mover(sa, sb, list(attribute_order), vector, confidence)
    return {"tie_policy": tie_policy, "score": res["score"], "vector": vector}


#: A GEP vector component is sparse when a gender on a side has fewer than this many present (or absent)
#: counted questions for it: there compare's difference interval and test are MOVER, not the
#: bootstrap / permutation ones (MOVER-Jeffreys, :mod:`metrics.core.mover`; metrics.core.report_warnings DOMAIN_RULES["compare.gep.vector.sparse"]).
SPARSE_COMPONENT_COUNT = 10


def gep_component_counts(sums: NDArray[np.float64], n_attributes: int) -> tuple[NDArray[np.float64],
                                                                                NDArray[np.float64]]:
    """(present, counted) per gender and attribute, (2, n_attributes), from :func:`gep_image_sums` rows."""
    tot = sums.sum(axis=0)
    return tot[0::2].reshape(2, n_attributes), tot[1::2].reshape(2, n_attributes)


def _sparse_components_by_mover(sa: NDArray[np.float64], sb: NDArray[np.float64], attributes: list[str],
                                vector: dict[str, Difference], confidence: float) -> dict[str, Difference]:
    """Sparse components' interval and p-value from MOVER (Jeffreys limits) over the four independent proportions
    (one question per image and attribute): a bootstrap or permutation over 1-4 present questions covered
    85% / rejected 7% (issue 22). Holm is recomputed over every component."""
    from dataclasses import replace

    from .mover import MOVER_METHOD, mover_interval, mover_pvalue

    na = len(attributes)
    xa, ca = gep_component_counts(sa, na)
    xb, cb = gep_component_counts(sb, na)
    x = np.stack([xa[0], xa[1], xb[0], xb[1]], axis=1)   # (attributes, 4): A g0, A g1, B g0, B g1
    n = np.stack([ca[0], ca[1], cb[0], cb[1]], axis=1)
    few = np.minimum(x, n - x).min(axis=1) < SPARSE_COMPONENT_COUNT
    usable = few & (n > 0).all(axis=1)
    if not usable.any():
        return vector
    w = np.array([1.0, -1.0, -1.0, 1.0])
    _, low, high = mover_interval(x[usable], n[usable], w, confidence)
    p = mover_pvalue(x[usable], n[usable], w)
    out = dict(vector)
    for k, j in enumerate(np.flatnonzero(usable).tolist()):
        d = out[attributes[j]]
        out[attributes[j]] = replace(d, low=min(float(low[k]), d.difference), high=max(float(high[k]), d.difference),
                                     p_value=float(p[k]), ci_method=MOVER_METHOD, extended=False)
    names = list(out)
    adjusted = holm([out[a].p_value for a in names])
    return {a: replace(out[a], p_holm=None if not np.isfinite(h) else float(h)) for a, h in zip(names, adjusted)}
