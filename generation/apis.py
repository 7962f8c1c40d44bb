"""REST API of generation: start / cancel / retry, the image list, exclusion, and import."""
from __future__ import annotations

from typing import Any, BinaryIO

from django.core.files.base import File
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from campaigns.models import Campaign
from campaigns.selectors import campaign_get, campaign_progress
from common.errors import ApplicationError
from common.pagination import PageNumberPagination
from common.permissions import IsResearcher
from common.upload_jobs import UploadImportJobOutput, upload_estimate, upload_import_request
from common.uploads import upload_check, upload_read

from .importer import UploadedFilesSource, ZipSource, images_import
from .models import Image
from .selectors import image_get, image_list, image_url
from .services import generation_cancel, generation_retry_failed, generation_start, image_exclude, image_include


class ImageOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    prompt_id = serializers.IntegerField()
    prompt_key = serializers.CharField(source="prompt.key")
    prompt_text = serializers.CharField(source="prompt.text")
    setting = serializers.CharField(source="prompt.setting")
    sample_index = serializers.IntegerField()
    seed = serializers.IntegerField()
    status = serializers.CharField()
    error = serializers.CharField()
    attempts = serializers.IntegerField()
    url = serializers.SerializerMethodField()
    web_url = serializers.SerializerMethodField()
    source_url = serializers.CharField()
    sha256 = serializers.CharField()
    width = serializers.IntegerField(allow_null=True)
    height = serializers.IntegerField(allow_null=True)
    backend = serializers.CharField()
    model = serializers.CharField()
    revision = serializers.CharField()
    params = serializers.JSONField()
    wall_time_s = serializers.FloatField(allow_null=True)
    revised_prompt = serializers.CharField()
    synthetic = serializers.BooleanField()
    excluded = serializers.BooleanField()
    exclusion_reason = serializers.CharField()
    finished_at = serializers.DateTimeField(allow_null=True)

    def get_url(self, image: Image) -> str | None:
        return image_url(file=image.file, source_url=image.source_url) or None

    def get_web_url(self, image: Image) -> str | None:
        return image_url(web_file=image.web_file, source_url=image.source_url) or None


class _CampaignStateOutput(serializers.Serializer):
    status = serializers.CharField(help_text="The campaign's status after the call.")
    progress = serializers.JSONField(help_text="The campaign's progress counters (as GET /api/campaigns/{id}/).")


class GenerationQueuedOutput(_CampaignStateOutput):
    """Images queued on commit: `queued` and `batches` expected, `unqueued` those the broker refused
    (the sweeper queues them later); start adds `created`, `resumed`, `planning` (a worker plans a
    large campaign), retry-failed adds `reset`."""

    queued = serializers.IntegerField()
    batches = serializers.IntegerField()
    unqueued = serializers.IntegerField()
    created = serializers.IntegerField(required=False)
    resumed = serializers.IntegerField(required=False)
    planning = serializers.BooleanField(required=False)
    reset = serializers.IntegerField(required=False)


class GenerationCancelOutput(_CampaignStateOutput):
    cancelled = serializers.IntegerField()


class ImageImportOutput(_CampaignStateOutput):
    imported = serializers.IntegerField()
    unchanged = serializers.IntegerField()
    rows = serializers.IntegerField()


class GenerationStartApi(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(request=None, responses={202: GenerationQueuedOutput})
    def post(self, request: Request, campaign_id: int) -> Response:
        campaign = campaign_get(user=request.user, campaign_id=campaign_id)
        result = generation_start(campaign=campaign)
        campaign.refresh_from_db()
        return Response({**result, "status": campaign.status, "progress": campaign_progress(campaign=campaign)},
                        status=status.HTTP_202_ACCEPTED)


class GenerationCancelApi(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(request=None, responses={200: GenerationCancelOutput})
    def post(self, request: Request, campaign_id: int) -> Response:
        campaign = campaign_get(user=request.user, campaign_id=campaign_id)
        result = generation_cancel(campaign=campaign)
        campaign.refresh_from_db()
        return Response({**result, "status": campaign.status, "progress": campaign_progress(campaign=campaign)})


class GenerationRetryFailedApi(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(request=None, responses={202: GenerationQueuedOutput})
    def post(self, request: Request, campaign_id: int) -> Response:
        campaign = campaign_get(user=request.user, campaign_id=campaign_id)
        result = generation_retry_failed(campaign=campaign)
        campaign.refresh_from_db()
        return Response({**result, "status": campaign.status, "progress": campaign_progress(campaign=campaign)},
                        status=status.HTTP_202_ACCEPTED)


class CampaignImagesApi(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(
        parameters=[OpenApiParameter("status", str, enum=[s.value for s in Image.Status]),
                    OpenApiParameter("setting", str), OpenApiParameter("excluded", bool),
                    OpenApiParameter("page", int), OpenApiParameter("page_size", int)],
        responses={200: ImageOutputSerializer(many=True)},
    )
    def get(self, request: Request, campaign_id: int) -> Response:
        campaign = campaign_get(user=request.user, campaign_id=campaign_id)
        status_filter = request.query_params.get("status") or None
        if status_filter and status_filter not in Image.Status.values:
            raise ApplicationError("Unknown status.", errors={"status": [f"use one of {', '.join(Image.Status.values)}"]})
        excluded_raw = request.query_params.get("excluded")
        excluded = None if excluded_raw in (None, "") else excluded_raw.lower() in ("1", "true", "yes")
        qs = image_list(campaign=campaign, status=status_filter, setting=request.query_params.get("setting") or None,
                        excluded=excluded)
        paginator = PageNumberPagination()
        page = paginator.paginate_queryset(qs, request, view=self)
        return paginator.get_paginated_response(ImageOutputSerializer(page, many=True).data)


class ImageExcludeInputSerializer(serializers.Serializer):
    reason = serializers.CharField(max_length=500)


class ImageExcludeApi(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(request=ImageExcludeInputSerializer, responses={200: ImageOutputSerializer})
    def post(self, request: Request, image_id: int) -> Response:
        image = image_get(user=request.user, image_id=image_id)
        data = ImageExcludeInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        image = image_exclude(image=image, reason=data.validated_data["reason"])
        return Response(ImageOutputSerializer(image).data)


class ImageIncludeApi(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(request=None, responses={200: ImageOutputSerializer})
    def post(self, request: Request, image_id: int) -> Response:
        image = image_get(user=request.user, image_id=image_id)
        return Response(ImageOutputSerializer(image_include(image=image)).data)


class ImageImportApi(APIView):
    """Multipart: `manifest` (CSV or JSONL), optional `archive` (zip) and/or `files` (repeated)."""

    permission_classes = [IsResearcher]

    @extend_schema(request={"multipart/form-data": inline_serializer("ImageImportInput", fields={
        "manifest": serializers.FileField(help_text="CSV or JSON Lines, one image per row"),
        "archive": serializers.FileField(required=False, help_text="a zip of the image files"),
        "files": serializers.ListField(child=serializers.FileField(), required=False,
                                       help_text="the image files, by the names the manifest uses"),
    })}, responses={201: ImageImportOutput, 202: UploadImportJobOutput})
    def post(self, request: Request, campaign_id: int) -> Response:
        campaign = campaign_get(user=request.user, campaign_id=campaign_id)
        manifest = request.FILES.get("manifest")
        if manifest is None:
            raise ApplicationError("A manifest file is required.", errors={"manifest": ["This field is required."]})
        archive = request.FILES.get("archive")
        uploads = request.FILES.getlist("files")
        if archive is not None and uploads:
            raise ApplicationError("Send either an archive or files, not both.", errors={"archive": ["Send one."]})
        source: Any = ZipSource(upload_check(archive, field="archive", kind="archive")) if archive is not None else UploadedFilesSource(uploads) if uploads else None
        upload_check(manifest, field="manifest", kind="csv")
        params = {"campaign": campaign.pk, "manifest_name": manifest.name or "manifest",
                  "file_names": [f.name for f in uploads]}
        # Through the request work budget (common/upload_jobs.py): imported here, or 202 while a worker
        # imports the stored uploads with the same function.
        state, body = upload_import_request(
            kind="images", campaign_id=campaign.pk, owner_id=request.user.pk,
            estimate=upload_estimate(manifest, kind="images"), params=params,
            uploads={"manifest": manifest, "archive": archive, **{f"files.{i}": f for i, f in enumerate(uploads)}},
            inline=lambda: images_import_body(campaign, params, upload_read(manifest, field="manifest", kind="csv"), source))
        return Response(body, status=status.HTTP_202_ACCEPTED if state == "building" else status.HTTP_201_CREATED)


def images_import_body(campaign: Campaign, params: dict[str, Any], manifest: bytes | BinaryIO,
                       source: Any) -> dict[str, Any]:
    result = images_import(campaign=campaign, manifest_name=params["manifest_name"], manifest=manifest, files=source)
    campaign.refresh_from_db()
    return {**result, "status": campaign.status, "progress": campaign_progress(campaign=campaign)}


def images_import_run(params: dict[str, Any], files: dict[str, BinaryIO]) -> dict[str, Any]:
    """Worker side of an image import over the budget (common/upload_jobs.py): the stored manifest and
    archive or files (binary streams from the storage, never read whole), through the same import."""
    source: Any = None
    if "archive" in files:
        source = ZipSource(files["archive"])
    elif params["file_names"]:
        source = UploadedFilesSource([File(files[f"files.{i}"], name=name)
                                      for i, name in enumerate(params["file_names"])])
    return images_import_body(Campaign.objects.get(pk=params["campaign"]), params, files["manifest"], source)
