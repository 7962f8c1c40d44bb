"""Machine labels for a report's `source` (a labeller, or `hybrid:<labeller>`), read once through the
autolabel app's public selectors and aligned with the question arrays of `CampaignData`.

Three queries, made only for a machine or hybrid source (the human report reads none of this):
the labeller's labels (`machine_label_arrays`), the recorded human sample (`human_sample_image_ids`)
and the CLIPScores (`clipscore_rows`). A source whose labeller has no label on the campaign is a 400
naming `source` (`machine_labeller_check`). New machine labels, a new human sample or new CLIPScores
move the campaign's data revision (their writers go through `annotation.services.derived`), so the
snapshot key (`metrics.snapshots.key`) rebuilds the report.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from autolabel.models import MachineLabel
from autolabel.selectors import clipscore_rows, human_sample_image_ids, machine_label_arrays, machine_labellers
from common.errors import ApplicationError

from .data import CampaignData

__all__ = ["MachineData", "machine_data", "machine_data_from", "machine_labeller_check"]


@dataclass
class MachineData:
    """One labeller's labels aligned with `CampaignData.q_id` ('' / NaN where it gave none)."""

    labeller: str
    choice: np.ndarray     # str
    score: np.ndarray      # float: the labeller's score for the question's first choice, NaN if none
    positive: np.ndarray   # str: the question's first choice ("Yes", "Feminine"), '' if unknown
    model: str             # the model named by most labels (provenance)
    sampled: np.ndarray    # bool: the question's image is in the recorded human sample
    sample_active: bool    # the campaign has a recorded human sample
    clipscore: list[dict[str, Any]]
    # The raw similarity per question where the labeller stores one (GEP_C cos, GEP_CC diff), else NaN.
    raw: np.ndarray | None = None


def machine_labeller_check(campaign: Any, labeller: str) -> None:
    """A labeller without any label on the campaign is a 400 naming `source` (one query; two on the
    error path, which lists the campaign's labellers). Whether a machine or hybrid report is stale is
    the snapshot key's business (`metrics.snapshots.key`): machine-label runs and imports move the
    campaign's data revision."""
    if MachineLabel.objects.filter(campaign=campaign, labeller=labeller).exists():
        return
    names = machine_labellers(campaign)
    known = ", ".join(names) if names else "none"
    raise ApplicationError(f"Invalid report parameter source: no labels from {labeller!r} on this campaign",
                           errors={"source": [f"no machine labels from {labeller!r} (labellers: {known})"]})


def machine_data(campaign: Any, data: CampaignData, labeller: str) -> MachineData:
    return machine_data_from(data, labeller, rows=machine_label_arrays(campaign, labeller),
                             sample=human_sample_image_ids(campaign), clipscore=clipscore_rows(campaign))


def machine_data_from(data: CampaignData, labeller: str, *, rows: list[dict[str, Any]], sample: set[int],
                      clipscore: list[dict[str, Any]]) -> MachineData:
    """Pure: the labeller's rows (`machine_label_arrays`' shape; only `question`, `choice`, `score`,
    `raw`, `choices` and `model` are read), the recorded human sample and the CLIPScore rows, aligned with
    the data's questions. The replication package calls this with the same rows read from its tables."""
    n = data.q_id.size
    choice = np.full(n, "", dtype=object)
    score = np.full(n, np.nan)
    raw = np.full(n, np.nan)
    positive = np.full(n, "", dtype=object)
    models: dict[str, int] = {}
    if rows:
        qids = np.fromiter((r["question"] for r in rows), np.int64, len(rows))
        at = np.searchsorted(data.q_id, qids)
        at = np.minimum(at, max(n - 1, 0))
        found = (data.q_id[at] == qids) if n else np.zeros(len(rows), dtype=bool)
        for r, i, ok in zip(rows, at.tolist(), found.tolist(), strict=True):
            if not ok:  # a question the report leaves out (excluded image, gold)
                continue
            choice[i] = r["choice"]
            if r["score"] is not None:
                score[i] = float(r["score"])
            if r.get("raw") is not None:
                raw[i] = float(r["raw"])
            positive[i] = (r["choices"] or [""])[0]
            model = r.get("model") or ""
            models[model] = models.get(model, 0) + 1
    sampled = np.isin(data.q_image, np.fromiter(sample, np.int64, len(sample)))
    return MachineData(labeller=labeller, choice=choice.astype(str), score=score, positive=positive.astype(str),
                       model=max(models, key=lambda k: models[k]) if models else "", sampled=sampled,
                       sample_active=bool(sample), clipscore=clipscore, raw=raw)
