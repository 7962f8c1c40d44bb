"""Bias amplification against a reference (Seshadri, Singh & Elazar, "The Bias
Amplification Paradox in Text-to-Image Generation", section 3.3, after Zhao et al. 2017).

For identity o (an occupation), prompt template p, reference %F ``t_o`` (training data,
labour statistics, ...) and generated %F ``g_op`` (percent, 0..100):

- the reference's skew: male-skewed if ``t_o < 50``, female-skewed if ``t_o > 50``;
- amplification ``A_op = t_o - g_op`` for a male-skewed identity (positive when the
  generated images skew further male), ``g_op - t_o`` for a female-skewed one;
  negative values are de-amplification;
- identities whose direction changes (``t_o`` and ``g_op`` on opposite sides of 50)
  are excluded from template p's mean and listed by name ("the paper excludes
  occupations that exhibit different directions of bias at training and generation").
  Boundary cases the paper does not meet, decided here: ``t_o = 50`` (no skew) ->
  excluded as ``"balanced reference"``; ``g_op = 50`` -> excluded as ``"direction
  change"`` (a balanced generation has no direction); identities without a reference
  value are listed under ``uncovered``; identities without a generated value for a
  template under ``missing`` for that template;
- per template the mean of ``A_op`` over the kept identities; the headline is the
  unweighted average of the per-template means (computed from unrounded means);
- a one-sample t-test of the kept ``A_op`` against 0 per template (scipy
  ``ttest_1samp``; the paper tests each prompt), and one over the identities'
  mean amplification across the templates where they are kept;
- Pearson and Spearman correlations of generated vs reference %F (scipy), per
  template over every identity with both values (excluded ones included: the
  correlation describes the whole relation) and pooled over (identity, template).

Check (tests/metrics/core/test_amplification_reference.py): the paper's appendix table
(62 occupations, training %F and prompts 1-4 for Stable Diffusion 1.4) gives the naive
row of its Table 3, 10.24 / 17.57 / 10.77 / 11.68 with 48 / 46 / 46 / 42 occupations
kept, average 12.5628 (printed 12.57 = the mean of the four rounded figures, 12.565).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ._arrays import as_1d, encode
from .pst import K_FEM, K_MASC, K_MISSING, Treatment, label_kinds

__all__ = [
    "skew",
    "amplification_value",
    "amplification",
    "generated_percent_female",
    "amplification_from_labels",
    "amplification_image_sums",
    "amplification_statistic",
    "compare_amplification",
    "amplification_null_test",
    "MIN_AMPLIFICATION_IMAGES",
]


def skew(reference_pct_f: float) -> str:
    """``"male"`` (< 50), ``"female"`` (> 50) or ``"balanced"`` (= 50)."""
    if reference_pct_f < 50:
        return "male"
    if reference_pct_f > 50:
        return "female"
    return "balanced"


def amplification_value(generated_pct_f: float, reference_pct_f: float) -> tuple[float, str | None]:
    """``(A, reason)``: A toward the reference's skew, and why it is excluded (None if
    kept): ``"balanced reference"`` or ``"direction change"``."""
    g, t = float(generated_pct_f), float(reference_pct_f)
    sk = skew(t)
    if sk == "balanced":
        return float("nan"), "balanced reference"
    a = t - g if sk == "male" else g - t
    if (sk == "male" and g >= 50) or (sk == "female" and g <= 50):
        return a, "direction change"
    return a, None


def _ttest(values: Sequence[float]) -> dict[str, Any]:
    from scipy import stats

    v = np.asarray(values, dtype=float)
    if v.size < 2 or np.allclose(v, v[0]):
        return {"t": None, "p_value": None, "df": int(max(v.size - 1, 0)), "n": int(v.size)}
    res = stats.ttest_1samp(v, 0.0)
    return {"t": float(res.statistic), "p_value": float(res.pvalue), "df": int(v.size - 1), "n": int(v.size)}


def _correlations(gen: Sequence[float], ref: Sequence[float]) -> dict[str, Any]:
    from scipy import stats

    g, r = np.asarray(gen, dtype=float), np.asarray(ref, dtype=float)
    if g.size < 3 or np.allclose(g, g[0]) or np.allclose(r, r[0]):
        return {"pearson": None, "pearson_p": None, "spearman": None, "spearman_p": None, "n": int(g.size)}
    pe = stats.pearsonr(g, r)
    sp = stats.spearmanr(g, r)
    return {"pearson": float(pe.statistic), "pearson_p": float(pe.pvalue), "spearman": float(sp.statistic),
            "spearman_p": float(sp.pvalue), "n": int(g.size)}


def amplification(
    generated: Mapping[str, Mapping[str, float]],
    reference: Mapping[str, float | None],
    templates: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Amplification of generated %F over a reference (see the module docstring).

    ``generated``: ``{template: {identity: %F}}`` (percent; NaN / None = no value);
    ``reference``: ``{identity: %F}`` (None = no reference value, e.g. "N/A").
    Returns plain data::

        {"templates": {template: {"rows": {identity: {"generated", "reference",
           "skew", "amplification", "excluded": reason | None}}, "kept": [...],
           "excluded": {identity: reason}, "n_kept": int, "mean": float,
           "ttest": {...}, "correlation": {...}, "missing": [...]}},
         "average": float (mean of the template means), "ttest": {...} (over the
         identities' mean amplification), "correlation": {...} (pooled),
         "uncovered": [identities without a reference value]}
    """
    names = list(templates) if templates is not None else list(generated)
    ref = {k: (None if v is None or (isinstance(v, float) and np.isnan(v)) else float(v)) for k, v in reference.items()}
    all_ids = sorted({i for t in names for i in generated.get(t, {})})
    uncovered = sorted(i for i in all_ids if ref.get(i) is None)
    out: dict[str, Any] = {"templates": {}, "uncovered": uncovered}
    per_identity: dict[str, list[float]] = {}
    pooled_g: list[float] = []
    pooled_r: list[float] = []
    means = []
    for t in names:
        gen_t = generated.get(t, {})
        rows: dict[str, Any] = {}
        kept, excluded, missing = [], {}, []
        corr_g, corr_r = [], []
        for ident in all_ids:
            r = ref.get(ident)
            if r is None:
                continue
            g = gen_t.get(ident)
            if g is None or (isinstance(g, float) and np.isnan(g)):
                missing.append(ident)
                continue
            a, reason = amplification_value(g, r)
            rows[ident] = {"generated": float(g), "reference": r, "skew": skew(r),
                           "amplification": a, "excluded": reason}
            corr_g.append(float(g))
            corr_r.append(r)
            if reason is None:
                kept.append(ident)
                per_identity.setdefault(ident, []).append(a)
            else:
                excluded[ident] = reason
        vals = [rows[i]["amplification"] for i in kept]
        mean = float(np.mean(vals)) if vals else float("nan")
        means.append(mean)
        pooled_g += corr_g
        pooled_r += corr_r
        out["templates"][t] = {"rows": rows, "kept": kept, "excluded": excluded, "n_kept": len(kept),
                               "mean": mean, "ttest": _ttest(vals), "correlation": _correlations(corr_g, corr_r),
                               "missing": missing}
    finite = [m for m in means if np.isfinite(m)]
    out["average"] = float(np.mean(finite)) if finite else float("nan")
    out["ttest"] = _ttest([float(np.mean(v)) for v in per_identity.values()])
    out["correlation"] = _correlations(pooled_g, pooled_r)
    return out


def generated_percent_female(
    identities: ArrayLike,
    templates: ArrayLike,
    labels: ArrayLike,
    treatment: Treatment = "excluded",
) -> dict[str, dict[str, float]]:
    """``{template: {identity: %F}}`` from per-person labels.

    Default ``"excluded"``: %F = Feminine / (Feminine + Masculine), Cannot identify
    and ties left out - the paper classifies gender only where it is confident
    (CLIP probability >= 0.9 on a detected face), so its %F is among determined
    images. ``"paper"`` (the PST convention) keeps them in the denominator. Missing
    labels never count."""
    lk = label_kinds(labels)
    if treatment == "excluded":
        w = ((lk == K_FEM) | (lk == K_MASC)).astype(float)
    elif treatment == "paper":
        w = (lk != K_MISSING).astype(float)
    else:
        raise ValueError(f"unknown treatment {treatment!r}")
    t_codes, t_ids = encode(as_1d(templates, "templates").astype(str))
    i_codes, i_ids = encode(as_1d(identities, "identities").astype(str))
    ni = len(i_ids)
    cell = t_codes * ni + i_codes
    fem = np.bincount(cell, weights=(lk == K_FEM) * w, minlength=len(t_ids) * ni)
    den = np.bincount(cell, weights=w, minlength=len(t_ids) * ni)
    out: dict[str, dict[str, float]] = {}
    for ti, t in enumerate(t_ids.tolist()):
        row = {}
        for ii, ident in enumerate(i_ids.tolist()):
            d = den[ti * ni + ii]
            if d > 0:
                row[str(ident)] = 100.0 * fem[ti * ni + ii] / d
        out[str(t)] = row
    return out


def amplification_from_labels(
    identities: ArrayLike,
    templates: ArrayLike,
    labels: ArrayLike,
    reference: Mapping[str, float | None],
    treatment: Treatment = "excluded",
) -> dict[str, Any]:
    """:func:`amplification` of the %F computed by :func:`generated_percent_female`."""
    gen = generated_percent_female(identities, templates, labels, treatment)
    return amplification(gen, reference, sorted(gen))


def amplification_image_sums(
    image_ids: ArrayLike,
    identities: ArrayLike,
    templates: ArrayLike,
    labels: ArrayLike,
    identity_order: Sequence[str],
    template_order: Sequence[str],
    treatment: Treatment = "excluded",
) -> np.ndarray:
    """Per-image sums for comparisons: column ``2 (t n + i)`` = Feminine persons and
    ``+1`` = counted persons of identity i under template t (``n`` identities)."""
    from ._arrays import index_in

    lk = label_kinds(labels)
    w = ((lk == K_FEM) | (lk == K_MASC)) if treatment == "excluded" else (lk != K_MISSING)
    ii = index_in(as_1d(identities, "identities").astype(str), list(identity_order))
    ti = index_in(as_1d(templates, "templates").astype(str), list(template_order))
    keep = (ii >= 0) & (ti >= 0)
    codes, ids = encode(as_1d(image_ids, "image_ids")[keep])
    n_img, ni, nt = len(ids), len(identity_order), len(template_order)
    cells = codes * (nt * ni) + ti[keep] * ni + ii[keep]
    out = np.zeros((n_img, 2 * nt * ni))
    out[:, 0::2] = np.bincount(cells, weights=((lk == K_FEM) & w)[keep].astype(float),
                               minlength=n_img * nt * ni).reshape(n_img, -1)
    out[:, 1::2] = np.bincount(cells, weights=w[keep].astype(float), minlength=n_img * nt * ni).reshape(n_img, -1)
    return out


def amplification_statistic(
    reference: Mapping[str, float],
    identity_order: Sequence[str],
    template_order: Sequence[str],
    kept: Mapping[str, Sequence[str]],
) -> tuple[Any, list[str]]:
    """``(statistic, names)`` for :func:`metrics.core.significance.compare_sums` on
    :func:`amplification_image_sums` columns: the mean amplification per template over
    the FIXED identity sets ``kept[template]`` (for a comparison: the identities kept
    on both sides, so both means average the same identities; the sets do not move
    with resampling, i.e. the comparison is conditional on them), and the average over
    the templates (``"average"``)."""
    ni, nt = len(identity_order), len(template_order)
    ref = np.array([reference.get(i, np.nan) for i in identity_order], dtype=float)
    sign = np.where(ref < 50, -1.0, 1.0)  # A = sign * (g - t)
    masks = np.array([[1.0 if i in set(kept.get(t, ())) else 0.0 for i in identity_order] for t in template_order])

    def stat(tt: np.ndarray) -> np.ndarray:
        tot = tt.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            g = 100.0 * tot[:, 0::2] / tot[:, 1::2]
        g = g.reshape(tot.shape[0], nt, ni)
        a = sign * (g - ref)
        ok = np.isfinite(a) & (masks[None] > 0)
        with np.errstate(invalid="ignore", divide="ignore"):
            per_t = np.where(ok, a, 0.0).sum(axis=2) / ok.sum(axis=2)
            fin = np.isfinite(per_t)
            avg = np.where(fin, per_t, 0.0).sum(axis=1) / fin.sum(axis=1)
        return np.concatenate([per_t, avg[:, None]], axis=1)

    return stat, [*[f"template:{t}" for t in template_order], "average"]


def compare_amplification(
    a: Mapping[str, ArrayLike],
    b: Mapping[str, ArrayLike],
    reference: Mapping[str, float | None],
    treatment: Treatment = "excluded",
    n_boot: int = 2000,
    n_perm: int = 2000,
    confidence: float = 0.95,
    seed: int | None = 0,
) -> dict[str, Any]:
    """Amplification of side A minus side B (two campaigns against one reference), per
    template and for the average over templates, with BCa intervals and permutation
    p-values (:func:`metrics.core.significance.compare_sums`; the per-template tests
    form the Holm family). ``a`` / ``b``: per-person arrays ``image_ids``,
    ``identities``, ``templates``, ``labels``. Templates: those of both sides; each
    template's mean runs over the identities kept (same direction as the reference)
    on BOTH sides, listed under ``kept``."""
    from .significance import compare_sums

    gen_a = generated_percent_female(a["identities"], a["templates"], a["labels"], treatment)
    gen_b = generated_percent_female(b["identities"], b["templates"], b["labels"], treatment)
    templates = sorted(set(gen_a) & set(gen_b))
    amp_a = amplification(gen_a, reference, templates)
    amp_b = amplification(gen_b, reference, templates)
    kept = {t: sorted(set(amp_a["templates"][t]["kept"]) & set(amp_b["templates"][t]["kept"])) for t in templates}
    ids = sorted(set().union(*kept.values())) if kept else []
    ref = {k: float(v) for k, v in reference.items() if v is not None}
    stat, names = amplification_statistic(ref, ids, templates, kept)
    sums = [amplification_image_sums(x["image_ids"], x["identities"], x["templates"], x["labels"], ids, templates,
                                     treatment) for x in (a, b)]
    res = compare_sums(sums[0], sums[1], stat, names, family=[n for n in names if n.startswith("template:")],
                       n_boot=n_boot, n_perm=n_perm, confidence=confidence, seed=seed)
    return {"treatment": treatment, "templates": {t: res[f"template:{t}"] for t in templates},
            "average": res["average"], "kept": kept, "uncovered": sorted(set(amp_a["uncovered"]) | set(amp_b["uncovered"]))}


#: Fewest images (persons) per identity and template for which the report prints a test of amplification
#: (bench/validity_cells/pst.py: `amplification.*`): with 3 the exclusion rule decided on noisy %F made
#: the paper's t-test reject a true "no amplification" in 78% of campaigns (issue 22).
MIN_AMPLIFICATION_IMAGES = 20


def _amplification_means(g: np.ndarray, ref: np.ndarray, exclude: bool) -> np.ndarray:
    """(B,) average over templates of the per-template mean amplification, from generated %F
    ``g`` (B, templates, identities) (NaN = no value) and reference %F ``ref`` (identities,), with or
    without the direction-change exclusion (balanced references always left out)."""
    male = ref < 50
    a = np.where(male, ref - g, g - ref)
    ok = np.isfinite(a) & (ref != 50)
    if exclude:
        ok &= np.where(male, g < 50, g > 50)
    with np.errstate(invalid="ignore", divide="ignore"):
        per_t = np.where(ok, a, 0.0).sum(axis=2) / ok.sum(axis=2)
        fin = np.isfinite(per_t)
        return np.where(fin, per_t, 0.0).sum(axis=1) / fin.sum(axis=1)


def amplification_null_test(
    feminine: ArrayLike,
    counted: ArrayLike,
    reference: ArrayLike,
    n_draws: int = 2000,
    seed: int | None = 0,
) -> dict[str, Any]:
    """Calibrated test of "generated = reference" for the average amplification, by parametric
    bootstrap with the direction-change exclusion inside every draw.

    ``feminine`` / ``counted``: (templates, identities) counts of persons labelled Feminine and of
    persons counted; ``reference``: (identities,) reference %F. Under the null each counted person of
    identity o is Feminine with probability ``t_o / 100``; each draw recomputes generated %F, decides
    the exclusion on it (as the report does on the data) and averages. Returns ``observed`` (the
    report's average with exclusion), ``null_mean`` (what the exclusion alone produces with no
    amplification: positive with few images), ``excess`` = observed - null_mean, two-sided
    ``p_value`` (twice the smaller tail, +1 corrected), the same for the average WITHOUT exclusion
    (``without_exclusion``: observed, null_mean, p_value), ``n_draws``, ``method``."""
    f = np.asarray(feminine, dtype=float)
    n = np.asarray(counted, dtype=float)
    ref = np.asarray(reference, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        g_obs = np.where(n > 0, 100.0 * f / np.where(n > 0, n, 1), np.nan)
    rng = np.random.default_rng(seed)
    p0 = np.clip(ref / 100.0, 0.0, 1.0)
    draws = rng.binomial(n.astype(np.int64)[None].repeat(n_draws, axis=0), np.broadcast_to(p0, n.shape)[None])
    with np.errstate(invalid="ignore", divide="ignore"):
        g_null = np.where(n[None] > 0, 100.0 * draws / np.where(n > 0, n, 1)[None], np.nan)
    out: dict[str, Any] = {"n_draws": int(n_draws),
                           "method": "parametric bootstrap under generated = reference (exclusion inside each draw)"}
    for key, exclude in (("with_exclusion", True), ("without_exclusion", False)):
        obs = float(_amplification_means(g_obs[None], ref, exclude)[0])
        null = _amplification_means(g_null, ref, exclude)
        null = null[np.isfinite(null)]
        if not np.isfinite(obs) or null.size == 0:
            out[key] = {"observed": None, "null_mean": None, "p_value": None}
            continue
        upper = (1 + np.sum(null >= obs - 1e-12)) / (null.size + 1)
        lower = (1 + np.sum(null <= obs + 1e-12)) / (null.size + 1)
        out[key] = {"observed": obs, "null_mean": float(null.mean()), "excess": obs - float(null.mean()),
                    "p_value": float(min(1.0, 2 * min(upper, lower)))}
    return out
