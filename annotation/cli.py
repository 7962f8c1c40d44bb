"""`manage.py campaign annotate-status ID` (and `annotate-open ID`): annotation from the command line."""
from __future__ import annotations

import argparse
import json
from typing import Any

from django.core.management.base import CommandError

from campaigns.cli import campaign_resolve


def _id_add(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("id", type=int)


def _campaign(options: dict[str, Any]) -> Any:
    return campaign_resolve(options["id"])


def _status(options: dict[str, Any], out: Any) -> None:
    from .labels import label_summary
    from .selectors import annotation_progress

    campaign = _campaign(options)
    out.write(json.dumps({"id": campaign.pk, "status": campaign.status, **annotation_progress(campaign),
                          **label_summary(campaign_id=campaign.pk)}, indent=2, default=str))


def _open(options: dict[str, Any], out: Any) -> None:
    from .services.lifecycle import questions_open

    campaign = _campaign(options)
    out.write(json.dumps({"id": campaign.pk, **questions_open(campaign=campaign)}))


def _export_add(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("id", type=int)
    parser.add_argument("--out", required=True, help="the archive file to write (zip)")


def _export(options: dict[str, Any], out: Any) -> None:
    from pathlib import Path

    from .archive import campaign_export

    campaign = _campaign(options)
    Path(options["out"]).write_bytes(campaign_export(campaign=campaign))
    out.write(f"Exported campaign {campaign.pk} to {options['out']}")


def _import_add(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("archive", help="a campaign archive (zip) from `campaign export`")
    parser.add_argument("--owner", help="username of the researcher who will own it (default: first superuser)")


def _import(options: dict[str, Any], out: Any) -> None:
    from pathlib import Path

    from campaigns.cli import owner_resolve
    from common.errors import ApplicationError

    from .archive import campaign_import

    path = Path(options["archive"])
    if not path.is_file():
        raise CommandError(f"Archive {options['archive']!r} not found.")
    try:
        campaign = campaign_import(owner=owner_resolve(options.get("owner")), data=path.read_bytes())
    except ApplicationError as exc:
        raise CommandError(str(exc)) from exc
    out.write(json.dumps({"id": campaign.pk, "name": campaign.name, "kind": campaign.kind, "status": campaign.status}))


def register() -> None:
    from campaigns.registry import register_cli

    register_cli("annotate-status", "annotation progress of a campaign (questions, answers, annotators, ties)",
                 _id_add, _status)
    register_cli("annotate-open", "create the questions of generated images and open the campaign", _id_add, _open)
    register_cli("export", "write a campaign's full archive (answers, images, questions, qualifications) to a zip",
                 _export_add, _export)
    register_cli("import", "create a new campaign from an archive written by `campaign export`", _import_add, _import)
