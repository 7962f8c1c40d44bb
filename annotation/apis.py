"""REST API of annotation. Views parse, call one service or selector, and render.

Annotator endpoints answer only with what an annotator may see: a question is
{"id", "image_url", "text", "choices"}; never the prompt, gender, model, other answers or answer keys.
"""
from __future__ import annotations

import io
from typing import Any

from django.core.files.storage import default_storage
from django.http import FileResponse, HttpResponse
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from campaigns.models import Campaign
from campaigns.selectors import campaign_get
from common.clientaddr import client_address
from common.csvsafe import csv_dict_writer
from common.edge import body_parse
from common.errors import ApplicationError, NotFoundError, exception_handler
from common.jsonviews import JSONOnlyView
from common.numbers import number
from common.pagination import PageNumberPagination
from common.permissions import IsResearcher, user_is_researcher
from common.throttle import password_attempt
from common.tokens import token_expires_at
from common.uploads import upload_check

from . import inputs, outputs, selectors
from .families import design_example_families
from .hits import answers_submitted, assignment_heartbeat, assignment_next, assignment_return
from .models import Annotator, Assignment
from .services.annotators import annotator_create, annotator_update, enrollment_consent
from .services.examples import EXAMPLES_PER_FAMILY, example_add, example_delete
from .services.lifecycle import (
    campaign_annotation_transition,
    questions_gold_set,
    questions_redundancy_set,
)
from .services.opening import campaign_open_request
from .services.qualification import qualification_attempt, qualification_create
from .services.quality import enrollment_action
from .services.review import assignment_review


# ---------------------------------------------------------------------------------------------
# Annotators
# ---------------------------------------------------------------------------------------------
class AnnotatorSignupApi(APIView):
    """Sign up as an annotator: {"username", "password", "consent": true} -> 201 {"token"}."""

    permission_classes = [AllowAny]
    authentication_classes: list[Any] = []

    @extend_schema(request=inputs.AnnotatorSignupInput, responses={201: outputs.AnnotatorSignupOutput})
    def post(self, request: Request) -> Response:
        data = body_parse(inputs.AnnotatorSignupInput, request)
        annotator, token = annotator_create(
            username=data.get("username"), password=data.get("password"), consent=data.get("consent"),
            mturk_worker_id=data.get("mturk_worker_id"), prolific_pid=data.get("prolific_pid"))
        return Response({"id": annotator.pk, "username": annotator.user.get_username(), "token": token,
                         "token_expires_at": token_expires_at(timezone.now())}, status=status.HTTP_201_CREATED)


def _me(annotator: Any) -> dict[str, Any]:
    # A crowd-link account is an unverified claim on a platform id: nothing stored is read back.
    hidden = annotator.is_link_account
    return {"id": annotator.pk, "username": annotator.user.get_username(),
            "mturk_worker_id": annotator.mturk_worker_id, "prolific_pid": annotator.prolific_pid,
            "demographics": {} if hidden else annotator.demographics, "demographics_hidden": hidden}


class AnnotatorMeApi(APIView):
    """The caller's annotator profile; PATCH attaches external ids or self-reported demographics."""

    permission_classes = [IsAuthenticated]

    @extend_schema(responses={200: outputs.AnnotatorMeOutput})
    def get(self, request: Request) -> Response:
        return Response(_me(selectors.annotator_of(request.user)))

    @extend_schema(request=inputs.AnnotatorMeInput, responses={200: outputs.AnnotatorMeOutput})
    def patch(self, request: Request) -> Response:
        data = body_parse(inputs.AnnotatorMeInput, request, strict=True)
        annotator = selectors.annotator_of(request.user)
        if "password" in data:
            # A password in the body is a login attempt on this account: the login policy's back-off
            # (common/throttle.py) before it is checked, a failure counted, a success clearing it.
            password_attempt(request, user=annotator.user, password=data["password"])
        annotator = annotator_update(annotator=annotator, **data)
        return Response(_me(annotator))


class CampaignConsentApi(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(request=inputs.ConsentInput, responses={200: outputs.ConsentOutput})
    def post(self, request: Request, campaign_id: int) -> Response:
        annotator = selectors.annotator_of(request.user)
        campaign = selectors.campaign_for_annotator(campaign_id=campaign_id)
        enrollment = enrollment_consent(annotator=annotator, campaign=campaign,
                                        consent=body_parse(inputs.ConsentInput, request)["consent"])
        return Response({"campaign": campaign.pk, "consented": True, "consented_at": enrollment.consented_at,
                         "consent_text": enrollment.consent_text, "status": enrollment.status})


class CampaignTaskApi(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(responses={200: outputs.TaskOutput})
    def get(self, request: Request, campaign_id: int) -> Response:
        annotator = selectors.annotator_of(request.user)
        campaign = selectors.campaign_for_annotator(campaign_id=campaign_id)
        return Response(selectors.task_info(campaign=campaign, annotator=annotator))


# ---------------------------------------------------------------------------------------------
# Researcher: lifecycle, questions
# ---------------------------------------------------------------------------------------------
class CampaignOpenApi(APIView):
    """Create the questions of the generated images (idempotent) and open the campaign; a campaign whose
    opening is estimated over the request work budget is opened by a worker: 202 with its progress
    (POST again, or read the campaign, until it is open). services/opening.py."""

    permission_classes = [IsResearcher]

    @extend_schema(request=None, responses={200: outputs.CampaignOpenOutput, 202: outputs.CampaignOpeningOutput})
    def post(self, request: Request, campaign_id: int) -> Response:
        campaign = campaign_get(user=request.user, campaign_id=campaign_id)
        state, body = campaign_open_request(campaign=campaign)
        return Response(body, status=status.HTTP_202_ACCEPTED if state == "building" else status.HTTP_200_OK)


class CampaignTransitionApi(APIView):
    permission_classes = [IsResearcher]
    action = ""

    @extend_schema(request=None, responses={200: outputs.CampaignStatusOutput})
    def post(self, request: Request, campaign_id: int) -> Response:
        campaign = campaign_get(user=request.user, campaign_id=campaign_id)
        campaign = campaign_annotation_transition(campaign=campaign, action=self.action)
        return Response({"id": campaign.pk, "status": campaign.status})


def _query_filters(request: Request) -> dict[str, Any]:
    filters: dict[str, Any] = {}
    for key in ("setting", "family", "slot", "prompt_key", "label"):
        if request.query_params.get(key):
            filters[key] = request.query_params[key]
    if request.query_params.get("image"):
        # common.numbers: a 400 naming `image` (also for 5,000 digits or an id past PostgreSQL's bigint)
        filters["image"] = number(request.query_params["image"], field="image", kind="int", minimum=1,
                                  maximum=2**63 - 1)
    if request.query_params.get("tie") in ("true", "1"):
        filters["tie"] = True
    return filters


class CampaignQuestionsApi(APIView):
    """The campaign's questions with their metadata, counters and aggregated label (researcher)."""

    permission_classes = [IsResearcher]

    @extend_schema(parameters=[OpenApiParameter(n, str) for n in ("setting", "family", "slot", "image", "label",
                                                                     "tie", "page", "page_size")],
                   responses={200: outputs.QuestionPageOutput})
    def get(self, request: Request, campaign_id: int) -> Response:
        campaign = campaign_get(user=request.user, campaign_id=campaign_id)
        qs = selectors.question_list(campaign=campaign, filters=_query_filters(request))
        paginator = PageNumberPagination()
        page = paginator.paginate_queryset(qs, request, view=self)
        return paginator.get_paginated_response([selectors.question_row(q) for q in page])


class QuestionsRedundancyApi(APIView):
    """Raise R for a subset: {"questions": [ids]} or {"filter": {...}}, with "required": n."""

    permission_classes = [IsResearcher]

    @extend_schema(request=inputs.QuestionsRedundancyInput, responses={200: outputs.RedundancyOutput})
    def post(self, request: Request, campaign_id: int) -> Response:
        campaign = campaign_get(user=request.user, campaign_id=campaign_id)
        data = body_parse(inputs.QuestionsRedundancyInput, request)
        updated = questions_redundancy_set(campaign=campaign, required=data.get("required"),
                                                    question_ids=data.get("questions"), filters=data.get("filter"))
        return Response({"updated": updated, "required": data.get("required")})


class QuestionsGoldApi(APIView):
    """Mark questions as gold: {"items": [{"question": id, "answer": choice}]}."""

    permission_classes = [IsResearcher]

    @extend_schema(request=inputs.QuestionsGoldInput, responses={200: outputs.GoldOutput})
    def post(self, request: Request, campaign_id: int) -> Response:
        campaign = campaign_get(user=request.user, campaign_id=campaign_id)
        count = questions_gold_set(campaign=campaign, items=body_parse(inputs.QuestionsGoldInput, request)["items"])
        return Response({"gold": count})


class CampaignExamplesApi(APIView):
    """Example images of the instructions, per family (owner only). GET -> {"examples": [...],
    "families": [...], "per_family": 10}; POST JSON {"family", "image", "answer", "caption"} or
    multipart with `file` instead of `image` -> 201 the example."""

    permission_classes = [IsResearcher]

    @extend_schema(responses={200: outputs.ExamplesOutput})
    def get(self, request: Request, campaign_id: int) -> Response:
        campaign = campaign_get(user=request.user, campaign_id=campaign_id)
        return Response({"examples": selectors.examples_list(campaign=campaign),
                         "families": design_example_families(campaign.kind, campaign.spec), "per_family": EXAMPLES_PER_FAMILY})

    @extend_schema(request=inputs.ExampleCreateInput, responses={201: outputs.ExampleOutput})
    def post(self, request: Request, campaign_id: int) -> Response:
        campaign = campaign_get(user=request.user, campaign_id=campaign_id)
        data = body_parse(inputs.ExampleCreateInput, request)
        example = example_add(campaign=campaign, family=data["family"], answer=data["answer"],
                              caption=data.get("caption", ""), image=data.get("image"), upload=data.get("file"))
        row = next(e for e in selectors.examples_list(campaign=campaign) if e["id"] == example.pk)
        return Response(row, status=status.HTTP_201_CREATED)


class CampaignExampleDetailApi(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(responses={204: None})
    def delete(self, request: Request, campaign_id: int, example_id: int) -> Response:
        campaign = campaign_get(user=request.user, campaign_id=campaign_id)
        example_delete(campaign=campaign, example_id=example_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


# ---------------------------------------------------------------------------------------------
# Qualifications
# ---------------------------------------------------------------------------------------------
def _owned_campaign(request: Request, campaign_id: int) -> Campaign | None:
    if not user_is_researcher(request.user):
        return None
    try:
        return campaign_get(user=request.user, campaign_id=campaign_id)
    except NotFoundError:
        return None


class CampaignQualificationsApi(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(responses={200: outputs.QualificationListOutput})
    def get(self, request: Request, campaign_id: int) -> Response:
        campaign = _owned_campaign(request, campaign_id)
        if campaign is not None:
            return Response({"results": selectors.qualification_list(campaign=campaign, researcher=True,
                                                                     annotator=None)})
        annotator = selectors.annotator_of(request.user)
        campaign = selectors.campaign_for_annotator(campaign_id=campaign_id)
        return Response({"results": selectors.qualification_list(campaign=campaign, researcher=False,
                                                                 annotator=annotator)})

    @extend_schema(request=inputs.QualificationCreateInput, responses={201: outputs.QualificationOutput})
    def post(self, request: Request, campaign_id: int) -> Response:
        if not user_is_researcher(request.user):
            raise ApplicationError("Only researchers define qualification tests.", status_code=403)
        campaign = campaign_get(user=request.user, campaign_id=campaign_id)
        data = body_parse(inputs.QualificationCreateInput, request)
        kwargs = {k: data[k] for k in ("pass_fraction", "retake_after_minutes", "max_attempts") if k in data}
        family = data["family"]
        qualification = qualification_create(
            campaign=campaign, name=data.get("name") or family, family=family,
            instructions=data.get("instructions") or "", items=[dict(it) for it in data["items"]], **kwargs)
        rows = selectors.qualification_list(campaign=campaign, researcher=True, annotator=None)
        return Response(next(r for r in rows if r["id"] == qualification.pk), status=status.HTTP_201_CREATED)


class QualificationAttemptApi(APIView):
    """Take a qualification test: {"answers": [...]} -> {"passed", "total", "retake_at", "attempts_left"}
    (never the number correct); 429 with `errors.address` past the attempts per client address."""

    permission_classes = [IsAuthenticated]
    # The service that grades the attempt (crowd's MTurk page swaps in one that also grants on MTurk).
    attempt_service = staticmethod(qualification_attempt)

    @extend_schema(request=inputs.QualificationAttemptInput, responses={201: outputs.QualificationAttemptOutput})
    def post(self, request: Request, qualification_id: int) -> Response:
        annotator = selectors.annotator_of(request.user)
        qualification = selectors.qualification_get(qualification_id=qualification_id)
        selectors.campaign_for_annotator(campaign_id=qualification.campaign_id)
        result = self.attempt_service(qualification=qualification, annotator=annotator,
                                      answers=body_parse(inputs.QualificationAttemptInput, request)["answers"],
                                      address=client_address(request))
        return Response(result, status=status.HTTP_201_CREATED)


# ---------------------------------------------------------------------------------------------
# HITs
# ---------------------------------------------------------------------------------------------
def nothing_now(*, campaign_id: int, annotator: Annotator) -> Response:
    """The 204 of an empty HIT request: `Retry-After` when more work may come for this annotator."""
    response = Response(status=status.HTTP_204_NO_CONTENT)
    wait = selectors.hit_retry_after(campaign_id=campaign_id, annotator=annotator)
    if wait is not None:
        response["Retry-After"] = str(wait)
    return response


class AssignmentNextApi(JSONOnlyView):
    """Get a HIT: 201 new, 200 the one already held, 204 nothing left for this annotator: with a
    `Retry-After` header (seconds) when more may come later (adaptive redundancy: answers in flight
    may reopen questions), without one when the annotator is finished."""

    permission_classes = [IsAuthenticated]

    @extend_schema(request=None, responses={200: outputs.HitOutput, 201: outputs.HitOutput, 204: None})
    def post(self, request: Request, campaign_id: int) -> Response:
        annotator = selectors.annotator_of(request.user)
        payload, created = assignment_next(annotator=annotator, campaign_id=campaign_id)
        if payload is None:
            return nothing_now(campaign_id=campaign_id, annotator=annotator)
        return Response(payload, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class AssignmentHeartbeatApi(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(request=None, responses={200: outputs.HeartbeatOutput})
    def post(self, request: Request, assignment_id: int) -> Response:
        assignment = assignment_heartbeat(annotator=selectors.annotator_of(request.user),
                                                   assignment_id=assignment_id)
        return Response({"id": assignment.pk, "expires_at": assignment.expires_at})


class AssignmentReturnApi(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(request=None, responses={200: outputs.AssignmentStatusOutput})
    def post(self, request: Request, assignment_id: int) -> Response:
        assignment = assignment_return(annotator=selectors.annotator_of(request.user),
                                                assignment_id=assignment_id)
        return Response({"id": assignment.pk, "status": assignment.status})


def next_outcome(request: Request, view: APIView, *, annotator: Annotator, campaign_id: int) -> dict[str, Any]:
    """What POST /api/campaigns/{campaign_id}/assignments/ would answer, as a value: {"status": 201 | 200
    | 204 | the error's, "hit": the HIT or null, "retry_after": seconds or null}, and for an error its
    body's "detail" and "errors" (the API's one exception handler). Its own transaction, after the
    submit's has committed: an error here never undoes the submitted answers."""
    try:
        payload, created = assignment_next(annotator=annotator, campaign_id=campaign_id)
    except Exception as exc:
        response = exception_handler(exc, {"request": request, "view": view})
        if response is None:  # not an API error (the database went away, a bug): a 500, as for any request
            raise
        return {"status": response.status_code, "hit": None, "retry_after": None, **response.data}
    if payload is None:
        return {"status": status.HTTP_204_NO_CONTENT, "hit": None,
                "retry_after": selectors.hit_retry_after(campaign_id=campaign_id, annotator=annotator)}
    return {"status": status.HTTP_201_CREATED if created else status.HTTP_200_OK, "hit": payload,
            "retry_after": None}


class AssignmentSubmitApi(JSONOnlyView):
    """{"answers": [{"question", "choice", "time_ms"}]} -> 200 {"id", "status", "answers", ...}.

    With `"next": true` the response also carries the annotator's next HIT in the same campaign under
    "next" (`next_outcome`): one round trip between HITs instead of two, the answers committed first."""

    permission_classes = [IsAuthenticated]

    @extend_schema(request=inputs.AssignmentSubmitInput, responses={200: outputs.SubmitOutput})
    def post(self, request: Request, assignment_id: int) -> Response:
        # The hot path: the hand-written parser (hits.rules.answers_parse) validates the answers.
        if not isinstance(request.data, dict):
            raise ApplicationError("The body must be a JSON object.", errors={"body": ["must be an object"]})
        want_next = request.data.get("next", False)
        if not isinstance(want_next, bool):
            raise ApplicationError("next must be true or false.", errors={"next": ["must be true or false"]})
        annotator = selectors.annotator_of(request.user)
        result, duplicate, campaign_id = answers_submitted(annotator=annotator, assignment_id=assignment_id,
                                                           answers=request.data.get("answers"))
        body: dict[str, Any] = {**result, "duplicate": duplicate}
        if want_next:
            body["next"] = next_outcome(request, self, annotator=annotator, campaign_id=campaign_id)
        return Response(body)


class AssignmentReviewApi(APIView):
    """Researcher: {"action": "approve"|"reject"|"bonus", "reason", "bonus"}."""

    permission_classes = [IsResearcher]

    @extend_schema(request=inputs.AssignmentReviewInput, responses={200: outputs.ReviewOutput})
    def post(self, request: Request, assignment_id: int) -> Response:
        campaign_id = Assignment.objects.filter(pk=assignment_id).values_list("campaign_id", flat=True).first()
        if campaign_id is None:
            raise NotFoundError(f"Assignment {assignment_id} not found.")
        campaign = campaign_get(user=request.user, campaign_id=campaign_id)
        data = body_parse(inputs.AssignmentReviewInput, request)
        a = assignment_review(campaign=campaign, assignment_id=assignment_id, action=data["action"],
                              reason=data.get("reason") or "", bonus=data.get("bonus"))
        return Response({"id": a.pk, "status": a.status, "review": a.review, "review_reason": a.review_reason,
                         "reward": f"{a.reward:.2f}", "bonus": f"{a.bonus:.2f}"})


# ---------------------------------------------------------------------------------------------
# Researcher: annotators and payments
# ---------------------------------------------------------------------------------------------
class CampaignAnnotatorsApi(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(responses={200: outputs.AnnotatorTableOutput})
    def get(self, request: Request, campaign_id: int) -> Response:
        campaign = campaign_get(user=request.user, campaign_id=campaign_id)
        return Response({"results": selectors.annotator_table(campaign=campaign)})


class CampaignAnnotatorActionApi(APIView):
    """{"action": "pause"|"block"|"resume"|"approve", "reason": "..."}."""

    permission_classes = [IsResearcher]

    @extend_schema(request=inputs.AnnotatorActionInput, responses={200: outputs.AnnotatorActionOutput})
    def post(self, request: Request, campaign_id: int, annotator_id: int) -> Response:
        campaign = campaign_get(user=request.user, campaign_id=campaign_id)
        data = body_parse(inputs.AnnotatorActionInput, request)
        e = enrollment_action(campaign=campaign, annotator_id=annotator_id, action=data["action"],
                              reason=data.get("reason") or "")
        return Response({"id": annotator_id, "status": e.status, "status_reason": e.status_reason})


PAYMENT_COLUMNS = ("annotator", "username", "mturk_worker_id", "prolific_pid", "hits", "approved", "rejected",
                   "reward_total", "bonus_total", "currency")


class CampaignPaymentsCsvApi(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(responses={(200, "text/csv"): str})
    def get(self, request: Request, campaign_id: int) -> HttpResponse:
        campaign = campaign_get(user=request.user, campaign_id=campaign_id)
        buffer = io.StringIO()
        writer = csv_dict_writer(buffer, PAYMENT_COLUMNS, lineterminator="\n")  # usernames, ids: neutralised
        writer.writeheader()
        for row in selectors.payment_rows(campaign=campaign):
            writer.writerow({k: row[k] for k in PAYMENT_COLUMNS})
        response = HttpResponse(buffer.getvalue(), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="campaign-{campaign.pk}-payments.csv"'
        return response



# ---------------------------------------------------------------------------------------------
# Researcher: full campaign archive (export / import)
# ---------------------------------------------------------------------------------------------
class CampaignExportApi(APIView):
    """The campaign's full archive: a zip of JSON/JSONL (see annotation/archive.py); an archive estimated
    over the request work budget is built by a worker: 202 with its progress until it is stored
    (services/archiving.py)."""

    permission_classes = [IsResearcher]

    @extend_schema(responses={(200, "application/zip"): bytes, 202: outputs.CampaignOpeningOutput})
    def get(self, request: Request, campaign_id: int) -> HttpResponse | Response:
        from .services.archiving import campaign_archive_request

        campaign = campaign_get(user=request.user, campaign_id=campaign_id)
        # Through the request work budget (services/archiving.py): built here, or 202 while a worker builds it.
        kind, value = campaign_archive_request(campaign=campaign)
        if kind == "building":
            return Response(value, status=status.HTTP_202_ACCEPTED)
        response: HttpResponse | FileResponse = (HttpResponse(value, content_type="application/zip") if kind == "bytes" else
                                  FileResponse(default_storage.open(value, "rb"), content_type="application/zip"))
        response["Content-Disposition"] = f'attachment; filename="campaign-{campaign.pk}-archive.zip"'
        return response


class CampaignImportApi(APIView):
    """Multipart `archive` (a campaign export) -> 201 the new campaign {"id", "name", "kind", "status"}."""

    permission_classes = [IsResearcher]

    @extend_schema(request={"multipart/form-data": inputs.ArchiveImportInput}, responses={201: outputs.CampaignImportOutput})
    def post(self, request: Request) -> Response:
        from .archive import campaign_import

        archive = request.FILES.get("archive")
        if archive is None:
            raise ApplicationError("An archive file is required.", errors={"archive": ["This field is required."]})
        campaign = campaign_import(owner=request.user,
                                   data=upload_check(archive, field="archive", kind="archive"))
        return Response({"id": campaign.pk, "name": campaign.name, "kind": campaign.kind, "status": campaign.status},
                        status=status.HTTP_201_CREATED)
