"""Error pages without stack traces (used when DEBUG is off): JSON under /api/, plain text elsewhere;
and the receiver of Content-Security-Policy violation reports."""
from __future__ import annotations

import hashlib
import json
import logging
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST
from rest_framework.authtoken.models import Token
from rest_framework.authtoken.views import ObtainAuthToken

from . import parsers
from .clientaddr import client_address
from .counters import fixed_window, window_incr
from .inputs import BodyError, json_loads
from .middleware import error_response
from .outbound import clip
from .throttle import login_succeeded
from .tokens import is_annotator, token_expired, token_expires_at


def server_error(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
    return error_response(request, "Server error: the problem was logged. Please try again later.", 500)


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return error_response(request, "Bad request.", 400)


CSP_REPORT_MAX_BYTES = 16 * 1024
CSP_REPORT_FIELDS = ("document-uri", "violated-directive", "effective-directive", "blocked-uri", "source-file",
                     "line-number")
csp_logger = logging.getLogger("csp")


def _csp_rate_exceeded(request: HttpRequest) -> bool:
    """A fixed one-minute window per client address (CSP_REPORT_RATE, default 30) and for everyone
    together (CSP_REPORT_RATE_TOTAL, default 600), counted atomically in the cache (`common.counters.window_incr`)."""
    window = 60
    start, _ = fixed_window(window)
    address = hashlib.sha256(client_address(request).encode()).hexdigest()[:32]
    for key, limit in ((f"csp:rate:addr:{address}:{start}", getattr(settings, "CSP_REPORT_RATE", 30)),
                       (f"csp:rate:all:{start}", getattr(settings, "CSP_REPORT_RATE_TOTAL", 600))):
        count = window_incr(cache, key, window + 5)
        if count > int(limit):
            return True
    return False


def _text(value: Any) -> str:
    return clip(value if isinstance(value, (str, int, float)) and not isinstance(value, bool) else "", 200)


@csrf_exempt
@require_POST
def csp_report(request: HttpRequest) -> HttpResponse:
    """Content-Security-Policy violation reports (CSP_REPORT_URI), from anyone (a report is not
    trusted): the body is small (413) and goes through the bounded JSON parser (common.inputs);
    reports are rate-limited per address and in total (429); each is logged on the `csp` logger as
    one line of escaped JSON (json.dumps with ensure_ascii: a newline or a control character in a
    field is written `\\n`, never a new log line), its fields clipped, and also passed as
    `extra={"csp": {...}}` for structured handlers."""
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    if length > CSP_REPORT_MAX_BYTES:
        return HttpResponse(status=413)
    if _csp_rate_exceeded(request):
        return HttpResponse(status=429, headers={"Retry-After": "60"})
    raw = request.read(CSP_REPORT_MAX_BYTES + 1)
    if len(raw) > CSP_REPORT_MAX_BYTES:
        return HttpResponse(status=413)
    try:
        payload = json_loads(raw or b"{}", max_bytes=CSP_REPORT_MAX_BYTES)
    except BodyError:
        return HttpResponse(status=400)
    reports = payload if isinstance(payload, list) else [payload]
    for item in reports[:10]:
        if not isinstance(item, dict):
            continue
        report = item.get("csp-report") or item.get("body") or item
        if not isinstance(report, dict):
            continue
        fields = {k: _text(report.get(k) or report.get(k.replace("-", "_")) or "") for k in CSP_REPORT_FIELDS}
        fields = {k: v for k, v in fields.items() if v}
        csp_logger.warning("CSP violation: %s", json.dumps(fields, ensure_ascii=True, sort_keys=True),
                           extra={"csp": fields})
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
