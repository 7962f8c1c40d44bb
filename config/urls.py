import os

from django.conf import settings
from django.contrib import admin
from django.urls import include, path
from django.views.generic import TemplateView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from common.views import TokenObtainApi, csp_report
from metrics.apis import ReportSchemaApi

api_patterns = [
    path("auth/token/", TokenObtainApi.as_view(), name="api-token"),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # The report's JSON Schema (metrics/sections/schema.py), readable by whoever may read the one above.
    path("schema/report/", ReportSchemaApi.as_view(), name="api-schema-report"),
    # Swagger UI from drf-spectacular-sidecar; its start-up script is a file too (?script), not inline.
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
    # Annotation first: the HIT cycle's routes lead its list (see there); no path of campaigns or
    # generation is matched by one of its patterns (every route resolves as before).
    path("", include("annotation.urls")),
    path("", include("campaigns.urls")),
    path("", include("generation.urls")),
    path("", include("autolabel.urls")),
    path("", include("metrics.urls")),
]

urlpatterns = [
    path("api/", include(api_patterns)),  # first: most requests are API calls (no other prefix overlaps)
    path("", TemplateView.as_view(template_name="home.html"), name="home"),
    path("admin/", admin.site.urls),
    path("csp-report/", csp_report, name="csp-report"),
    path("accounts/", include("console.account_urls")),
    path("console/", include("console.urls")),
    path("", include("annotation.page_urls")),
    path("", include("crowd.urls")),
]
if settings.MEDIA_STORAGE == "local" and settings.MEDIA_URL.startswith("/"):
    # Local media, with DEBUG on or off: an authenticated view (signed URLs or a user who may see the
    # image; annotation/media_views.py), optionally handing the sending to the front server.
    from annotation.media_views import media_serve, media_serve_signed

    _media = settings.MEDIA_URL.strip("/")
    urlpatterns += [
        path(f"{_media}/signed/<int:expires>/<str:signature>/<path:key>", media_serve_signed, name="media-signed"),
        path(f"{_media}/<path:key>", media_serve, name="media"),
    ]

# Errors without stack traces when DEBUG is off: JSON under /api/, plain text elsewhere.
handler400 = "common.views.bad_request"
handler500 = "common.views.server_error"

# Benchmarks only (bench/annotation_load.py): a trivial authenticated endpoint, the ceiling of this
# stack, mounted when the benchmark's own web server sets BENCH_TRIVIAL_ENDPOINT=1. Off everywhere else.
if os.environ.get("BENCH_TRIVIAL_ENDPOINT") == "1":
    urlpatterns += [path("bench/", include("bench.urls"))]
