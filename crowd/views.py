"""Pages that crowd platforms send workers to.

`/mturk/<campaign_id>/` is the ExternalQuestion page MTurk shows in an iframe: a preview of the task
(nothing leased, inputs disabled) until the worker accepts, then the annotator work page in "mturk
mode" (its HIT is tied to the MTurk assignment; once submitted to our API the page posts
`assignmentId` to MTurk's `externalSubmit`). It may be framed by mturk.com only; the rest of the
site keeps X-Frame-Options: DENY.

`/prolific/<campaign_id>/?PROLIFIC_PID=...&STUDY_ID=...&SESSION_ID=...` is a Prolific study link:
the work page in "prolific mode", sending the participant back to Prolific with the completion code
once their quota is done (or the screen-out code when a qualification test is failed for good).
"""
from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.decorators import method_decorator
from django.views import View
from django.views.decorators.cache import never_cache
from django.views.decorators.clickjacking import xframe_options_exempt

from annotation.models import Annotator, Question
from annotation.scoped_tokens import scoped_token_issue
from annotation.selectors import campaign_for_annotator, examples_list, task_info
from annotation.spec_section import annotation_settings
from campaigns.models import Campaign
from common.errors import NotFoundError
from generation.models import Image
from generation.selectors import image_url

from . import services
from .entry import crowd_enter, crowd_enter_post


def _campaign(campaign_id: int) -> Campaign:
    try:
        return campaign_for_annotator(campaign_id=campaign_id)
    except NotFoundError as exc:
        raise Http404(str(exc)) from exc


def _bad_request(request: HttpRequest, *, title: str, problems: list[str], platform: str,
                 campaign: Campaign | None = None) -> HttpResponse:
    return render(request, "crowd/bad_request.html", {"title": title, "problems": problems, "platform": platform,
                                                      "campaign": campaign}, status=400)


def _frame_ancestors() -> str:
    extra = [o.rstrip("/") for o in getattr(settings, "MTURK_SUBMIT_HOSTS_EXTRA", []) or []]
    return "frame-ancestors 'self' " + " ".join([*services.MTURK_FRAME_ANCESTORS, *extra])


def _sample_question(campaign: Campaign) -> dict[str, Any] | None:
    """One question as a worker would see it (text, choices, image), for the preview."""
    q = (Question.objects.filter(campaign=campaign, is_gold=False, image__excluded=False)
         .select_related("image").order_by("order_key", "pk").first())
    if q is None:
        return None
    return {"text": q.text, "choices": q.choices,
            "image_url": image_url(web_file=q.image.web_file, file=q.image.file, source_url=q.image.source_url)}


@method_decorator([xframe_options_exempt, never_cache], name="dispatch")
class MTurkTaskView(View):
    """The ExternalQuestion page: preview, or the task for an accepted assignment."""

    def get(self, request: HttpRequest, campaign_id: int) -> HttpResponse:
        response = self._get(request, campaign_id)
        response["Content-Security-Policy"] = _frame_ancestors()
        return response

    def post(self, request: HttpRequest, campaign_id: int) -> HttpResponse:
        """The forms of crowd/entry.py (log out the other user / log in to the linked account)."""
        campaign = _campaign(campaign_id)
        problems = self._problems(request)
        if problems:
            return _bad_request(request, title="This task must be opened from Amazon Mechanical Turk",
                                problems=problems, platform="mturk", campaign=campaign)
        response = crowd_enter_post(request, platform=Annotator.Kind.MTURK, external_id=request.GET["workerId"],
                                    campaign=campaign)
        response["Content-Security-Policy"] = _frame_ancestors()
        return response

    @staticmethod
    def _problems(request: HttpRequest) -> list[str]:
        params = request.GET
        problems = []
        for name in ("assignmentId", "hitId", "workerId"):
            if not services.valid_external_id(params.get(name, "")):
                problems.append(f"{name} is missing or not an MTurk id.")
        if services.mturk_submit_url(params.get("turkSubmitTo", "")) is None:
            problems.append("turkSubmitTo is missing or not an MTurk address "
                            f"(allowed: {', '.join(services.mturk_submit_origins())}).")
        return problems

    def _get(self, request: HttpRequest, campaign_id: int) -> HttpResponse:
        campaign = _campaign(campaign_id)
        params = request.GET
        assignment_id = params.get("assignmentId", "")
        if not assignment_id or assignment_id == services.PREVIEW_ASSIGNMENT_ID:
            return self._preview(request, campaign)
        problems = self._problems(request)
        if problems:
            return _bad_request(request, title="This task must be opened from Amazon Mechanical Turk",
                                problems=problems, platform="mturk", campaign=campaign)
        submit_url = services.mturk_submit_url(params["turkSubmitTo"])
        entered = crowd_enter(request, platform=Annotator.Kind.MTURK, external_id=params["workerId"],
                              campaign=campaign)
        if isinstance(entered, HttpResponse):
            return entered
        return render(request, "crowd/mturk_work.html", {
            "campaign": campaign, "mode": "mturk", "submit_url": submit_url,
            "assignment_id": assignment_id, "hit_id": params["hitId"],
            # short-lived, this campaign's annotation endpoints only: never the account's permanent key
            "auth_token": scoped_token_issue(user_id=entered.user_id, campaign_id=campaign.pk),
            "self_url": request.get_full_path(),
        })

    def _preview(self, request: HttpRequest, campaign: Campaign) -> HttpResponse:
        cfg = annotation_settings(campaign)
        examples = [{"url": image_url(web_file=w, file=f, source_url=s), "answer": "", "caption": ""}
                    for w, f, s in Image.objects.filter(campaign=campaign, pk__in=cfg["example_images"])
                    .values_list("web_file", "file", "source_url")]
        examples += [{"url": e["image_url"], "answer": e["answer"], "caption": e["caption"]}
                     for e in examples_list(campaign=campaign)]
        return render(request, "crowd/mturk_preview.html", {
            "campaign": campaign, "instructions": cfg["instructions"], "examples": examples,
            "sample": _sample_question(campaign), "hit_size": cfg["hit_size"],
            "hit_unit": "images" if campaign.kind == Campaign.Kind.PST else "questions",
        })


PROLIFIC_PARAMS = ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID")


def _session_key(campaign: Campaign) -> str:
    return f"crowd:prolific:{campaign.pk}"


def _prolific_redirect(request: HttpRequest, campaign: Campaign, state: str) -> HttpResponse:
    cfg = services.prolific_settings(campaign)
    if state == "no_work":  # never a code for no work (a made-up PROLIFIC_PID earns nothing)
        return render(request, "crowd/prolific_end.html", {"campaign": campaign, "state": state}, status=200)
    code = cfg["completion_code"] if state == "complete" else cfg["screen_out_code"]
    url = services.prolific_code_url(campaign, code)
    if url is None:
        return render(request, "crowd/prolific_end.html", {"campaign": campaign, "state": state}, status=200)
    return HttpResponseRedirect(url)


@method_decorator(never_cache, name="dispatch")
class ProlificStudyView(View):
    """The study link. Missing or malformed Prolific parameters -> 400 page."""

    def get(self, request: HttpRequest, campaign_id: int) -> HttpResponse:
        campaign = _campaign(campaign_id)
        values = {name: request.GET.get(name, "") for name in PROLIFIC_PARAMS}
        problems = [f"{name} is missing or not a Prolific id." for name, value in values.items()
                    if not services.valid_external_id(value)]
        if problems:
            return _bad_request(request, title="This study link is incomplete", problems=problems,
                                platform="prolific", campaign=campaign)
        entered = crowd_enter(request, platform=Annotator.Kind.PROLIFIC, external_id=values["PROLIFIC_PID"],
                              campaign=campaign)
        if isinstance(entered, HttpResponse):
            return entered
        annotator = entered
        request.session[_session_key(campaign)] = values
        state = services.prolific_state(annotator=annotator, campaign=campaign)
        if state != "continue":
            return _prolific_redirect(request, campaign, state)
        info = task_info(campaign=campaign, annotator=annotator)
        return render(request, "crowd/prolific_work.html", {
            "campaign": campaign, "mode": "prolific",
            "finish_url": reverse("crowd:prolific-finish", args=[campaign.pk]),
            "quota": services.prolific_settings(campaign)["hits_per_participant"], "task": info,
        })


    def post(self, request: HttpRequest, campaign_id: int) -> HttpResponse:
        """The forms of crowd/entry.py (log out the other user / log in to the linked account)."""
        campaign = _campaign(campaign_id)
        pid = request.GET.get("PROLIFIC_PID", "")
        if not services.valid_external_id(pid):
            return _bad_request(request, title="This study link is incomplete", platform="prolific",
                                campaign=campaign, problems=["PROLIFIC_PID is missing or not a Prolific id."])
        return crowd_enter_post(request, platform=Annotator.Kind.PROLIFIC, external_id=pid, campaign=campaign)


@method_decorator(never_cache, name="dispatch")
class ProlificFinishView(View):
    """Where the page goes after each HIT, on "no work left" and on a failed test: the server decides
    between the completion code, the screen-out code and more work (back to the study page)."""

    def get(self, request: HttpRequest, campaign_id: int) -> HttpResponse:
        campaign = _campaign(campaign_id)
        values = request.session.get(_session_key(campaign))
        annotator = Annotator.objects.filter(user_id=request.user.pk).first() if request.user.is_authenticated else None
        if not values or annotator is None or annotator.prolific_pid != values.get("PROLIFIC_PID"):
            return _bad_request(request, title="Open the study from Prolific", platform="prolific", campaign=campaign,
                                problems=["This page needs the study link from Prolific (with PROLIFIC_PID, "
                                          "STUDY_ID and SESSION_ID)."])
        state = services.prolific_state(annotator=annotator, campaign=campaign)
        if state == "continue":
            return HttpResponseRedirect(reverse("crowd:prolific", args=[campaign.pk]) + "?" + urlencode(values))
        return _prolific_redirect(request, campaign, state)
