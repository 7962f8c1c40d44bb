"""Serving local media (MEDIA_STORAGE=local) to the people who may see it, in production too.

`GET /media/signed/<expires>/<signature>/<key>` answers with the file while the signature is valid
and unexpired (common.media: the URLs the API and the pages hand out are signed, like S3's, and only
to those who may see the image). `GET /media/<key>` answers when
- the caller is logged in (session, or an API token) and may see it: staff see everything; a
  researcher, the images (and uploaded example images) of campaigns they own; an annotator, the web
  renditions (`web/...webp`) of those of campaigns they are enrolled in, never the originals. Anything else under the media root (campaign archives) is staff only.
Everyone else gets a 404, as if the file did not exist; so does any key outside the media root.

It lives in annotation because it needs enrollments (generation may not import annotation). The
bytes are sent by Django (FileResponse), or by the front web server when MEDIA_SERVE_HEADER names
`X-Accel-Redirect` (nginx: an internal location at MEDIA_ACCEL_PREFIX aliased to MEDIA_ROOT) or
`X-Sendfile` (Apache, lighttpd).
"""
from __future__ import annotations

import mimetypes
import os
import re
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import SuspiciousFileOperation
from django.core.files.storage import default_storage
from django.db.models import Q
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.views.decorators.http import require_safe

from common.media import media_signature_valid
from common.zipsafe import path_is_safe
from generation.models import Image

from .models import Enrollment, ExampleImage

CONTENT_ADDRESSED = re.compile(r"^(images|web)/[0-9a-f]{2}/(?P<sha>[0-9a-f]{64})\.(png|webp)$")
IMAGE_TYPES = {".png": "image/png", ".webp": "image/webp", ".jpg": "image/jpeg", ".jpeg": "image/jpeg"}


def _user(request: HttpRequest) -> Any:
    """The session user, or the user of an API token (Authorization header), or None."""
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        return user
    if not request.META.get("HTTP_AUTHORIZATION"):
        return None
    from rest_framework.exceptions import APIException
    from rest_framework.request import Request
    from rest_framework.settings import api_settings

    drf_request = Request(request)
    for auth_class in api_settings.DEFAULT_AUTHENTICATION_CLASSES:
        if auth_class.__name__ == "SessionAuthentication":
            continue
        try:
            result = auth_class().authenticate(drf_request)
        except APIException:
            return None
        if result is not None:
            return result[0]
    return None


def media_readable_by(user: Any, key: str) -> bool:
    """Whether a logged-in user may read the stored file `key` (see the module docstring)."""
    if user is None or not user.is_authenticated or not user.is_active:
        return False
    if user.is_staff:
        return True
    match = CONTENT_ADDRESSED.match(key)
    if match is None:
        return False  # archives and anything else: staff only
    # sha256 is indexed; the key comparison pins the exact file (original or web copy).
    images = Image.objects.filter(Q(file=key) | Q(web_file=key), sha256=match["sha"],
                                  campaign__deleted_at__isnull=True)
    if images.filter(campaign__owner_id=user.pk).exists():
        return True
    # An annotator gets the web rendition only (`web/...webp`): never the original (`images/...png`),
    # even by rewriting the key of a URL they were given.
    enrolled = Enrollment.objects.filter(annotator__user_id=user.pk).values("campaign_id")
    if images.filter(web_file=key, campaign_id__in=enrolled).exists():
        return True
    # An uploaded example image (not an image of the campaign): the same rule through its campaign.
    examples = ExampleImage.objects.filter(Q(file=key) | Q(web_file=key), campaign__deleted_at__isnull=True)
    return examples.filter(Q(campaign__owner_id=user.pk) | Q(web_file=key, campaign_id__in=enrolled)).exists()


def _path(key: str) -> Path:
    if not path_is_safe(key) or key.startswith(".") or "/." in key:
        raise Http404("No such file.")
    try:
        path = Path(default_storage.path(key)).resolve()
    except (SuspiciousFileOperation, NotImplementedError, ValueError) as exc:
        raise Http404("No such file.") from exc
    root = Path(settings.MEDIA_ROOT).resolve()
    if not path.is_relative_to(root) or not path.is_file():
        raise Http404("No such file.")
    return path


@require_safe
def media_serve(request: HttpRequest, key: str) -> HttpResponseBase:
    """The bare URL: for a logged-in user who may see the file."""
    path = _path(key)
    if not media_readable_by(_user(request), key):
        raise Http404("No such file.")
    return _send(path, key)


@require_safe
def media_serve_signed(request: HttpRequest, expires: int, signature: str, key: str) -> HttpResponseBase:
    """A signed URL (common.media): valid until it expires, for whoever holds it."""
    path = _path(key)
    if not media_signature_valid(key, expires, signature):
        raise Http404("No such file.")
    return _send(path, key)


def _send(path: Path, key: str) -> HttpResponseBase:
    suffix = path.suffix.lower()
    content_type = IMAGE_TYPES.get(suffix) or mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    header = getattr(settings, "MEDIA_SERVE_HEADER", "") or ""
    response: HttpResponseBase
    if header == "X-Accel-Redirect":
        response = HttpResponse(content_type=content_type)
        prefix = getattr(settings, "MEDIA_ACCEL_PREFIX", "/protected-media/")
        response["X-Accel-Redirect"] = prefix.rstrip("/") + "/" + key
    elif header == "X-Sendfile":
        response = HttpResponse(content_type=content_type)
        response["X-Sendfile"] = os.fspath(path)
    else:
        response = FileResponse(path.open("rb"), content_type=content_type)
        response["Content-Length"] = str(path.stat().st_size)
    if suffix not in IMAGE_TYPES:
        response["Content-Disposition"] = f'attachment; filename="{path.name}"'
    response["X-Content-Type-Options"] = "nosniff"
    # Private: a shared cache must not keep what one user may see for the next one.
    response["Cache-Control"] = "private, max-age=300"
    return response
