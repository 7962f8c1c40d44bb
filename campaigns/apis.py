"""REST API of the campaign design. Views parse, call one service or selector, and render."""
from __future__ import annotations

from typing import Any

import yaml
from django.http import HttpResponse
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from campaigns.spec import KINDS
from common.errors import ApplicationError, NotFoundError
from common.pagination import PageNumberPagination
from common.parsers import SPEC_PARSERS
from common.permissions import IsResearcher
from common.upload_jobs import UploadImportJobOutput, upload_job_get
from common.uploads import upload_read

from . import presets
from .registry import preview_providers
from .selectors import campaign_get, campaign_list, campaign_progress, campaign_references, prompt_list
from .services import campaign_create, campaign_delete, campaign_references_upload
from .spec import spec_expand, spec_normalize, spec_summary


class CampaignOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    kind = serializers.CharField()
    seed = serializers.IntegerField()
    status = serializers.CharField()
    owner = serializers.CharField(source="owner.get_username")
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    prompt_count = serializers.IntegerField()
    images_planned = serializers.IntegerField()


def campaign_payload(campaign: Any, *, with_spec: bool = True) -> dict[str, Any]:
    data = dict(CampaignOutputSerializer(campaign).data)
    data["progress"] = campaign_progress(campaign=campaign)
    if with_spec:
        data["spec"] = campaign.spec
    return data


class SpecInputSerializer(serializers.Serializer):
    """The body is the spec itself (JSON or YAML, see docs/spec.md). Documentation only: the spec
    module (campaigns.spec.spec_normalize) is the parser, naming every bad field by its dotted path;
    sections other than these (e.g. crowd) are documented in docs/spec.md."""

    version = serializers.IntegerField(required=False, help_text="Spec format version (1).")
    name = serializers.CharField(max_length=200)
    kind = serializers.ChoiceField(choices=list(KINDS))
    seed = serializers.IntegerField(required=False)
    description = serializers.CharField(required=False, allow_blank=True)
    design = serializers.JSONField(help_text="Settings, identities or attributes, samples (docs/spec.md).")
    backend = serializers.JSONField(help_text="Generation backend: name, model, size, api_base (allow-listed).")
    annotation = serializers.JSONField(required=False, help_text="Redundancy, HIT size, reward, instructions.")


class SpecOutput(SpecInputSerializer):
    """The normalised spec (docs/spec.md): the body's sections with every default filled in, and the
    sections registered by other apps (campaigns.spec.register_section)."""

    version = serializers.IntegerField()
    seed = serializers.IntegerField()
    description = serializers.CharField(allow_blank=True)
    annotation = serializers.JSONField(help_text="Redundancy, HIT size, reward, instructions.")
    references = serializers.ListField(child=serializers.JSONField(), required=False,
                                       help_text="Reference %F per identity (PST).")
    crowd = serializers.JSONField(help_text="Crowd platforms (docs/crowd.md).")
    dataset = serializers.JSONField(help_text="The replication package's license and citation.")
    autolabel = serializers.JSONField(help_text="Machine labellers (docs/autolabel.md).")


class SpecPreviewOutput(serializers.Serializer):
    """What the spec would create (campaigns.spec.spec_summary), a sample of its prompts and what the
    registered preview providers add (metrics: `planning`, docs/metrics.md "Sample size planning")."""

    spec = SpecOutput()
    prompt_count = serializers.IntegerField()
    images_planned = serializers.IntegerField()
    by_setting = serializers.JSONField(help_text="{setting: {prompts, images}}.")
    examples = serializers.ListField(child=serializers.JSONField(), help_text="Up to 8 prompts: {key, setting, text}.")
    planning = serializers.JSONField(required=False, help_text=(
        "{assumption, confidence, target_half_width, pst, gep, images_for_target, adaptive, comparison}."))


class PresetsOutput(serializers.Serializer):
    """The preset catalogue (campaigns.presets.catalogue): designs, templates, samples, instructions."""

    pst = serializers.JSONField(help_text="{occupation, power, templates, samples, instructions, "
                                "setting_instructions, questions, labor_stats_percent_female}.")
    gep = serializers.JSONField(help_text="{genders, attributes, contexts, templates, samples}.")


class ReferencesOutput(serializers.Serializer):
    """The reference %F per identity in force and what it leaves uncovered (campaigns.spec.references)."""

    references = serializers.ListField(child=serializers.JSONField(), help_text="{name, source, percent_female}.")
    default = serializers.BooleanField(help_text="True while the spec names no references (the preset's are used).")
    uncovered = serializers.JSONField(help_text="{reference: [design identities without a value]}.")
    not_in_design = serializers.JSONField(help_text="{reference: [identities the design does not have]}.")


class ReferencesUploadOutput(ReferencesOutput):
    uploaded = serializers.ListField(child=serializers.CharField(), help_text="The references the CSV named.")


class CampaignListCreateApi(APIView):
    permission_classes = [IsResearcher]
    parser_classes = SPEC_PARSERS  # the one place besides preview that reads YAML

    @extend_schema(responses={200: CampaignOutputSerializer(many=True)})
    def get(self, request: Request) -> Response:
        qs = campaign_list(user=request.user).select_related("owner")
        paginator = PageNumberPagination()
        page = paginator.paginate_queryset(qs, request, view=self)
        return paginator.get_paginated_response([campaign_payload(c, with_spec=False) for c in page])

    @extend_schema(request={"application/json": SpecInputSerializer, "application/yaml": SpecInputSerializer},
                   responses={201: CampaignOutputSerializer})
    def post(self, request: Request) -> Response:
        campaign = campaign_create(owner=request.user, spec=request.data)
        return Response(campaign_payload(campaign), status=status.HTTP_201_CREATED)


class CampaignDetailApi(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(responses={200: CampaignOutputSerializer})
    def get(self, request: Request, campaign_id: int) -> Response:
        campaign = campaign_get(user=request.user, campaign_id=campaign_id)
        return Response(campaign_payload(campaign))

    @extend_schema(request=None, responses={204: None})
    def delete(self, request: Request, campaign_id: int) -> Response:
        """Soft delete, after storing the campaign's full export archive (204)."""
        campaign_delete(campaign=campaign_get(user=request.user, campaign_id=campaign_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


class PromptOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    key = serializers.CharField()
    position = serializers.IntegerField()
    setting = serializers.CharField()
    text = serializers.CharField()
    metadata = serializers.JSONField()
    samples = serializers.IntegerField()
    seeds = serializers.JSONField()


class CampaignPromptsApi(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(
        parameters=[OpenApiParameter("setting", str), OpenApiParameter("page", int), OpenApiParameter("page_size", int)],
        responses={200: PromptOutputSerializer(many=True)},
    )
    def get(self, request: Request, campaign_id: int) -> Response:
        campaign = campaign_get(user=request.user, campaign_id=campaign_id)
        qs = prompt_list(campaign=campaign, setting=request.query_params.get("setting") or None)
        paginator = PageNumberPagination()
        page = paginator.paginate_queryset(qs, request, view=self)
        return paginator.get_paginated_response(PromptOutputSerializer(page, many=True).data)


class CampaignImportJobApi(APIView):
    """An upload imported by a worker (MTurk batch results, machine labels, image manifest over the
    request work budget: common/upload_jobs.py): `?job=<id>` from the import's 202."""

    permission_classes = [IsResearcher]

    @extend_schema(parameters=[OpenApiParameter("job", str, required=True)], responses={200: UploadImportJobOutput})
    def get(self, request: Request, campaign_id: int) -> Response:
        campaign = campaign_get(user=request.user, campaign_id=campaign_id)
        job_id = request.query_params.get("job")
        if not job_id:
            raise ApplicationError("Name the import: ?job=<id> (from its 202).", errors={"job": ["required"]})
        job = upload_job_get(job_id=str(job_id), owner_id=request.user.pk)
        if job is None or job.get("campaign") != campaign.pk:
            raise NotFoundError("No such import (unknown, another campaign's, or expired after 7 days).")
        return Response(job)


class CampaignSpecApi(APIView):
    """Download the normalised spec ("campaign as code"); `?as=yaml` for YAML."""

    permission_classes = [IsResearcher]

    @extend_schema(parameters=[OpenApiParameter("as", str, enum=["json", "yaml"])], responses={(200, "application/json"): SpecOutput, (200, "application/yaml"): str})
    def get(self, request: Request, campaign_id: int) -> HttpResponse:
        campaign = campaign_get(user=request.user, campaign_id=campaign_id)
        spec = dict(campaign.spec)
        if request.query_params.get("as") == "yaml":
            body = yaml.safe_dump(spec, sort_keys=False, allow_unicode=True)
            response = HttpResponse(body, content_type="application/yaml")
            response["Content-Disposition"] = f'attachment; filename="campaign-{campaign.pk}.yaml"'
            return response
        response = Response(spec)
        response["Content-Disposition"] = f'attachment; filename="campaign-{campaign.pk}.json"'
        return response


class SpecPreviewApi(APIView):
    """Validate a spec and show what it would create, without creating anything."""

    permission_classes = [IsResearcher]
    parser_classes = SPEC_PARSERS

    @extend_schema(request={"application/json": SpecInputSerializer, "application/yaml": SpecInputSerializer},
                   responses={200: SpecPreviewOutput},
                   parameters=[OpenApiParameter("target_half_width", float, description=(
                       "planning: the wanted 95% half-width of the headline score (STS percent points for PST, "
                       "GEP score for GEP)"))])
    def post(self, request: Request) -> Response:
        normalized = spec_normalize(request.data)
        plans = spec_expand(normalized)
        examples = [{"key": p.key, "setting": p.setting, "text": p.text} for p in plans[:: max(1, len(plans) // 8)][:8]]
        summary = spec_summary(normalized, plans)
        extra: dict[str, Any] = {}
        for provider in preview_providers():  # e.g. metrics' `planning` (registry.register_preview)
            extra.update(provider(normalized, summary, request.query_params))
        return Response({"spec": normalized, **summary, "examples": examples, **extra})


class PresetsApi(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(responses={200: PresetsOutput})
    def get(self, request: Request) -> Response:
        return Response(presets.catalogue())


class ReferencesUploadInput(serializers.Serializer):
    file = serializers.FileField(help_text="CSV with the columns name, source, identity, percent_female.")


class CampaignReferencesApi(APIView):
    """Reference %F per identity (spec `references`, docs/spec.md): GET the references in force and what
    they leave uncovered; POST a CSV (multipart `file`, or a `text/csv` body; columns name, source,
    identity, percent_female) that adds or replaces references, all or nothing; 409 once closed."""

    permission_classes = [IsResearcher]

    @extend_schema(responses={200: ReferencesOutput})
    def get(self, request: Request, campaign_id: int) -> Response:
        campaign = campaign_get(user=request.user, campaign_id=campaign_id)
        return Response(campaign_references(campaign=campaign))

    @extend_schema(request={"multipart/form-data": ReferencesUploadInput}, responses={200: ReferencesUploadOutput})
    def post(self, request: Request, campaign_id: int) -> Response:
        campaign = campaign_get(user=request.user, campaign_id=campaign_id)
        upload = request.FILES.get("file")
        if upload is None:
            raise ApplicationError("Upload the references CSV as the multipart field `file`.",
                                   errors={"file": ["required"]})
        return Response(campaign_references_upload(campaign=campaign, data=upload_read(upload, field="file", kind="references")))
