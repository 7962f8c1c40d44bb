"""Benchmark: the replication package of a large campaign, built as the worker builds it
(`metrics.package.services.package_build_run`: the default options' report for report.json, the
extraction with the answer table, Parquet tables, the zip, streamed to storage), then the report
recomputed from that zip alone (`metrics.package.report_from_package`, no database).

Uses the synthetic GEP campaigns of `report_scale.py` (COPY loader; 3 answers per question, 300
annotators) on its own database (default postgres://postgres@127.0.0.1:5432/bench_report, created if
missing). Each size is measured in a fresh process (peak RSS is that size's own).

    .venv/bin/python bench/package_build.py                         # 1,000,000 answers
    .venv/bin/python bench/package_build.py --sizes 200000,1000000
    .venv/bin/python bench/package_build.py --sizes 3000 --smoke   # seconds (CI smoke test)
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _django import ROOT, setup, start  # noqa: E402

DEFAULT_DB = "postgres://postgres@127.0.0.1:5432/bench_report"


def measure(campaign_id: int, n_boot: int) -> dict[str, float | int | str]:
    """In a fresh process: the build (with its report snapshot dropped first, so the report is part of
    the time, as in a first build), then the report from the zip."""
    from django.core.files.storage import default_storage

    from campaigns.models import Campaign
    from metrics.core.preload import preload
    from metrics.models import PackageBuild, ReportSnapshot
    from metrics.package import report_from_package
    from metrics.package.services import package_build_run, package_data_version

    preload_s = preload()  # as the worker does when it starts (config/celery.py), not in the build's time
    campaign = Campaign.objects.get(pk=campaign_id)
    ReportSnapshot.objects.filter(campaign=campaign).delete()
    for old in PackageBuild.objects.filter(campaign=campaign):
        if old.file:
            default_storage.delete(old.file)
        old.delete()
    build = PackageBuild.objects.create(campaign=campaign, data_version=package_data_version(campaign))
    t = time.perf_counter()
    package_build_run(build_id=build.pk)
    build_s = time.perf_counter() - t
    build.refresh_from_db()
    assert build.status == PackageBuild.Status.READY, build.error
    snap = ReportSnapshot.objects.filter(campaign=campaign).first()
    rss_build = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    with default_storage.open(build.file, "rb") as handle:
        blob = handle.read()
    t = time.perf_counter()
    report = report_from_package(blob, n_boot=n_boot)
    read_s = time.perf_counter() - t
    default_storage.delete(build.file)
    return {"answers": int(build.summary["answers"]), "questions": int(build.summary["questions"]),
            "preload_s": preload_s,
            "build_s": build_s, "report_in_build_s": float(snap.build_seconds or 0) if snap else 0.0,
            "zip_mb": build.size / 2**20, "peak_rss_mb_build": rss_build, "report_from_package_s": read_s,
            "peak_rss_mb_total": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "gep_score": report["gep"]["neutral"]["score"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000000", help="synthetic GEP campaigns (answers)")
    parser.add_argument("--n-boot", type=int, default=1000, help="for the report recomputed from the zip")
    parser.add_argument("--smoke", action="store_true", help="small and fast; asserts the output is complete")
    parser.add_argument("--measure", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    url = os.environ.get("DATABASE_URL") or DEFAULT_DB
    if args.measure:
        setup(url)
        print(json.dumps(measure(args.measure, args.n_boot)))
        return
    start(url)
    from report_scale import load

    rows = []
    for size in (int(s) for s in args.sizes.split(",") if s):
        t = time.perf_counter()
        cid = load(size)
        load_s = time.perf_counter() - t
        out = subprocess.run([sys.executable, __file__, "--measure", str(cid), "--n-boot", str(args.n_boot)],
                             capture_output=True, text=True, env={**os.environ, "DATABASE_URL": url}, cwd=ROOT,
                             check=False)
        if out.returncode:
            raise SystemExit(out.stdout[-3000:] + out.stderr[-3000:])
        row = json.loads(out.stdout.strip().splitlines()[-1])
        row["load_s"] = load_s
        rows.append(row)
        print(f"{row['answers']:>9} answers, {row['questions']} questions: package built in {row['build_s']:.2f} s "
              f"(of which the report {row['report_in_build_s']:.2f} s), zip {row['zip_mb']:.1f} MB, peak RSS "
              f"{row['peak_rss_mb_build']:.0f} MB; report from the zip {row['report_from_package_s']:.2f} s "
              f"(peak RSS {row['peak_rss_mb_total']:.0f} MB); load {load_s:.1f} s", flush=True)
    print(json.dumps(rows))
    if args.smoke:
        assert rows and all(r["build_s"] > 0 and r["gep_score"] is not None for r in rows)
        print("smoke: OK")


if __name__ == "__main__":
    main()
