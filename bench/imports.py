"""Benchmark: the two bulk imports, each timed in a fresh subprocess (peak memory = its own max RSS).

1. Image manifest import (`generation.importer.images_import`): a CSV manifest of 10,000 images
   registered by URL (prompt_key, sample_index, url) into a GEP campaign with the `import` backend.
2. MTurk batch-results import (`crowd.mturk_batch.mturk_batch_import`): a synthetic export of
   100,000 rows in the GEP paper's format (the real exports' 86 columns; 10 images per HIT,
   `Input.attribute` naming the attribute by its phrase, `Answer.Yes{k}.1` / `Answer.No{k}.0`),
   3 workers per HIT, i.e. 1,000,000 answers. Its images are registered by URL and its questions
   created beforehand (COPY: GEP neutral images, 15 questions each).

Needs PostgreSQL: DATABASE_URL (default postgres://postgres@127.0.0.1:5432/bench_imports; created
if missing; its contents are wiped at the start).

    .venv/bin/python bench/imports.py                          # 10,000 images, 100,000 MTurk rows
    .venv/bin/python bench/imports.py --images 300 --rows 300 --smoke   # seconds (CI smoke test)
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _django import ROOT, setup, start  # noqa: E402

DEFAULT_DB = "postgres://postgres@127.0.0.1:5432/bench_imports"
URL = "https://img.bench.example/{campaign}/{prompt}/{sample}.png"
# The column order of the GEP paper's MTurk exports (shared/data/gep-mturk/*.csv).
HEADER = ["HITId", "HITTypeId", "Title", "Description", "Keywords", "Reward", "CreationTime", "MaxAssignments",
          "RequesterAnnotation", "AssignmentDurationInSeconds", "AutoApprovalDelayInSeconds", "Expiration",
          "NumberOfSimilarHITs", "LifetimeInSeconds", "AssignmentId", "WorkerId", "AssignmentStatus", "AcceptTime",
          "SubmitTime", "AutoApprovalTime", "ApprovalTime", "RejectionTime", "RequesterFeedback",
          "WorkTimeInSeconds", "LifetimeApprovalRate", "Last30DaysApprovalRate", "Last7DaysApprovalRate",
          "Input.attribute", *[f"Input.positive_url{k}" for k in range(5)],
          *[f"Input.negative_url{k}" for k in range(5)],
          *[c for k in range(10) for c in (f"Input.image_url{k}", f"Input.object{k}")],
          *[f"Answer.No{k}.0" for k in range(10)], *[f"Answer.Yes{k}.1" for k in range(10)], "Approve", "Reject"]
FILLER = {
    "HITTypeId": "36FWM6US0W9DBEW0SBTIA0JR8UQ4SP",
    "Title": "Does this image contain the object of interest? (Clothing)",
    "Description": "Given an image, you are expected to judge whether an object (one type of clothing, e.g., a tie, "
                   "or a shirt ... ) is contained.",
    "Keywords": "image, classification, detection", "Reward": "$0.17", "CreationTime": "Mon Nov 21 07:28:17 PST 2022",
    "MaxAssignments": "3", "RequesterAnnotation": "BatchId:4942581;OriginalHitTemplateId:928390875;",
    "AssignmentDurationInSeconds": "120", "AutoApprovalDelayInSeconds": "432000",
    "Expiration": "Mon Nov 28 07:28:17 PST 2022", "AcceptTime": "Mon Nov 21 07:34:15 PST 2022",
    "SubmitTime": "Mon Nov 21 07:35:00 PST 2022", "AutoApprovalTime": "Sat Nov 26 07:35:00 PST 2022",
    "LifetimeApprovalRate": "100% (33/33)", "Last30DaysApprovalRate": "100% (33/33)",
    "Last7DaysApprovalRate": "100% (32/32)",
}


def reset() -> None:
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute("TRUNCATE auth_user, campaigns_campaign, annotation_annotator CASCADE")


def owner() -> Any:
    from django.contrib.auth.models import User

    return User.objects.get_or_create(username="bench-owner", defaults={"is_staff": True})[0]


# ---------------------------------------------------------------------------------------------
# 1. Image manifest
# ---------------------------------------------------------------------------------------------
def images_prepare(n: int, workdir: Path) -> tuple[int, Path]:
    """A GEP campaign (import backend) with >= n planned images and a manifest of n URL rows."""
    from django.conf import settings

    from campaigns.services import campaign_create

    samples = max(1, -(-n // 512))  # 32 neutral + 480 explicit prompts
    # 100,000 rows plan 100,352 images: over MAX_IMAGES_PER_CAMPAIGN (100,000), raised for this process only
    # (the import itself reads at most MAX_ROWS = 100,000 manifest rows).
    settings.MAX_IMAGES_PER_CAMPAIGN = max(settings.MAX_IMAGES_PER_CAMPAIGN, samples * 512)
    campaign = campaign_create(owner=owner(), spec={
        "name": f"bench-manifest-{n}", "kind": "gep", "seed": 1,
        "design": {"settings": ["neutral", "explicit"], "samples": samples},
        "backend": {"name": "import", "model": "bench"}})
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["prompt_key", "sample_index", "url"])
    rows = 0
    for pid, key, count in campaign.prompts.order_by("position").values_list("id", "key", "samples"):
        for s in range(count):
            if rows == n:
                break
            writer.writerow([key, s, URL.format(campaign=campaign.pk, prompt=pid, sample=s)])
            rows += 1
    path = workdir / "manifest.csv"
    path.write_text(out.getvalue(), encoding="utf-8")
    return campaign.pk, path


def backend_cpu_s() -> float:
    """CPU seconds used so far by this process's PostgreSQL backend (same machine: /proc)."""
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute("SELECT pg_backend_pid()")
        pid = cur.fetchone()[0]
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_now() -> tuple[float, float]:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime, backend_cpu_s()


def cpu_since(start: tuple[float, float]) -> dict[str, float]:
    now = cpu_now()
    return {"python_cpu_s": round(now[0] - start[0], 2), "postgres_cpu_s": round(now[1] - start[1], 2)}


def images_measure(campaign_id: int, path: Path) -> dict[str, Any]:
    from campaigns.models import Campaign
    from generation.importer import images_import
    from generation.models import Image

    campaign = Campaign.objects.get(pk=campaign_id)
    data = path.read_bytes()
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    cpu0 = cpu_now()
    t = time.perf_counter()
    result = images_import(campaign=campaign, manifest_name=path.name, manifest=data)
    seconds = time.perf_counter() - t
    cpu = cpu_since(cpu0)
    stored = Image.objects.filter(campaign_id=campaign_id, status="done").exclude(source_url="").count()
    return {"import": "image manifest", "rows": result["rows"], "imported": result["imported"], "stored": stored,
            "seconds": seconds, "rows_per_s": result["rows"] / seconds, "manifest_bytes": len(data), **cpu,
            "rss_mb_start": rss0 / 1024, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "ok": result["imported"] == result["rows"] == stored}


# ---------------------------------------------------------------------------------------------
# 2. MTurk batch results
# ---------------------------------------------------------------------------------------------
def mturk_prepare(rows: int, workdir: Path, seed: int = 0) -> tuple[int, Path, int]:
    """A GEP neutral campaign whose images are registered by URL, with their 15 questions each
    (COPY), and a synthetic batch-results CSV of `rows` assignments: HITs of 10 images for one
    attribute, 3 workers each. Returns (campaign id, CSV path, answers in the file)."""
    from django.db import connection

    from campaigns.services import campaign_create

    hits = -(-rows // 3)
    images_needed = max(10, -(-hits * 10 // 15))
    samples = max(1, -(-images_needed // 32))
    campaign = campaign_create(owner=owner(), spec={
        "name": f"bench-mturk-{rows}", "kind": "gep", "seed": seed,
        "design": {"settings": ["neutral"], "samples": samples}, "backend": {"name": "import"}})
    attrs = [(a["name"], a["phrase"]) for a in campaign.spec["design"]["attributes"]]
    prompts = list(campaign.prompts.order_by("position").values_list("id", "seeds"))
    rng = random.Random(seed)
    with connection.cursor() as cur:
        raw = cur.connection
        buf = io.StringIO()
        for pid, seeds in prompts:
            for s, sd in enumerate(seeds):
                url = URL.format(campaign=campaign.pk, prompt=pid, sample=s)
                buf.write(f"{campaign.pk}\t{pid}\t{s}\t{sd}\tdone\t\t0\t\t\\N\t\t\t\t\\N\t\\N\t{url}\timport\t\t\t{{}}"
                          f"\t\\N\t\tf\tf\t\tnow\tnow\tnow\n")
        with raw.cursor().copy(
                "COPY generation_image (campaign_id, prompt_id, sample_index, seed, status, error, attempts, task_id, "
                "started_at, file, web_file, sha256, width, height, source_url, backend, model, revision, params, "
                "wall_time_s, revised_prompt, synthetic, excluded, exclusion_reason, created_at, updated_at, "
                "finished_at) FROM STDIN") as copy:
            copy.write(buf.getvalue())
        cur.execute("SELECT id, source_url FROM generation_image WHERE campaign_id = %s ORDER BY id", [campaign.pk])
        images = cur.fetchall()
        buf = io.StringIO()
        for image_id, _ in images:
            for name, phrase in attrs:
                md = json.dumps({"setting": "neutral", "attribute": name, "sample_index": 0})
                buf.write(f"{campaign.pk}\t{image_id}\t{name}\tattribute:{name}\tneutral\tDo you see a person "
                          f"{phrase}?\t[\"Yes\", \"No\"]\t{md}\t3\t0\t0\t{rng.randrange(2**62)}\tf\t\tnow\n")
        with raw.cursor().copy(
                "COPY annotation_question (campaign_id, image_id, slot, family, setting, text, choices, metadata, "
                "required, assigned, completed, order_key, is_gold, gold_answer, created_at) FROM STDIN") as copy:
            copy.write(buf.getvalue())
        cur.execute("ANALYZE generation_image, annotation_question")
    urls = [u for _, u in images]
    workers = [f"A{rng.randrange(16**12):012X}" for _ in range(max(3, min(2000, rows // 50)))]
    path = workdir / "batch.csv"
    written = answers = 0
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, quoting=csv.QUOTE_ALL)
        writer.writerow(HEADER)
        hit_no = 0
        while written < rows:
            name, phrase = attrs[hit_no % len(attrs)]
            group = hit_no // len(attrs)
            start = group * 10 % len(urls)
            batch = urls[start:start + 10]
            hit_id = f"3{hit_no:029d}"
            for worker in rng.sample(workers, 3):
                if written == rows:
                    break
                row = dict(FILLER)
                row.update({"HITId": hit_id, "AssignmentId": f"3A{written:028d}", "WorkerId": worker,
                            "AssignmentStatus": "Approved" if rng.random() < 0.9 else "Submitted",
                            "WorkTimeInSeconds": str(rng.randrange(20, 300)), "Input.attribute": phrase})
                for k in range(10):
                    url = batch[k] if k < len(batch) else ""
                    row[f"Input.image_url{k}"] = url
                    row[f"Input.object{k}"] = phrase
                    if url:
                        yes = rng.random() < 0.3
                        row[f"Answer.Yes{k}.1"] = "true" if yes else "false"
                        row[f"Answer.No{k}.0"] = "false" if yes else "true"
                        answers += 1
                for k in range(5):
                    row[f"Input.positive_url{k}"] = "https://img.bench.example/examples/positive.png"
                    row[f"Input.negative_url{k}"] = "https://img.bench.example/examples/negative.png"
                writer.writerow([row.get(c, "") for c in HEADER])
                written += 1
            hit_no += 1
    return campaign.pk, path, answers


def mturk_measure(campaign_id: int, path: Path) -> dict[str, Any]:
    from annotation.models import Answer
    from campaigns.models import Campaign
    from crowd.mturk_batch import mturk_batch_import

    campaign = Campaign.objects.get(pk=campaign_id)
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    cpu0 = cpu_now()
    t = time.perf_counter()
    with path.open("rb") as handle:  # streamed, as the API streams an upload (issue 24)
        result = mturk_batch_import(campaigns=[campaign], data=handle)
    seconds = time.perf_counter() - t
    cpu = cpu_since(cpu0)
    stored = Answer.objects.filter(campaign_id=campaign_id).count()
    return {"import": "mturk batch", "rows": result.rows, "assignments": result.assignments,
            "answers": result.answers, "stored": stored, "workers": result.workers, "seconds": seconds,
            "rows_per_s": result.rows / seconds, "answers_per_s": result.answers / seconds, "csv_bytes": path.stat().st_size,
            **cpu,
            "rss_mb_start": rss0 / 1024, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "ok": result.answers == stored and result.skipped_rows == 0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=10_000, help="manifest rows")
    parser.add_argument("--rows", type=int, default=100_000, help="MTurk batch rows (10 answers each)")
    parser.add_argument("--smoke", action="store_true", help="asserts the output is complete")
    parser.add_argument("--measure", nargs=3, metavar=("KIND", "CAMPAIGN", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    url = os.environ.get("DATABASE_URL") or DEFAULT_DB
    if args.measure:
        setup(url)
        kind, cid, path = args.measure
        fn = images_measure if kind == "images" else mturk_measure
        print(json.dumps(fn(int(cid), Path(path))))
        return
    start(url)

    reset()
    print(f"machine: {os.cpu_count()} CPUs; load average {os.getloadavg()}", flush=True)
    results = []
    with tempfile.TemporaryDirectory(prefix="bench-imports-") as tmp:
        for kind, size in (("images", args.images), ("mturk", args.rows)):
            t = time.perf_counter()
            if kind == "images":
                cid, path = images_prepare(size, Path(tmp))
            else:
                cid, path, _ = mturk_prepare(size, Path(tmp))
            prepare_s = time.perf_counter() - t
            out = subprocess.run([sys.executable, __file__, "--measure", kind, str(cid), str(path)],
                                 capture_output=True, text=True, env={**os.environ, "DATABASE_URL": url}, cwd=ROOT)
            if out.returncode:
                sys.stderr.write(out.stderr)
                raise SystemExit(f"{kind} import failed")
            row = json.loads(out.stdout.strip().splitlines()[-1])
            row.update({"prepare_s": round(prepare_s, 1), "loadavg_1m": round(os.getloadavg()[0], 2)})
            results.append(row)
            extra = f", {row['answers']} answers ({row['answers_per_s']:.0f}/s)" if kind == "mturk" else ""
            print(f"{row['import']:>14}: {row['rows']} rows in {row['seconds']:.2f} s = {row['rows_per_s']:.0f} rows/s"
                  f"{extra} (CPU: Python {row['python_cpu_s']} s, its PostgreSQL backend {row['postgres_cpu_s']} s)"
                  f", peak RSS {row['peak_rss_mb']:.0f} MB (start {row['rss_mb_start']:.0f} MB), stored "
                  f"{row['stored']} {'OK' if row['ok'] else 'MISMATCH'} (setup {prepare_s:.1f} s, load "
                  f"{row['loadavg_1m']})", flush=True)
    print(json.dumps(results))
    if args.smoke:
        assert len(results) == 2 and all(r["ok"] and r["rows_per_s"] > 0 for r in results), results
        print("smoke: OK")


if __name__ == "__main__":
    main()
