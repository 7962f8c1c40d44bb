"""Benchmark and calibration: the campaign archive (`GET /api/campaigns/{id}/export/`,
`annotation.archive.campaign_export`) of synthetic GEP campaigns (report_scale.py's COPY loader: 3
answers per question, 15 questions per image, 300 annotators), against the request work budget's
estimate (`annotation.services.archiving.archive_estimate`, from the row counts).

Prints per size: the rows, the estimate's seconds, the build's CPU seconds (process time) and wall
seconds, the zip's size, and the measured seconds per row (answers and questions together, the bulk of
the rows), with the state query's own time (the revision and the counts read before any work).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench_archive .venv/bin/python bench/archive_export.py
    .venv/bin/python bench/archive_export.py --sizes 3000 --smoke   # seconds (CI smoke test)
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _django import start  # noqa: E402

DEFAULT_DB = "postgres://postgres@127.0.0.1:5432/bench_archive"


def measure(campaign_id: int) -> dict[str, float | int]:
    from annotation.archive import campaign_export
    from annotation.services.archiving import archive_estimate, archive_state
    from campaigns.models import Campaign

    campaign = Campaign.objects.get(pk=campaign_id)
    t = time.perf_counter()
    state = archive_state(campaign)
    state_s = time.perf_counter() - t
    cpu, wall = time.process_time(), time.perf_counter()
    blob = campaign_export(campaign=campaign)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    rows = sum(state.counts.values())
    return {"answers": state.counts["answers"], "questions": state.counts["questions"],
            "images": state.counts["images"], "rows": rows, "estimate_s": archive_estimate(state).seconds,
            "cpu_s": cpu, "wall_s": wall, "state_query_s": state_s, "zip_mb": len(blob) / 2**20,
            "cpu_us_per_row": 1e6 * cpu / max(1, rows)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="100000", help="synthetic GEP campaigns (answers)")
    parser.add_argument("--smoke", action="store_true", help="small and fast; asserts the output is complete")
    args = parser.parse_args()
    url = os.environ.get("DATABASE_URL") or DEFAULT_DB
    start(url)
    from report_scale import load

    rows = []
    for size in (int(s) for s in args.sizes.split(",") if s):
        row = measure(load(size))
        rows.append(row)
        print(f"{row['answers']:>9} answers, {row['questions']} questions, {row['images']} images: estimate "
              f"{row['estimate_s']:.2f} s; built in {row['cpu_s']:.2f} s CPU ({row['wall_s']:.2f} s wall, "
              f"{row['cpu_us_per_row']:.1f} us CPU per row), zip {row['zip_mb']:.1f} MB; state query "
              f"{1000 * row['state_query_s']:.0f} ms", flush=True)
    print(json.dumps(rows))
    if args.smoke:
        assert rows and all(r["rows"] > 0 and r["estimate_s"] > 0 and r["zip_mb"] > 0 for r in rows)
        print("smoke: OK")


if __name__ == "__main__":
    main()
