"""Shared fixtures: users in each role and API clients authenticated by token."""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from common.permissions import RESEARCHER_GROUP

PST_MINIMAL: dict[str, Any] = {
    "name": "sd15-pst", "kind": "pst", "seed": 1,
    "design": {"aspect": "occupation", "settings": ["single", "paired"]},
    "backend": {"name": "diffusers", "model": "runwayml/stable-diffusion-v1-5"},
}
GEP_MINIMAL: dict[str, Any] = {
    "name": "sd15-gep", "kind": "gep", "seed": 1,
    "design": {"settings": ["neutral", "explicit"]},
    "backend": {"name": "placeholder"},
}


@pytest.fixture
def media(settings: Any, tmp_path: Path) -> Path:
    """Local media storage in a fresh folder (images written by a test land there)."""
    root = tmp_path / "media"
    root.mkdir()
    settings.MEDIA_ROOT = str(root)
    settings.STORAGES = {**settings.STORAGES,
                         "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"}}
    return root


@pytest.fixture
def pst_spec() -> dict[str, Any]:
    return copy.deepcopy(PST_MINIMAL)


@pytest.fixture
def gep_spec() -> dict[str, Any]:
    return copy.deepcopy(GEP_MINIMAL)


def make_researcher(username: str, *, staff: bool = False) -> User:
    user = User.objects.create_user(username=username, password=f"{username}-pass-123", is_staff=staff)
    group, _ = Group.objects.get_or_create(name=RESEARCHER_GROUP)
    user.groups.add(group)
    return user


def token_client(user: User | None) -> APIClient:
    client = APIClient()
    if user is not None:
        token, _ = Token.objects.get_or_create(user=user)
        client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


@pytest.fixture
def researcher(db: None) -> User:
    return make_researcher("xavier")


@pytest.fixture
def other_researcher(db: None) -> User:
    return make_researcher("yvonne")


@pytest.fixture
def staff_user(db: None) -> User:
    return make_researcher("stella", staff=True)


@pytest.fixture
def plain_user(db: None) -> User:
    """A logged-in user who is not a researcher (e.g. an annotator)."""
    return User.objects.create_user(username="anna", password="anna-pass-123")


@pytest.fixture
def api(researcher: User) -> APIClient:
    return token_client(researcher)
