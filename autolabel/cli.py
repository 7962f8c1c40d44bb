"""`manage.py campaign autolabel ID LABELLER [--wait] [--cancel]` and
`manage.py campaign import-machine-labels ID FILE --labeller NAME`."""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError

from campaigns.cli import campaign_resolve
from campaigns.models import Campaign
from campaigns.registry import register_cli


def _campaign(campaign_id: int) -> Campaign:
    return campaign_resolve(campaign_id)


def progress_bar(entry: dict[str, Any], *, width: int = 30) -> str:
    total = max(1, int(entry.get("total") or 0))
    finished = int(entry.get("done", 0)) + int(entry.get("failed", 0))
    filled = min(width, int(width * finished / total))
    return (f"[{'#' * filled}{'.' * (width - filled)}] {finished}/{entry.get('total', 0)}  done {entry.get('done', 0)}"
            f"  failed {entry.get('failed', 0)}  {entry.get('status', '')}")


def _autolabel_add(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("id", type=int)
    parser.add_argument("labeller", help="clip, clip_cc, clip_cls, clip_gender, vqa or vlm")
    parser.add_argument("--wait", action="store_true", help="show a progress bar until the run has finished")
    parser.add_argument("--timeout", type=float, default=0, help="with --wait: give up after this many seconds")
    parser.add_argument("--interval", type=float, default=1.0, help="with --wait: seconds between updates")
    parser.add_argument("--cancel", action="store_true", help="cancel the labeller's run")


def _autolabel(options: dict[str, Any], out: Any) -> None:
    from .selectors import autolabel_progress
    from .services import autolabel_cancel, autolabel_start

    campaign = _campaign(options["id"])
    labeller = options["labeller"]
    if options.get("cancel"):
        result = autolabel_cancel(campaign=campaign, labeller=labeller)
        out.write(f"Campaign {campaign.pk}: {labeller} is {result['status']}.")
        return
    result = autolabel_start(campaign=campaign, labeller=labeller)
    out.write(f"Campaign {campaign.pk}: {labeller} {result['status']}, {result['queued']} questions queued in "
              f"{result['batches']} batches ({result['done']}/{result['total']} labelled).")
    if not options.get("wait"):
        return
    deadline = time.monotonic() + options["timeout"] if options.get("timeout") else None
    tty = getattr(sys.stdout, "isatty", lambda: False)()
    last = ""
    while True:
        entry = autolabel_progress(campaign).get("autolabel", {}).get(labeller, {})
        line = progress_bar(entry)
        if line != last:
            if tty:
                sys.stdout.write("\r" + line + "\x1b[K")
                sys.stdout.flush()
            else:
                out.write(line)
            last = line
        if entry.get("status") != "running":
            break
        if deadline is not None and time.monotonic() > deadline:
            raise CommandError(f"Timed out after {options['timeout']}s; labelling goes on in the workers.")
        time.sleep(options.get("interval") or 1.0)
    if tty:
        sys.stdout.write("\n")
    out.write(f"Campaign {campaign.pk}: {labeller} {entry.get('status')}: {entry.get('done', 0)} labelled, "
              f"{entry.get('failed', 0)} failed of {entry.get('total', 0)}.")


def _import_add(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("id", type=int)
    parser.add_argument("file", help="CSV or JSONL: image | prompt_key+sample_index, slot|attribute|family, choice, score")
    parser.add_argument("--labeller", required=True, help="the name the labels are stored under")


def _import(options: dict[str, Any], out: Any) -> None:
    from .importer import machine_labels_import

    campaign = _campaign(options["id"])
    path = Path(options["file"])
    if not path.is_file():
        raise CommandError(f"File {path} not found.")
    from common.errors import ApplicationError

    try:
        result = machine_labels_import(campaign=campaign, labeller=options["labeller"], name=path.name,
                                       data=path.read_bytes())
    except ApplicationError as exc:
        lines = [f"  {field}: {'; '.join(messages)}" for field, messages in (exc.errors or {}).items()]
        raise CommandError("\n".join([exc.message, *lines[:50]])) from exc
    out.write(f"Campaign {campaign.pk}: {result['rows']} machine labels imported as {result['labeller']}.")


def register() -> None:
    register_cli("autolabel", "run a machine labeller over a campaign's questions (--wait shows progress)",
                 _autolabel_add, _autolabel)
    register_cli("import-machine-labels", "import machine labels made elsewhere (CSV / JSONL)", _import_add, _import)
