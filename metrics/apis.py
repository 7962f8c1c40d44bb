"""Report API: JSON by default, `?format=csv` (zip of tidy tables) or `?format=html`."""
from __future__ import annotations

from typing import Any

from django.core.files.storage import default_storage
from django.http import FileResponse, HttpResponse, JsonResponse
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from drf_spectacular.views import SpectacularAPIView
from rest_framework import renderers, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from campaigns.selectors import campaign_get
from campaigns.spec import KINDS
from common.errors import ApplicationError
from common.inputs import BodyError
from common.numbers import number
from common.permissions import IsResearcher

from .compare.options import CompareOptions
from .compare.services import compare_get
from .compare.sources import compare_source_options
from .options import ReportOptions
from .package.exports import report_csv_get, report_html
from .package.services import package_get, package_progress
from .render.compare import compare_csv_zip, compare_html
from .sections.schema import REPORT_SCHEMA, REQUIRED, SECTIONS
from .snapshots.report import report_get

MAX_ID = 2**63 - 1  # PostgreSQL's bigint: a larger id is a 400, never a database error
MAX_IDS = 50  # campaigns in one comparison
OPTION_PARAMS = [
    OpenApiParameter("format", str, enum=["json", "csv", "html"]),
    OpenApiParameter("treatment", str, enum=["paper", "excluded"], description="PST: Cannot identify/ties as -1 or left out"),
    OpenApiParameter("gep_tie_policy", str, enum=["absent", "present", "exclude"]),
    OpenApiParameter("aggregation", str, enum=["majority", "dawid_skene"]),
    OpenApiParameter("n_boot", int), OpenApiParameter("n_perm", int), OpenApiParameter("seed", int),
    OpenApiParameter("confidence", float), OpenApiParameter("exclude_blocked", bool),
    OpenApiParameter("source", str, description="human (default), a machine labeller's name, or hybrid:<labeller>"),
]


class ReportWarningOutput(serializers.Serializer):
    path = serializers.CharField(help_text="Dotted key of the figure or section left out or flagged.")
    message = serializers.CharField(help_text="Why.")


class ReportSummaryOutput(serializers.Serializer):
    headline = serializers.ListField(child=serializers.CharField())
    comparison = serializers.ListField(child=serializers.CharField())
    agreement = serializers.ListField(child=serializers.CharField())
    data = serializers.ListField(child=serializers.CharField())
    warnings = serializers.ListField(child=serializers.CharField())
    lines = serializers.ListField(child=serializers.CharField())


def _section_field(key: str) -> serializers.Field:
    help_text = SECTIONS[key].get("description", "") + " Inner keys: GET /api/schema/report/ and docs/metrics.md."
    return serializers.JSONField(required=key in REQUIRED, help_text=help_text)


# The report's top level, from its JSON Schema (metrics/sections/schema.py: the one description of it).
ReportOutput = inline_serializer("ReportOutput", fields={
    **{key: _section_field(key) for key in SECTIONS},
    "warnings": ReportWarningOutput(many=True), "summary": ReportSummaryOutput()})

BuildingOutput = inline_serializer("BuildingOutput", fields={
    "status": serializers.ChoiceField(choices=["building"]),
    "progress": serializers.FloatField(help_text="0..1"),
    "snapshot": serializers.IntegerField(help_text="The snapshot a worker is building."),
})

CompareOutput = inline_serializer("CompareOutput", fields={
    "kind": serializers.ChoiceField(choices=list(KINDS)),
    "metrics": serializers.ListField(child=serializers.CharField()),
    "rows": serializers.ListField(child=serializers.JSONField(), help_text="One row per campaign (or setting)."),
    "mode": serializers.ChoiceField(choices=["campaigns", "settings"]),
    "settings": serializers.ListField(child=serializers.CharField(), required=False,
                                      help_text="The two settings compared (mode settings)."),
    "pooled_agreement": serializers.JSONField(required=False, help_text="Two or more campaigns: Krippendorff's "
                                              "alpha pooled, by campaign, mean of campaigns (docs/metrics.md)."),
    "significance": serializers.JSONField(required=False, help_text="test=permutation: every pairwise difference, "
                                          "its interval, p-value and Holm-adjusted p-value (docs/metrics.md)."),
    "source": serializers.CharField(required=False, help_text="The label source of the figures."),
    "sources": serializers.JSONField(required=False, help_text="Several sources: {compared, rows, agreement}."),
})

PackageBuildingOutput = inline_serializer("PackageBuildingOutput", fields={
    "status": serializers.CharField(help_text="building (a worker builds the package) or failed."),
    "progress": serializers.FloatField(help_text="0..1"),
    "build": serializers.IntegerField(help_text="The package build."),
    "error": serializers.CharField(allow_null=True),
})

REPORT_FORMATS = {(200, "application/zip"): bytes, (200, "text/html"): str}


class _Passthrough(renderers.BaseRenderer):
    def render(self, data: Any, accepted_media_type: str | None = None, renderer_context: dict | None = None) -> Any:
        return data


class CsvRenderer(_Passthrough):
    media_type = "application/zip"
    format = "csv"


class HtmlRenderer(_Passthrough):
    media_type = "text/html"
    format = "html"


def _building(progress: Any) -> JsonResponse:
    """202 `{"status": "building", "progress", "snapshot"}` as JSON whatever `format` was asked (the
    csv / html renderers pass bodies through: a dict would reach the client as its joined keys)."""
    return JsonResponse(progress, status=status.HTTP_202_ACCEPTED)


def _options_query(request: Request) -> str:
    return "&".join(f"{k}={v}" for k, v in request.query_params.items() if k != "format")


class CampaignReportApi(APIView):
    permission_classes = [IsResearcher]
    renderer_classes = [renderers.JSONRenderer, CsvRenderer, HtmlRenderer]

    @extend_schema(parameters=OPTION_PARAMS, responses={(200, "application/json"): ReportOutput, **REPORT_FORMATS,
                                                     (202, "application/json"): BuildingOutput})
    def get(self, request: Request, campaign_id: int) -> Any:
        campaign = campaign_get(user=request.user, campaign_id=campaign_id)
        options = ReportOptions.from_params(request.query_params)
        fmt = request.query_params.get("format", "json")
        if fmt == "csv":  # one extraction builds the report (when needed) and the tables
            state, body = report_csv_get(campaign=campaign, options=options)
            if state != "ready":
                return _building(body)
            response = HttpResponse(body, content_type="application/zip")
            response["Content-Disposition"] = f'attachment; filename="campaign-{campaign.pk}-report.zip"'
            return response
        state, report = report_get(campaign=campaign, options=options)
        if state != "ready":
            return _building(report)
        if fmt == "html":
            return HttpResponse(report_html(campaign=campaign, report=report, options=options,
                                            query=_options_query(request)), content_type="text/html; charset=utf-8")
        return Response(report)


class ReportCompareApi(APIView):
    """`?campaigns=1,2,3`: headline figures of several campaigns of one kind side by side; with
    `test=permutation` (`draws`, `seed`) the pooled agreement and the significance of every pairwise
    difference; `?campaign=ID&settings=A,B` compares two settings of one campaign. `format=csv|html`."""

    permission_classes = [IsResearcher]
    renderer_classes = [renderers.JSONRenderer, CsvRenderer, HtmlRenderer]

    @extend_schema(parameters=[OpenApiParameter("campaigns", str), OpenApiParameter("campaign", int),
                               OpenApiParameter("settings", str, description="two settings of one campaign: A,B"),
                               OpenApiParameter("test", str, enum=["none", "permutation"]),
                               OpenApiParameter("draws", int),
                               OpenApiParameter("source", str, description="one source, or several comma-separated "
                                                "(each compared with human by Kendall tau-b, GEP Table 6)"),
                               *OPTION_PARAMS],
                   responses={(200, "application/json"): CompareOutput, **REPORT_FORMATS,
                              (202, "application/json"): BuildingOutput})
    def get(self, request: Request) -> Any:
        compare = CompareOptions.from_params(request.query_params)
        field = "campaign" if compare.settings else "campaigns"
        raw = request.query_params.get(field, "")
        try:
            ids = [number(x, field=field, kind="int", minimum=1, maximum=MAX_ID) for x in raw.split(",")[:MAX_IDS + 1]
                   if x.strip()]
        except BodyError as exc:
            raise ApplicationError(f"{field} must be a comma-separated list of campaign ids",
                                   errors={field: ["not a list of integers"]}) from exc
        if len(ids) > MAX_IDS:
            raise ApplicationError(f"{field}: at most {MAX_IDS} campaigns", errors={field: [f"at most {MAX_IDS} campaigns"]})
        if not ids:
            raise ApplicationError(f"Give {field}=ID" + (",ID,..." if field == "campaigns" else ""),
                                   errors={field: ["required"]})
        campaigns = [campaign_get(user=request.user, campaign_id=i) for i in dict.fromkeys(ids)]
        options, sources = compare_source_options(request.query_params)
        result = compare_get(campaigns=campaigns, options=options, compare=compare, sources=sources)
        if result.get("status") == "building":  # over the request work budget (common/budget.py)
            return _building(result)
        fmt = request.query_params.get("format", "json")
        if fmt == "csv":
            response = HttpResponse(compare_csv_zip(result), content_type="application/zip")
            response["Content-Disposition"] = 'attachment; filename="comparison.zip"'
            return response
        if fmt == "html":
            return HttpResponse(compare_html(result, query=_options_query(request)),
                                content_type="text/html; charset=utf-8")
        return Response(result)


class ZipRenderer(_Passthrough):
    media_type = "application/zip"
    format = "zip"


class CampaignDatasetApi(APIView):
    """The campaign's replication package: a zip of answer-level Parquet tables (anonymised annotators),
    the spec, the report, a manifest and a dataset card (metrics/package/). Owner
    only. Built by a worker with progress (202 `{"status": "building", "progress", "build"}` until it
    is ready; in the request when its estimate fits REQUEST_WORK_BUDGET_S), then streamed from storage."""

    permission_classes = [IsResearcher]
    renderer_classes = [ZipRenderer, renderers.JSONRenderer]

    @extend_schema(responses={(200, "application/zip"): bytes, (202, "application/json"): PackageBuildingOutput})
    def get(self, request: Request, campaign_id: int) -> Any:
        campaign = campaign_get(user=request.user, campaign_id=campaign_id)
        state, build = package_get(campaign=campaign)
        if state != "ready":
            return JsonResponse(package_progress(build), status=status.HTTP_202_ACCEPTED)
        return FileResponse(default_storage.open(build.file, "rb"), as_attachment=True,
                            filename=f"campaign-{campaign.pk}-dataset.zip", content_type="application/zip")


ReportSchemaOutput = inline_serializer("ReportSchemaOutput", fields={
    key: serializers.JSONField(help_text="JSON Schema keyword (Draft 2020-12).") for key in REPORT_SCHEMA})


class ReportSchemaApi(APIView):
    """The report's JSON Schema (Draft 2020-12): its top-level keys and each section's keys
    (metrics/sections/schema.py). Whoever may read the OpenAPI schema may read it."""

    permission_classes = SpectacularAPIView.permission_classes
    authentication_classes = SpectacularAPIView.authentication_classes

    @extend_schema(responses={200: ReportSchemaOutput})
    def get(self, request: Request) -> Response:
        return Response(REPORT_SCHEMA)
