"""`python manage.py report ID --format json|csv|html|dataset --out PATH [--treatment ...]`."""
import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from campaigns.models import Campaign
from common.errors import ApplicationError
from metrics.options import AGGREGATIONS, GEP_TIE_POLICIES, TREATMENTS, ReportOptions
from metrics.package.dataset import dataset_write
from metrics.package.exports import report_csv_zip, report_html
from metrics.snapshots.report import report_get


class Command(BaseCommand):
    help = "Build a campaign's report (agreement, STS or GEP with bootstrap intervals) and write it."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("id", type=int)
        parser.add_argument("--format", choices=["json", "csv", "html", "dataset"], default="json",
                            help="dataset: the replication package zip (Parquet, spec, dataset card)")
        parser.add_argument("--out", help="output file (default: standard output for json/html)")
        parser.add_argument("--treatment", choices=TREATMENTS)
        parser.add_argument("--gep-tie-policy", choices=GEP_TIE_POLICIES)
        parser.add_argument("--aggregation", choices=AGGREGATIONS)
        parser.add_argument("--n-boot", type=int)
        parser.add_argument("--seed", type=int)
        parser.add_argument("--source", help="human (default), a machine labeller's name, or hybrid:<labeller>")

    def handle(self, *args: Any, **options: Any) -> None:
        campaign = Campaign.objects.filter(pk=options["id"], deleted_at__isnull=True).first()
        if campaign is None:
            raise CommandError(f"Campaign {options['id']} not found.")
        if options["format"] == "dataset":
            if not options.get("out"):
                raise CommandError("--out PATH is required for --format dataset (a zip file).")
            with open(options["out"], "wb") as handle:
                summary = dataset_write(campaign=campaign, out=handle)
            self.stderr.write(f"Wrote the dataset of campaign {campaign.pk} to {options['out']}: "
                              f"{summary['answers']} answers, {summary['annotators']} annotators")
            return
        params = {k: str(options[a]) for k, a in (("treatment", "treatment"), ("gep_tie_policy", "gep_tie_policy"),
                                                   ("aggregation", "aggregation"), ("n_boot", "n_boot"),
                                                   ("seed", "seed"), ("source", "source"))
                  if options.get(a) is not None}
        try:
            opts = ReportOptions.from_params(params)
            _, report = report_get(campaign=campaign, options=opts, allow_async=False)
        except ApplicationError as exc:
            raise CommandError(str(exc)) from exc
        fmt = options["format"]
        if fmt == "csv":
            if not options.get("out"):
                raise CommandError("--out PATH is required for --format csv (a zip file).")
            Path(options["out"]).write_bytes(report_csv_zip(campaign=campaign, report=report, options=opts))
        else:
            text = json.dumps(report, indent=2) if fmt == "json" else report_html(campaign=campaign, report=report,
                                                                                  options=opts)
            if options.get("out"):
                Path(options["out"]).write_text(text, encoding="utf-8")
            else:
                self.stdout.write(text)
        if options.get("out"):
            self.stderr.write(f"Wrote {fmt} report of campaign {campaign.pk} to {options['out']}")
