"""An annotator's permanent API token over its life: it expires (`API_TOKEN_TTL_S`, common/tokens.py),
is deleted at logout (any logout: the pages' and `POST /api/auth/logout/`) and at a password change
(any path: the form, the admin, `changepassword`, the researcher CLI's take-over), and is replaced
on request (`POST /api/auth/token/rotate/`). Researchers' tokens are left alone (they come from
`manage.py researcher create`)."""
from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.signals import user_logged_out
from django.db import transaction
from django.db.models.signals import pre_save
from rest_framework.authtoken.models import Token

from .models import Annotator


def _annotator_user(user: Any) -> bool:
    return user is not None and user.pk is not None and Annotator.objects.filter(user_id=user.pk).exists()


def tokens_revoke(*, user: Any) -> int:
    """Delete the user's permanent API token(s); how many."""
    return Token.objects.filter(user_id=user.pk).delete()[0]


@transaction.atomic
def token_rotate(*, user: Any) -> Token:
    """A new permanent token in place of the old one (which stops working at once)."""
    tokens_revoke(user=user)
    return Token.objects.create(user=user)


def _on_logged_out(sender: Any, request: Any, user: Any, **kwargs: Any) -> None:
    if _annotator_user(user):
        tokens_revoke(user=user)


def _on_user_save(sender: Any, instance: Any, raw: bool = False, update_fields: Any = None, **kwargs: Any) -> None:
    """A changed password hash (any path) revokes an annotator's token."""
    if raw or instance.pk is None or (update_fields is not None and "password" not in update_fields):
        return
    old = type(instance).objects.filter(pk=instance.pk).values_list("password", flat=True).first()
    if old is not None and old != instance.password and _annotator_user(instance):
        tokens_revoke(user=instance)


def connect() -> None:
    user_logged_out.connect(_on_logged_out, dispatch_uid="annotation.tokens.logged_out")
    pre_save.connect(_on_user_save, sender=get_user_model(), dispatch_uid="annotation.tokens.password")
