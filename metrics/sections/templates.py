"""Prompt templates of a setting (bias-amplification paper Table 1: several templates per occupation):
the template of each question's image, for breakdowns and for amplification per template."""
from __future__ import annotations

from typing import Any

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
    # The label of each distinct index (a few templates), then indexed per question.
    distinct, inverse = np.unique(idx, return_inverse=True)
    labels = np.array([str(i + 1) if i >= 0 else ONLY for i in distinct.tolist()], dtype=object)
    return labels[inverse.reshape(-1)]


def template_labels(column: np.ndarray) -> list[str]:
    """The templates present, in order ("1", "2", ...)."""
    import pandas as pd

    return sorted({str(t) for t in pd.unique(np.asarray(column, dtype=object)).tolist()}, key=int)


def _mean(values: list[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return float(np.mean(kept)) if kept else None


def template_mean(by_template: dict[str, dict[str, Any]], scalars: tuple[str, ...],
                  mappings: tuple[str, ...]) -> dict[str, Any]:
    """The unweighted mean over templates of each figure (`scalars`: one value per template;
    `mappings`: {name: value} per template, averaged name by name over the templates that have it)."""
    rows = list(by_template.values())
    out: dict[str, Any] = {"templates": len(rows)}
    for key in scalars:
        out[key] = _mean([r.get(key) for r in rows])
    for key in mappings:
        names = sorted({n for r in rows for n in (r.get(key) or {})})
        out[key] = {n: _mean([(r.get(key) or {}).get(n) for r in rows]) for n in names}
    return out
