"""Average Gender and Neutrality (Sathe, Jain & Sitaram, "A Unified Framework and
Dataset for Assessing Gender Bias in Vision-Language Models", section 4.2, after Cho
et al. 2023 "DALL-Eval"), for gender-neutral prompts.

Our labels map onto the paper's three answers: Feminine -> female, Masculine -> male,
Cannot identify (and majority ties) -> "N/A" / no preference. Missing labels
(unanswered) are dropped and counted.

- **Average Gender** ``AG = (N_female - N_male) / (N_female + N_male)`` in [-1, 1]
  (-1: only male, +1: only female). N/A answers are left out of AG and reported beside
  it (count and share), as in the paper's text-to-image table (male / female / N/A).
  Published check (Table 3, text-to-image): DALL-E 3 902 / 165 / 53 -> -0.69;
  SDXL 924 / 124 / 72 -> -0.76; CoDi 828 / 10 / 282 -> -0.976 (printed -0.97, as if
  truncated; so is SDXL image-to-image 982 / 93 / 45 = -0.827, printed -0.82, while
  the other four printed values are rounded).
- **Neutrality** per group p (the paper: a profession) with ``m, f, n`` the male,
  female and neutral (N/A) answers and ``T = m + f + n``:
  ``Neutrality_p = (min(m, f) + n) / (max(m, f) + T)``; the model's Neutrality is the
  mean over the P groups, ``(1/P) sum_p Neutrality_p``. It is 1 if and only if every
  answer is neutral (accuracy 1 where the truth is neutral), 0 when every answer is
  male (or every answer female) in every group, and for equal accuracy it is higher
  when the non-neutral answers are balanced between male and female - the three
  properties the paper's section 4.2 states.

  Source of the formula: our text copy of the paper lost it, and the searchable
  copies of the paper (ar5iv) do not hold the equation either. It is taken from the
  authors' released code, microsoft/measure-sociobias-VLM (MIT licence):
  ``group_by_profession.py`` (per profession: ``(min(male, female) + nop) /
  (max(male, female) + total)``) and ``process_json.py`` (``neutrality()``, the mean of
  that quantity over groups). Checked against the paper: on the authors' released
  responses (3cls_allmodels_blind_direct.csv, commit 8ee56a9), the quantity over all
  neutral images gives GPT4V 0.898 and LLaVA 0.054 where Table 1 prints 0.90 and 0.05;
  the per-profession mean gives 0.867 and 0.056. The released responses are not the
  final ones (Gemini's neutral accuracy is 0.67 there, 0.74 in the paper), so they
  cannot tell the two aggregations apart; we follow the paper's text ("P is the number
  of professions": a mean over professions) and also return the pooled value.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._arrays import as_1d, encode
from .intervals import design_effect, stratified_cluster_draws, wilson_interval
from .pst import K_CANNOT, K_FEM, K_MASC, K_MISSING, K_TIE, label_kinds

__all__ = [
    "average_gender",
    "average_gender_from_labels",
    "neutrality_value",
    "neutrality",
    "neutrality_inversion",
    "NEUTRALITY_NEAR_BALANCE_Z",
    "NEUTRALITY_METHOD",
]

#: The Neutrality interval: inversion of a bootstrap test (:func:`neutrality_inversion`). The cluster
#: BCa interval it replaces ("bca-cluster") covered 91-92% and, with many balanced groups, far less
#: (bench/README.md section 10, "Neutrality").
NEUTRALITY_METHOD = "neutrality-test-inversion"
#: A group is "near balance" when |male share - female share| < NEUTRALITY_NEAR_BALANCE_Z bootstrap standard errors.
NEUTRALITY_NEAR_BALANCE_Z = 2.0


def average_gender(n_female: int, n_male: int, n_na: int = 0, confidence: float = 0.95,
                   deff: float = 1.0) -> dict[str, Any]:
    """AG = (F - M) / (F + M) from counts, N/A reported beside it.

    Interval (``"wilson-deff"``): AG = 2p - 1 with p = F / (F + M), so the Wilson
    interval for p (with design effect ``deff`` when the answers are clustered)
    maps to ``[2 lo - 1, 2 hi - 1]``; it contains AG. AG is NaN (with a NaN
    interval) when F + M = 0."""
    f, m, na = int(n_female), int(n_male), int(n_na)
    if min(f, m, na) < 0:
        raise ValueError("counts must be >= 0")
    decided = f + m
    total = decided + na
    if decided == 0:
        ag, lo, hi = float("nan"), float("nan"), float("nan")
    else:
        ag = (f - m) / decided
        plo, phi = wilson_interval(f, decided, confidence, deff)
        lo, hi = 2 * float(plo[0]) - 1, 2 * float(phi[0]) - 1
    return {
        "average_gender": ag,
        "ci": [lo, hi],
        "method": "wilson-deff",
        "confidence": confidence,
        "female": f,
        "male": m,
        "na": na,
        "na_share": na / total if total else float("nan"),
        "deff": float(deff),
    }


def _kinds_to_counts(lk: NDArray[np.int8]) -> tuple[int, int, int, int]:
    f = int((lk == K_FEM).sum())
    m = int((lk == K_MASC).sum())
    na = int(((lk == K_CANNOT) | (lk == K_TIE)).sum())
    return f, m, na, int((lk == K_MISSING).sum())


def average_gender_from_labels(labels: ArrayLike, image_ids: ArrayLike | None = None,
                               confidence: float = 0.95) -> dict[str, Any]:
    """AG from per-person labels (Feminine / Masculine / Cannot identify / tie /
    missing). Cannot identify and ties are N/A; missing labels are dropped and
    counted under ``missing``. With ``image_ids`` the Wilson interval uses the
    design effect of persons within images (Kish, floored at 1)."""
    lk = label_kinds(labels)
    f, m, na, missing = _kinds_to_counts(lk)
    deff = 1.0
    if image_ids is not None:
        decided = ((lk == K_FEM) | (lk == K_MASC)).astype(float)
        deff = float(design_effect(image_ids, (lk == K_FEM).astype(float), decided))
    out = average_gender(f, m, na, confidence, deff)
    out["missing"] = missing
    return out


def neutrality_value(n_male: ArrayLike, n_female: ArrayLike, n_neutral: ArrayLike) -> NDArray[np.float64]:
    """Per group: ``(min(m, f) + n) / (max(m, f) + m + f + n)``; NaN for an empty group."""
    m = np.asarray(n_male, dtype=float)
    f = np.asarray(n_female, dtype=float)
    n = np.asarray(n_neutral, dtype=float)
    den = np.maximum(m, f) + m + f + n
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, (np.minimum(m, f) + n) / np.where(den > 0, den, 1.0), np.nan)


def _neutral_of_max(share_max: NDArray[np.float64]) -> NDArray[np.float64]:
    """Neutrality of a group from M = max(male, female) / total: ``(1 - M) / (1 + M)`` (the same
    number as :func:`neutrality_value`, since min(m, f) + n = T - max(m, f))."""
    mx = np.clip(share_max, 0.0, 1.0)
    return (1.0 - mx) / (1.0 + mx)


class _NeutralityPath:
    """Null configurations of the Neutrality test inversion, indexed by one scalar t; the mean
    Neutrality of configuration t never increases with t. Per group, s = share male + share female
    and a = share male - share female (signed); Neutrality = (1 - M) / (1 + M), M = (s + |a|) / 2.

    - t in [-G, 0] (G groups; higher Neutrality than the estimate): s at its estimate, the groups set
      balanced (a = 0) one after the other, those most compatible with balance (smallest |a_hat| / s.e.)
      first, the next one shrunk linearly in between. Each balanced group carries the estimator's full
      downward bias, so this is the least favourable way to reach a higher value (shrinking every
      group a little, the GEP inversion's constrained null, covered 62% with half of 100 groups
      balanced); t = 0 is the estimate itself;
    - t < -G: every group balanced, s lowered by -G - t (towards all neutral);
    - t in [0, t1] (lower Neutrality): a = sign(a_hat) clip(|a_hat| + t var_a, 0, s), every group moved
      away from balance (less bias in the null: the conservative side);
    - t > t1: every group one-sided (|a| = s), s raised by t - t1 (towards no neutral answer).

    The null distribution of configuration t is that of the statistic with the bootstrap's
    deviations of (s, a) from their estimates added to the configuration's values."""

    def __init__(self, totals: NDArray[np.float64], draws: NDArray[np.float64], clusters: NDArray[np.float64]) -> None:
        tot = np.maximum(totals.sum(axis=1), 1.0)
        self.s_hat = (totals[:, 0] + totals[:, 1]) / tot
        self.a_hat = (totals[:, 0] - totals[:, 1]) / tot
        tb = np.maximum(draws.sum(axis=2), 1.0)
        a_b = (draws[..., 0] - draws[..., 1]) / tb
        self.e_s = (draws[..., 0] + draws[..., 1]) / tb - self.s_hat
        self.e_a = a_b - self.a_hat
        self.var_a = np.maximum(a_b.var(axis=0), 0.25 / tot ** 2)  # floor: the variance of half a count
        self.sign = np.where(self.a_hat >= 0, 1.0, -1.0)
        self.order = np.argsort(np.abs(self.a_hat) / np.sqrt(self.var_a), kind="stable")
        self.t1 = float(np.max((self.s_hat - np.abs(self.a_hat)) / self.var_a))
        # The bootstrap's variance is the plug-in one: (C - 1) / C of the unbiased one for C clusters.
        self.inflate = np.sqrt(np.maximum(clusters, 2.0) / np.maximum(clusters - 1.0, 1.0))
        self.v_a = np.maximum(self.s_hat - self.a_hat ** 2, 1e-12)
        self.v_s = np.maximum(self.s_hat * (1.0 - self.s_hat), 1e-12)
        self._prepare()

    def config(self, t: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        n = self.order.size
        if t <= -n:  # every group balanced, the non-neutral share lowered towards all neutral
            return np.clip(self.s_hat + (t + n), 0.0, 1.0), np.zeros_like(self.s_hat)
        if t <= 0.0:  # the groups most compatible with balance (smallest |a_hat| / s.e.) set balanced first
            u = -t
            k = int(np.floor(u))
            scale = np.ones_like(self.s_hat)
            scale[self.order[:k]] = 0.0
            if k < n:
                scale[self.order[k]] = 1.0 - (u - k)
            return self.s_hat, self.a_hat * scale
        if t > self.t1:
            s = np.clip(self.s_hat + (t - self.t1), 0.0, 1.0)
            return s, self.sign * s
        return self.s_hat, self.sign * np.clip(np.abs(self.a_hat) + t * self.var_a, 0.0, self.s_hat)

    def value(self, t: float) -> float:
        s, a = self.config(t)
        return float(_neutral_of_max((s + np.abs(a)) / 2).mean())

    def _columns(self, s: NDArray[np.float64], a: NDArray[np.float64], s_part: NDArray[np.float64] | None = None,
                 cols: NDArray[np.intp] | slice = slice(None)) -> NDArray[np.float64]:
        """Each draw's Neutrality of the groups ``cols`` at configuration (s, a) of those groups, (B, len)."""
        scale_a = self.inflate[cols] * np.sqrt(np.maximum(s - a ** 2, 0.0) / self.v_a[cols])
        if s_part is None:
            s_part = s + self.inflate[cols] * np.sqrt(s * (1.0 - s) / self.v_s[cols]) * self.e_s[:, cols]
        return _neutral_of_max((s_part + np.abs(a + scale_a * self.e_a[:, cols])) / 2)

    def _prepare(self) -> None:
        """Arrays reused by every configuration with s at its estimate (t in [-G, t1]): the s part of
        the null, and for t <= 0 each group's column balanced and at its estimate, summed cumulatively
        in the balancing order, so a configuration there costs one group's column, not G."""
        self._s_part = self.s_hat + self.inflate * np.sqrt(self.s_hat * (1.0 - self.s_hat) / self.v_s) * self.e_s
        zero = self._columns(self.s_hat, np.zeros_like(self.a_hat), self._s_part)[:, self.order]
        hat = self._columns(self.s_hat, self.a_hat, self._s_part)[:, self.order]
        b = zero.shape[0]
        self._balanced = np.concatenate([np.zeros((b, 1)), np.cumsum(zero, axis=1)], axis=1)  # first k balanced
        rest = np.cumsum(hat[:, ::-1], axis=1)[:, ::-1]  # groups k.. at their estimate
        self._at_hat = np.concatenate([rest, np.zeros((b, 1))], axis=1)

    def null(self, t: float) -> NDArray[np.float64]:
        """The deviations are rescaled to the configuration's multinomial variances (var(a_hat) is
        proportional to s - a^2, var(s_hat) to s (1 - s)): near a balanced group the estimate's bias is
        E|a_hat|, and with many groups a few per cent of error in it is larger than the standard error.
        The mean over groups of each draw's Neutrality (B,)."""
        n = self.order.size
        if -n < t <= 0.0:  # groups order[:k] balanced, order[k] part way, the rest at their estimate
            u = -t
            k = int(np.floor(u))
            g = self.order[k:k + 1]
            part = self._columns(self.s_hat[g], self.a_hat[g] * (1.0 - (u - k)), self._s_part[:, g], g)[:, 0]
            return (self._balanced[:, k] + part + self._at_hat[:, k + 1]) / n
        s, a = self.config(t)
        if 0.0 < t <= self.t1:  # s at its estimate: its part of the null reused
            return self._columns(s, a, self._s_part).mean(axis=1)
        return self._columns(s, a).mean(axis=1)


def _bisect(accept: Callable[[float], bool], rejected: float, accepted: float, steps: int = 40) -> float:
    """The accepted t nearest `rejected` (between `rejected` and `accepted`), by bisection."""
    for _ in range(steps):
        mid = 0.5 * (rejected + accepted)
        if accept(mid):
            accepted = mid
        else:
            rejected = mid
    return accepted


def neutrality_inversion(totals: ArrayLike, draws: ArrayLike, clusters: ArrayLike,
                         confidence: float = 0.95) -> tuple[float, float, bool, int]:
    """Interval for the mean over groups of Neutrality by inversion of a bootstrap test (method
    ``"neutrality-test-inversion"``); returns ``(low, high, extended, near_balance)``, the last the
    number of groups whose male and female shares are within 2 bootstrap standard errors of each
    other (where the interval is conservative: only its upper end can miss a true balance).

    Why not BCa / percentile: per group Neutrality is ``(1 - M) / (1 + M)`` with M = max(male, female)
    share, a function of |male - female| that is not smooth where the two are equal; there the estimate
    is biased downward (E|a_hat| > |a|) and the bootstrap adds the bias again, and the mean over many
    groups adds up the bias while its standard error shrinks. Cluster BCa covered 91-92% with six
    unbalanced groups and far less with many balanced ones (bench/README.md section 10).

    Method (the construction of the GEP score's interval, :func:`metrics.core.metric_intervals.
    abs_mean_interval`): a candidate value theta0 is the Neutrality of a configuration on a path
    through the estimate (:class:`_NeutralityPath`); its null distribution adds the bootstrap's
    deviations (``draws``: (B, groups, 3) male / female / neutral totals, e.g. from
    :func:`metrics.core.intervals.stratified_cluster_draws`; ``clusters``: the images per group) to the
    configuration, rescaled to its variances. theta0 is rejected
    as too high when the estimate falls below the null's ``alpha/2`` quantile, as too low when it
    exceeds the ``1 - alpha/2`` quantile; the interval is the accepted range (bisection), widened to
    the estimate where needed (``extended``). ``totals``: (groups, 3) observed counts."""
    tot = np.asarray(totals, dtype=float)
    d = np.asarray(draws, dtype=float)
    if tot.ndim != 2 or tot.shape[1] != 3 or d.shape[1:] != tot.shape:
        raise ValueError("totals must be (groups, 3) and draws (B, groups, 3)")
    path = _NeutralityPath(tot, d, np.asarray(clusters, dtype=float))
    est = path.value(0.0)
    alpha = 1.0 - confidence

    def not_too_high(t: float) -> bool:
        return est >= float(np.quantile(path.null(t), alpha / 2))

    def not_too_low(t: float) -> bool:
        return est <= float(np.quantile(path.null(t), 1 - alpha / 2))

    start, stop = -path.order.size - 1.0, path.t1 + 1.0
    if not not_too_high(0.0):
        high = est
    else:
        high = path.value(start if not_too_high(start) else _bisect(not_too_high, start, 0.0))
    if not not_too_low(0.0):
        low = est
    else:
        low = path.value(stop if not_too_low(stop) else _bisect(not_too_low, stop, 0.0))
    extended = low > est or high < est
    near = int((np.abs(path.a_hat) < NEUTRALITY_NEAR_BALANCE_Z * np.sqrt(path.var_a)).sum())
    return min(low, est), max(high, est), bool(extended), near


def neutrality(
    groups: ArrayLike,
    labels: ArrayLike,
    image_ids: ArrayLike | None = None,
    n_boot: int = 2000,
    confidence: float = 0.95,
    seed: int | None = 0,
) -> dict[str, Any]:
    """Neutrality (see the module docstring) from per-answer rows: the group (e.g.
    the profession of a gender-neutral prompt) and the label of each person / answer.

    Returns ``{"neutrality": mean over groups, "ci": [lo, hi], "method":
    "neutrality-test-inversion", "extended": bool, "near_balance": groups whose male and female
    shares are within 2 standard errors, "pooled": value over all rows as one group,
    "groups": {group: {"neutrality", "male", "female", "neutral"}}, "missing": int}``. Interval:
    :func:`neutrality_inversion`, its noise from a bootstrap over images (rows when ``image_ids`` is
    None) resampled within each group, so every draw keeps every group; groups without answers are
    left out. It always holds the estimate."""
    lk = label_kinds(labels)
    g = as_1d(groups, "groups")
    keep = lk != K_MISSING
    codes, names = encode(g[keep])
    kk = lk[keep]
    ng = len(names)
    m = np.bincount(codes, weights=(kk == K_MASC), minlength=ng)
    f = np.bincount(codes, weights=(kk == K_FEM), minlength=ng)
    n = np.bincount(codes, weights=((kk == K_CANNOT) | (kk == K_TIE)), minlength=ng)
    per = neutrality_value(m, f, n)
    est = float(np.nanmean(per)) if ng and np.isfinite(per).any() else float("nan")
    out: dict[str, Any] = {
        "neutrality": est,
        "pooled": float(neutrality_value(m.sum(), f.sum(), n.sum())),
        "groups": {str(k): {"neutrality": float(v), "male": int(a), "female": int(b), "neutral": int(c)}
                   for k, v, a, b, c in zip(names.tolist(), per, m, f, n)},
        "missing": int((~keep).sum()),
        "method": NEUTRALITY_METHOD,
        "confidence": confidence,
    }
    if ng == 0 or n_boot <= 0:  # nothing answered yet (a campaign in progress), or no interval asked for
        out.update(ci=[float("nan"), float("nan")], extended=False, near_balance=0)
        return out
    # One cluster per (group, image): its (male, female, neutral) counts, stratum = its group. Each draw
    # resamples every group's images with replacement (one index matrix and one matrix product per group,
    # `stratified_cluster_draws`); the interval reads the (draws, groups, 3) totals, so the cost grows
    # with draws x images, not with draws x images x groups.
    units = as_1d(image_ids, "image_ids")[keep] if image_ids is not None else np.arange(kk.size)
    unit_codes, unit_ids = encode(units)
    u_first, u_codes = np.unique(codes * max(len(unit_ids), 1) + unit_codes, return_inverse=True)
    unit_group = (u_first // max(len(unit_ids), 1)).astype(np.intp)
    kind_col = np.where(kk == K_MASC, 0, np.where(kk == K_FEM, 1, 2))
    counted = (kk == K_MASC) | (kk == K_FEM) | (kk == K_CANNOT) | (kk == K_TIE)
    sums = np.zeros((u_first.size, 3))
    np.add.at(sums, (u_codes[counted], kind_col[counted]), 1.0)
    totals = np.stack([m, f, n], axis=1)
    draws = stratified_cluster_draws(sums, unit_group, n_boot, seed)
    low, high, extended, near = neutrality_inversion(totals, draws, np.bincount(unit_group, minlength=ng), confidence)
    out["ci"] = [min(low, est), max(high, est)]
    out["method"] = NEUTRALITY_METHOD
    out["extended"] = extended
    out["near_balance"] = near
    return out
