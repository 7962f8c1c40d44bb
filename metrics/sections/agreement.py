"""The report's `agreement` section: Fleiss' kappa, Krippendorff's alpha and percent agreement, overall
and per setting, from the questions x choices count matrix."""
from __future__ import annotations

from typing import Any

import numpy as np

from metrics.core import agreement
from metrics.extract.data import CampaignData

from .values import num as _f


def _agreement(counts: np.ndarray) -> dict[str, Any]:
    """Agreement from a questions x choices count matrix (rows with no answers are ignored)."""
    answered = counts.sum(axis=1) > 0
    c = counts[answered]
    fleiss = agreement.fleiss_kappa_from_counts(c) if c.size else None
    alpha = agreement.krippendorff_alpha_from_counts(c) if c.size else None
    reason = (fleiss.reason or alpha.reason) if fleiss and alpha else None
    return {
        "fleiss_kappa": _f(fleiss.kappa) if fleiss else None,
        "fleiss_items_used": fleiss.items_used if fleiss else 0,
        "fleiss_raters_per_item": fleiss.raters_per_item if fleiss else 0,
        "krippendorff_alpha": _f(alpha.alpha) if alpha else None,
        "percent_agreement": _f(agreement.percent_agreement_from_counts(c)) if c.size else None,
        "questions": int(c.shape[0]),
        "answers": int(c.sum()),
        "note": reason,
    }


def agreement_section(data: CampaignData) -> dict[str, Any]:
    counts = data.vote_counts()
    out: dict[str, Any] = {"overall": _agreement(counts), "by_setting": {}}
    for setting in sorted(set(data.q_setting.tolist())):
        mask = data.q_setting == setting
        # A campaign of one setting: the same questions as overall, computed once.
        out["by_setting"][setting] = dict(out["overall"]) if mask.all() else _agreement(counts[mask])
    return out
