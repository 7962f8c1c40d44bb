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
    amplification,
    amplification_image_sums,
    amplification_statistic,
    generated_percent_female,
)
from metrics.core.intervals import CI, stratified_cluster_bca
from metrics.extract.data import CampaignData

from .templates import template_column
from .values import interval

SETTING = "single"
TREATMENT = "excluded"  # %F among persons labelled Feminine or Masculine (the paper keeps confident faces)


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
        out[ref["name"]] = _clean({
            "name": ref["name"], "source": ref["source"], "setting": SETTING, "treatment": TREATMENT,
            "label_source": label_source, **res,
            "not_in_design": sorted(set(reference) - set(design_ids)),
        })
    return out
