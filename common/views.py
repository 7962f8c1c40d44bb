"""Error pages without stack traces (used when DEBUG is off): JSON under /api/, plain text elsewhere."""
from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse

from .middleware import error_response


def server_error(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
    return error_response(request, "Server error: the problem was logged. Please try again later.", 500)


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return error_response(request, "Bad request.", 400)
