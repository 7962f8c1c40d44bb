"""The report's `agreement` section: Fleiss' kappa, Krippendorff's alpha and percent agreement, overall
and per setting, from the questions x choices count matrix."""
from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from metrics.core import agreement
from metrics.core._arrays import distinct_values, row_totals
from metrics.extract.data import CampaignData

from .types import AgreementBasis
from .values import num as _f


def _agreement(counts: np.ndarray) -> dict[str, Any]:
    """Agreement from a questions x choices count matrix (rows with no answers are ignored)."""
    answered = row_totals(counts) > 0
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



def agreement_data(data: CampaignData) -> tuple[CampaignData, AgreementBasis]:
    """The answers agreement is computed on, and what the report says about it (`agreement.basis`).
    Fixed R: every answer. Adaptive redundancy: the first `min` answers of every question in order of
    arrival (a correction keeps its original's place), collected whatever the outcome; a question's
    later answers exist only because its first ones disagreed, so agreement over all of them (or over
    the questions with the modal count) is biased (Fleiss' kappa 1.000 against a true 0.90, issue 22).
    The scores use every answer (the majority of all of a question's answers)."""
    raw = (data.campaign.spec.get("annotation") or {}).get("redundancy")
    if not isinstance(raw, dict):
        return data, {"design": "fixed", "answers_per_question": None, "note": None}
    k = int(raw.get("min", 2))
    arrival = data.a_arrival
    if arrival is None or arrival.size != data.a_qidx.size:  # no arrival order known: the answers' own
        arrival = np.arange(data.a_qidx.size)
    order = np.argsort(arrival, kind="stable")
    keep = np.zeros(data.a_qidx.size, dtype=bool)
    keep[order] = agreement.first_answers(data.a_qidx[order], k)
    sub = dataclasses.replace(data, a_qidx=data.a_qidx[keep], a_annotator=data.a_annotator[keep],
                              a_code=data.a_code[keep],
                              a_arrival=arrival[keep])
    note = (f"Adaptive redundancy: agreement is computed on the first {k} answers of every question (in order "
            f"of arrival, collected whatever the outcome); later answers, asked for only where the first "
            f"disagreed, count in the labels but not here ({int(keep.sum())} of {keep.size} answers).")
    return sub, {"design": "adaptive", "answers_per_question": k, "answers_used": int(keep.sum()),
                 "answers_total": int(keep.size), "note": note}


def agreement_section(data: CampaignData) -> dict[str, Any]:
    counts = data.vote_counts()
    out: dict[str, Any] = {"overall": _agreement(counts), "by_setting": {}}
    for setting in sorted(distinct_values(data.q_setting)):
        mask = data.q_setting == setting
        # A campaign of one setting: the same questions as overall, computed once.
        out["by_setting"][setting] = dict(out["overall"]) if mask.all() else _agreement(counts[mask])
    return out
