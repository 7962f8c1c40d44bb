"""Researcher console pages: server-rendered; actions are forms that call the same services as the
API (so everything here is also possible through the API), or small scripts that call the API."""
from __future__ import annotations

import json
from typing import Any

from django.contrib import messages
from django.contrib.auth.models import User
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from annotation import selectors as annotation_selectors
from annotation.families import design_example_families, family_choices
from annotation.pay import campaign_pay
from annotation.services.lifecycle import campaign_annotation_transition
from annotation.services.opening import campaign_open_request
from annotation.services.quality import enrollment_action
from annotation.spec_section import DEFAULT_INSTRUCTIONS, DEFAULT_QUESTIONS, DEFAULT_SETTING_INSTRUCTIONS
from autolabel.selectors import machine_labellers
from campaigns.models import Campaign
from campaigns.selectors import campaign_progress
from campaigns.services import campaign_create
from campaigns.spec import spec_load_text
from common.errors import ApplicationError
from common.numbers import number
from common.uploads import upload_read
from generation import services as generation_services
from generation.selectors import image_list
from metrics.compare.options import ALL_SETTINGS, CompareOptions
from metrics.compare.services import compare_get
from metrics.compare.sources import compare_source_options
from metrics.options import ReportOptions
from metrics.render import compare_page, report_page
from metrics.render.compare import significance_page
from metrics.snapshots.report import report_get

from . import selectors
from .access import owned_campaign, researcher_required

PRESETS = [
    ("pst-occupation", "PST: gendered occupations (PST paper, 40 occupations)"),
    ("pst-power", "PST: organisational power (36 occupations, high/low roles)"),
    ("gep", "GEP: 15 attributes x 16 contexts (GEP paper)"),
    ("scratch", "From scratch"),
]
BACKENDS = ["placeholder", "diffusers", "openai", "import"]
ACTIONS = {
    "generate": "Generate images", "cancel": "Cancel generation", "retry": "Retry failed images",
    "open": "Open for annotation", "pause": "Pause annotation", "resume": "Resume annotation",
    "close": "Close annotation",
}
IMAGES_PER_PAGE = 48
REPORT_OPTION_KEYS = ("treatment", "gep_tie_policy", "aggregation", "n_boot", "source")



def _signed_in(request: HttpRequest) -> User:
    """The researcher of a console page (every page is behind the researcher login)."""
    user = request.user
    if not isinstance(user, User):
        raise PermissionError("a console page needs a signed-in researcher")
    return user

def _errors(exc: ApplicationError) -> list[tuple[str, str]]:
    """(dotted path, message) pairs of an application error, for the error list."""
    out = [(path, msg) for path, msgs in exc.errors.items() for msg in msgs]
    return out or [("", exc.message)]


@researcher_required
def campaign_list_view(request: HttpRequest) -> HttpResponse:
    page = Paginator(selectors.campaign_rows(user=request.user), 50).get_page(request.GET.get("page"))
    return render(request, "console/campaign_list.html", {"page": page, "campaigns": list(page.object_list), "nav": "campaigns"})


@researcher_required
@require_http_methods(["GET", "POST"])
def campaign_new_view(request: HttpRequest) -> HttpResponse:
    """The design form (its script writes the spec into the raw editor) and the raw editor / file
    upload. Posting creates the campaign through `campaign_create`, exactly as the API does."""
    errors: list[tuple[str, str]] = []
    spec_text = ""
    if request.method == "POST":
        upload = request.FILES.get("spec_file")
        try:
            if upload is not None:
                raw_bytes = upload_read(upload, field="spec_file", kind="spec")
                spec_text = raw_bytes.decode("utf-8", errors="replace")
                spec = spec_load_text(raw_bytes, filename=upload.name or "")
            else:
                spec_text = request.POST.get("spec", "")
                if not spec_text.strip():
                    raise ApplicationError("Write a spec or upload a spec file.", errors={"spec": ["required"]})
                spec = spec_load_text(spec_text)
            campaign = campaign_create(owner=_signed_in(request), spec=spec)
        except ApplicationError as exc:
            errors = _errors(exc)
        else:
            messages.success(request, f"Campaign “{campaign.name}” created: {campaign.prompt_count} prompts, "
                                      f"{campaign.images_planned} images planned.")
            return HttpResponseRedirect(reverse("console:campaign", args=[campaign.pk]))
    return render(request, "console/campaign_new.html", {
        "presets": PRESETS, "backends": BACKENDS, "errors": errors, "spec_text": spec_text,
        "preset": request.GET.get("preset", "pst-occupation"), "nav": "new",
        "annotation_defaults": _annotation_defaults(),
    }, status=400 if errors else 200)


def _annotation_defaults() -> dict[str, Any]:
    """What annotators see unless the spec says otherwise (the form's instructions and its preview)."""
    return {"instructions": DEFAULT_INSTRUCTIONS, "setting_instructions": DEFAULT_SETTING_INSTRUCTIONS,
            "questions": DEFAULT_QUESTIONS}


def _progress_context(campaign: Any) -> dict[str, Any]:
    progress = campaign_progress(campaign=campaign)
    planned = progress.get("images_planned") or 0
    return {
        "progress": progress,
        "step": selectors.next_step(campaign, progress),
        "gen_pct": selectors.percent(progress.get("images_done"), planned),
        "ann_pct": selectors.percent(progress.get("questions_complete"), progress.get("questions")),
        "eta": selectors.duration(progress.get("eta_seconds")),
    }


@researcher_required
def campaign_detail_view(request: HttpRequest, campaign_id: int) -> HttpResponse:
    campaign = owned_campaign(request, campaign_id)
    ctx = _progress_context(campaign)
    backend = campaign.spec.get("backend") or {}
    annotation = campaign.spec.get("annotation") or {}
    step_keys = [k for k, _ in selectors.STEPS]
    current = step_keys.index(ctx["step"]["step"])
    return render(request, "console/campaign_detail.html", {
        "campaign": campaign, **ctx, "backend": backend, "nav": "campaigns", "annotation": annotation,
        "redundancy_adaptive": annotation.get("redundancy") if isinstance(annotation.get("redundancy"), dict) else None,
        "synthetic": backend.get("name") == "placeholder",
        "steps": [{"key": k, "label": label, "state": "done" if i < current else "current" if i == current else "todo"}
                  for i, (k, label) in enumerate(selectors.STEPS)],
        "actions": [(a, ACTIONS[a]) for a in ctx["step"]["actions"]],
        "work_url": request.build_absolute_uri(f"/work/{campaign.pk}/"),
        "questions_per_image": selectors.questions_per_image(campaign),
        "polling": campaign.status in (Campaign.Status.GENERATING, Campaign.Status.OPEN),
        "spec_json": json.dumps(campaign.spec, indent=2, ensure_ascii=False),
        # Fair pay (annotation/pay.py): one query, once annotation has started.
        "pay": campaign_pay(campaign=campaign) if campaign.status in (Campaign.Status.OPEN, Campaign.Status.PAUSED, Campaign.Status.CLOSED) else None,
    })


@researcher_required
@require_POST
def campaign_action_view(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """One lifecycle action through the services the API calls."""
    campaign = owned_campaign(request, campaign_id)
    action = request.POST.get("action", "")
    try:
        if action == "generate":
            r = generation_services.generation_start(campaign=campaign)
            messages.success(request, f"Generation started: {r['queued']} images queued.")
        elif action == "cancel":
            r = generation_services.generation_cancel(campaign=campaign)
            messages.success(request, f"Generation cancelled ({r['cancelled']} images).")
        elif action == "retry":
            r = generation_services.generation_retry_failed(campaign=campaign)
            messages.success(request, f"{r['reset']} failed images queued again.")
        elif action == "open":
            state, r = campaign_open_request(campaign=campaign)
            if state == "building":  # over the request work budget: a worker creates the questions
                messages.success(request, f"Opening in the background ({r['progress']:.0%} done); "
                                          "the campaign is open when its questions are created.")
            else:
                messages.success(request, f"Open for annotation: {r.get('questions', 0)} questions.")
        elif action in ("pause", "resume", "close"):
            campaign_annotation_transition(campaign=campaign, action=action)
            messages.success(request, f"Annotation: {action} done.")
        else:
            messages.error(request, f"Unknown action {action!r}.")
    except ApplicationError as exc:
        messages.error(request, str(exc))
    next_url = request.POST.get("next") or ""
    if not next_url.startswith("/console/"):
        next_url = reverse("console:campaign", args=[campaign.pk])
    return HttpResponseRedirect(next_url)


@researcher_required
def image_grid_view(request: HttpRequest, campaign_id: int) -> HttpResponse:
    campaign = owned_campaign(request, campaign_id)
    filters = {k: request.GET.get(k, "") for k in selectors.IMAGE_FILTERS}
    qs = selectors.image_filter(image_list(campaign=campaign), filters)
    page = Paginator(qs, IMAGES_PER_PAGE).get_page(request.GET.get("page"))
    cards = [selectors.image_card(img) for img in page.object_list]
    query = "&".join(f"{k}={v}" for k, v in filters.items() if v)
    return render(request, "console/image_grid.html", {
        "campaign": campaign, "page": page, "cards": cards, "nav": "campaigns", "filters": filters,
        "options": selectors.filter_options(campaign), "query": query,
        "cards_json": {str(c["id"]): c for c in cards},
        "editable": campaign.status != Campaign.Status.CLOSED,
        "example_setup": _example_setup(campaign),
    })


def _example_setup(campaign: Any) -> dict[str, Any]:
    """What the grid's "use as example" form needs: the campaign's example families, their answers,
    and the examples already chosen, by image (uploads are listed under "uploads")."""
    families = design_example_families(campaign.kind, campaign.spec)
    by_image: dict[str, list[dict[str, Any]]] = {}
    for e in annotation_selectors.examples_list(campaign=campaign):
        by_image.setdefault(str(e["image"]) if e["image"] else "uploads", []).append(
            {"id": e["id"], "family": e["family"], "answer": e["answer"], "caption": e["caption"]})
    return {"campaign": campaign.pk, "kind": campaign.kind, "families": families,
            "choices": {f: family_choices(f) for f in families}, "by_image": by_image}


@researcher_required
def labels_view(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """Machine labels: run or cancel a labeller, import a label file (the page's script calls the
    autolabel API), watch progress, and each labeller's agreement with the human majority."""
    campaign = owned_campaign(request, campaign_id)
    rows = selectors.labeller_rows(campaign=campaign)
    return render(request, "console/labels.html", {
        "campaign": campaign, "nav": "campaigns", "rows": rows,
        "running": any((r["progress"] or {}).get("status") == "running" for r in rows),
    })


@researcher_required
def annotator_monitor_view(request: HttpRequest, campaign_id: int) -> HttpResponse:
    campaign = owned_campaign(request, campaign_id)
    try:  # common.numbers: finite, in [0, 1]
        max_share = number(request.GET.get("max_share", "0.67"), field="max_share", kind="float", minimum=0, maximum=1)
    except ApplicationError:
        max_share = 0.67
    rows = selectors.annotator_monitor(campaign=campaign,
                                       rows=annotation_selectors.annotator_table(campaign=campaign))
    quals = annotation_selectors.qualification_list(campaign=campaign, researcher=True, annotator=None)
    return render(request, "console/annotators.html", {
        "campaign": campaign, "rows": rows, "nav": "campaigns", "qualifications": quals, "max_share": max_share,
        "doubt": selectors.questions_in_doubt(campaign=campaign, max_share=max_share),
        "progress": campaign_progress(campaign=campaign),
    })


@researcher_required
@require_POST
def annotator_action_view(request: HttpRequest, campaign_id: int, annotator_id: int) -> HttpResponse:
    campaign = owned_campaign(request, campaign_id)
    action = request.POST.get("action", "")
    try:
        enrollment_action(campaign=campaign, annotator_id=annotator_id, action=action,
                                              reason=request.POST.get("reason", "")[:500])
        messages.success(request, f"Annotator {annotator_id}: {action} done.")
    except ApplicationError as exc:
        messages.error(request, str(exc))
    return HttpResponseRedirect(reverse("console:annotators", args=[campaign.pk]))


def _report_options(request: HttpRequest) -> tuple[ReportOptions | None, dict[str, str], list[tuple[str, str]]]:
    params = {k: request.GET.get(k, "") for k in REPORT_OPTION_KEYS}
    try:
        return ReportOptions.from_params({k: v for k, v in params.items() if v}), params, []
    except ApplicationError as exc:
        return None, params, _errors(exc)


def _label_sources(campaigns: list[Any]) -> list[tuple[str, str]]:
    """(value, label) of the label sources with labels on every one of the campaigns: the human
    majority, each machine labeller, each hybrid of the two (docs/metrics.md "Label sources")."""
    labellers: set[str] | None = None
    for campaign in campaigns:
        have = set(machine_labellers(campaign))
        labellers = have if labellers is None else labellers & have
    out = [("human", "human answers (majority)")]
    for name in sorted(labellers or ()):
        out.append((name, f"machine labeller {name}"))
    for name in sorted(labellers or ()):
        out.append((f"hybrid:{name}", f"hybrid: human sample + {name}"))
    return out


@researcher_required
def report_view(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """The report with the options asked for; an option that is invalid (or a source without labels)
    shows the report with the default options and the error above it, never only the error."""
    campaign = owned_campaign(request, campaign_id)
    options, params, errors = _report_options(request)
    sources = _label_sources([campaign])
    ctx: dict[str, Any] = {"campaign": campaign, "nav": "campaigns", "params": params, "errors": errors,
                           "state": "", "report": None, "sources": sources,
                           "exports": _exports(campaign)}
    if options is not None:
        try:
            state, report = report_get(campaign=campaign, options=options)
        except ApplicationError as exc:  # e.g. a source whose labeller has no labels on this campaign
            ctx["errors"] = errors = _errors(exc)
            options = None
    if options is None:  # the defaults, with the error shown above them
        params = {k: "" for k in REPORT_OPTION_KEYS}
        ctx["params"] = params
        ctx["defaults_shown"] = True
        state, report = report_get(campaign=campaign, options=ReportOptions())
    ctx["query"] = "&".join(f"{k}={v}" for k, v in params.items() if v)
    ctx["state"] = state
    if state == "ready":
        ctx.update(report_page(report))  # the same sections, rows and charts as the HTML report
    else:
        ctx["building"] = report
    return render(request, "console/report.html", ctx, status=400 if errors else 200)


def _exports(campaign: Any) -> list[tuple[str, str, str]]:
    """(label, URL, kind) of the campaign's exports beyond the report's own formats: `async` ones are
    built by a worker (the page polls them and shows progress), `file` ones download at once."""
    base = f"/api/campaigns/{campaign.pk}"
    return [
        ("replication package (zip)", f"{base}/export/dataset/", "async"),
        ("campaign archive (zip)", f"{base}/export/", "file"),
        ("payments CSV", f"{base}/payments.csv", "file"),
        ("spec (JSON)", f"{base}/spec/", "file"),
        ("spec (YAML)", f"{base}/spec/?as=yaml", "file"),
    ]


def _ids(values: list[str]) -> list[int]:
    ids: list[int] = []
    for value in values:
        for part in value.split(","):
            if part.strip().isdigit() and len(part.strip()) <= 18:  # an id, never 5,000 digits
                ids.append(int(part))
    return list(dict.fromkeys(ids))


@researcher_required
def compare_view(request: HttpRequest) -> HttpResponse:
    """Campaigns side by side (`mode=campaigns`, GEP Table 3) or two settings of one campaign
    (`mode=settings`), with the label sources chosen among those every compared campaign has (human
    first; each further source compared with the first, GEP Table 6) — the API's
    `GET /api/reports/compare/`, through the same service."""
    campaigns = list(selectors.campaign_rows(user=request.user).order_by("kind", "-created_at")[:200])
    mode = "settings" if request.GET.get("mode") == "settings" else "campaigns"
    ids = _ids(request.GET.getlist("campaigns")) if mode == "campaigns" else _ids(request.GET.getlist("campaign"))[:1]
    pair = [request.GET.get("setting_a", ""), request.GET.get("setting_b", "")]
    chosen = [owned_campaign(request, i) for i in ids]
    sources = _label_sources(chosen) if chosen else [("human", "human answers (majority)")]
    picked = [v for v in request.GET.getlist("source") if v] or ["human"]
    ctx: dict[str, Any] = {"campaigns": campaigns, "selected": set(ids), "nav": "compare", "result": None, "errors": [],
                           "figures": [], "mode": mode, "sources": sources, "picked": set(picked),
                           "pair": pair, "settings_known": ALL_SETTINGS}
    ctx["test"] = request.GET.get("test", "permutation") if ids else "permutation"
    if chosen:
        params = {"test": ctx["test"] if len(chosen) > 1 or mode == "settings" else "none",
                  "draws": request.GET.get("draws", ""),
                  "settings": ",".join(pair) if mode == "settings" else ""}
        source_param = ",".join(dict.fromkeys(picked))
        try:
            compare = CompareOptions.from_params(params)
            options, extra_sources = compare_source_options({"source": "" if source_param == "human" else source_param})
            result = compare_get(campaigns=chosen, options=options, compare=compare, sources=extra_sources)
        except ApplicationError as exc:
            ctx["errors"] = _errors(exc)
        else:
            if result.get("status") == "building":
                ctx["building"] = result
            else:
                ctx["result"] = result
                ctx.update(compare_page(result))
                ctx.update(significance_page(result))
            field = "campaign" if mode == "settings" else "campaigns"
            query = f"{field}=" + ",".join(str(c.pk) for c in chosen) + f"&test={params['test']}"
            if mode == "settings":
                query += f"&settings={params['settings']}"
            if source_param != "human":
                query += f"&source={source_param}"
            ctx["api_url"] = "/api/reports/compare/?" + query
            ctx["csv_url"] = ctx["api_url"] + "&format=csv"
            ctx["html_url"] = ctx["api_url"] + "&format=html"
    return render(request, "console/compare.html", ctx, status=400 if ctx["errors"] else 200)
