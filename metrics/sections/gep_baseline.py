"""GEP with more than two gender indicators (GEP paper section 7, Table 10): every indicator's
distance from a baseline indicator (`design.baseline_gender`, default the first gender), so that no
gender of the design is silently left out of the report."""
from __future__ import annotations

from typing import Any

import numpy as np

from metrics.core.gep_baseline import gep_distances

from .values import ci_of, num


def baseline_distances(*, images: np.ndarray, genders: np.ndarray, attributes: np.ndarray, labels: np.ndarray,
                       baseline: str, gender_order: list[str], attribute_order: list[str], tie_policy: str,
                       n_boot: int, confidence: float, seed: int) -> dict[str, Any]:
    """`{"baseline", "attributes", "rows": {gender: {"score", "score_ci", "score_ci_method", "vector",
    "vector_ci", "vector_ci_method", "n_attributes"}}` in ranking order, "ranking" (closest first), "missing" (genders
    without images in this setting)}`; a baseline without images gives `{"baseline", "missing_baseline":
    true, "missing": [...]}`."""
    present = set(genders.tolist())
    others = [g for g in gender_order if g != baseline]
    if baseline not in present:
        return {"baseline": baseline, "missing_baseline": True, "missing": sorted(set(gender_order) - present)}
    res = gep_distances(images, genders, attributes, labels, baseline, others, attribute_order, tie_policy,
                        max(n_boot, 0), confidence, seed)
    rows = {}
    for g, r in res["rows"].items():
        row: dict[str, Any] = {"score": num(r["score"].estimate), "n_attributes": r["n_attributes"],
                               "vector": {a: num(c.estimate) for a, c in r["vector"].items()}}
        if n_boot > 0:
            row.update({"score_ci": ci_of(r["score"]), "score_ci_method": r["score"].method,
                        "vector_ci": {a: ci_of(c) for a, c in r["vector"].items()}, "vector_ci_method": "newcombe"})
        rows[g] = row
    rows = {g: rows[g] for g in res["ranking"]}  # closest first
    return {"baseline": baseline, "attributes": [str(a) for a in res["attributes"]], "rows": rows,
            "ranking": res["ranking"], "missing": res["missing"], "definition": "f(gender) minus f(baseline)"}
