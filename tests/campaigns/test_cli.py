"""`manage.py campaign create SPEC` and `manage.py researcher create`."""
from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command

from campaigns.models import Campaign

pytestmark = pytest.mark.django_db


def test_create_prints_id_and_counts(tmp_path: Path, researcher: User, pst_spec: dict[str, Any]) -> None:
    path = tmp_path / "pst.json"
    path.write_text(json.dumps(pst_spec))
    out = StringIO()
    call_command("campaign", "create", str(path), "--owner", "xavier", stdout=out)
    campaign = Campaign.objects.get()
    text = out.getvalue()
    assert f"Created campaign {campaign.pk}" in text
    assert "840 prompts, 920 images planned" in text
    assert "paired: 800 prompts, 800 images" in text and "single: 40 prompts, 120 images" in text
    assert campaign.owner == researcher


def test_create_from_yaml(tmp_path: Path, researcher: User) -> None:
    path = tmp_path / "gep.yaml"
    path.write_text("name: g\nkind: gep\nseed: 1\ndesign:\n  settings: [neutral, explicit]\nbackend:\n  name: placeholder\n")
    out = StringIO()
    call_command("campaign", "create", str(path), "--owner", "xavier", "--json", stdout=out)
    assert json.loads(out.getvalue()) == {"id": Campaign.objects.get().pk, "name": "g", "kind": "gep",
                                          "prompt_count": 512, "images_planned": 2560}


def test_bad_spec_fails_with_the_field_and_creates_nothing(tmp_path: Path, researcher: User,
                                                           pst_spec: dict[str, Any]) -> None:
    pst_spec["design"]["samples"] = {"single": -2}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(pst_spec))
    with pytest.raises(CommandError, match=r"design\.samples\.single"):
        call_command("campaign", "create", str(path), "--owner", "xavier")
    assert Campaign.objects.count() == 0


def test_missing_file_and_unknown_owner(tmp_path: Path, researcher: User) -> None:
    with pytest.raises(CommandError, match="not found"):
        call_command("campaign", "create", str(tmp_path / "nope.json"), "--owner", "xavier")
    path = tmp_path / "s.json"
    path.write_text("{}")
    with pytest.raises(CommandError, match="No user named"):
        call_command("campaign", "create", str(path), "--owner", "nobody")


def test_researcher_command_creates_a_token(db: None) -> None:
    out = StringIO()
    call_command("researcher", "create", "rita", "--password", "rita-pass-123", stdout=out)
    user = User.objects.get(username="rita")
    assert user.auth_token.key in out.getvalue()
    assert user.groups.filter(name="researchers").exists()


def test_errors_read_once_and_yaml_errors_on_readable_lines(tmp_path: Path, researcher: User) -> None:
    """Each problem of a bad spec is printed once (the message names the first, the lines the rest),
    and a YAML syntax error says where, without the repr's literal backslash-n."""
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"name": "x", "kind": "pst", "backend": {"name": "nope"},
                               "design": {"settings": ["zz"]}}))
    with pytest.raises(CommandError) as info:
        call_command("campaign", "create", str(bad), "--owner", researcher.username)
    text = str(info.value)
    assert text.count("unknown setting 'zz'") == 1 and text.count("unknown backend 'nope'") == 1
    assert "\n  backend.name: unknown backend" in text
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: [unclosed\n")
    with pytest.raises(CommandError) as info:
        call_command("campaign", "create", str(broken), "--owner", researcher.username)
    text = str(info.value)
    assert "\\n" not in text and "line 2, column 1" in text and "did not find expected" in text
    assert not Campaign.objects.exists()
