"""Lifetimes of permanent API tokens (DRF's `authtoken`): an annotator's token expires
`API_TOKEN_TTL_S` seconds after it was made (default 30 days; 0: never). Checked by
`annotation.authentication` (both halves, from the token's `created` column); the token endpoint
hands out a fresh one in place of an expired one; logout and a password change delete it
(annotation/tokens.py)."""
from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone


def token_ttl_s() -> int:
    return int(getattr(settings, "API_TOKEN_TTL_S", 30 * 86400))


def token_expires_at(created: datetime) -> datetime | None:
    """When a token made at `created` expires (None: never)."""
    ttl = token_ttl_s()
    return None if ttl <= 0 else created + timedelta(seconds=ttl)


def token_expired(created: datetime) -> bool:
    expires = token_expires_at(created)
    return expires is not None and expires <= timezone.now()


def is_annotator(user: Any) -> bool:
    """Whether the user has an annotator profile (their tokens expire); one query unless cached."""
    if getattr(user, "_annotator_cache", None) is not None:
        return True
    from django.apps import apps  # noqa: PLC0415 - common imports no app at import time

    return apps.get_model("annotation", "Annotator").objects.filter(user_id=user.pk).exists()
