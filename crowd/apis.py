"""Crowd-platform API: the MTurk page's HIT and qualification calls, and the researcher's upload of
an MTurk batch-results CSV. Views parse, call one service, and render."""
from __future__ import annotations

from typing import Any

from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import outputs, selectors
from annotation.apis import QualificationAttemptApi, nothing_now
from campaigns.models import Campaign
from campaigns.selectors import campaign_get
from common.edge import body_parse
from common.errors import ApplicationError
from common.inputs import json_loads
from common.numbers import number
from common.permissions import IsResearcher
from common.upload_jobs import UploadImportJobOutput, upload_estimate, upload_import_request
from common.uploads import upload_check

from . import services
from .mturk_batch import mturk_batch_import


class MTurkAssignmentInput(serializers.Serializer):
    assignmentId = serializers.CharField(required=False, allow_blank=True, max_length=200, help_text="MTurk's assignment id of the accepted HIT.")
    hitId = serializers.CharField(required=False, allow_blank=True, max_length=200, help_text="MTurk's HIT id.")


class MTurkBatchImportInput(serializers.Serializer):
    file = serializers.FileField(help_text="MTurk's batch-results CSV.")
    mapping = serializers.JSONField(required=False, help_text="How the CSV's columns map to questions (object).")
    campaigns = serializers.CharField(required=False, help_text="Further campaign ids sharing the file, comma-separated.")
    dry_run = serializers.BooleanField(required=False, help_text="Check only; nothing is written.")


class MTurkSubmittedOutput(serializers.Serializer):
    """The MTurk assignment's HIT was submitted already: the page only has to tell MTurk."""

    id = serializers.IntegerField()
    status = serializers.CharField(help_text='"submitted"')
    submitted_at = serializers.DateTimeField(allow_null=True)
    external_assignment_id = serializers.CharField()


MTURK_HIT = PolymorphicProxySerializer(component_name="MTurkHitOutput", resource_type_field_name=None,
                                       serializers=[outputs.HitOutput, MTurkSubmittedOutput])


class MTurkBatchImportOutput(serializers.Serializer):
    campaigns = serializers.ListField(child=serializers.IntegerField(), help_text="The campaigns the file fed.")
    rows = serializers.IntegerField()
    assignments = serializers.IntegerField()
    answers = serializers.IntegerField()
    skipped_rows = serializers.IntegerField()
    skipped_by_status = serializers.JSONField(help_text="{MTurk assignment status: rows skipped}.")
    workers = serializers.IntegerField()
    questions = serializers.IntegerField()


class MTurkAssignmentApi(APIView):
    """The product HIT of an accepted MTurk assignment: {"assignmentId", "hitId"} -> 201 new, 200 the
    same one again (or `"status": "submitted"` once submitted), 204 no work left (with `Retry-After`
    when more may come: `annotation.apis.nothing_now`)."""

    permission_classes = [IsAuthenticated]

    @extend_schema(request=MTurkAssignmentInput, responses={200: MTURK_HIT, 201: outputs.HitOutput, 204: None})
    def post(self, request: Request, campaign_id: int) -> Response:
        annotator = selectors.annotator_of(request.user)
        selectors.campaign_for_annotator(campaign_id=campaign_id)
        data = body_parse(MTurkAssignmentInput, request)
        payload, created = services.mturk_assignment_take(annotator=annotator, campaign_id=campaign_id,
                                                          assignment_id=data.get("assignmentId"),
                                                          hit_id=data.get("hitId"))
        if payload is None:
            return nothing_now(campaign_id=campaign_id, annotator=annotator)
        return Response(payload, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class MTurkQualificationAttemptApi(QualificationAttemptApi):
    """A qualification attempt from the MTurk page; a pass also grants the MTurk qualification."""

    attempt_service = staticmethod(services.mturk_qualification_attempt)


MAPPING_MAX_BYTES = 64 * 1024


def _campaign_ids(raw: list[str]) -> list[int]:
    ids: list[int] = []
    for value in raw:
        for part in str(value).replace(",", " ").split():
            ids.append(number(part, field="campaigns", kind="int", minimum=1, maximum=2**63 - 1))
    return ids


class MTurkBatchImportApi(APIView):
    """Upload MTurk's batch-results CSV (multipart `file`, optional `mapping` JSON and `campaigns`
    extra ids sharing the file) -> 200 summary; 400 with the problems row by row, nothing written."""

    permission_classes = [IsResearcher]

    @extend_schema(request={"multipart/form-data": MTurkBatchImportInput},
                   responses={200: MTurkBatchImportOutput, 202: UploadImportJobOutput})
    def post(self, request: Request, campaign_id: int) -> Response:
        campaign = campaign_get(user=request.user, campaign_id=campaign_id)
        upload = request.FILES.get("file")
        if upload is None:
            raise ApplicationError("Upload the batch CSV as the multipart field `file`.", errors={"file": ["required"]})
        mapping = request.data.get("mapping") or None
        if isinstance(mapping, str):  # common.inputs: the bounded JSON parser (depth, size, clean text)
            mapping = json_loads(mapping, max_bytes=MAPPING_MAX_BYTES, field="mapping")
        if mapping is not None and not isinstance(mapping, dict):
            raise ApplicationError("mapping must be a JSON object.", errors={"mapping": ["must be an object"]})
        extra = _campaign_ids(request.data.getlist("campaigns") if hasattr(request.data, "getlist")
                              else [request.data.get("campaigns") or ""])
        campaigns = [campaign] + [campaign_get(user=request.user, campaign_id=cid) for cid in extra
                                  if cid != campaign.pk]
        params = {"campaigns": [c.pk for c in campaigns], "mapping": mapping,
                  "dry_run": str(request.data.get("dry_run", "")).lower() in ("1", "true", "yes")}
        # Through the request work budget (common/upload_jobs.py): imported here, streamed from the upload's
        # own file (never read whole), or 202 while a worker imports the stored upload with the same function.
        upload_check(upload, field="file", kind="csv")
        state, body = upload_import_request(
            kind="mturk_batch", campaign_id=campaign.pk, owner_id=request.user.pk,
            estimate=upload_estimate(upload, kind="mturk_batch"), uploads={"file": upload}, params=params,
            inline=lambda: mturk_batch_run(params, {"file": upload_check(upload, field="file", kind="csv")}, campaigns))
        return Response(body, status=status.HTTP_202_ACCEPTED if state == "building" else status.HTTP_200_OK)


def mturk_batch_run(params: dict[str, Any], files: dict[str, Any], campaigns: list[Campaign] | None = None) -> dict[str, Any]:
    """The batch import of an upload (the request's, or a stored one in the worker: common/upload_jobs.py)."""
    if campaigns is None:
        campaigns = [Campaign.objects.get(pk=pk) for pk in params["campaigns"]]
    result = mturk_batch_import(campaigns=campaigns, data=files["file"], mapping=params["mapping"],
                                dry_run=params["dry_run"])
    return {"campaigns": [c.pk for c in campaigns], **result.as_dict()}
