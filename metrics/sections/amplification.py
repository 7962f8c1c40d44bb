"""Bias amplification against each reference of the spec (bias-amplification paper section 3.3,
after Zhao et al. 2017): report section `amplification.<reference>`, computed by
`metrics.core.amplification` from the persons of the single-person setting (gender-neutral prompts
naming one identity, the paper's design)."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from campaigns.spec.references import design_identities, references_of
from metrics.core.amplification import (
    MIN_AMPLIFICATION_IMAGES,
    amplification,
    amplification_image_sums,
    amplification_null_test,
    amplification_statistic,
    generated_percent_female,
)
from metrics.core.intervals import CI, stratified_cluster_bca
from metrics.core.pst import Treatment
from metrics.core.report_warnings import warn
from metrics.extract.data import CampaignData

from .templates import template_column
from .values import interval

SETTING = "single"
TREATMENT: Treatment = "excluded"  # %F among persons labelled Feminine or Masculine (the paper keeps confident faces)


def _clean(x: Any) -> Any:
    """NaN / inf -> None, recursively (JSON)."""
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_clean(v) for v in x]
    if isinstance(x, float) and (math.isnan(x) or math.isinf(x)):
        return None
    if isinstance(x, np.generic):
        return _clean(x.item())
    return x


def amplification_section(data: CampaignData, labels: np.ndarray, *, label_source: str, n_boot: int,
                          confidence: float, seed: int) -> dict[str, Any]:
    """`{<reference name>: {...}}` for every reference in force (empty without any, or without a single
    setting). Per reference: `name`, `source`, `setting`, `treatment`, `label_source`, `templates`
    (per template: `rows` per identity with generated and reference %F, skew, amplification and the
    reason it is excluded, `kept`, `excluded` {identity: reason}, `n_kept`, `mean`, `mean_ci`,
    `ttest`, `correlation`, `missing`), `average` (mean of the template means) with `average_ci`, a
    one-sample `ttest` of the identities' amplification against 0, pooled `correlation` (Pearson,
    Spearman), `uncovered` (design identities without a reference value) and `not_in_design`."""
    refs = references_of(data.campaign.spec)
    mask = data.q_setting == SETTING
    if not refs or not mask.any():
        return {}
    identities = data.q_meta["identity"][mask].astype(str)
    templates = template_column(data)[mask].astype(str)
    lab, images = labels[mask], data.q_image[mask]
    generated = generated_percent_female(identities, templates, lab, TREATMENT)
    order = sorted(generated, key=int)
    design_ids = design_identities(data.campaign.spec)
    out: dict[str, Any] = {}
    for ref in refs:
        reference = ref["percent_female"]
        res = amplification(generated, reference, order)
        res["uncovered"] = sorted(set(res["uncovered"]) | {i for i in design_ids if reference.get(i) is None})
        if n_boot > 0:
            kept = {t: res["templates"][t]["kept"] for t in order}
            ids = sorted(set().union(*kept.values()))
            if ids:
                ref_values = {k: float(v) for k, v in reference.items() if v is not None}
                stat, _ = amplification_statistic(ref_values, ids, order, kept)
                sums = amplification_image_sums(images, identities, templates, lab, ids, order, TREATMENT)
                ci = stratified_cluster_bca(sums, stat, None, n_boot, confidence, seed)
                assert isinstance(ci, CI)
                lo, hi = np.atleast_1d(ci.low), np.atleast_1d(ci.high)
                for j, t in enumerate(order):
                    res["templates"][t]["mean_ci"] = interval(lo[j], hi[j])
                    res["templates"][t]["mean_ci_method"] = ci.method
                res["average_ci"] = interval(lo[-1], hi[-1])
                res["average_ci_method"] = ci.method
        _tests(res, ref["name"], reference, images, identities, templates, lab, order, n_boot, confidence, seed)
        out[ref["name"]] = _clean({
            "name": ref["name"], "source": ref["source"], "setting": SETTING, "treatment": TREATMENT,
            "label_source": label_source, **res,
            "not_in_design": sorted(set(reference) - set(design_ids)),
        })
    return out


NULL_DRAWS = 2000


def _tests(res: dict[str, Any], name: str, reference: dict[str, Any], images: np.ndarray, identities: np.ndarray,
           templates: np.ndarray, lab: np.ndarray, order: list[str], n_boot: int, confidence: float,
           seed: int) -> None:
    """Beside the paper's figures (issue 22, defect 7): `without_exclusion` (every identity with a
    skewed reference, no direction-change exclusion: its mean is not moved by noise in the exclusion),
    and `calibrated_test` (parametric bootstrap under generated = reference with the exclusion inside
    every draw). With fewer than MIN_AMPLIFICATION_IMAGES counted persons for an identity and template
    both tests and the paper's t-tests are left out with a warning; the figures stay, labelled."""
    ref_values = {k: float(v) for k, v in reference.items() if v is not None and float(v) != 50.0}
    ids = sorted({i for t in order for i in res["templates"][t]["rows"] if i in ref_values})
    if not ids:
        return
    sums = amplification_image_sums(images, identities, templates, lab, ids, order, TREATMENT)
    tot = sums.sum(axis=0)
    fem, cnt = tot[0::2].reshape(len(order), len(ids)), tot[1::2].reshape(len(order), len(ids))
    everyone = {t: [i for i in ids if i in res["templates"][t]["rows"]] for t in order}
    stat, _ = amplification_statistic(ref_values, ids, order, everyone)
    point = stat(tot[None, None, :])[0]
    free: dict[str, Any] = {"average": float(point[-1]),
                            "templates": {t: {"mean": float(point[j]), "n": len(everyone[t])}
                                          for j, t in enumerate(order)},
                            "note": "every identity with a skewed reference, no direction-change exclusion"}
    if n_boot > 0:
        ci = stratified_cluster_bca(sums, stat, None, n_boot, confidence, seed)
        assert isinstance(ci, CI)
        free["average_ci"] = interval(np.atleast_1d(ci.low)[-1], np.atleast_1d(ci.high)[-1])
        free["average_ci_method"] = ci.method
    res["without_exclusion"] = free
    fewest = int(cnt[cnt > 0].min()) if (cnt > 0).any() else 0
    path = f"amplification.{name}"
    if fewest < MIN_AMPLIFICATION_IMAGES:
        left_out = f"fewer than {MIN_AMPLIFICATION_IMAGES} images per identity and template"
        for holder in (res, *res["templates"].values()):  # same shape, no figures
            holder["ttest"] = {**holder["ttest"], "t": None, "p_value": None, "omitted": left_out}
        res["test_note"] = (f"{fewest} labelled images for an identity and template (fewest): tests left out; "
                            f"they need {MIN_AMPLIFICATION_IMAGES} (PST `samples.single` >= {MIN_AMPLIFICATION_IMAGES})")
        warn(f"{path}.ttest", f"{fewest} labelled single images for an identity and template: amplification tests "
             f"not computed (they need {MIN_AMPLIFICATION_IMAGES}); with few images the direction-change exclusion "
             "alone makes the mean positive, so `average` is labelled, not tested")
        return
    res["calibrated_test"] = amplification_null_test(fem, cnt, np.array([ref_values[i] for i in ids]), NULL_DRAWS, seed)
    res["ttest_note"] = ("the paper's one-sample t-test over the kept identities; not calibrated for the exclusion "
                         "rule: `calibrated_test` is")
