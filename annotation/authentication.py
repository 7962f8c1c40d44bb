"""API token authentication that also loads the caller's annotator profile.

DRF's TokenAuthentication fetches the token with its user (one query); every annotator endpoint
then looked the annotator up again (`selectors.annotator_of`, a second query per request). Here the
token, the user and the annotator (reverse one-to-one, NULL for researchers) come in one indexed
query, and `annotator_of` reads the cached profile. Measured by bench/annotation_load.py.
"""
from __future__ import annotations

from typing import Any

from django.utils.translation import gettext_lazy as _
from rest_framework import authentication, exceptions


class TokenAuthentication(authentication.TokenAuthentication):
    def authenticate_credentials(self, key: str) -> tuple[Any, Any]:
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
            user._annotator_cache = annotator
        return user, token
