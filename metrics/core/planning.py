"""Sample-size planning: the expected 95% interval half-width of the headline scores for a
planned number of images and answers per question (redundancy R), and the number of
images needed for a target half-width.

Stated assumptions (every function returns them under ``"assumptions"``):

- **Annotators**: binary questions, each annotator right with the same probability ``a``
  whatever the true answer (symmetric noise), independently of the others. ``a`` is the
  value that gives the papers' chance-corrected agreement at the assumed label
  prevalence ``pi`` (:func:`annotator_accuracy`): with ``P_o = a^2 + (1 - a)^2`` and
  ``p = pi a + (1 - pi)(1 - a)``, ``kappa = (P_o - P_e) / (1 - P_e)``, ``P_e = p^2 +
  (1 - p)^2`` (Fleiss' kappa for many questions; Krippendorff's alpha equals it up to a
  term of order 1 / answers). Defaults: PST kappa 0.90 (the paper's 0.88-0.92), GEP
  alpha 0.81.
- **Labels**: the majority of R answers (:func:`majority_accuracy`); with an even R a
  tie is possible and counts as "not stereotyped" in PST (the paper's formula) and as
  "absent" in GEP (the report's default tie policy).
- **Scores**: PST overall STS = 100 (2 q' - 1) with q' the share of persons whose label
  is their stereotype; GEP score = mean |f'_w - f'_m| over the attributes. Primes mark
  label-level values: misclassification pulls them toward the middle (``expected_*`` in
  the output is the value the report will show, ``true_*`` the assumed truth).
- **Variance**: binomial, with a design effect ``1 + (m - 1) icc`` for m persons per
  image (PST). GEP: the attributes' estimates are treated as independent (exact in the
  explicit setting; in the neutral one the attributes of one image are annotated on the
  same image, which this ignores) and the half-width is the normal one,
  ``z sqrt(sum_j SE_j^2) / n``. That is right when the attribute differences are large
  compared with their standard errors; when the true GEP is near 0 the report's interval
  (a test inversion, :func:`metrics.core.metric_intervals.abs_mean_interval`) is not symmetric
  and 8-24% wider than this formula says (``"gep_near_zero"`` flags such designs;
  ``simulate_runs`` gives the simulated figure).
- Half-width scales as 1 / sqrt(images), so the images needed for a target half-width h
  are ``ceil(images * (half_width / h)^2)``.

tests/metrics/core/test_planning.py checks the analytic half-widths against simulated
campaigns (annotators included) and the report's interval functions.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from scipy import optimize, special, stats

__all__ = [
    "annotator_accuracy",
    "kappa_for_accuracy",
    "majority_accuracy",
    "pst_plan",
    "gep_plan",
    "adaptive_majority",
    "comparison_images",
]


def kappa_for_accuracy(accuracy: float, prevalence: float) -> float:
    """Chance-corrected agreement of two annotators of accuracy ``accuracy`` on binary
    questions whose true answer is "yes" with probability ``prevalence``."""
    a, pi = float(accuracy), float(prevalence)
    p_o = a * a + (1 - a) * (1 - a)
    p = pi * a + (1 - pi) * (1 - a)
    p_e = p * p + (1 - p) * (1 - p)
    return (p_o - p_e) / (1 - p_e) if p_e < 1 else float("nan")


def annotator_accuracy(agreement: float, prevalence: float = 0.5) -> float:
    """The accuracy a in [0.5, 1] that gives ``agreement`` (kappa or alpha) at
    ``prevalence`` (:func:`kappa_for_accuracy` is increasing in a there); solved with
    scipy's ``brentq``."""
    if not 0 < agreement < 1:
        raise ValueError("agreement must be between 0 and 1")
    if not 0 < prevalence < 1:
        raise ValueError("prevalence must be between 0 and 1")
    return float(optimize.brentq(lambda a: kappa_for_accuracy(a, prevalence) - agreement, 0.5 + 1e-12, 1 - 1e-12))


def majority_accuracy(accuracy: float, redundancy: int) -> tuple[float, float, float]:
    """``(P(majority right), P(majority wrong), P(tie))`` for R independent annotators of
    accuracy a (binomial; a tie needs an even R)."""
    r = int(redundancy)
    if r < 1:
        raise ValueError("redundancy must be >= 1")
    k = np.arange(r + 1)
    pmf = stats.binom.pmf(k, r, accuracy)
    right = float(pmf[2 * k > r].sum())
    wrong = float(pmf[2 * k < r].sum())
    return right, wrong, float(pmf[2 * k == r].sum())


def adaptive_majority(accuracy: float, minimum: int, maximum: int,
                      settled: Callable[[int, int], bool]) -> dict[str, float]:
    """An adaptive design (``annotation.redundancy``'s object) under the annotator model: a question
    collects ``minimum`` answers, then one more while ``settled(right, wrong)`` (the campaign's rule on
    the vote counts) is false, up to ``maximum``. Exact by enumerating the (right, wrong) states:
    ``{"right", "wrong", "tie"}`` (the stopped majority's probabilities, as :func:`majority_accuracy`)
    and ``"answers_per_question"`` (the expected number of answers)."""
    if not 1 <= minimum <= maximum:
        raise ValueError("need 1 <= min <= max")
    a = float(accuracy)
    states = {(r, minimum - r): float(stats.binom.pmf(r, minimum, a)) for r in range(minimum + 1)}
    right = wrong = tie = answers = 0.0
    while states:
        grown: dict[tuple[int, int], float] = {}
        for (r, w), p in states.items():
            if r + w >= maximum or settled(r, w):
                answers += p * (r + w)
                right += p * (r > w)
                wrong += p * (r < w)
                tie += p * (r == w)
                continue
            for key, q in (((r + 1, w), a), ((r, w + 1), 1 - a)):
                grown[key] = grown.get(key, 0.0) + p * q
        states = grown
    return {"right": right, "wrong": wrong, "tie": tie, "answers_per_question": answers}


def comparison_images(standard_error: float, images: int, difference: float, confidence: float = 0.95,
                      power: float = 0.80, attenuation: float = 1.0) -> int | None:
    """Images per side for a two-sided test at ``1 - confidence`` to detect a true ``difference``
    between two independent campaigns or settings of the same design with probability ``power``: a
    side's standard error scales as ``standard_error * sqrt(images / n)``, so ``n = images * ((z_a +
    z_power) * sqrt(2) * standard_error / (attenuation * difference))^2``. ``attenuation``: how
    label noise shrinks a true difference (``right - wrong`` of the majority labels). Normal
    approximation; None for a non-positive difference or standard error."""
    d = abs(float(difference)) * float(attenuation)
    if d <= 0 or not np.isfinite(standard_error) or standard_error <= 0:
        return None
    z = _z(confidence) + float(special.ndtri(power))
    return int(math.ceil(images * (z * math.sqrt(2.0) * standard_error / d) ** 2))


def _z(confidence: float) -> float:
    return float(special.ndtri(0.5 + confidence / 2))


def _needed(images: int, half_width: float, target: float | None) -> int | None:
    if target is None or not np.isfinite(half_width):
        return None
    if target <= 0:
        raise ValueError("target half-width must be > 0")
    return int(math.ceil(images * (half_width / target) ** 2))


def pst_plan(
    images: int,
    redundancy: int = 3,
    persons_per_image: int = 2,
    sts: float = 40.0,
    kappa: float = 0.90,
    prevalence: float = 0.5,
    icc: float = 0.1,
    confidence: float = 0.95,
    target_half_width: float | None = None,
    majority: tuple[float, float, float] | None = None,
    answers_per_question: float | None = None,
) -> dict[str, Any]:
    """Expected half-width of the overall STS interval (percent points) for ``images``
    images of ``persons_per_image`` persons, R answers per person.

    ``sts``: the assumed true STS (default 40, between the paper's paired occupation
    47 and power 19); ``kappa``: the annotators' agreement (the paper: 0.88-0.92);
    ``prevalence``: the share of Feminine answers (0.5 when both stereotype groups are
    drawn equally, as in the paired design); ``icc``: correlation of the labels of two
    persons of one image (0 for the single setting). ``majority`` / ``answers_per_question``:
    an adaptive design's label accuracy and mean answers (:func:`adaptive_majority`) in place
    of the fixed R's."""
    if images <= 0 or persons_per_image <= 0:
        raise ValueError("images and persons_per_image must be > 0")
    q = (sts / 100 + 1) / 2
    a = annotator_accuracy(kappa, prevalence)
    right, wrong, tie = majority if majority is not None else majority_accuracy(a, redundancy)
    q_lab = q * right + (1 - q) * wrong  # ties count as not stereotyped (-1)
    n = images * persons_per_image
    per_q = float(redundancy) if answers_per_question is None else float(answers_per_question)
    deff = 1 + (persons_per_image - 1) * icc
    se = 200.0 * math.sqrt(q_lab * (1 - q_lab) / n * deff)
    hw = _z(confidence) * se
    return {
        "statistic": "pst.overall",
        "images": images, "persons": n, "redundancy": redundancy, "answers": int(round(n * per_q)),
        "true_sts": sts, "expected_sts": 100 * (2 * q_lab - 1),
        "standard_error": se, "half_width": hw, "confidence": confidence,
        "target_half_width": target_half_width, "images_needed": _needed(images, hw, target_half_width),
        "assumptions": {"kappa": kappa, "prevalence": prevalence, "annotator_accuracy": a,
                        "label_accuracy": right, "label_tie": tie, "icc": icc, "design_effect": deff,
                        "model": "symmetric binary annotator noise, majority of R, binomial variance x design effect"},
    }


def gep_plan(
    images: int,
    frequencies_women: Sequence[float] | float = 0.08,
    frequencies_men: Sequence[float] | float | None = None,
    n_attributes: int = 15,
    setting: str = "neutral",
    redundancy: int = 3,
    alpha: float = 0.81,
    prevalence: float | None = None,
    confidence: float = 0.95,
    target_half_width: float | None = None,
    simulate_runs: int = 0,
    seed: int = 0,
    majority: tuple[float, float, float] | None = None,
    answers_per_question: float | None = None,
) -> dict[str, Any]:
    """Expected half-width of the GEP score interval for ``images`` images in all (both
    genders, half each).

    Neutral: every image is annotated for every attribute, so each (gender, attribute)
    frequency is over ``images / 2`` images; explicit: each image for the attribute in
    its prompt, over ``images / (2 n_attributes)``. ``frequencies_women`` /
    ``frequencies_men``: assumed true frequencies per attribute (scalars are repeated;
    men default to women, a GEP of 0, which the output flags). ``prevalence``: the share
    of "yes" answers used to turn ``alpha`` (the GEP paper: 0.81) into an annotator
    accuracy (default: the mean assumed frequency). ``simulate_runs`` > 0 also returns
    ``simulated_half_width``: the mean half-width of the report's interval
    (:func:`metrics.core.metric_intervals.abs_mean_interval`) over that many simulated
    campaigns of this design (annotators included; ~5 ms a run) and
    ``images_needed_simulated`` scaled from it. Checked on the GEP paper's frequencies
    (bench/README.md): the report's interval is 6-11% wider than the analytic figure
    when the attribute differences stand clear of their SE and 8-24% wider where most
    are within 2 SE of 0 (``gep_near_zero``; every design of the paper at its 80 images
    per cell): the analytic figure is a floor, the simulated one is the figure to
    quote."""
    if setting not in ("neutral", "explicit"):
        raise ValueError("setting must be neutral or explicit")
    fw = np.broadcast_to(np.asarray(frequencies_women, dtype=float), (n_attributes,)).copy()
    fm = fw.copy() if frequencies_men is None else np.broadcast_to(
        np.asarray(frequencies_men, dtype=float), (n_attributes,)).copy()
    per_cell = images / 2 if setting == "neutral" else images / (2 * n_attributes)
    if per_cell < 1:
        raise ValueError("fewer than one image per gender and attribute")
    pi = float(np.clip(np.mean(np.r_[fw, fm]) if prevalence is None else prevalence, 0.01, 0.99))
    a = annotator_accuracy(alpha, pi)
    right, wrong, tie = majority if majority is not None else majority_accuracy(a, redundancy)
    per_q = float(redundancy) if answers_per_question is None else float(answers_per_question)
    lw, lm = fw * right + (1 - fw) * wrong, fm * right + (1 - fm) * wrong  # ties count as absent
    se_j = np.sqrt(lw * (1 - lw) / per_cell + lm * (1 - lm) / per_cell)
    se = float(np.sqrt((se_j ** 2).sum())) / n_attributes
    hw = _z(confidence) * se
    true_gep = float(np.abs(fw - fm).mean())
    expected = float(np.abs(lw - lm).mean())
    near_zero = bool(np.mean(np.abs(lw - lm) < 2 * se_j) > 0.5)
    out = {
        "statistic": "gep.score",
        "images": images, "setting": setting, "images_per_cell": per_cell, "redundancy": redundancy,
        "answers": int(round(images * (n_attributes if setting == "neutral" else 1) * per_q)),
        "true_gep": true_gep, "expected_gep": expected,
        "standard_error": se, "half_width": hw, "confidence": confidence,
        "target_half_width": target_half_width, "images_needed": _needed(images, hw, target_half_width),
        "gep_near_zero": near_zero,
        "assumptions": {"alpha": alpha, "prevalence": pi, "annotator_accuracy": a, "label_accuracy": right,
                        "label_tie": tie, "attributes": n_attributes,
                        "model": "symmetric binary annotator noise, majority of R, independent attributes, "
                                 "normal half-width (not valid when most attribute differences are within 2 SE "
                                 "of 0: see gep_near_zero)"},
    }
    if simulate_runs > 0:
        simulated = _simulated_gep_half_width(fw, fm, per_cell, setting, a, redundancy, confidence,
                                              simulate_runs, seed)
        out["simulated_half_width"] = simulated
        out["simulated_runs"] = simulate_runs
        out["images_needed_simulated"] = _needed(images, simulated, target_half_width)
    return out


def _simulated_gep_half_width(fw: np.ndarray, fm: np.ndarray, per_cell: float, setting: str, accuracy: float,
                              redundancy: int, confidence: float, runs: int, seed: int, n_boot: int = 500) -> float:
    """Mean half-width of :func:`metrics.core.metric_intervals.abs_mean_interval` over simulated
    campaigns: true presence ~ Bernoulli(f), R answers right with probability ``accuracy``,
    label = majority (a tie = absent), bootstrap draws resample images within each gender
    (explicit: within each gender and attribute)."""
    from .metric_intervals import abs_mean_interval

    rng = np.random.default_rng(seed)
    n, na = int(round(per_cell)), fw.size
    widths = []
    for _ in range(runs):
        labs = []
        for f in (fw, fm):
            truth = rng.random((n, na)) < f
            votes = (rng.random((n, na, redundancy)) < accuracy).sum(axis=2)
            labs.append(np.where(2 * votes > redundancy, truth, (2 * votes < redundancy) & ~truth).astype(float))
        v = labs[0].mean(axis=0) - labs[1].mean(axis=0)
        iw, im = rng.integers(0, n, (n_boot, n)), rng.integers(0, n, (n_boot, n))
        if setting == "neutral":  # an image carries every attribute: resample images as a whole
            draws = labs[0][iw].mean(axis=1) - labs[1][im].mean(axis=1)
        else:
            draws = np.stack([labs[0][rng.integers(0, n, (n_boot, n)), j].mean(axis=1)
                              - labs[1][rng.integers(0, n, (n_boot, n)), j].mean(axis=1) for j in range(na)], axis=1)
        ci = abs_mean_interval(v, draws, confidence, 1.0 / n ** 2)
        widths.append((ci.high - ci.low) / 2)
    return float(np.mean(widths))
