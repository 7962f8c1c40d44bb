"""REST API about who labelled: self-reported demographics (the annotator's form, the researcher's
aggregates, the withdrawal) and fair pay. Views parse, call one service or selector, and render."""
from __future__ import annotations

from django.contrib.auth import logout
from drf_spectacular.utils import OpenApiParameter, PolymorphicProxySerializer, extend_schema
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from campaigns.selectors import campaign_get
from common.edge import body_parse
from common.errors import ApplicationError
from common.inputs import BodyError
from common.numbers import number
from common.permissions import IsResearcher, user_is_researcher
from common.tokens import token_expires_at

from . import inputs, outputs, selectors
from .demographics import MAX_MIN_GROUP
from .pay import campaign_pay
from .people import demographics_form, demographics_summary, release_info
from .scoped_tokens import ScopedToken
from .services.demographics import demographics_release_cut, demographics_submit, demographics_withdraw
from .spec_section import annotation_settings
from .tokens import token_rotate, tokens_revoke


def _min_group(request: Request, floor: int) -> int | None:
    """`?min_group=`: it may raise the campaign's smallest group (`annotation.demographics.min_group`,
    default 5), never lower it (a 400 naming `min_group`)."""
    raw = request.query_params.get("min_group", "")
    if raw == "":
        return None
    try:
        value = number(raw, field="min_group", kind="int", minimum=floor, maximum=MAX_MIN_GROUP)
    except BodyError:
        raise ApplicationError("Invalid min_group.", errors={"min_group": [
            f"must be an integer from the campaign's min_group ({floor}) to {MAX_MIN_GROUP}: it can be raised, "
            "never lowered"]}) from None
    return value


class CampaignDemographicsApi(APIView):
    """Annotator: GET the form (settings, choices, own answers), POST `{"consent": true, "consent_version",
    "answers": {...}}`. Researcher (owner): GET the group counts (individual answers only where the spec
    says `researcher_access: "individual"`), `?min_group=`."""

    permission_classes = [IsAuthenticated]

    @extend_schema(parameters=[OpenApiParameter("min_group", int)], responses={200: PolymorphicProxySerializer(
        component_name="CampaignDemographicsOutput", serializers=[outputs.DemographicsSummaryOutput, outputs.DemographicsFormOutput],
        resource_type_field_name=None)})
    def get(self, request: Request, campaign_id: int) -> Response:
        if user_is_researcher(request.user):
            campaign = campaign_get(user=request.user, campaign_id=campaign_id)
            floor = annotation_settings(campaign)["demographics"]["min_group"]
            return Response(demographics_summary(campaign=campaign, min_group=_min_group(request, floor)))
        annotator = selectors.annotator_of(request.user)
        campaign = selectors.campaign_for_annotator(campaign_id=campaign_id)
        return Response(demographics_form(campaign=campaign, annotator=annotator))

    @extend_schema(request=inputs.DemographicsInput, responses={200: outputs.DemographicsSubmitOutput})
    def post(self, request: Request, campaign_id: int) -> Response:
        annotator = selectors.annotator_of(request.user)
        campaign = selectors.campaign_for_annotator(campaign_id=campaign_id)
        data = body_parse(inputs.DemographicsInput, request, strict=True)
        row = demographics_submit(annotator=annotator, campaign=campaign, consent=data["consent"],
                                  consent_version=data["consent_version"], answers=data["answers"])
        return Response({"campaign": campaign.pk, "answers": row.answers, "consent_version": row.consent_version,
                         "consented_at": row.consented_at, "withdrawn_at": row.withdrawn_at})


class DemographicsReleasesApi(APIView):
    """Researcher (owner): GET the campaign's numbered demographics releases; POST cuts the next one,
    allowed once at least the campaign's `min_group` annotators joined since the previous release
    (409 otherwise). Closing the campaign cuts one by itself when the rule allows it."""

    permission_classes = [IsResearcher]

    @extend_schema(responses={200: outputs.DemographicsReleasesOutput})
    def get(self, request: Request, campaign_id: int) -> Response:
        campaign = campaign_get(user=request.user, campaign_id=campaign_id)
        return Response({"releases": [release_info(r) for r in campaign.demographics_releases.order_by("number")]})

    @extend_schema(request=None, responses={201: outputs.DemographicsReleaseOutput})
    def post(self, request: Request, campaign_id: int) -> Response:
        campaign = campaign_get(user=request.user, campaign_id=campaign_id)
        release = demographics_release_cut(campaign=campaign, reason="request")
        return Response(release_info(release), status=201)


class DemographicsWithdrawApi(APIView):
    """POST /api/annotators/me/demographics/withdraw/: erase the caller's demographics (every campaign
    and the profile); their task answers stay."""

    permission_classes = [IsAuthenticated]

    @extend_schema(request=None, responses={200: outputs.DemographicsWithdrawOutput})
    def post(self, request: Request) -> Response:
        if not isinstance(request.data, dict):  # reading it parses it: 415 for a type the API does not take
            raise ApplicationError("No body is needed.", errors={"body": ["must be empty or an object"]})
        return Response(demographics_withdraw(annotator=selectors.annotator_of(request.user)))


class DemographicsApi(APIView):
    """DELETE /api/annotators/me/demographics/: the same withdrawal as a DELETE."""

    permission_classes = [IsAuthenticated]

    @extend_schema(request=None, responses={200: outputs.DemographicsWithdrawOutput})
    def delete(self, request: Request) -> Response:
        return Response(demographics_withdraw(annotator=selectors.annotator_of(request.user)))


class TokenRotateApi(APIView):
    """POST /api/auth/token/rotate/: an annotator's new permanent token (the old one stops working at
    once) and when it expires. Needs the current token or a session (not a crowd page's scoped token)."""

    permission_classes = [IsAuthenticated]

    @extend_schema(request=None, responses={200: outputs.TokenOutput})
    def post(self, request: Request) -> Response:
        request.data  # noqa: B018  (no body is needed, but one is parsed by the gate: a YAML body is a 415)
        if isinstance(request.auth, ScopedToken):
            raise ApplicationError("A task page's token cannot be rotated.", status_code=403)
        selectors.annotator_of(request.user)
        token = token_rotate(user=request.user)
        return Response({"token": token.key, "expires_at": token_expires_at(token.created)})


class LogoutApi(APIView):
    """POST /api/auth/logout/: ends the session and deletes an annotator's permanent token."""

    permission_classes = [IsAuthenticated]

    @extend_schema(request=None, responses={200: outputs.LogoutOutput})
    def post(self, request: Request) -> Response:
        request.data  # noqa: B018  (no body is needed, but one is parsed by the gate: a YAML body is a 415)
        revoked = tokens_revoke(user=request.user) if not user_is_researcher(request.user) else 0
        logout(request._request)
        return Response({"logged_out": True, "tokens_revoked": revoked})


class CampaignPayApi(APIView):
    """Fair pay: median seconds per answer, effective hourly rates, the floor and the suggested reward."""

    permission_classes = [IsResearcher]

    @extend_schema(responses={200: outputs.PayOutput})
    def get(self, request: Request, campaign_id: int) -> Response:
        campaign = campaign_get(user=request.user, campaign_id=campaign_id)
        return Response(campaign_pay(campaign=campaign))
