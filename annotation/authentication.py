"""API token authentication that also loads the caller's annotator profile.

DRF's TokenAuthentication fetches the token with its user (one query); every annotator endpoint
then looked the annotator up again (`selectors.annotator_of`, a second query per request). Here the
token, the user and the annotator id (reverse one-to-one, NULL for researchers) come in one indexed
query, and `annotator_of` reads the cached profile. On PostgreSQL that query is a prepared statement
built once from the models' metadata (the ORM spent ~1 ms of CPU per request compiling it; profile
in bench/README.md); the instances are built with `Model.from_db` and the fields' converters. Measured by bench/annotation_load.py.

An annotator's permanent token expires `API_TOKEN_TTL_S` after it was made (default 30 days; 0 never):
both halves refuse it with the same 401 "Token expired", read from the same `created` column (no
extra query). Logout and a password change delete it (annotation/tokens.py); `POST
/api/auth/token/rotate/` replaces it. Researchers' tokens (made by `manage.py researcher create`)
do not expire.

A key starting with `s1.` is a scoped token (annotation/scoped_tokens.py: signed, short-lived, one
campaign's annotation endpoints only), the token crowd work pages carry instead of the permanent key.
"""
from __future__ import annotations

from functools import cache
from typing import Any

from django.contrib.auth import get_user_model
from django.db import DEFAULT_DB_ALIAS, connection
from django.utils.translation import gettext_lazy as _
from rest_framework import authentication, exceptions
from rest_framework.authtoken.models import Token

from common import fastpath
from common.tokens import token_expired

from . import prepared
from .models import Annotator
from .scoped_tokens import ScopedToken, is_scoped, scoped_token_allows, scoped_token_read


def _select(alias: str, model: Any) -> list[str]:
    """A model's concrete columns, qualified by `alias`, in `_instance`'s order."""
    return [f'{alias}."{f.column}"' for f in model._meta.concrete_fields]


def _annotator_join(user_model: Any) -> str:
    """The user's annotator profile, joined (NULL columns for a researcher)."""
    return f'LEFT JOIN "{Annotator._meta.db_table}" a ON a."user_id" = u."{user_model._meta.pk.column}"'


@cache
def _token_query() -> str:
    user_model = get_user_model()
    columns = ", ".join([*_select("u", user_model), 't."created"', *_select("a", Annotator)])
    return (f'SELECT {columns} FROM "{Token._meta.db_table}" t '
            f'JOIN "{user_model._meta.db_table}" u ON u."{user_model._meta.pk.column}" = t."user_id" '
            f'{_annotator_join(user_model)} WHERE t."key" = %(key)s')


@cache
def _user_query() -> str:
    """The scoped token's user and annotator by the user id it signs (`_token_query` without the token)."""
    user_model = get_user_model()
    columns = ", ".join([*_select("u", user_model), *_select("a", Annotator)])
    return (f'SELECT {columns} FROM "{user_model._meta.db_table}" u {_annotator_join(user_model)} '
            f'WHERE u."{user_model._meta.pk.column}" = %(user)s')


@cache
def _annotator_query() -> str:
    return f'SELECT {", ".join(_select("a", Annotator))} FROM "{Annotator._meta.db_table}" a WHERE a."user_id" = %(user)s'


def _annotator_of_row(user: Any, values: Any) -> Annotator | None:
    """The annotator profile from its columns of a row (None when they are NULL: no profile)."""
    if values[0] is None:
        return None
    annotator = _instance(Annotator, values)
    annotator.user = user
    return annotator


def annotator_by_user(user: Any) -> Annotator | None:
    """The annotator profile of a user authenticated another way (the work page's session), by one
    prepared statement on the token fast path (the ORM compiled it on every request); None for none."""
    if not fastpath.enabled("token_auth"):
        return Annotator.objects.filter(user_id=user.pk).first()
    rows = prepared.run(_annotator_query(), {"user": user.pk})
    return _annotator_of_row(user, rows[0]) if rows else None


@cache
def _columns(model: Any) -> tuple[list[str], tuple[Any, ...]]:
    """A model's concrete fields' attribute names and database converters (None: the value as read),
    worked out once per model instead of on every request."""
    fields = model._meta.concrete_fields
    return [f.attname for f in fields], tuple(getattr(f, "from_db_value", None) for f in fields)


def _instance(model: Any, values: Any) -> Any:
    """A model instance from raw column values, with each field's database converter applied (what
    the ORM's compiler does: JSON text -> objects, and so on)."""
    attnames, converters = _columns(model)
    converted = [convert(v, None, connection) if convert is not None and v is not None else v
                 for convert, v in zip(converters, values, strict=True)]
    return model.from_db(DEFAULT_DB_ALIAS, attnames, converted)


def _refuse_expired(created: Any) -> None:
    """An annotator's token past its lifetime (common/tokens.py): 401 (both halves, the same check)."""
    if token_expired(created):
        raise exceptions.AuthenticationFailed(_("Token expired: log in again (POST /api/auth/token/)."))


class TokenAuthentication(authentication.TokenAuthentication):
    def authenticate(self, request: Any) -> tuple[Any, Any] | None:
        result = super().authenticate(request)
        if result is not None and isinstance(result[1], ScopedToken):
            scoped_token_allows(result[1], request)
        return result

    def authenticate_credentials(self, key: str) -> tuple[Any, Any]:
        if is_scoped(key):
            return self._authenticate_scoped(key)
        if not fastpath.enabled("token_auth"):
            return self._authenticate_orm(key)
        rows = prepared.run(_token_query(), {"key": key})
        if not rows:
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        row = rows[0]
        n = len(get_user_model()._meta.concrete_fields)
        user = _instance(get_user_model(), row[:n])
        if not user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        token = Token.from_db(DEFAULT_DB_ALIAS, ["key", "user_id", "created"], (key, user.pk, row[n]))
        token.user = user
        annotator = _annotator_of_row(user, row[n + 1:])
        if annotator is not None:
            _refuse_expired(row[n])
            setattr(user, "_annotator_cache", annotator)  # noqa: B010  (read by request.user's annotator)
        return user, token

    def _authenticate_orm(self, key: str) -> tuple[Any, Any]:
        model = self.get_model()
        try:
            token = model.objects.select_related("user", "user__annotator").get(key=key)
        except model.DoesNotExist as exc:
            raise exceptions.AuthenticationFailed(_("Invalid token.")) from exc
        user = token.user
        if not user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        annotator = getattr(user, "annotator", None)  # RelatedObjectDoesNotExist is an AttributeError
        if annotator is not None:
            _refuse_expired(token.created)
            user._annotator_cache = annotator
        return user, token

    def _authenticate_scoped(self, key: str) -> tuple[Any, Any]:
        token = scoped_token_read(key)
        if fastpath.enabled("token_auth"):  # every request of a crowd work page: one prepared statement
            rows = prepared.run(_user_query(), {"user": token.user_id})
            n = len(get_user_model()._meta.concrete_fields)
            user = _instance(get_user_model(), rows[0][:n]) if rows else None
            annotator = _annotator_of_row(user, rows[0][n:]) if rows else None
        else:
            user = get_user_model().objects.select_related("annotator").filter(pk=token.user_id).first()
            annotator = getattr(user, "annotator", None)
        if user is None or not user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        if annotator is None:
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        setattr(user, "_annotator_cache", annotator)  # noqa: B010  (read by request.user's annotator)
        return user, token
