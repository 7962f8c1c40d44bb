"""`manage.py campaign annotate-status ID` (and `annotate-open ID`): annotation from the command line."""
from __future__ import annotations

import argparse
import json
from typing import Any

from django.core.management.base import CommandError


def _id_add(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("id", type=int)


def _campaign(options: dict[str, Any]) -> Any:
    from campaigns.models import Campaign

    campaign = Campaign.objects.filter(pk=options["id"], deleted_at__isnull=True).first()
    if campaign is None:
        raise CommandError(f"Campaign {options['id']} not found.")
    return campaign


def _status(options: dict[str, Any], out: Any) -> None:
    from .aggregation import label_summary
    from .selectors import annotation_progress

    campaign = _campaign(options)
    out.write(json.dumps({"id": campaign.pk, "status": campaign.status, **annotation_progress(campaign),
                          **label_summary(campaign_id=campaign.pk)}, indent=2, default=str))


def _open(options: dict[str, Any], out: Any) -> None:
    from .services import questions_open

    campaign = _campaign(options)
    out.write(json.dumps({"id": campaign.pk, **questions_open(campaign=campaign)}))


def register() -> None:
    from campaigns.registry import register_cli

    register_cli("annotate-status", "annotation progress of a campaign (questions, answers, annotators, ties)",
                 _id_add, _status)
    register_cli("annotate-open", "create the questions of generated images and open the campaign", _id_add, _open)
