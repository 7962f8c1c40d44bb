"""PST analyses beyond one setting's scores: STS per run with an interval for the mean of
the runs (PST Table 13), the "most stereotyped identities" selection and the
fairness-intervention comparison (PST section 5, Tables 5-6).

Input rows are persons, as in :mod:`metrics.core.pst`: ``image_ids``, ``identities``,
``labels``, ``stereotypes`` (and ``runs`` where needed), as dicts of arrays or arrays.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._arrays import as_1d, encode
from .intervals import CI, stratified_cluster_bca
from .pst import Treatment, micro_sts, overall_sts, stereo_weights

__all__ = [
    "runs_sts",
    "top_k_identities",
    "restrict_to_identities",
    "intervention_analysis",
]


def runs_sts(
    image_ids: ArrayLike,
    runs: ArrayLike,
    labels: ArrayLike,
    stereotypes: ArrayLike,
    treatment: Treatment = "paper",
    n_boot: int = 2000,
    confidence: float = 0.95,
    seed: int | None = 0,
) -> dict[str, Any]:
    """Overall STS per run and the mean of the runs, with intervals, for ANY setting
    with more than one sample (run n = the n-th sample of every prompt: single, paired,
    intervention).

    ``runs_mean = (1/R) sum_r STS_r`` (PST Table 13 "Average"; equal to the pooled
    overall STS only when every run counts the same number of persons). Its interval
    (``runs_mean_ci``) is computed from the runs: a BCa bootstrap (``"bca-cluster"``)
    that resamples images within each run (a run is a stratum, so every draw keeps
    every run) and takes the mean of the per-run STS of the draw; the same draws give
    each run's interval. An image must belong to one run (``ValueError`` otherwise).
    Treatment of Cannot identify / ties as :mod:`metrics.core.pst`.

    Returns ``{"runs": {run: sts}, "runs_ci": {run: [lo, hi]}, "runs_mean": float,
    "runs_mean_ci": [lo, hi], "persons": {run: counted persons}, "method",
    "treatment", "n_boot"}`` (run keys keep their type)."""
    s, w = stereo_weights(labels, stereotypes, treatment)
    img_codes, img_ids = encode(as_1d(image_ids, "image_ids"))
    run_codes, run_ids = encode(as_1d(runs, "runs"))
    n_img, n_run = len(img_ids), len(run_ids)
    img_run = np.full(n_img, -1, dtype=np.intp)
    img_run[img_codes] = run_codes
    if np.any(img_run[img_codes] != run_codes):
        raise ValueError("an image belongs to more than one run")
    sums = np.zeros((n_img, 2))
    sums[:, 0] = np.bincount(img_codes, weights=(s * w).astype(float), minlength=n_img)
    sums[:, 1] = np.bincount(img_codes, weights=w.astype(float), minlength=n_img)

    def stat(t: NDArray[np.float64]) -> NDArray[np.float64]:  # t: (B, runs, 2)
        with np.errstate(invalid="ignore", divide="ignore"):
            per = 100.0 * t[:, :, 0] / t[:, :, 1]
        ok = np.isfinite(per)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.where(ok, per, 0.0).sum(axis=1) / ok.sum(axis=1)
        return np.concatenate([per, mean[:, None]], axis=1)

    keys = run_ids.tolist()
    tot = np.zeros((n_run, 2))
    np.add.at(tot, img_run, sums)
    est = stat(tot[None])[0]
    out: dict[str, Any] = {
        "treatment": treatment,
        "runs": {k: float(v) for k, v in zip(keys, est[:n_run])},
        "runs_mean": float(est[n_run]),
        "persons": {k: int(v) for k, v in zip(keys, tot[:, 1])},
        "method": "bca-cluster",
        "n_boot": n_boot,
        "confidence": confidence,
    }
    if n_boot > 0 and n_img > 0:
        ci = stratified_cluster_bca(sums, stat, img_run, n_boot, confidence, seed)
        assert isinstance(ci, CI)
        lo, hi = np.atleast_1d(ci.low), np.atleast_1d(ci.high)
        out["runs_ci"] = {k: [float(lo[i]), float(hi[i])] for i, k in enumerate(keys)}
        out["runs_mean_ci"] = [float(lo[n_run]), float(hi[n_run])]
    return out


def top_k_identities(
    micro: Mapping[str, float],
    groups: Mapping[str, str],
    k: int = 5,
    include_ties: bool = False,
) -> dict[str, Any]:
    """The k most stereotyped identities of each group (PST section 5: "the 5 most
    biased occupations for males and females"), by micro STS, highest first.

    The paper does not say how ties at the cut were broken (in its Table 14 the 5th
    and 6th male occupations tie at 70.00: construction worker, janitor, laborer).
    Here ties are broken by name (ascending) and every identity tied at the k-th value
    is listed under ``tied_at_cut``; ``include_ties=True`` keeps them all instead.
    Identities with an undefined (NaN) micro STS are never selected.

    Returns ``{"selected": {group: [identity, ...]}, "tied_at_cut": {group: [...]},
    "cut": {group: micro STS of the k-th}, "k": k}``."""
    by_group: dict[str, list[tuple[float, str]]] = {}
    for ident, value in micro.items():
        g = groups.get(ident)
        if g is None or value is None or not np.isfinite(value):
            continue
        by_group.setdefault(g, []).append((float(value), ident))
    selected: dict[str, list[str]] = {}
    tied: dict[str, list[str]] = {}
    cut: dict[str, float] = {}
    for g, items in sorted(by_group.items()):
        items.sort(key=lambda x: (-x[0], x[1]))
        if len(items) <= k:
            selected[g] = [i for _, i in items]
            tied[g], cut[g] = [], items[-1][0] if items else float("nan")
            continue
        kth = items[k - 1][0]
        at_cut = [i for v, i in items if v == kth]
        crossing = len(at_cut) > 1 and any(v == kth for v, _ in items[k:])
        chosen = [i for v, i in items if v > kth] + at_cut if include_ties else [i for _, i in items[:k]]
        selected[g] = chosen
        tied[g] = at_cut if crossing else []
        cut[g] = kth
    return {"selected": selected, "tied_at_cut": tied, "cut": cut, "k": k}


def restrict_to_identities(data: Mapping[str, ArrayLike], identities: Sequence[str]) -> dict[str, NDArray[Any]]:
    """The persons of the images whose persons ALL carry one of ``identities`` (for a
    paired setting: the images of the selected pairs, both orders). Every array of
    ``data`` (one entry per person) is filtered alike."""
    ids = as_1d(data["identities"], "identities").astype(str)
    img = as_1d(data["image_ids"], "image_ids")
    codes, _ = encode(img)
    outside = ~np.isin(ids, np.asarray(list(identities), dtype=str))
    bad = np.zeros(codes.max() + 1 if codes.size else 0, dtype=bool)
    bad[codes[outside]] = True
    keep = ~bad[codes]
    return {k: np.asarray(v)[keep] for k, v in data.items()}


def intervention_analysis(
    plain: Mapping[str, ArrayLike],
    intervention: Mapping[str, ArrayLike],
    groups: Mapping[str, str],
    top_k: int | None = None,
    selection_from: Mapping[str, ArrayLike] | None = None,
    include_ties: bool = False,
    treatment: Treatment = "paper",
    n_boot: int = 2000,
    n_perm: int = 2000,
    confidence: float = 0.95,
    seed: int | None = 0,
) -> dict[str, Any]:
    """The fairness intervention against the plain paired setting on the same
    identities (PST section 5, Table 6): overall STS of each, the difference
    (intervention - plain) with its BCa interval and permutation p-value (images
    exchangeable between the two settings), and per group / per identity (Holm over
    identities), via :func:`metrics.core.significance.compare_pst`.

    ``top_k`` (the paper: 5): select the k most stereotyped identities of each group
    by micro STS in ``selection_from`` (default: ``plain``; :func:`top_k_identities`),
    then keep only the images whose persons are all selected, in both settings (the
    paper re-generated the intervention images for these pairs only). Without
    ``top_k`` the identities present in both settings are compared (the paper's power
    aspect: all 36 pairs).

    Returns ``{"plain": STS, "intervention": STS, "difference": Difference,
    "groups": {...}, "micro": {...}, "identities": [...], "selection": {...} | None,
    "images": {"plain": n, "intervention": n}}``."""
    from .significance import compare_pst

    selection = None
    p: dict[str, Any] = dict(plain)
    it: dict[str, Any] = dict(intervention)
    if top_k is not None:
        src = selection_from if selection_from is not None else plain
        micro = micro_sts(src["identities"], src["labels"], src["stereotypes"], treatment)
        selection = top_k_identities(micro, groups, top_k, include_ties)
        chosen = sorted(i for ids in selection["selected"].values() for i in ids)
        p = restrict_to_identities(p, chosen)
        it = restrict_to_identities(it, chosen)
    cmp = compare_pst(it, p, groups, treatment, None, n_boot, n_perm, confidence, seed)
    return {
        "treatment": treatment,
        "plain": overall_sts(p["labels"], p["stereotypes"], treatment),
        "intervention": overall_sts(it["labels"], it["stereotypes"], treatment),
        "difference": cmp["overall"],
        "groups": cmp["groups"],
        "micro": cmp["micro"],
        "identities": cmp["identities"],
        "only_plain": cmp["only_b"],
        "only_intervention": cmp["only_a"],
        "selection": selection,
        "images": {"plain": int(np.unique(as_1d(p["image_ids"])).size),
                   "intervention": int(np.unique(as_1d(it["image_ids"])).size)},
    }
