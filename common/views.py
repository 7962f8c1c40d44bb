"""Error pages without stack traces (used when DEBUG is off): JSON under /api/, plain text elsewhere;
and the receiver of Content-Security-Policy violation reports."""
from __future__ import annotations

import json
import logging
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST
from rest_framework.authtoken.models import Token
from rest_framework.authtoken.views import ObtainAuthToken

from . import parsers
from .middleware import error_response
from .outbound import clip
from .throttle import login_succeeded
from .tokens import is_annotator, token_expired, token_expires_at


def server_error(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
    return error_response(request, "Server error: the problem was logged. Please try again later.", 500)


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return error_response(request, "Bad request.", 400)


CSP_REPORT_MAX_BYTES = 16 * 1024
csp_logger = logging.getLogger("csp")


@csrf_exempt
@require_POST
def csp_report(request: HttpRequest) -> HttpResponse:
    """Content-Security-Policy violation reports (CSP_REPORT_URI): logged on the `csp` logger, each
    field clipped; the body is small or refused (413). Anyone may post: a report is not trusted."""
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    if length > CSP_REPORT_MAX_BYTES:
        return HttpResponse(status=413)
    raw = request.read(CSP_REPORT_MAX_BYTES + 1)
    if len(raw) > CSP_REPORT_MAX_BYTES:
        return HttpResponse(status=413)
    try:
        payload = json.loads(raw.decode("utf-8", errors="replace") or "{}")
    except ValueError:
        return HttpResponse(status=400)
    reports = payload if isinstance(payload, list) else [payload]
    for item in reports[:10]:
        report = item.get("csp-report") or item.get("body") or item if isinstance(item, dict) else {}
        if not isinstance(report, dict):
            continue
        fields = {k: clip(report.get(k) or report.get(k.replace("-", "_")) or "", 200) for k in
                  ("document-uri", "violated-directive", "effective-directive", "blocked-uri", "source-file",
                   "line-number")}
        csp_logger.warning("CSP violation: %s", " ".join(f"{k}={v}" for k, v in fields.items() if v))
    return HttpResponse(status=204)


class TokenObtainApi(ObtainAuthToken):
    """DRF's token endpoint (username + password -> token), with the site's parsers: DRF's own view
    names DRF's stock parsers, which would skip the input rules (common.inputs)."""

    parser_classes = [parsers.JSONParser, parsers.FormParser, parsers.MultiPartParser]

    def post(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        # common.throttle: failures are counted by the user_login_failed signal; a success clears
        # the username's back-off (session logins do it through user_logged_in).
        response = super().post(request, *args, **kwargs)
        if response.status_code == 200:
            username = request.data.get("username") if hasattr(request.data, "get") else None
            if isinstance(username, str):
                login_succeeded(username=username)
            token = Token.objects.select_related("user").get(key=response.data["token"])
            if is_annotator(token.user):  # an annotator's token expires (common/tokens.py): a fresh one
                if token_expired(token.created):
                    token.delete()
                    token = Token.objects.create(user=token.user)
                response.data = {"token": token.key, "expires_at": token_expires_at(token.created)}
        return response
