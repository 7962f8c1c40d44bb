"""`manage.py campaign generate ID [--wait]` and `manage.py campaign import-images ID MANIFEST`."""
from __future__ import annotations

import argparse
import json
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


def progress_bar(progress: dict[str, Any], *, width: int = 30) -> str:
    total = max(1, progress.get("images_created") or progress.get("images_planned") or 1)
    finished = (progress.get("images_done", 0) + progress.get("images_failed", 0)
                + progress.get("images_filtered", 0) + progress.get("images_cancelled", 0))
    filled = int(width * finished / total)
    rate = progress.get("images_per_minute")
    eta = progress.get("eta_seconds")
    extra = f"  {rate}/min" if rate else ""
    extra += f"  ETA {int(eta) // 60}m{int(eta) % 60:02d}s" if eta else ""
    return (f"[{'#' * filled}{'.' * (width - filled)}] {finished}/{total}  done {progress.get('images_done', 0)}"
            f"  failed {progress.get('images_failed', 0)}  filtered {progress.get('images_filtered', 0)}"
            f"  running {progress.get('images_running', 0)}{extra}")


def _generate_add(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("id", type=int)
    parser.add_argument("--wait", action="store_true", help="show a progress bar until every image has finished")
    parser.add_argument("--timeout", type=float, default=0, help="with --wait: give up after this many seconds")
    parser.add_argument("--interval", type=float, default=1.0, help="with --wait: seconds between progress updates")
    parser.add_argument("--retry-failed", action="store_true", help="queue the failed images again")
    parser.add_argument("--cancel", action="store_true", help="cancel pending and running images")


def _generate(options: dict[str, Any], out: Any) -> None:
    from .selectors import image_progress
    from .services import generation_cancel, generation_retry_failed, generation_start

    campaign = _campaign(options["id"])
    if options.get("cancel"):
        result = generation_cancel(campaign=campaign)
        out.write(f"Campaign {campaign.pk}: {result['cancelled']} images cancelled.")
        return
    if options.get("retry_failed"):
        result = generation_retry_failed(campaign=campaign)
        out.write(f"Campaign {campaign.pk}: {result['reset']} failed images queued again "
                  f"({result['queued']} queued in {result['batches']} batches).")
    else:
        result = generation_start(campaign=campaign)
        out.write(f"Campaign {campaign.pk}: {result['created']} images created, {result['queued']} queued "
                  f"in {result['batches']} batches.")
    if not options.get("wait"):
        return
    deadline = time.monotonic() + options["timeout"] if options.get("timeout") else None
    tty = getattr(sys.stdout, "isatty", lambda: False)()
    last = ""
    while True:
        progress = image_progress(campaign)
        line = progress_bar(progress)
        if line != last:
            if tty:
                sys.stdout.write("\r" + line + "\x1b[K")
                sys.stdout.flush()
            else:
                out.write(line)
            last = line
        if not progress["images_pending"] and not progress["images_running"]:
            break
        if deadline is not None and time.monotonic() > deadline:
            if tty:
                sys.stdout.write("\n")
            raise CommandError(f"Timed out after {options['timeout']}s; generation goes on in the workers.")
        time.sleep(options.get("interval") or 1.0)
    if tty:
        sys.stdout.write("\n")
    campaign.refresh_from_db()
    out.write(f"Campaign {campaign.pk} is {campaign.status}: {json.dumps(progress)}")


def _import_add(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("id", type=int)
    parser.add_argument("manifest", help="CSV or JSONL manifest: prompt_key|prompt, sample_index, file|url")
    parser.add_argument("--files", help="folder or zip archive holding the files the manifest names")


def _import(options: dict[str, Any], out: Any) -> None:
    from .importer import DirectorySource, ZipSource, images_import

    campaign = _campaign(options["id"])
    manifest = Path(options["manifest"])
    if not manifest.is_file():
        raise CommandError(f"Manifest {manifest} not found.")
    source: Any = None
    if options.get("files"):
        files = Path(options["files"])
        if files.is_dir():
            source = DirectorySource(files)
        elif files.is_file():
            source = ZipSource(files)
        else:
            raise CommandError(f"--files {files}: no such folder or zip file.")
    result = images_import(campaign=campaign, manifest_name=manifest.name, manifest=manifest.read_bytes(),
                           files=source)
    out.write(f"Campaign {campaign.pk}: {result['imported']} images imported, {result['unchanged']} unchanged.")


def register() -> None:
    register_cli("generate", "queue generation of a campaign's images (--wait shows progress)", _generate_add, _generate)
    register_cli("import-images", "import images generated elsewhere, with a manifest", _import_add, _import)
