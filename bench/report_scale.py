"""Benchmark: the full campaign report (agreement, STS / GEP with 1,000 bootstrap draws) and the CSV
export for the papers' campaigns (GEP 2,560 images, PST 920 images, R = 3) and over 10k / 100k / 1M
answers, against a plain COPY of the same answers.

Loads synthetic campaigns with a bulk loader (PostgreSQL COPY, not the API), then times each size in
a fresh subprocess so peak memory (max RSS) is that size's own. Needs PostgreSQL: DATABASE_URL
(default postgres://postgres@127.0.0.1:5432/bench_report; the database is created if missing).

    .venv/bin/python bench/report_scale.py                    # paper-size GEP and PST, then 10k, 100k, 1M answers
    .venv/bin/python bench/report_scale.py --sizes 3000 --paper paper-pst --smoke  # seconds (CI smoke test)
"""
from __future__ import annotations

import argparse
import io
import json
import os
import random
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _django import ROOT, ensure_database, setup  # noqa: E402

DEFAULT_DB = "postgres://postgres@127.0.0.1:5432/bench_report"


def load(answers: int, seed: int = 0) -> int:
    """A GEP neutral campaign with ~`answers` answers (3 per question, 15 questions per image)."""
    from django.contrib.auth.models import User
    from django.db import connection

    from annotation.models import Annotator
    from campaigns.models import Campaign
    from campaigns.services import campaign_create

    owner, _ = User.objects.get_or_create(username="bench-owner", defaults={"is_staff": True})
    name = f"bench-{answers}"
    existing = Campaign.objects.filter(name=name, owner=owner).first()
    if existing and existing.answers.count() >= answers * 0.95:
        return existing.pk
    if existing:
        existing.delete()
    samples = max(1, round(answers / (3 * 15 * 32)))
    campaign = campaign_create(owner=owner, spec={
        "name": name, "kind": "gep", "seed": seed, "design": {"settings": ["neutral"], "samples": samples},
        "backend": {"name": "placeholder"}})
    raters = []
    for i in range(300):
        user, _ = User.objects.get_or_create(username=f"bench-rater-{i}")
        raters.append(Annotator.objects.get_or_create(user=user)[0].pk)
    rng = random.Random(seed)
    prompts = list(campaign.prompts.values_list("id", "seeds", "metadata"))
    attrs = [a["name"] for a in campaign.spec["design"]["attributes"]]
    with connection.cursor() as cur:
        raw = cur.connection
        buf = io.StringIO()
        for pid, seeds, _ in prompts:
            for s, sd in enumerate(seeds):
                buf.write(f"{campaign.pk}\t{pid}\t{s}\t{sd}\tdone\t\t0\t\t\\N\t\t\t\t\\N\t\\N\t\tplaceholder\t\t\t{{}}\t\\N\t\t"
                          f"t\tf\t\tnow\tnow\t\\N\n")
        with raw.cursor().copy(
                "COPY generation_image (campaign_id, prompt_id, sample_index, seed, status, error, attempts, task_id, "
                "started_at, file, "
                "web_file, sha256, width, height, source_url, backend, model, revision, params, wall_time_s, "
                "revised_prompt, synthetic, excluded, exclusion_reason, created_at, updated_at, finished_at) "
                "FROM STDIN") as copy:
            copy.write(buf.getvalue())
        cur.execute("SELECT i.id, p.metadata FROM generation_image i JOIN campaigns_prompt p ON p.id = i.prompt_id "
                    "WHERE i.campaign_id = %s ORDER BY i.id", [campaign.pk])
        images = cur.fetchall()
        buf = io.StringIO()
        for image_id, meta in images:
            meta = json.loads(meta) if isinstance(meta, str) else meta
            for a in attrs:
                md = json.dumps({"setting": "neutral", "gender": meta["gender"], "attribute": a,
                                 "context": meta["context"], "sample_index": 0})
                buf.write(f"{campaign.pk}\t{image_id}\t{a}\tattribute:{a}\tneutral\tq\t[\"Yes\", \"No\"]\t"
                          f"{md.replace(chr(92), chr(92) * 2)}\t3\t3\t3\t{rng.randrange(2**31)}\tf\t\tnow\n")
        with raw.cursor().copy(
                "COPY annotation_question (campaign_id, image_id, slot, family, setting, text, choices, metadata, "
                "required, assigned, completed, order_key, is_gold, gold_answer, created_at) FROM STDIN") as copy:
            copy.write(buf.getvalue())
        cur.execute("SELECT id, metadata->>'gender', metadata->>'attribute' FROM annotation_question "
                    "WHERE campaign_id = %s ORDER BY id", [campaign.pk])
        questions = cur.fetchall()
        buf = io.StringIO()
        for qid, gender, attribute in questions:
            p_yes = 0.3 if (gender == "woman") == (attribute in ("dress", "skirt")) else 0.05
            truth = rng.random() < p_yes
            for rater in rng.sample(raters, 3):
                choice = "Yes" if (truth if rng.random() < 0.9 else not truth) else "No"
                buf.write(f"{campaign.pk}\t{qid}\t{rater}\t{choice}\t{rng.randrange(800, 9000)}\tnow\tweb\n")
        with raw.cursor().copy("COPY annotation_answer (campaign_id, question_id, annotator_id, choice, time_ms, "
                               "created_at, source) FROM STDIN") as copy:
            copy.write(buf.getvalue())
        # Fresh statistics, as autovacuum would give a live database: the planner needs them.
        cur.execute("ANALYZE generation_image, annotation_question, annotation_answer")
    return campaign.pk


PAPER_SPECS = {
    # The papers' designs with every default: GEP 32 neutral + 480 explicit prompts x 5 = 2,560 images;
    # PST occupations 800 single (x3) + 120 paired (x1) = 920 images.
    "paper-gep": {"kind": "gep", "seed": 1, "design": {"settings": ["neutral", "explicit"]}},
    "paper-pst": {"kind": "pst", "seed": 1, "design": {"aspect": "occupation", "settings": ["single", "paired"]}},
}


def load_paper(name: str, seed: int = 0) -> int:
    """A paper-size campaign: images COPYed for every prompt and sample, questions made by the
    product's own `questions_open`, R = 3 answers per question COPYed (stereotype-leaning choices)."""
    from django.contrib.auth.models import User
    from django.db import connection

    from annotation.models import Annotator
    from annotation.services.lifecycle import questions_open
    from campaigns.models import Campaign
    from campaigns.services import campaign_create

    owner, _ = User.objects.get_or_create(username="bench-owner", defaults={"is_staff": True})
    existing = Campaign.objects.filter(name=f"bench-{name}", owner=owner).first()
    if existing and existing.answers.exists():
        return existing.pk
    if existing:
        existing.delete()
    campaign = campaign_create(owner=owner, spec={"name": f"bench-{name}", **PAPER_SPECS[name],
                                                  "backend": {"name": "placeholder"}})
    rng = random.Random(seed)
    raters = []
    for i in range(300):
        user, _ = User.objects.get_or_create(username=f"bench-rater-{i}")
        raters.append(Annotator.objects.get_or_create(user=user)[0].pk)
    with connection.cursor() as cur:
        buf = io.StringIO()
        for pid, seeds in campaign.prompts.values_list("id", "seeds"):
            for s, sd in enumerate(seeds):
                buf.write(f"{campaign.pk}\t{pid}\t{s}\t{sd}\tdone\t\t0\t\t\\N\timages/{pid}-{s}.png\t\t\t\\N\t\\N\t"
                          f"\tplaceholder\t\t\t{{}}\t\\N\t\tt\tf\t\tnow\tnow\t\\N\n")
        with cur.connection.cursor().copy(
                "COPY generation_image (campaign_id, prompt_id, sample_index, seed, status, error, attempts, task_id, "
                "started_at, file, web_file, sha256, width, height, source_url, backend, model, revision, params, "
                "wall_time_s, revised_prompt, synthetic, excluded, exclusion_reason, created_at, updated_at, "
                "finished_at) FROM STDIN") as copy:
            copy.write(buf.getvalue())
    campaign.status = Campaign.Status.GENERATED
    campaign.save(update_fields=["status"])
    questions_open(campaign=campaign)
    buf = io.StringIO()
    for qid, choices, meta in campaign.questions.values_list("id", "choices", "metadata"):
        if campaign.kind == Campaign.Kind.PST:  # the stereotype's presentation 60% of the time
            lean = "Masculine" if meta.get("stereotype") == "masculine" else "Feminine"
            pick = [lean] * 6 + [c for c in choices if c != lean] * 2
        else:  # an attribute seen more often with its stereotyped gender
            lean = (meta.get("gender") == "woman") == (meta.get("attribute") in ("dress", "skirt", "makeup"))
            pick = ["Yes"] * (4 if lean else 1) + ["No"] * 6
        for rater in rng.sample(raters, 3):
            buf.write(f"{campaign.pk}\t{qid}\t{rater}\t{rng.choice(pick)}\t{rng.randrange(800, 9000)}\tnow\tweb\n")
    with connection.cursor() as cur:
        with cur.connection.cursor().copy("COPY annotation_answer (campaign_id, question_id, annotator_id, choice, "
                                          "time_ms, created_at, source) FROM STDIN") as copy:
            copy.write(buf.getvalue())
        cur.execute("ANALYZE generation_image, annotation_question, annotation_answer")
    return campaign.pk


def measure(campaign_id: int, n_boot: int) -> dict[str, float]:
    """Run in a fresh process: COPY time, report time, CSV time, peak RSS."""
    import pandas  # noqa: F401 - loaded once per worker process (~0.2 s); not part of any one report's time
    from django.db import connection

    from campaigns.models import Campaign
    from metrics.options import ReportOptions
    from metrics.package.exports import report_csv_zip
    from metrics.snapshots.report import report_build

    campaign = Campaign.objects.get(pk=campaign_id)
    answers = campaign.answers.count()
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t = time.perf_counter()
    with connection.cursor() as cur, cur.connection.cursor().copy(
            f"COPY (SELECT question_id, annotator_id, choice FROM annotation_answer WHERE campaign_id = {campaign_id}) "
            "TO STDOUT") as copy:
        size = sum(len(block) for block in copy)
    copy_s = time.perf_counter() - t
    options = ReportOptions(n_boot=n_boot)
    t = time.perf_counter()
    report = report_build(campaign=campaign, options=options)
    report_s = time.perf_counter() - t
    rss_report = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t = time.perf_counter()
    blob = report_csv_zip(campaign=campaign, report=report, options=options)
    csv_s = time.perf_counter() - t
    return {"answers": answers, "copy_s": copy_s, "copy_bytes": size, "report_s": report_s, "csv_s": csv_s,
            "csv_zip_bytes": len(blob), "peak_rss_mb_report": rss_report / 1024, "rss_mb_start": rss0 / 1024,
            "peak_rss_mb_total": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "ratio_report_to_copy": report_s / copy_s if copy_s else float("nan"),
            "kind": campaign.kind, "images": campaign.images.count(),
            "gep_score": (report.get("gep") or {}).get("neutral", {}).get("score"),
            "pst_paired": (report.get("pst") or {}).get("paired", {}).get("overall"),
            "alpha": report["agreement"]["overall"]["krippendorff_alpha"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000,1000000", help="synthetic GEP campaigns (answers)")
    parser.add_argument("--paper", default="paper-gep,paper-pst", help="paper-size campaigns ('' for none)")
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--smoke", action="store_true", help="small and fast; asserts the output is complete")
    parser.add_argument("--measure", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    url = os.environ.get("DATABASE_URL") or DEFAULT_DB
    if args.measure:
        setup(url)
        print(json.dumps(measure(args.measure, args.n_boot)))
        return
    ensure_database(url)
    setup(url)
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    rows = []
    runs: list[tuple[str, Any]] = [(name, name) for name in args.paper.split(",") if name]
    runs += [(f"synthetic {size}", int(size)) for size in args.sizes.split(",") if size]
    for label, what in runs:
        t = time.perf_counter()
        cid = load_paper(what) if isinstance(what, str) else load(what)
        load_s = time.perf_counter() - t
        out = subprocess.run([sys.executable, __file__, "--measure", str(cid), "--n-boot", str(args.n_boot)],
                             capture_output=True, text=True, env={**os.environ, "DATABASE_URL": url}, cwd=ROOT,
                             check=True)
        row = json.loads(out.stdout.strip().splitlines()[-1])
        row["load_s"] = load_s
        row["campaign"] = label
        rows.append(row)
        print(f"{label:>17}: {row['images']:>6} images {row['answers']:>9} answers: report {row['report_s']:.2f} s (COPY {row['copy_s']:.2f} s, "
              f"x{row['ratio_report_to_copy']:.1f}), CSV zip {row['csv_s']:.2f} s, peak RSS "
              f"{row['peak_rss_mb_report']:.0f} MB (report) / {row['peak_rss_mb_total']:.0f} MB (with CSV), "
              f"load {load_s:.1f} s", flush=True)
    if args.smoke:
        assert all(r["report_s"] > 0 and (r["gep_score"] is not None or r["pst_paired"] is not None) for r in rows)
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
