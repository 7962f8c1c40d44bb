"""`python manage.py report ID --format json|csv|html|dataset --out PATH [--treatment ...]`, or
`python manage.py report --package FILE.zip [--format json|csv|html] [--out PATH] [options]`: the
report recomputed from a replication package alone (no database access: metrics/package/read.py)."""
import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from campaigns.models import Campaign
from common.errors import ApplicationError
from metrics.options import AGGREGATIONS, GEP_TIE_POLICIES, TREATMENTS, ReportOptions
from metrics.package.dataset import dataset_write
from metrics.package.exports import report_csv_get, report_html
from metrics.sections.labels import label_table
from metrics.snapshots.report import report_get

OPTION_FLAGS = ("treatment", "gep_tie_policy", "aggregation", "n_boot", "n_perm", "seed", "confidence", "source")


def option_params(options: dict[str, Any]) -> dict[str, str]:
    """The report options given on the command line, as the query parameters `ReportOptions` parses."""
    return {k: str(options[k]) for k in OPTION_FLAGS if options.get(k) is not None}


def package_command(command: BaseCommand, options: dict[str, Any]) -> None:
    """`--package FILE.zip`: read the package, recompute, render; never touches the database."""
    from metrics import render
    from metrics.package.read import package_load, package_report, report_options

    fmt = options["format"]
    if fmt == "dataset":
        raise CommandError("--format dataset builds a package from a campaign; with --package use json, html or csv.")
    try:
        package = package_load(options["package"])
        params = option_params(options)
        given = {k: v for k, v in ReportOptions.from_params(params).to_dict().items() if k in params}
        opts = report_options(package, **given)  # the package's defaults (package.json), the flags over them
        report = package_report(package, opts)
    except ApplicationError as exc:
        raise CommandError(str(exc)) from exc
    if fmt == "csv":
        if not options.get("out"):
            raise CommandError("--out PATH is required for --format csv (a zip file).")
        data = package.campaign_data(exclude_blocked=opts.exclude_blocked, table=True)
        Path(options["out"]).write_bytes(render.report_csv_zip(report=report, data=data, labels=label_table(data, opts)))
    else:
        text = json.dumps(report, indent=2) if fmt == "json" else render.report_html(campaign=package.facts,
                                                                                     report=report)
        if options.get("out"):
            Path(options["out"]).write_text(text, encoding="utf-8")
        else:
            command.stdout.write(text)
    if options.get("out"):
        command.stderr.write(f"Wrote the {fmt} report of package {options['package']} to {options['out']}")


class Command(BaseCommand):
    help = "Build a campaign's report (agreement, STS or GEP with bootstrap intervals) and write it."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("id", type=int, nargs="?", help="the campaign (not with --package)")
        parser.add_argument("--package", help="a replication package zip: recompute its report without the database")
        parser.add_argument("--format", choices=["json", "csv", "html", "dataset"], default="json",
                            help="dataset: the replication package zip (Parquet, spec, dataset card)")
        parser.add_argument("--out", help="output file (default: standard output for json/html)")
        parser.add_argument("--treatment", choices=TREATMENTS)
        parser.add_argument("--gep-tie-policy", choices=GEP_TIE_POLICIES)
        parser.add_argument("--aggregation", choices=AGGREGATIONS)
        parser.add_argument("--n-boot", type=int)
        parser.add_argument("--n-perm", type=int)
        parser.add_argument("--seed", type=int)
        parser.add_argument("--confidence", type=float)
        parser.add_argument("--source", help="human (default), a machine labeller's name, or hybrid:<labeller>")

    def handle(self, *args: Any, **options: Any) -> None:
        if options.get("package"):
            if options.get("id") is not None:
                raise CommandError("Give a campaign id or --package FILE.zip, not both.")
            package_command(self, options)
            return
        if options.get("id") is None:
            raise CommandError("Give a campaign id (or --package FILE.zip).")
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
        params = option_params(options)
        fmt = options["format"]
        if fmt == "csv" and not options.get("out"):
            raise CommandError("--out PATH is required for --format csv (a zip file).")
        try:
            opts = ReportOptions.from_params(params)
            report: bytes | dict[str, Any]
            if fmt == "csv":  # one extraction: the report (when not built yet) and the tables
                state, report = report_csv_get(campaign=campaign, options=opts, allow_async=False)
            else:
                state, report = report_get(campaign=campaign, options=opts, allow_async=False)
        except ApplicationError as exc:
            raise CommandError(str(exc)) from exc
        if state != "ready":
            raise CommandError(f"The report is being built by a worker ({report!r}); run the command again later.")
        if isinstance(report, bytes):  # the csv zip
            Path(options["out"]).write_bytes(report)
        else:
            text = json.dumps(report, indent=2) if fmt == "json" else report_html(campaign=campaign, report=report,
                                                                                  options=opts)
            if options.get("out"):
                Path(options["out"]).write_text(text, encoding="utf-8")
            else:
                self.stdout.write(text)
        if options.get("out"):
            self.stderr.write(f"Wrote {fmt} report of campaign {campaign.pk} to {options['out']}")
