"""Prompt templates of a setting (bias-amplification paper Table 1: several templates per occupation):
the template of each question's image, for breakdowns and for amplification per template."""
from __future__ import annotations

import numpy as np

from metrics.extract.data import CampaignData

#: Label of the template of designs with one template per setting.
ONLY = "1"


def template_column(data: CampaignData) -> np.ndarray:
    """The template label of each question (1-based template index as text; "1" when the campaign's
    prompts record no template)."""
    col = data.q_meta.get("template_index")
    if col is None or col.size == 0:
        return np.full(data.q_id.size, ONLY, dtype=object)
    idx = np.asarray(col, dtype=np.int64)
    return np.where(idx >= 0, (idx + 1).astype(str), ONLY).astype(object)
