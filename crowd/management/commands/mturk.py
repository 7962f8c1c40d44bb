"""`python manage.py mturk <subcommand>`: publish HITs and qualification types, sync reviews, import
batch-results CSVs. MTurk credentials are boto3's AWS_* variables; the sandbox is the default
(MTURK_SANDBOX, or --sandbox / --production per call)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from campaigns.cli import campaign_resolve
from common.errors import ApplicationError
from common.inputs import BodyError, json_loads


def _campaign(pk: int) -> Any:
    return campaign_resolve(pk)


def _absolute(url: str) -> str:
    return url if url.startswith(("http://", "https://")) else settings.SITE_URL.rstrip("/") + "/" + url.lstrip("/")


class Command(BaseCommand):
    help = "Amazon Mechanical Turk: publish, qualify, sync, import-batch."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="subcommand", required=True, metavar="SUBCOMMAND")

        def endpoint(p: Any) -> None:
            group = p.add_mutually_exclusive_group()
            group.add_argument("--sandbox", dest="sandbox", action="store_true", default=None,
                               help="use the MTurk sandbox (default: MTURK_SANDBOX, true unless set)")
            group.add_argument("--production", dest="sandbox", action="store_false", help="use the real marketplace")

        p = sub.add_parser("publish", help="publish ExternalQuestion HITs for an open campaign")
        p.add_argument("id", type=int)
        p.add_argument("--hits", type=int, default=None,
                       help="how many HITs (default: questions / hit_size, minus those already published)")
        p.add_argument("--redundancy", type=int, default=None,
                       help="MaxAssignments per HIT (default: the campaign's annotation.redundancy)")
        endpoint(p)
        p = sub.add_parser("qualify", help="publish the campaign's qualification tests as MTurk qualification types")
        p.add_argument("id", type=int)
        endpoint(p)
        p = sub.add_parser("sync", help="apply the product's reviews on MTurk: approve, reject, bonus, block")
        p.add_argument("id", type=int)
        endpoint(p)
        p = sub.add_parser("import-batch", help="import a batch-results CSV into one or more campaigns")
        p.add_argument("args", nargs="+", metavar="ID_OR_FILE", help="campaign ids, then the CSV file")
        p.add_argument("--mapping", default=None, help="JSON object, or a path to a JSON file (default: the GEP "
                                                       "paper's layout for GEP campaigns, one PST image otherwise)")
        p.add_argument("--dry-run", action="store_true", help="validate only")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            getattr(self, "_" + options["subcommand"].replace("-", "_"))(options, list(args))
        except ApplicationError as exc:
            lines = [exc.message] + [f"  {where}: {msg}" for where, msgs in exc.errors.items() for msg in msgs]
            raise CommandError("\n".join(lines)) from exc

    def _client(self, options: dict[str, Any]) -> Any:
        from crowd import services

        return services.mturk_client_factory(sandbox=options.get("sandbox"))

    def _publish(self, options: dict[str, Any], _args: list[str]) -> None:
        from annotation.models import Question
        from annotation.redundancy import max_required
        from annotation.spec_section import annotation_settings
        from crowd import mturk
        from crowd.models import MTurkHit

        campaign = _campaign(options["id"])
        cfg = annotation_settings(campaign)
        count = options["hits"]
        if count is None:
            needed = mturk.hits_needed(questions=Question.objects.filter(campaign=campaign, is_gold=False).count(),
                                       hit_size=cfg["hit_size"])
            count = max(0, needed - MTurkHit.objects.filter(campaign=campaign).count())
        if count < 0:
            raise CommandError("--hits must be 0 or more.")
        # Adaptive redundancy: MaxAssignments is its max (a question may need that many answers).
        redundancy = options["redundancy"] or max_required(cfg["redundancy"])
        hits = mturk.mturk_hits_publish(campaign=campaign, count=count, redundancy=redundancy,
                                        client=self._client(options))
        self.stdout.write(json.dumps({"campaign": campaign.pk, "published": len(hits), "max_assignments": redundancy,
                                      "hit_ids": [h.hit_id for h in hits], "task_url": mturk.task_url(campaign)}))

    def _qualify(self, options: dict[str, Any], _args: list[str]) -> None:
        from annotation.models import Qualification
        from crowd import mturk
        from generation.selectors import image_url

        campaign = _campaign(options["id"])
        client = self._client(options)

        def url_of(image: Any) -> str:
            return _absolute(image_url(web_file=image.web_file, file=image.file, source_url=image.source_url))

        out = []
        for q in Qualification.objects.filter(campaign=campaign).order_by("pk"):
            qt = mturk.mturk_qualification_type_create(qualification=q, image_url_of=url_of, client=client)
            out.append({"qualification": q.pk, "family": q.family, "qualification_type_id": qt.qualification_type_id})
        self.stdout.write(json.dumps({"campaign": campaign.pk, "qualification_types": out}))

    def _sync(self, options: dict[str, Any], _args: list[str]) -> None:
        from crowd import mturk

        campaign = _campaign(options["id"])
        result = mturk.mturk_sync(campaign=campaign, client=self._client(options))
        self.stdout.write(json.dumps({"campaign": campaign.pk, **result.as_dict()}))

    def _import_batch(self, options: dict[str, Any], args: list[str]) -> None:
        from crowd.mturk_batch import mturk_batch_import

        values = args or options.get("args") or []
        if len(values) < 2:
            raise CommandError("Usage: mturk import-batch ID [ID ...] FILE.csv")
        *ids, path = values
        if not all(i.isdigit() for i in ids):
            raise CommandError(f"Campaign ids must be numbers: {' '.join(ids)}")
        file = Path(path)
        if not file.is_file():
            raise CommandError(f"{path}: no such file.")
        mapping = options.get("mapping")
        if mapping:
            text = mapping if mapping.lstrip().startswith("{") else Path(mapping).read_text()
            try:  # common.inputs: the bounded JSON parser (depth, size, clean text)
                mapping = json_loads(text, max_bytes=64 * 1024, field="mapping")
            except BodyError as exc:
                raise CommandError(f"--mapping: {exc.message}") from exc
        campaigns = [_campaign(int(i)) for i in ids]
        with file.open("rb") as handle:  # read as it is parsed, never whole
            result = mturk_batch_import(campaigns=campaigns, data=handle, mapping=mapping or None,
                                        dry_run=options["dry_run"])
        self.stdout.write(json.dumps({"campaigns": [c.pk for c in campaigns], "dry_run": options["dry_run"],
                                      **result.as_dict()}))
