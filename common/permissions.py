"""Roles. A researcher is a staff user or a member of the `researchers` group; annotators are neither."""
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from rest_framework.permissions import BasePermission

RESEARCHER_GROUP = "researchers"


def user_is_researcher(user: AbstractBaseUser | AnonymousUser) -> bool:
    if not user or not user.is_authenticated:
        return False
    if getattr(user, "is_staff", False) or getattr(user, "is_superuser", False):
        return True
    # Cache on the instance: permission checks run several times per request.
    cached = getattr(user, "_is_researcher", None)
    if cached is None:
        cached = user.groups.filter(name=RESEARCHER_GROUP).exists()  # type: ignore[attr-defined]
        setattr(user, "_is_researcher", cached)  # noqa: B010  (a per-request cache, not a model field)
    return bool(cached)


class IsResearcher(BasePermission):
    message = "This endpoint is for researchers."

    def has_permission(self, request: Any, view: Any) -> bool:
        return user_is_researcher(request.user)
