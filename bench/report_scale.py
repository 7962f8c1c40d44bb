"""Benchmark: the full campaign report (agreement, STS / GEP with 1,000 bootstrap draws) and the CSV
export for the papers' campaigns (GEP 2,560 images, PST 920 images, R = 3) and over 10k / 100k / 1M
answers, against a plain COPY of the same answers.

Loads synthetic campaigns with a bulk loader (PostgreSQL COPY, not the API), then times each size in
a fresh subprocess so peak memory (max RSS) is that size's own. Needs PostgreSQL: DATABASE_URL
(default postgres://postgres@127.0.0.1:5432/bench_report; the database is created if missing).

    .venv/bin/python bench/report_scale.py                    # paper-size GEP and PST, then 10k, 100k, 1M answers
    .venv/bin/python bench/report_scale.py --sizes 1000000 --paper ''           # 1M answers
    .venv/bin/python bench/report_scale.py --sizes 10000000 --paper ''          # 10M answers, 500 annotators
                                                              # with demographics (6 age bands) and a release
    .venv/bin/python bench/report_scale.py --sizes '' --paper paper-pst-intervention  # PST with the intervention
    ... --profile 25                                          # + cProfile top 25 of a second report build
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
from _django import ROOT, setup, start  # noqa: E402

DEFAULT_DB = "postgres://postgres@127.0.0.1:5432/bench_report"


CHUNK = 200_000  # rows per COPY write: the loader's memory stays flat at 10M answers


def _raters(n: int) -> list[int]:
    from django.contrib.auth.models import User

    from annotation.models import Annotator

    raters = []
    for i in range(n):
        user, _ = User.objects.get_or_create(username=f"bench-rater-{i}")
        raters.append(Annotator.objects.get_or_create(user=user)[0].pk)
    return raters


AGE_BANDS = ("18-24", "25-34", "35-44", "45-54", "55-64", "65+")
GENDERS = ("woman", "man", "non_binary")
COUNTRIES = ("US", "DE")


def demographics_load(campaign: Any, raters: list[int]) -> dict[str, int]:
    """Every rater consents to the campaign and reports demographics through the product's services
    (age band: 6 groups; gender: 3; country: 2), then the first numbered release is cut
    (`demographics_release_cut`): the report's annotators section reads that release only."""
    from annotation.models import Annotator, DemographicsRelease
    from annotation.services.annotators import enrollment_consent
    from annotation.services.demographics import demographics_release_cut, demographics_submit
    from annotation.spec_section import annotation_settings

    if DemographicsRelease.objects.filter(campaign=campaign).exists():
        return {"release_members": len(DemographicsRelease.objects.filter(campaign=campaign).latest("number").members)}
    cfg = annotation_settings(campaign)["demographics"]
    for i, annotator in enumerate(Annotator.objects.filter(pk__in=raters).order_by("pk")):
        enrollment_consent(annotator=annotator, campaign=campaign, consent=True)
        demographics_submit(annotator=annotator, campaign=campaign, consent=True,
                            consent_version=cfg["consent_version"],
                            answers={"gender": GENDERS[i % 3], "age_band": AGE_BANDS[i % 6],
                                     "country": COUNTRIES[i % 2]})
    release = demographics_release_cut(campaign=campaign, reason="request")
    return {"release_members": len(release.members)}


def _copy(cur: Any, sql: str, rows: Any) -> None:
    """COPY `rows` (lines ending in a newline) in chunks of CHUNK lines."""
    with cur.connection.cursor().copy(sql) as copy:
        buf: list[str] = []
        for line in rows:
            buf.append(line)
            if len(buf) >= CHUNK:
                copy.write("".join(buf))
                buf.clear()
        if buf:
            copy.write("".join(buf))


def load(answers: int, seed: int = 0, annotators: int = 0) -> int:
    """A GEP neutral campaign with ~`answers` answers (3 per question, 15 questions per image), from
    300 raters; with `annotators` > 0, from that many raters who all report demographics, with a
    demographics release cut (`demographics_load`), so the report's annotators section runs its tests.
    Rows are generated and COPYed in chunks (10M answers load in flat memory)."""
    from django.contrib.auth.models import User
    from django.db import connection

    from campaigns.models import Campaign
    from campaigns.services import campaign_create

    owner, _ = User.objects.get_or_create(username="bench-owner", defaults={"is_staff": True})
    name = f"bench-{answers}" + (f"-d{annotators}" if annotators else "")
    existing = Campaign.objects.filter(name=name, owner=owner).first()
    if existing and existing.answers.count() >= answers * 0.95:
        if annotators:
            demographics_load(existing, _raters(annotators))
        return existing.pk
    if existing:
        existing.delete()
    samples = max(1, round(answers / (3 * 15 * 32)))
    spec: dict[str, Any] = {
        "name": name, "kind": "gep", "seed": seed, "design": {"settings": ["neutral"], "samples": samples},
        "backend": {"name": "placeholder"}}
    if annotators:
        spec["annotation"] = {"demographics": True}
    campaign = campaign_create(owner=owner, spec=spec)
    raters = _raters(annotators or 300)
    rng = random.Random(seed)
    prompts = list(campaign.prompts.values_list("id", "seeds", "metadata"))
    attrs = [a["name"] for a in campaign.spec["design"]["attributes"]]
    with connection.cursor() as cur:
        _copy(cur, "COPY generation_image (campaign_id, prompt_id, sample_index, seed, status, error, attempts, "
              "task_id, started_at, file, web_file, sha256, width, height, source_url, backend, model, revision, "
              "params, wall_time_s, revised_prompt, synthetic, excluded, exclusion_reason, created_at, updated_at, "
              "finished_at) FROM STDIN",
              (f"{campaign.pk}\t{pid}\t{s}\t{sd}\tdone\t\t0\t\t\\N\t\t\t\t\\N\t\\N\t\tplaceholder\t\t\t{{}}\t\\N\t\t"
               f"t\tf\t\tnow\tnow\t\\N\n" for pid, seeds, _ in prompts for s, sd in enumerate(seeds)))
        cur.execute("SELECT i.id, p.metadata FROM generation_image i JOIN campaigns_prompt p ON p.id = i.prompt_id "
                    "WHERE i.campaign_id = %s ORDER BY i.id", [campaign.pk])
        images = cur.fetchall()

        def question_rows() -> Any:
            for image_id, meta in images:
                meta = json.loads(meta) if isinstance(meta, str) else meta
                for a in attrs:
                    md = json.dumps({"setting": "neutral", "gender": meta["gender"], "attribute": a,
                                     "context": meta["context"], "sample_index": 0})
                    yield (f"{campaign.pk}\t{image_id}\t{a}\tattribute:{a}\tneutral\tq\t[\"Yes\", \"No\"]\t"
                           f"{md.replace(chr(92), chr(92) * 2)}\t3\t3\t3\t{rng.randrange(2**31)}\tf\t\tnow\n")

        _copy(cur, "COPY annotation_question (campaign_id, image_id, slot, family, setting, text, choices, metadata, "
              "required, assigned, completed, order_key, is_gold, gold_answer, created_at) FROM STDIN", question_rows())

        def answer_rows() -> Any:
            # A server-side cursor on a second connection (the first one is busy with the COPY): the
            # questions of a 10M-answer campaign are read in batches, never all at once.
            import psycopg

            with psycopg.connect(os.environ["DATABASE_URL"]) as reader, reader.cursor(name="bench_q") as questions:
                questions.itersize = CHUNK
                questions.execute("SELECT id, metadata->>'gender', metadata->>'attribute' FROM annotation_question "
                                  "WHERE campaign_id = %s ORDER BY id", [campaign.pk])
                for qid, gender, attribute in questions:
                    p_yes = 0.3 if (gender == "woman") == (attribute in ("dress", "skirt")) else 0.05
                    truth = rng.random() < p_yes
                    for rater in rng.sample(raters, 3):
                        choice = "Yes" if (truth if rng.random() < 0.9 else not truth) else "No"
                        yield f"{campaign.pk}\t{qid}\t{rater}\t{choice}\t{rng.randrange(800, 9000)}\tnow\tweb\n"

        _copy(cur, "COPY annotation_answer (campaign_id, question_id, annotator_id, choice, time_ms, "
              "created_at, source) FROM STDIN", answer_rows())
        # Fresh statistics, as autovacuum would give a live database: the planner needs them.
        cur.execute("ANALYZE generation_image, annotation_question, annotation_answer")
    if annotators:
        demographics_load(campaign, raters)
    return campaign.pk


PAPER_SPECS = {
    # The papers' designs with every default: GEP 32 neutral + 480 explicit prompts x 5 = 2,560 images;
    # PST occupations 800 single (x3) + 120 paired (x1) = 920 images.
    "paper-gep": {"kind": "gep", "seed": 1, "design": {"settings": ["neutral", "explicit"]}},
    "paper-pst": {"kind": "pst", "seed": 1, "design": {"aspect": "occupation", "settings": ["single", "paired"]}},
    # The same with the paper's fairness intervention (every pair, both orders): + 800 paired images.
    "paper-pst-intervention": {"kind": "pst", "seed": 1, "design": {
        "aspect": "occupation", "settings": ["single", "paired"], "fairness_intervention": True}},
}


def load_paper(name: str, seed: int = 0) -> int:
    """A paper-size campaign: images COPYed for every prompt and sample, questions made by the
    product's own `questions_open`, R = 3 answers per question COPYed (stereotype-leaning choices)."""
    from django.contrib.auth.models import User
    from django.db import connection

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
    raters = _raters(300)
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


def _timed_sections(times: dict[str, float]) -> None:
    """Time each further report section (the annotators one among them) as the report builds it."""
    from metrics.sections import report as report_module

    builders = report_module._SECTION_BUILDERS
    for key, build in list(builders.items()):
        def timed(*args: Any, _key: str = key, _build: Any = build) -> Any:
            t = time.perf_counter()
            try:
                return _build(*args)
            finally:
                times[_key] = times.get(_key, 0.0) + time.perf_counter() - t
        builders[key] = timed


def measure(campaign_id: int, n_boot: int, profile: int = 0, csv: bool = True) -> dict[str, Any]:
    """Run in a fresh process: COPY time, report time (and each further section's), CSV time, peak RSS;
    with `profile` > 0, then a second report build under cProfile (its top functions by own time)."""
    from django.db import connection

    from metrics.core.preload import preload

    # What the worker and the web process do when they start (config/celery.py, config/wsgi.py): the
    # report's libraries are loaded once per process, not in any one report's time.
    preload_s = preload()

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
    sections: dict[str, float] = {}
    _timed_sections(sections)
    t = time.perf_counter()
    report = report_build(campaign=campaign, options=options)
    report_s = time.perf_counter() - t
    rss_report = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t = time.perf_counter()
    blob = report_csv_zip(campaign=campaign, report=report, options=options) if csv else b""
    csv_s = time.perf_counter() - t if csv else float("nan")
    profiled = ""
    if profile:
        import cProfile
        import pstats

        prof = cProfile.Profile()
        prof.enable()
        report_build(campaign=campaign, options=options)
        prof.disable()
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(profile)
        profiled = out.getvalue()
    annotators = report.get("annotators") or {}
    return {"answers": answers, "preload_s": preload_s, "copy_s": copy_s, "copy_bytes": size, "report_s": report_s,
            "csv_s": csv_s,
            "sections_s": sections, "annotators": annotators.get("annotators", 0),
            "annotator_tests": sum(len(f["tests"]) for f in (annotators.get("fields") or {}).values()),
            "profile": profiled,
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
    parser.add_argument("--annotators", type=int, default=-1,
                        help="synthetic campaigns: this many raters, all reporting demographics (6 age bands, 3 "
                             "genders, 2 countries) with a release cut, so the annotators section runs its tests; "
                             "0: 300 raters, no demographics; default: 500 from 5M answers up, else 0")
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--smoke", action="store_true", help="small and fast; asserts the output is complete")
    parser.add_argument("--profile", type=int, default=0,
                        help="then profile a second report build (cProfile) and print its top N functions")
    parser.add_argument("--no-csv", action="store_true", help="skip the CSV zip export (no target; minutes at 10M)")
    parser.add_argument("--measure", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    url = os.environ.get("DATABASE_URL") or DEFAULT_DB
    # The 10M-answer campaign (32 prompts x 6,944 samples = 222k images) is over the default
    # deployment limits (1,000 samples, 100k images per campaign): a deployment that holds it raises them.
    os.environ.setdefault("SPEC_MAX_SAMPLES", "10000")
    os.environ.setdefault("MAX_IMAGES_PER_CAMPAIGN", "400000")
    if args.measure:
        setup(url)
        print(json.dumps(measure(args.measure, args.n_boot, args.profile, csv=not args.no_csv)))
        return
    start(url)

    rows = []
    runs: list[tuple[str, Any]] = [(name, name) for name in args.paper.split(",") if name]
    runs += [(f"synthetic {size}", int(size)) for size in args.sizes.split(",") if size]
    for label, what in runs:
        t = time.perf_counter()
        if isinstance(what, str):
            cid = load_paper(what)
        else:
            annotators = args.annotators if args.annotators >= 0 else (500 if what >= 5_000_000 else 0)
            cid = load(what, annotators=annotators)
            label += f" ({annotators} annot.)" if annotators else ""
        load_s = time.perf_counter() - t
        out = subprocess.run([sys.executable, __file__, "--measure", str(cid), "--n-boot", str(args.n_boot),
                              "--profile", str(args.profile), *(["--no-csv"] if args.no_csv else [])],
                             capture_output=True, text=True, env={**os.environ, "DATABASE_URL": url}, cwd=ROOT,
                             check=True)
        row = json.loads(out.stdout.strip().splitlines()[-1])
        row["load_s"] = load_s
        row["campaign"] = label
        rows.append(row)
        print(f"{label:>22}: {row['images']:>6} images {row['answers']:>9} answers: report {row['report_s']:.2f} s (COPY {row['copy_s']:.2f} s, "
              f"x{row['ratio_report_to_copy']:.1f}), CSV zip {row['csv_s']:.2f} s, peak RSS "
              f"{row['peak_rss_mb_report']:.0f} MB (report) / {row['peak_rss_mb_total']:.0f} MB (with CSV), "
              f"load {load_s:.1f} s", flush=True)
        if row["annotators"]:
            print(f"{'':>22}  annotators section {row['sections_s'].get('annotators', 0):.2f} s: "
                  f"{row['annotators']} annotators, {row['annotator_tests']} permutation tests", flush=True)
        profile_text = row.pop("profile")
        if profile_text:
            print(profile_text, flush=True)
    if args.smoke:
        assert all(r["report_s"] > 0 and (r["gep_score"] is not None or r["pst_paired"] is not None) for r in rows)
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
