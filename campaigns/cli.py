"""`manage.py campaign create|show|list`: the campaign design's subcommands."""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError

from .registry import register_cli
from .selectors import campaign_progress
from .services import campaign_create
from .spec import spec_load_text


def owner_resolve(username: str | None) -> Any:
    """The user a command acts for (`--owner USERNAME`, else the first superuser); CommandError naming
    what to do when there is none. Public: every app's `manage.py campaign` subcommand that creates a
    campaign uses it."""
    User = get_user_model()
    if username:
        user = User.objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user named {username!r}; create one with `manage.py researcher create`.")
        return user
    user = User.objects.filter(is_superuser=True).order_by("pk").first()
    if user is None:
        raise CommandError("No owner: pass --owner USERNAME (a researcher) or create a superuser first.")
    return user


def campaign_resolve(campaign_id: int) -> Any:
    """The (not deleted) campaign a command acts on; CommandError naming the id otherwise. Public:
    every app's campaign subcommands look campaigns up with it."""
    from .models import Campaign

    campaign = Campaign.objects.filter(pk=campaign_id, deleted_at__isnull=True).first()
    if campaign is None:
        raise CommandError(f"Campaign {campaign_id} not found.")
    return campaign


def _create_add(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("spec", help="spec file (JSON or YAML); '-' reads standard input")
    parser.add_argument("--owner", help="username of the researcher who owns the campaign (default: first superuser)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")


def _create(options: dict[str, Any], out: Any) -> None:
    import sys

    path = options["spec"]
    if path == "-":
        text, name = sys.stdin.read(), "stdin"
    else:
        file = Path(path)
        if not file.is_file():
            raise CommandError(f"Spec file {path!r} not found.")
        text, name = file.read_text(encoding="utf-8-sig"), file.name
    campaign = campaign_create(owner=owner_resolve(options.get("owner")), spec=spec_load_text(text, filename=name))
    result = {"id": campaign.pk, "name": campaign.name, "kind": campaign.kind,
              "prompt_count": campaign.prompt_count, "images_planned": campaign.images_planned}
    if options.get("json"):
        out.write(json.dumps(result))
        return
    by_setting: dict[str, list[int]] = {}
    for setting, samples in campaign.prompts.values_list("setting", "samples"):
        entry = by_setting.setdefault(setting, [0, 0])
        entry[0] += 1
        entry[1] += samples
    out.write(f"Created campaign {campaign.pk} ({campaign.name}, {campaign.kind}): "
              f"{campaign.prompt_count} prompts, {campaign.images_planned} images planned")
    for setting, (prompts, images) in by_setting.items():
        out.write(f"  {setting}: {prompts} prompts, {images} images")


def _show_add(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("id", type=int)


def _show(options: dict[str, Any], out: Any) -> None:
    from .models import Campaign

    campaign = Campaign.objects.filter(pk=options["id"]).first()
    if campaign is None:
        raise CommandError(f"Campaign {options['id']} not found.")
    out.write(json.dumps({"id": campaign.pk, "name": campaign.name, "kind": campaign.kind, "status": campaign.status,
                          "progress": campaign_progress(campaign=campaign)}, indent=2))


def _list_add(parser: argparse.ArgumentParser) -> None:
    pass


def _list(options: dict[str, Any], out: Any) -> None:
    from .models import Campaign

    for c in Campaign.objects.filter(deleted_at__isnull=True).select_related("owner").order_by("pk"):
        out.write(f"{c.pk:>5}  {c.kind}  {c.status:<10}  {c.prompt_count:>6} prompts  {c.images_planned:>6} images  "
                  f"{c.owner.get_username():<12}  {c.name}")


def register() -> None:
    register_cli("create", "create a campaign from a spec file", _create_add, _create)
    register_cli("show", "show a campaign's status and progress", _show_add, _show)
    register_cli("list", "list campaigns", _list_add, _list)
