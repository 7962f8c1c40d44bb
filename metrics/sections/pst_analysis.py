"""PST figures beyond the STS of one setting: Average Gender and Neutrality of the gender-neutral
prompts (unified VLM paper section 4.2), the fairness-intervention analysis (PST section 5)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from metrics.core import pst, vlm
from metrics.core.pst_analysis import intervention_analysis, restrict_to_identities, top_k_identities

from .values import interval, num


def gender_balance(*, images: np.ndarray, identities: np.ndarray, labels: np.ndarray, n_boot: int,
                   confidence: float, seed: int) -> dict[str, Any]:
    """Average Gender `(F - M) / (F + M)` (Cannot identify and ties are N/A, counted beside it; Wilson
    interval with the image design effect) and Neutrality (per identity `(min(m, f) + n) / (max(m, f) +
    m + f + n)`, averaged over identities; BCa over images within each identity) of one setting's
    persons: every PST prompt is gender-neutral (it names identities, never a gender). The report
    computes it for the single setting (one person per image of an identity, the paper's design)."""
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


# ------------------------------------------------------------------ fairness intervention (PST 5)
TOP_K = 5


def _difference(d: Any) -> dict[str, Any]:
    """A `metrics.core.significance.Difference` as JSON: plain (b), intervention (a), difference."""
    return {"plain": num(d.b), "intervention": num(d.a), "difference": num(d.difference),
            "ci": interval(d.low, d.high), "ci_method": d.ci_method, "p_value": num(d.p_value),
            "p_holm": num(d.p_holm) if d.p_holm is not None else None}


def _variant(plain: Mapping[str, np.ndarray], intervention: Mapping[str, np.ndarray], groups: Mapping[str, str],
             top_k: int | None, treatment: str, n_boot: int, n_perm: int, confidence: float,
             seed: int) -> dict[str, Any]:
    if n_boot <= 0:  # point figures only (no resampling asked for)
        selection = None
        p, it = dict(plain), dict(intervention)
        if top_k is not None:
            micro = pst.micro_sts(p["identities"], p["labels"], p["stereotypes"], treatment)  # type: ignore[arg-type]
            selection = top_k_identities(micro, groups, top_k)
            chosen = sorted(i for ids in selection["selected"].values() for i in ids)
            p, it = restrict_to_identities(p, chosen), restrict_to_identities(it, chosen)
        a = pst.overall_sts(it["labels"], it["stereotypes"], treatment)  # type: ignore[arg-type]
        b = pst.overall_sts(p["labels"], p["stereotypes"], treatment)  # type: ignore[arg-type]
        return {"plain": num(b), "intervention": num(a), "difference": num(a - b), "selection": selection,
                "images": {"plain": int(np.unique(p["image_ids"]).size),
                           "intervention": int(np.unique(it["image_ids"]).size)}}
    res = intervention_analysis(plain, intervention, groups, top_k, None, False, treatment,  # type: ignore[arg-type]
                                n_boot, n_perm, confidence, seed)
    return {"plain": num(res["plain"]), "intervention": num(res["intervention"]),
            "difference": _difference(res["difference"]),
            "groups": {g: _difference(d) for g, d in sorted(res["groups"].items())},
            "micro": {i: _difference(d) for i, d in sorted(res["micro"].items())},
            "identities": res["identities"], "only_plain": res["only_plain"],
            "only_intervention": res["only_intervention"], "selection": res["selection"], "images": res["images"]}


def intervention_section(*, plain: Mapping[str, np.ndarray], intervention: Mapping[str, np.ndarray],
                         groups: Mapping[str, str], treatment: str, n_boot: int, n_perm: int, confidence: float,
                         seed: int) -> dict[str, Any]:
    """The fairness intervention against the plain paired setting on the same identities (PST section 5,
    Tables 5-6): `all` (every identity of both settings) and `top_5` (the 5 most stereotyped identities
    of each group by the plain paired micro STS, ties at the cut broken by name and listed under
    `selection.tied_at_cut`; only images whose persons are all selected). Each: `plain` and
    `intervention` overall STS, `difference` (intervention - plain, BCa interval over images of each
    setting, permutation p-value), per `groups` and per identity `micro` (Holm over identities)."""
    out: dict[str, Any] = {"treatment": treatment, "top_k": TOP_K}
    for name, k in (("all", None), (f"top_{TOP_K}", TOP_K)):
        out[name] = _variant(plain, intervention, groups, k, treatment, n_boot, n_perm, confidence, seed)
    return out
