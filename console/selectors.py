"""Reads for the console pages. Each page's queries are bounded (tests/console/test_queries.py):
nothing here loops over rows with a query per row."""
from __future__ import annotations

import math
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Count, Q, QuerySet

from annotation.models import AggregatedLabel
from annotation.pay import campaign_pay
from campaigns.models import Campaign
from campaigns.selectors import campaign_list
from campaigns.spec import NEUTRAL, SINGLE
from generation.models import Image
from generation.selectors import image_url

CS = Campaign.Status
# The audit's steps, in order; the campaign page highlights the current one.
STEPS = [
    ("design", "Design"),
    ("generate", "Generate"),
    ("review", "Review images"),
    ("annotate", "Annotate"),
    ("report", "Report"),
]


def campaign_rows(*, user: AbstractBaseUser | AnonymousUser) -> QuerySet[Campaign]:
    """The user's campaigns with image and question counts, in one query per page."""
    return (campaign_list(user=user).select_related("owner")
            .annotate(images_done=Count("images", filter=Q(images__status=Image.Status.DONE), distinct=True),
                      images_excluded=Count("images", filter=Q(images__excluded=True), distinct=True))
            .order_by("-created_at", "-id"))


def next_step(campaign: Campaign, progress: dict[str, Any]) -> dict[str, Any]:
    """Where the audit stands and what to do next: the step key, a sentence, and the actions
    (names of the console's action form) that make sense now."""
    status = campaign.status
    done = progress.get("images_done", 0)
    failed = progress.get("images_failed", 0)
    backend = (campaign.spec.get("backend") or {}).get("name")
    if status == CS.DRAFT:
        if backend == "import":
            return {"step": "generate", "text": "Upload the images generated elsewhere (import API or CLI).",
                    "actions": []}
        text = "Generate the images." if not done else "Generation was cancelled: resume it, or review what is done."
        return {"step": "generate", "text": text, "actions": ["generate"] + (["open"] if done else [])}
    if status == CS.GENERATING:
        return {"step": "generate", "text": "Images are being generated.", "actions": ["cancel"]}
    if status == CS.GENERATED:
        actions = ["open"]
        if failed:
            actions.insert(0, "retry")
        text = ("Review the images (exclude bad generations), then open the campaign for annotation."
                + (f" {failed} images failed: retry them or go on without them." if failed else ""))
        return {"step": "review", "text": text, "actions": actions}
    if status == CS.OPEN:
        complete = progress.get("questions_complete", 0)
        total = progress.get("questions", 0)
        if total and complete >= total:
            return {"step": "report", "text": "Every question has its answers: close annotation and read the report.",
                    "actions": ["close", "pause"]}
        return {"step": "annotate", "text": "Annotators are at work: share the link below.", "actions": ["pause", "close"]}
    if status == CS.PAUSED:
        return {"step": "annotate", "text": "Annotation is paused: annotators get no new HITs.",
                "actions": ["resume", "close"]}
    return {"step": "report", "text": "Annotation is closed: the report is final.", "actions": []}


def questions_per_image(campaign: Campaign) -> dict[str, int]:
    """METHOD.md: PST single 1, paired/intervention 2 (one per person); GEP neutral one per
    attribute, explicit 1."""
    design = campaign.spec.get("design") or {}
    if campaign.kind == Campaign.Kind.PST:
        return {s: (1 if s == SINGLE else 2) for s in design.get("settings", [])}
    return {s: (len(design.get("attributes") or []) if s == NEUTRAL else 1) for s in design.get("settings", [])}


def filter_options(campaign: Campaign) -> dict[str, list[str]]:
    """Values for the image grid's filters, from the stored (normalised) spec: no query."""
    design = campaign.spec.get("design") or {}
    out: dict[str, list[str]] = {"setting": list(design.get("settings", [])),
                                 "status": [s.value for s in Image.Status]}
    if campaign.kind == Campaign.Kind.PST:
        identities: list[str] = []
        if isinstance(design.get("identities"), dict):
            for group in design["identities"].get("groups", []):
                identities += list(group.get("identities", []))
        power = design.get("power") or {}
        for occ in power.get("draw", []) if isinstance(power.get("draw"), list) else []:
            for key in ("high", "low"):
                if isinstance(occ, dict) and occ.get(key):
                    identities.append(str(occ[key]))
        out["identity"] = sorted(set(identities))
    else:
        out["gender"] = [g["name"] if isinstance(g, dict) else str(g) for g in design.get("genders", [])]
        out["attribute"] = [a["name"] if isinstance(a, dict) else str(a) for a in design.get("attributes", [])]
    return out


IMAGE_FILTERS = ("setting", "identity", "gender", "attribute", "status", "excluded")


def image_filter(qs: QuerySet[Image], filters: dict[str, str]) -> QuerySet[Image]:
    """Filters of the review grid. Identity matches the prompt key (`single:<id>`, `paired:<a>|<b>`),
    which works on every database (JSON `contains` does not on SQLite)."""
    if filters.get("setting"):
        qs = qs.filter(prompt__setting=filters["setting"])
    if filters.get("identity"):
        ident = filters["identity"]
        qs = qs.filter(Q(prompt__key__endswith=f":{ident}") | Q(prompt__key__endswith=f"|{ident}")
                       | Q(prompt__key__contains=f":{ident}|"))
    if filters.get("gender"):
        qs = qs.filter(prompt__metadata__gender=filters["gender"])
    if filters.get("attribute"):
        qs = qs.filter(prompt__metadata__attribute=filters["attribute"])
    if filters.get("status") in Image.Status.values:
        qs = qs.filter(status=filters["status"])
    if filters.get("excluded") in ("yes", "no"):
        qs = qs.filter(excluded=filters["excluded"] == "yes")
    return qs


def image_card(image: Image) -> dict[str, Any]:
    """What the grid and the image dialog show (prompt, seed, parameters, provenance)."""
    return {
        "id": image.pk, "prompt_key": image.prompt.key, "prompt": image.prompt.text, "setting": image.prompt.setting,
        "sample_index": image.sample_index, "seed": image.seed, "status": image.status, "error": image.error,
        "attempts": image.attempts, "thumb": image_url(web_file=image.web_file, source_url=image.source_url),
        "url": image_url(file=image.file, source_url=image.source_url), "sha256": image.sha256, "width": image.width,
        "height": image.height, "backend": image.backend, "model": image.model, "revision": image.revision,
        "params": image.params, "wall_time_s": image.wall_time_s, "revised_prompt": image.revised_prompt,
        "synthetic": image.synthetic, "excluded": image.excluded, "exclusion_reason": image.exclusion_reason,
        "finished_at": image.finished_at.isoformat() if image.finished_at else None,
        "metadata": image.prompt.metadata,
    }


def annotator_monitor(*, campaign: Campaign, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Adds the median time per question (ms) to the annotation app's annotator table, by the one
    definition of time per answer that fair pay uses (`annotation.pay`: the HIT's working time over
    its answers): one query."""
    per_answer = {a["id"]: a["median_seconds_per_answer"] for a in campaign_pay(campaign=campaign)["annotators"]}
    for row in rows:
        seconds = per_answer.get(row["id"])
        row["median_time_ms"] = None if seconds is None else seconds * 1000
    return rows


def questions_in_doubt(*, campaign: Campaign, max_share: float, limit: int = 25) -> dict[str, Any]:
    """Tied questions and questions whose majority share (top votes / answers) is at most
    `max_share`, lowest first. Two queries; the share is computed here from the stored votes
    (a JSON object), so any database works."""
    ties_qs = (AggregatedLabel.objects.filter(question__campaign=campaign, question__is_gold=False, tie=True)
               .select_related("question").order_by("question_id"))
    ties = list(ties_qs[:limit])
    tie_count = ties_qs.count() if len(ties) == limit else len(ties)
    low: list[tuple[float, AggregatedLabel]] = []
    labels = (AggregatedLabel.objects.filter(question__campaign=campaign, question__is_gold=False, tie=False,
                                             answers__gte=2)
              .only("id", "question_id", "label", "votes", "answers"))
    for label in labels.iterator(chunk_size=5000):
        votes = label.votes or {}
        if not votes or not label.answers:
            continue
        share = max(votes.values()) / label.answers
        if share <= max_share + 1e-9:
            low.append((share, label))
    low.sort(key=lambda x: (x[0], x[1].question_id))
    low_rows = [{"question": lbl.question_id, "label": lbl.label, "votes": lbl.votes, "answers": lbl.answers,
                 "share": share} for share, lbl in low[:limit]]
    return {"ties": [{"question": t.question_id, "image": t.question.image_id, "text": t.question.text,
                      "votes": t.votes, "answers": t.answers} for t in ties],
            "tie_count": tie_count, "low": low_rows, "low_count": len(low)}


def percent(part: float | int | None, whole: float | int | None) -> float:
    if not whole or part is None:
        return 0.0
    return max(0.0, min(100.0, 100.0 * float(part) / float(whole)))


def duration(seconds: float | int | None) -> str:
    if seconds is None:
        return "unknown"
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{math.ceil(seconds / 60)} min"
    return f"{seconds // 3600} h {math.ceil((seconds % 3600) / 60)} min"


def labeller_rows(*, campaign: Campaign) -> list[dict[str, Any]]:
    """The console's machine-label page: every labeller that answers this campaign's questions (and any
    with labels or a job here, e.g. an import), with whether it can run now (its options resolve from
    the spec or its defaults), its progress, and its agreement with the human majority on the questions
    both labelled (percent agreement and Cohen's kappa, sklearn; ties left out). Three queries."""
    from sklearn.metrics import cohen_kappa_score

    from autolabel.labellers import labeller_get, labeller_names
    from autolabel.models import MachineLabel
    from autolabel.selectors import autolabel_progress
    from autolabel.services import labeller_config_for
    from common.errors import ApplicationError

    kind_families = {"pst": "person", "gep": "attribute"}
    family = kind_families.get(campaign.kind, "")
    progress = autolabel_progress(campaign).get("autolabel", {})
    human = dict(AggregatedLabel.objects.filter(question__campaign=campaign, question__is_gold=False, tie=False)
                 .values_list("question_id", "label"))
    pairs: dict[str, list[tuple[str, str]]] = {}
    for labeller, qid, choice in (MachineLabel.objects.filter(campaign=campaign)
                                  .values_list("labeller", "question_id", "choice").iterator(chunk_size=5000)):
        if qid in human:
            pairs.setdefault(labeller, []).append((human[qid], choice))
    names = [n for n in labeller_names() if n != "import" and family in (labeller_get(n).families or ())]  # type: ignore[union-attr]
    names += sorted((set(progress) | set(pairs)) - set(names))
    rows = []
    for name in names:
        lab = labeller_get(name)
        runnable, reason = False, "imported labels" if lab is None else ""
        if lab is not None:
            try:
                labeller_config_for(campaign=campaign, labeller=name)
                runnable = True
            except ApplicationError as exc:
                reason = str(exc)
        both = pairs.get(name, [])
        agreement = None
        if both:
            h, m = zip(*both)
            same = sum(a == b for a, b in both)
            kappa = float(cohen_kappa_score(h, m)) if len(set(h) | set(m)) > 1 else None
            agreement = {"n": len(both), "percent": same / len(both),
                         "kappa": kappa if kappa is None or math.isfinite(kappa) else None}
        rows.append({"name": name, "description": getattr(lab, "description", "") if lab else "imported",
                     "runnable": runnable, "reason": reason, "progress": progress.get(name),
                     "agreement": agreement})
    return rows
