"""REST API of machine labels: run / cancel a labeller, import labels, list labels. Owner-only like
every campaign endpoint (campaign_get: others get 404)."""
from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from campaigns.models import Campaign
from campaigns.selectors import campaign_get
from common.errors import ApplicationError
from common.pagination import PageNumberPagination
from common.permissions import IsResearcher
from common.upload_jobs import UploadImportJobOutput, upload_estimate, upload_import_request
from common.uploads import upload_check, upload_read

from .importer import machine_labels_import
from .models import MachineLabel
from .selectors import machine_labels_list
from .services import autolabel_cancel, autolabel_start


class AutolabelInputSerializer(serializers.Serializer):
    labeller = serializers.CharField(max_length=64)


def _labeller(request: Request) -> str:
    ser = AutolabelInputSerializer(data=request.data)
    ser.is_valid(raise_exception=True)
    return ser.validated_data["labeller"]


class AutolabelRunOutput(serializers.Serializer):
    """The labeller's job: its status and counts (`done`, `failed` stored; `total` questions it applies to)."""

    labeller = serializers.CharField()
    status = serializers.CharField()
    queued = serializers.IntegerField(required=False, help_text="Questions queued by this call (start only).")
    batches = serializers.IntegerField(required=False, help_text="Task messages queued by this call (start only).")
    total = serializers.IntegerField()
    done = serializers.IntegerField()
    failed = serializers.IntegerField()


class MachineLabelImportOutput(serializers.Serializer):
    rows = serializers.IntegerField()
    labeller = serializers.CharField()


class AutolabelStartApi(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(request=AutolabelInputSerializer, responses={202: AutolabelRunOutput})
    def post(self, request: Request, campaign_id: int) -> Response:
        campaign = campaign_get(user=request.user, campaign_id=campaign_id)
        result = autolabel_start(campaign=campaign, labeller=_labeller(request))
        return Response(result, status=status.HTTP_202_ACCEPTED)


class AutolabelCancelApi(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(request=AutolabelInputSerializer, responses={200: AutolabelRunOutput})
    def post(self, request: Request, campaign_id: int) -> Response:
        campaign = campaign_get(user=request.user, campaign_id=campaign_id)
        return Response(autolabel_cancel(campaign=campaign, labeller=_labeller(request)))


class MachineLabelOutputSerializer(serializers.ModelSerializer):
    class Meta:
        model = MachineLabel
        fields = ("question", "labeller", "choice", "score", "model", "revision", "params", "created_at")


class MachineLabelListApi(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(parameters=[OpenApiParameter("labeller", str), OpenApiParameter("page", int),
                               OpenApiParameter("page_size", int)],
                   responses={200: MachineLabelOutputSerializer(many=True)})
    def get(self, request: Request, campaign_id: int) -> Response:
        campaign = campaign_get(user=request.user, campaign_id=campaign_id)
        qs = machine_labels_list(campaign=campaign, labeller=request.query_params.get("labeller") or None)
        paginator = PageNumberPagination()
        page = paginator.paginate_queryset(qs, request, view=self)
        return paginator.get_paginated_response(MachineLabelOutputSerializer(page, many=True).data)


class MachineLabelImportApi(APIView):
    """Multipart: `file` (CSV or JSONL) and `labeller` (the name the labels are stored under)."""

    permission_classes = [IsResearcher]

    @extend_schema(request={"multipart/form-data": inline_serializer("MachineLabelImportInput", fields={
        "file": serializers.FileField(help_text="CSV or JSON Lines, one label per row"),
        "labeller": serializers.CharField(),
    })}, responses={201: MachineLabelImportOutput, 202: UploadImportJobOutput})
    def post(self, request: Request, campaign_id: int) -> Response:
        campaign = campaign_get(user=request.user, campaign_id=campaign_id)
        upload = request.FILES.get("file")
        if upload is None:
            raise ApplicationError("A file is required.", errors={"file": ["This field is required."]})
        params = {"campaign": campaign.pk, "labeller": request.data.get("labeller"), "name": upload.name or "labels"}
        # Through the request work budget (common/upload_jobs.py): imported here, or 202 while a worker
        # imports the stored upload with the same function.
        upload_check(upload, field="file", kind="csv")
        state, body = upload_import_request(
            kind="machine_labels", campaign_id=campaign.pk, owner_id=request.user.pk,
            estimate=upload_estimate(upload, kind="machine_labels"), uploads={"file": upload}, params=params,
            inline=lambda: machine_labels_run(params, {"file": upload_read(upload, field="file", kind="csv")}))
        return Response(body, status=status.HTTP_202_ACCEPTED if state == "building" else status.HTTP_201_CREATED)


def machine_labels_run(params: dict[str, Any], files: dict[str, Any]) -> dict[str, Any]:
    """The machine labels import of an upload (the request's, or a stored one in the worker)."""
    return machine_labels_import(campaign=Campaign.objects.get(pk=params["campaign"]), labeller=params["labeller"],
                                 name=params["name"], data=files["file"])
