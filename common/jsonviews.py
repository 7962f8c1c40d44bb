"""JSON-only API views for the hot paths (the HIT cycle: issue 23).

The API's defaults (settings `REST_FRAMEWORK`) give every view JSON + form + multipart parsers and
JSON + browsable-API renderers, with DRF's content negotiation parsing the `Accept` header on every
request. :class:`JSONOnlyView` fixes both to JSON: the parser is `common.parsers.JSONParser` (the same
input rules; another media type is a 415), the renderer DRF's `JSONRenderer` (the same bytes as before
for a JSON client), and :class:`JSONOnlyNegotiation` picks it without parsing an `Accept` header that
is absent, `*/*` or `application/json` (the clients' headers); any other header and a `?format=` go
through DRF's negotiation as before (`text/html` alone: 406, no browsable API). The OpenAPI schema
documents these views as JSON in and out (drf-spectacular reads the same classes).
"""
from __future__ import annotations

from typing import Any

from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.views import APIView

from .parsers import JSONParser

_PLAIN_ACCEPT = frozenset(("", "*/*", "application/json"))


class JSONOnlyNegotiation(DefaultContentNegotiation):
    def select_renderer(self, request: Any, renderers: list[BaseRenderer],
                        format_suffix: str | None = None) -> tuple[BaseRenderer, str]:
        meta = request.META
        if not format_suffix and not meta.get("QUERY_STRING") and meta.get("HTTP_ACCEPT", "") in _PLAIN_ACCEPT:
            return renderers[0], renderers[0].media_type
        return super().select_renderer(request, renderers, format_suffix)


class JSONOnlyView(APIView):
    """An APIView whose requests and responses are JSON only (see the module)."""

    parser_classes = [JSONParser]
    renderer_classes = [JSONRenderer]
    content_negotiation_class = JSONOnlyNegotiation
