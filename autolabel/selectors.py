"""Reads of machine labels, for the API, the CLI and metrics (public: the hybrid / agreement side of
issue 15 reads these; keep the names and row keys stable).

`machine_label_arrays(campaign, labeller)` -> list of dicts, one per machine label of that labeller
on the campaign's (non-gold) questions, ordered by question id:
    {"question": int, "image": int, "family": str ("person" or "attribute:<name>"),
     "attribute": str | None (GEP attribute name, None for PST), "slot": str ("single"/"left"/"right"
     for PST, the attribute name for GEP), "setting": str, "prompt_key": str, "sample_index": int,
     "metadata": dict (the question's researcher metadata: gender/context or identity/position...),
     "choices": list[str], "choice": str, "score": float | None, "raw": float | None, "model": str (provenance)}
`score` is the labeller's probability / confidence for the question's FIRST choice ("Yes" for a GEP
attribute question, "Feminine" for a PST person question), in [0, 1]; None where the labeller gives
none. `raw` is the labeller's raw similarity where it stores one (GEP_C `extra.cos`, GEP_CC
`extra.diff`: the GEP paper's scale), else None.

`clipscore_rows(campaign, model=None)` -> [{"image", "setting", "prompt_key", "sample_index",
"model", "score"}] (CLIPScore = 2.5 * max(cos, 0), Hessel et al. 2021).

`human_sample_image_ids(campaign)` -> set of image ids drawn into the spec's `autolabel.human_sample`
(an empty set when the campaign has no human sample: then every image is open to humans; use
`human_sample_active(campaign)` to tell the two apart).
"""
from __future__ import annotations

from typing import Any

from django.db.models import Count, Q, QuerySet

from annotation.families import family_attribute
from campaigns.models import Campaign

from .models import AutolabelJob, HumanSampleImage, ImageClipScore, MachineLabel, MachineLabelFailure


def machine_labels_list(*, campaign: Campaign, labeller: str | None = None) -> QuerySet[MachineLabel]:
    qs = MachineLabel.objects.filter(campaign=campaign).order_by("question_id", "labeller")
    if labeller:
        qs = qs.filter(labeller=labeller)
    return qs


def machine_label_arrays(campaign: Campaign, labeller: str) -> list[dict[str, Any]]:
    """See the module docstring. One query."""
    rows = (MachineLabel.objects.filter(campaign=campaign, labeller=labeller, question__is_gold=False)
            .order_by("question_id")
            .values_list("question_id", "question__image_id", "question__family", "question__slot",
                         "question__setting", "question__metadata", "question__choices", "choice", "score",
                         "params", "model"))
    out = []
    for qid, image_id, family, slot, setting, meta, choices, choice, score, params, model in rows:
        meta = meta or {}
        out.append({
            "question": qid, "image": image_id, "family": family,
            "attribute": family_attribute(family),
            "slot": slot, "setting": setting, "prompt_key": meta.get("prompt_key"),
            "sample_index": meta.get("sample_index"), "metadata": meta, "choices": list(choices or []),
            "choice": choice, "score": score, "raw": raw_similarity(params), "model": model,
        })
    return out


def raw_similarity(params: Any) -> float | None:
    """The labeller's raw similarity on the paper's scale, when it stores one: GEP_C's `cos`,
    GEP_CC's `diff` (the `extra` of autolabel.labellers.clip)."""
    if not isinstance(params, dict):
        return None
    for key in ("cos", "diff"):
        value = params.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    return None


def machine_labellers(campaign: Campaign) -> list[str]:
    """The labellers with at least one label on the campaign, sorted."""
    return sorted(set(MachineLabel.objects.filter(campaign=campaign).values_list("labeller", flat=True).distinct()))


def clipscore_rows(campaign: Campaign, model: str | None = None) -> list[dict[str, Any]]:
    qs = ImageClipScore.objects.filter(campaign=campaign).order_by("image_id", "model")
    if model:
        qs = qs.filter(model=model)
    rows = qs.values_list("image_id", "image__prompt__setting", "image__prompt__key", "image__sample_index",
                          "model", "score")
    return [{"image": i, "setting": s, "prompt_key": k, "sample_index": n, "model": m, "score": sc}
            for i, s, k, n, m, sc in rows]


def human_sample_image_ids(campaign: Campaign) -> set[int]:
    return set(HumanSampleImage.objects.filter(campaign=campaign).values_list("image_id", flat=True))


def human_sample_active(campaign: Campaign) -> bool:
    spec = campaign.spec if isinstance(campaign.spec, dict) else {}
    return bool((spec.get("autolabel") or {}).get("human_sample"))


def human_sample_summary(campaign: Campaign) -> dict[str, Any] | None:
    """{"fraction", "seed", "images", "strata": {stratum: n}} or None without a human sample."""
    spec = campaign.spec if isinstance(campaign.spec, dict) else {}
    cfg = (spec.get("autolabel") or {}).get("human_sample")
    if not cfg:
        return None
    strata = dict(HumanSampleImage.objects.filter(campaign=campaign).values_list("stratum")
                  .annotate(n=Count("id")).order_by("stratum").values_list("stratum", "n"))
    return {"fraction": cfg.get("fraction"), "seed": cfg.get("seed"), "images": sum(strata.values()), "strata": strata}


def autolabel_progress(campaign: Campaign) -> dict[str, Any]:
    """`progress.autolabel.<labeller>.{done,total,failed,status}` for every labeller run on (or
    imported into) the campaign. One query: the job rows carry the counters (services recount them
    after every batch; the importer sets them)."""
    rows = (AutolabelJob.objects.filter(campaign=campaign).order_by("labeller")
            .values_list("labeller", "done", "total", "failed", "status"))
    out = {name: {"done": done, "total": total, "failed": failed, "status": status}
           for name, done, total, failed, status in rows}
    return {"autolabel": out} if out else {}


def job_counts(*, job: AutolabelJob) -> dict[str, int]:
    """Labels and failures stored for a job's campaign and labeller (the source of done / failed)."""
    done = MachineLabel.objects.filter(campaign_id=job.campaign_id, labeller=job.labeller).count()
    failed = (MachineLabelFailure.objects.filter(campaign_id=job.campaign_id, labeller=job.labeller)
              .filter(~Q(question__machine_labels__labeller=job.labeller)).count())
    return {"done": done, "failed": failed}
