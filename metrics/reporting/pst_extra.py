"""PST figures beyond the STS of one setting: Average Gender and Neutrality of the gender-neutral
prompts (unified VLM paper section 4.2)."""
from __future__ import annotations

from typing import Any

import numpy as np

from metrics.core import vlm

from .values import interval, num


def gender_balance(*, images: np.ndarray, identities: np.ndarray, labels: np.ndarray, n_boot: int,
                   confidence: float, seed: int) -> dict[str, Any]:
    """Average Gender `(F - M) / (F + M)` (Cannot identify and ties are N/A, counted beside it; Wilson
    interval with the image design effect) and Neutrality (per identity `(min(m, f) + n) / (max(m, f) +
    m + f + n)`, averaged over identities; BCa over images within each identity) of one setting's
    persons: every PST prompt is gender-neutral (it names identities, never a gender)."""
    ag = vlm.average_gender_from_labels(labels, images, confidence)
    neu = vlm.neutrality(identities, labels, images, n_boot, confidence, seed)
    out: dict[str, Any] = {
        "average_gender": num(ag["average_gender"]),
        "female": ag["female"], "male": ag["male"], "na": ag["na"], "na_share": num(ag["na_share"]),
        "missing": ag["missing"], "deff": num(ag["deff"]),
        "neutrality": num(neu["neutrality"]),
        "neutrality_pooled": num(neu["pooled"]),
        "neutrality_by_identity": {k: {"neutrality": num(v["neutrality"]), "male": v["male"], "female": v["female"],
                                       "neutral": v["neutral"]} for k, v in sorted(neu["groups"].items())},
    }
    if n_boot > 0:
        out["average_gender_ci"] = interval(*ag["ci"])
        out["average_gender_ci_method"] = ag["method"]
        out["neutrality_ci"] = interval(*neu["ci"])
        out["neutrality_ci_method"] = neu["method"]
    return out
