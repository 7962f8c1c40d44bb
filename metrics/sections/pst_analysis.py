"""PST figures beyond the STS of one setting: Average Gender and Neutrality of the gender-neutral
prompts (unified VLM paper section 4.2), the fairness-intervention analysis (PST section 5)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from metrics.core import pst, vlm
from metrics.core.pst import Treatment
from metrics.core.pst_analysis import intervention_analysis, restrict_to_identities, top_k_identities
from metrics.core.report_warnings import warn

from .values import interval, num


def gender_balance(*, images: np.ndarray, identities: np.ndarray, labels: np.ndarray, n_boot: int,
                   confidence: float, seed: int) -> dict[str, Any]:
    """Average Gender `(F - M) / (F + M)` (Cannot identify and ties are N/A, counted beside it; Wilson
    interval with the image design effect) and Neutrality (per identity `(min(m, f) + n) / (max(m, f) +
    m + f + n)`, averaged over identities; interval by test inversion, `metrics.core.vlm.neutrality`) of one setting's
    persons: every PST prompt is gender-neutral (it names identities, never a gender). The report
    computes it for every setting (the single one, one person per image of an identity, is the paper's
    design; in the paired settings each person counts in its own identity, images resampled per identity)."""
    ag = vlm.average_gender_from_labels(labels, images, confidence)
    neu = vlm.neutrality(identities, labels, images, n_boot, confidence, seed)
    out: dict[str, Any] = {
        "average_gender": num(ag["average_gender"]),
        "female": ag["female"], "male": ag["male"], "na": ag["na"], "na_share": num(ag["na_share"]),
        "missing": ag["missing"], "deff": num(ag["deff"]),
        "neutrality": num(neu["neutrality"]),
        "neutrality_pooled": num(neu["pooled"]),
        "neutrality_note": ("an extension: the unified VLM paper defines Neutrality on a VLM's answers; here it is "
                            "computed on human labels of generated images"),
        "neutrality_by_identity": {k: {"neutrality": num(v["neutrality"]), "male": v["male"], "female": v["female"],
                                       "neutral": v["neutral"]} for k, v in sorted(neu["groups"].items())},
    }
    if n_boot > 0:
        out["average_gender_ci"] = interval(*ag["ci"])
        out["average_gender_ci_method"] = ag["method"]
        out["neutrality_ci"] = interval(*neu["ci"])
        out["neutrality_ci_method"] = neu["method"]
        # identities whose male and female shares are within 2 s.e.: there the interval is conservative
        out["neutrality_near_balance"] = neu["near_balance"]
    return out


# ------------------------------------------------------------------ fairness intervention (PST 5)
TOP_K = 5
CONDITIONAL_NOTE = ("selected and tested on the same plain images (the paper's Table 6): the interval and p-value "
                    "are conditional on that data-driven selection (with no effect the difference leans negative "
                    "and the test rejects too often); `all` (no selection) and `top_{k}_split` (selected on half of "
                    "the plain images, compared on the other half) are not")


def _difference(d: Any) -> dict[str, Any]:
    """A `metrics.core.significance.Difference` as JSON: plain (b), intervention (a), difference."""
    return {"plain": num(d.b), "intervention": num(d.a), "difference": num(d.difference),
            "ci": interval(d.low, d.high), "ci_method": d.ci_method, "p_value": num(d.p_value),
            "p_holm": num(d.p_holm) if d.p_holm is not None else None}


def _counted(side: Mapping[str, np.ndarray], treatment: Treatment) -> int:
    _, w = pst.stereo_weights(side["labels"], side["stereotypes"], treatment)
    return int(w.sum())


def _selected(plain: Mapping[str, np.ndarray], intervention: Mapping[str, np.ndarray], groups: Mapping[str, str],
              top_k: int | None, treatment: Treatment, selection_from: Mapping[str, np.ndarray] | None
              ) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any] | None]:
    """The two sides after the top-k selection (only images whose persons are all selected)."""
    p, it = dict(plain), dict(intervention)
    if top_k is None:
        return p, it, None
    src = selection_from if selection_from is not None else plain
    micro = pst.micro_sts(src["identities"], src["labels"], src["stereotypes"], treatment)
    selection = top_k_identities(micro, groups, top_k)
    chosen = sorted(i for ids in selection["selected"].values() for i in ids)
    return restrict_to_identities(p, chosen), restrict_to_identities(it, chosen), selection


def _variant(plain: Mapping[str, np.ndarray], intervention: Mapping[str, np.ndarray], groups: Mapping[str, str],
             top_k: int | None, treatment: Treatment, n_boot: int, n_perm: int, confidence: float,
             seed: int, path: str, selection_from: Mapping[str, np.ndarray] | None = None) -> dict[str, Any]:
    p, it, selection = _selected(plain, intervention, groups, top_k, treatment, selection_from)
    images = {"plain": int(np.unique(p["image_ids"]).size), "intervention": int(np.unique(it["image_ids"]).size)}
    a = pst.overall_sts(it["labels"], it["stereotypes"], treatment) if it["labels"].size else float("nan")
    b = pst.overall_sts(p["labels"], p["stereotypes"], treatment) if p["labels"].size else float("nan")
    empty = [name for name, side in (("plain", p), ("intervention", it)) if _counted(side, treatment) == 0]
    if empty:  # a campaign in progress: nothing to compare yet on a side
        why = (f"no labelled person in the {' or '.join(empty)} setting"
               f"{' after the top-' + str(top_k) + ' selection' if top_k else ''} yet: difference not computed")
        warn(path, why)
        return {"plain": num(b), "intervention": num(a), "difference": None, "selection": selection,
                "images": images, "note": why}
    if n_boot <= 0:  # point figures only (no resampling asked for)
        return {"plain": num(b), "intervention": num(a), "difference": num(a - b), "selection": selection,
                "images": images}
    res = intervention_analysis(p, it, groups, None, None, False, treatment,
                                n_boot, n_perm, confidence, seed)
    return {"plain": num(res["plain"]), "intervention": num(res["intervention"]),
            "difference": _difference(res["difference"]),
            "groups": {g: _difference(d) for g, d in sorted(res["groups"].items())},
            "micro": {i: _difference(d) for i, d in sorted(res["micro"].items())},
            "identities": res["identities"], "only_plain": res["only_plain"],
            "only_intervention": res["only_intervention"], "selection": selection, "images": res["images"]}


def _halves(images: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A seeded random half of the plain images (persons of an image stay together), and the rest."""
    ids = np.unique(images)
    rng = np.random.default_rng([seed, 22])
    first = set(rng.permutation(ids)[: ids.size // 2].tolist())
    mask = np.array([i in first for i in images.tolist()], dtype=bool)
    return mask, ~mask


def intervention_section(*, plain: Mapping[str, np.ndarray], intervention: Mapping[str, np.ndarray],
                         groups: Mapping[str, str], treatment: Treatment, n_boot: int, n_perm: int, confidence: float,
                         seed: int) -> dict[str, Any]:
    """The fairness intervention against the plain paired setting on the same identities (PST section 5,
    Tables 5-6). Variants:

    - `all`: every identity of both settings (no selection);
    - `top_5`: the 5 most stereotyped identities of each group by the plain paired micro STS, ties at the cut broken by name and listed under
      `selection.tied_at_cut`; only images whose persons are all selected (the paper's Table 6). Its
      interval and p-value are conditional on that selection (`selection_note`, and a warning);
    - `top_5_split`: the same selection made on a seeded random half of the plain images and the
      comparison on the other half (independent of the selection, so its test keeps its size).

    Each: `plain` and `intervention` overall STS, `difference` (intervention - plain, BCa interval over
    images of each setting, permutation p-value), per `groups` and per identity `micro` (Holm over
    identities). A variant with no labelled person on a side (a campaign in progress) has
    `difference: null` and a `note`, and the report a warning."""
    out: dict[str, Any] = {"treatment": treatment, "top_k": TOP_K}
    base = "pst.intervention_analysis"
    out["all"] = _variant(plain, intervention, groups, None, treatment, n_boot, n_perm, confidence, seed, f"{base}.all")
    top = f"top_{TOP_K}"
    out[top] = _variant(plain, intervention, groups, TOP_K, treatment, n_boot, n_perm, confidence, seed,
                        f"{base}.{top}")
    if isinstance(out[top].get("difference"), dict):
        out[top]["selection_note"] = CONDITIONAL_NOTE.format(k=TOP_K)
        warn(f"{base}.{top}.difference", "p-value and interval conditional on a selection made on the same "
             f"images; see {base}.all and {base}.{top}_split")
    first, rest = _halves(np.asarray(plain["image_ids"]), seed)
    select_on = {k: np.asarray(v)[first] for k, v in plain.items()}
    compare_on = {k: np.asarray(v)[rest] for k, v in plain.items()}
    out[f"{top}_split"] = _variant(compare_on, intervention, groups, TOP_K, treatment, n_boot, n_perm, confidence,
                                   seed, f"{base}.{top}_split", selection_from=select_on)
    out[f"{top}_split"]["split"] = {"selected_on_images": int(np.unique(select_on["image_ids"]).size),
                                    "compared_on_images": int(np.unique(compare_on["image_ids"]).size)}
    return out
