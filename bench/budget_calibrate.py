"""Calibration of the request work budget's per-unit costs (metrics/snapshots/budget.py).

Builds one small PST campaign (single, paired and intervention settings; 30 annotators with consented
demographics: 3 genders, 6 age bands) in its own database, then times `report_build` with one option
turned on at a time and prints the seconds per unit the estimate uses:

- `n_boot` per image-draw, `n_perm` per image-draw (the report's PST tests);
- the annotators section per pair-permutation (fixed part) and per answer within it;
- the fixed cost of a report and the cost per answer (n_boot = n_perm = 0);
- opening a campaign (the GEP paper's 2,560 images), per question created;
- the comparison's tests of two such PST campaigns (`compare_payload`, 10,000 draws): seconds per unit of
  `compare_work` and the part that does not grow with it (the three GEP models' figure, the unit the
  constant is set from, comes from `bench/compare.py`, which prints the same ratio);
- a GEP campaign of the paper's design (2,560 images, 4,800 questions, 3 answers each): the report's
  `n_boot` per image-draw (GEP's bootstrap is far cheaper than PST's) and the machine labels import
  (`autolabel.importer.machine_labels_import`, one row per question), per row.

Two campaigns (30 and 60 annotators: the same images and groups, twice the answers) separate a cost's
fixed part from its per-answer part. Each figure is the best of two runs, as wall time and as CPU time:
this process's (`time.process_time`) plus its PostgreSQL backend's (/proc, `imports.backend_cpu_s`), so
the database's work is counted too. On a loaded machine the CPU time is the figure to read (what a quiet
machine's wall time would be, less the waits); the wall time there is several times it.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench_budget .venv/bin/python bench/budget_calibrate.py
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _django import ROOT, start  # noqa: E402

DEFAULT_DB = "postgres://postgres@127.0.0.1:5432/bench_budget"
SPEC: dict[str, Any] = {"name": "budget-calibration", "kind": "pst", "seed": 5, "design": {
    "samples": {"single": 3, "paired": 2, "intervention": 2},
    "identities": {"groups": [
        {"name": "male", "stereotype": "masculine", "identities": ["pilot", "ceo", "plumber", "firefighter"]},
        {"name": "female", "stereotype": "feminine", "identities": ["nurse", "nanny", "secretary", "dancer"]}]}},
    "backend": {"name": "placeholder"}}


def build(raters: int) -> Any:
    from django.contrib.auth.models import User

    from tests.builders.budget import grouped_campaign

    owner, _ = User.objects.get_or_create(username=f"budget-owner-{time.time_ns()}")
    return grouped_campaign(owner, raters=raters, spec=SPEC, name=f"budget-{time.time_ns()}")


def cpu_s() -> float:
    """CPU seconds so far of this process and of its PostgreSQL backend."""
    from imports import backend_cpu_s

    return time.process_time() + backend_cpu_s()


def best_of(run: Any, times: int = 2) -> tuple[float, float]:
    """(wall, CPU) seconds of `run()`, each the best of `times` runs after one warm-up run."""
    run()
    wall = cpu = float("inf")
    for _ in range(times):
        w, c = time.perf_counter(), cpu_s()
        run()
        wall, cpu = min(wall, time.perf_counter() - w), min(cpu, cpu_s() - c)
    return wall, cpu


def minus(a: tuple[float, float], b: tuple[float, float]) -> tuple[float, float]:
    return a[0] - b[0], a[1] - b[1]


def timed(campaign: Any, **options: Any) -> tuple[float, float]:
    from metrics.options import ReportOptions
    from metrics.snapshots.report import report_build

    opts = ReportOptions(**{"n_boot": 0, "n_perm": 0, **options})
    return best_of(lambda: report_build(campaign=campaign, options=opts))


def compare_cost(campaigns: list[Any], draws: int) -> tuple[int, tuple[float, float]]:
    """compare_work and the (wall, CPU) seconds of the comparison's tests (`compare_payload`)."""
    from metrics.compare.build import compare_payload
    from metrics.compare.options import CompareOptions
    from metrics.compare.services import compare_work
    from metrics.options import ReportOptions

    compare = CompareOptions(test="permutation", draws=draws)
    work = compare_work(campaigns=campaigns, compare=compare)
    return work, best_of(lambda: compare_payload(campaigns=campaigns, options=ReportOptions(), compare=compare))


def labels_cost(campaign: Any) -> tuple[int, tuple[float, float]]:
    """Rows and (wall, CPU) seconds of a machine labels import: one row per question of `campaign`."""
    from autolabel.importer import machine_labels_import

    rows = ["image,slot,choice,score"]
    for q in campaign.questions.filter(is_gold=False).order_by("id"):
        rows.append(f"{q.image_id},{q.slot},{q.choices[0]},0.5")
    data = ("\n".join(rows) + "\n").encode()
    return len(rows) - 1, best_of(lambda: machine_labels_import(campaign=campaign, labeller="calibration",
                                                                name="labels.csv", data=data))


def _us(seconds: tuple[float, float], units: float) -> str:
    return f"{seconds[0] / units * 1e6:.3f} us wall, {seconds[1] / units * 1e6:.3f} us CPU"


def open_cost() -> tuple[int, tuple[float, float]]:
    """Opening the GEP paper's design (2,560 images: 32 neutral prompts x 15 attributes, 480 explicit;
    x 5 samples): questions created and (wall, CPU) seconds of `questions_open` (annotation/services/opening.py)."""
    from django.contrib.auth.models import User

    from annotation.services.lifecycle import questions_open
    from campaigns.services import campaign_create
    from generation.models import Image

    owner, _ = User.objects.get_or_create(username=f"budget-owner-{time.time_ns()}")
    campaign = campaign_create(owner=owner, spec={"name": f"budget-open-{time.time_ns()}", "kind": "gep", "seed": 1,
                                                  "design": {"settings": ["neutral", "explicit"]},
                                                  "backend": {"name": "placeholder"}})
    Image.objects.bulk_create([Image(campaign=campaign, prompt_id=pid, sample_index=i, seed=sd, status=Image.Status.DONE,
                                     web_file=f"images/{pid}-{i}.webp")
                               for pid, seeds in campaign.prompts.values_list("id", "seeds")
                               for i, sd in enumerate(seeds)], batch_size=2000)
    wall, cpu = time.perf_counter(), cpu_s()
    created = questions_open(campaign=campaign)["questions_created"]
    return created, (time.perf_counter() - wall, cpu_s() - cpu)


def gep_units() -> None:
    """The GEP report's n_boot per image-draw and the machine labels import per row, on the GEP paper's
    design (placeholder images, 3 answers per question)."""
    from django.contrib.auth.models import User

    from tests.builders.metrics import annotators, answer_all, campaign_with_questions, gep_label

    owner, _ = User.objects.get_or_create(username=f"budget-owner-{time.time_ns()}")
    campaign, questions = campaign_with_questions(owner, {"name": f"budget-gep-{time.time_ns()}", "kind": "gep",
                                                          "seed": 3, "design": {"settings": ["neutral", "explicit"]},
                                                          "backend": {"name": "placeholder"}})
    answer_all(campaign, questions, gep_label, annotators(3, f"gep-{campaign.pk}-"))
    images = campaign.images.count()
    base = timed(campaign)
    boot = minus(timed(campaign, n_boot=400), base)
    print(f"GEP campaign: {images} images, {len(questions)} questions, {campaign.answers.count()} answers; base report "
          f"{base[0]:.3f} s wall / {base[1]:.3f} s CPU; n_boot: {_us(boot, 400 * images)} per image-draw", flush=True)
    rows, seconds = labels_cost(campaign)
    print(f"machine labels: {rows} rows, {seconds[0]:.3f} s wall, {seconds[1]:.3f} s CPU: {_us(seconds, rows)} per row")


NO_PAIRS = 1000  # min_group: every group merged into "other", so the annotators section tests no pair


def report_units(small: Any, large: Any) -> None:
    """The report's per-unit costs from the two campaigns (30 and 60 annotators)."""
    from generation.models import Image
    from metrics.snapshots import budget

    images = Image.objects.filter(campaign=small).count()
    answers = (small.answers.count(), large.answers.count())
    base = (timed(small), timed(large))
    per_answer = minus(base[1], base[0])
    print(f"base report (n_boot = n_perm = 0): {answers[0]} answers {base[0][0]:.3f} s wall / {base[0][1]:.3f} s CPU, "
          f"{answers[1]} answers {base[1][0]:.3f} / {base[1][1]:.3f} s: {_us(per_answer, answers[1] - answers[0])} "
          f"per answer; fixed {base[0][0] - per_answer[0] / (answers[1] - answers[0]) * answers[0]:.3f} s wall / "
          f"{base[0][1] - per_answer[1] / (answers[1] - answers[0]) * answers[0]:.3f} s CPU")
    shape = budget.annotator_pairs(small, min_group=5)
    boot = minus(timed(small, n_boot=400), base[0])
    print(f"n_boot: {_us(boot, 400 * images * (1 + shape.groups))} per image-draw (x (1 + {shape.groups} groups with "
          "their own figures), as the estimate counts)")
    perm = minus(timed(small, n_boot=100, n_perm=400, min_group=NO_PAIRS), timed(small, n_boot=100, min_group=NO_PAIRS))
    print(f"n_perm (the PST tests, no pair of groups): {_us(perm, 400 * images)} per image-draw")
    pairs = budget.annotator_pairs(small, min_group=2).pairs
    per_pair = [minus(timed(c, n_perm=200, min_group=2), timed(c, n_perm=200, min_group=NO_PAIRS)) for c in (small, large)]
    slope = minus(per_pair[1], per_pair[0])
    for count, seconds in zip(answers, per_pair, strict=True):
        print(f"annotators section, {pairs} pairs, {count} answers: {_us(seconds, 200 * pairs)} per pair-permutation")
    print(f"  per answer within a pair-permutation: {_us(slope, 200 * pairs * (answers[1] - answers[0]))}")


def main() -> None:
    url = os.environ.get("DATABASE_URL") or DEFAULT_DB
    start(url)

    from metrics.options import ReportOptions
    from metrics.snapshots import budget
    from metrics.snapshots.report import report_build

    os.chdir(ROOT)
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime())} UTC, load average {os.getloadavg()}", flush=True)
    small, large = build(30), build(60)
    print(f"campaigns: {small.images.count()} images, {small.questions.count()} questions; "
          f"{small.answers.count()} / {large.answers.count()} answers, 30 / 60 annotators", flush=True)
    report_units(small, large)
    work, seconds = compare_cost([small, large], 10_000)
    print(f"compare (2 PST campaigns, 10,000 draws): compare_work {work:,}; {seconds[0]:.3f} s wall, "
          f"{seconds[1]:.3f} s CPU: {_us(seconds, work)} per image-draw", flush=True)
    gep_units()
    for opts in ({}, {"n_boot": 0, "n_perm": 10_000, "min_group": 2}, {"n_perm": 2000, "min_group": 2}):
        est = budget.report_estimate(small, ReportOptions(**opts))
        wall, cpu = time.perf_counter(), cpu_s()
        report_build(campaign=small, options=ReportOptions(**opts))
        print(f"{opts or 'the defaults'}: estimated {est.seconds:.2f} s {est.as_dict()}; measured "
              f"{time.perf_counter() - wall:.2f} s wall, {cpu_s() - cpu:.2f} s CPU", flush=True)
    created, seconds = open_cost()
    print(f"open: {created} questions in {seconds[0]:.2f} s wall, {seconds[1]:.2f} s CPU: {_us(seconds, created)} "
          "per question")
    print(f"load average at the end {os.getloadavg()}")


if __name__ == "__main__":
    main()
