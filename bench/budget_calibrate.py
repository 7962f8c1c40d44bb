"""Calibration of the request work budget's per-unit costs (metrics/snapshots/budget.py).

Builds one small PST campaign (single, paired and intervention settings; 30 annotators with consented
demographics: 3 genders, 6 age bands) in its own database, then times `report_build` with one option
turned on at a time and prints the seconds per unit the estimate uses:

- `n_boot` per image-draw, `n_perm` per image-draw (the report's PST tests);
- the annotators section per pair-permutation (fixed part) and per answer within it;
- the fixed cost of a report and the cost per answer (n_boot = n_perm = 0);
- opening a campaign (the GEP paper's 2,560 images), per question created.

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


def timed(campaign: Any, **options: Any) -> float:
    from metrics.options import ReportOptions
    from metrics.snapshots.report import report_build

    opts = ReportOptions(**{"n_boot": 0, "n_perm": 0, **options})
    report_build(campaign=campaign, options=opts)  # warm
    best = float("inf")
    for _ in range(2):
        started = time.perf_counter()
        report_build(campaign=campaign, options=opts)
        best = min(best, time.perf_counter() - started)
    return best


def open_cost() -> tuple[int, float]:
    """Opening the GEP paper's design (2,560 images: 32 neutral prompts x 15 attributes, 480 explicit;
    x 5 samples): questions created and seconds of `questions_open` (annotation/services/opening.py)."""
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
    started = time.perf_counter()
    created = questions_open(campaign=campaign)["questions_created"]
    return created, time.perf_counter() - started


def main() -> None:
    url = os.environ.get("DATABASE_URL") or DEFAULT_DB
    start(url)

    from generation.models import Image
    from metrics.options import ReportOptions
    from metrics.snapshots import budget
    from metrics.snapshots.report import report_build

    os.chdir(ROOT)
    campaign = build(30)
    answers, images = campaign.answers.count(), Image.objects.filter(campaign=campaign).count()
    questions = campaign.questions.count()
    print(f"campaign: {images} images, {questions} questions, {answers} answers, 30 annotators")
    base = timed(campaign)
    boot = timed(campaign, n_boot=400) - base
    with_boot = timed(campaign, n_boot=100)
    perm = timed(campaign, n_boot=100, n_perm=400) - with_boot  # the PST tests run with intervals only
    groups = timed(campaign, n_perm=200, min_group=2) - base  # the annotators section's tests
    shape = budget.annotator_pairs(campaign, min_group=2)
    print(f"base report {base:.3f} s ({base / answers * 1e6:.2f} us per answer, fixed included)")
    print(f"n_boot: {boot / (400 * images) * 1e6:.3f} us per image-draw")
    print(f"n_perm: {perm / (400 * images) * 1e6:.3f} us per image-draw")
    print(f"annotators: pairs {shape.pairs}, answers per pair {shape.answers}: "
          f"{groups / (200 * shape.pairs) * 1e6:.1f} us per pair-permutation")
    for opts in ({}, {"n_boot": 0, "n_perm": 10_000, "min_group": 2}, {"n_perm": 2000, "min_group": 2}):
        est = budget.report_estimate(campaign, ReportOptions(**opts))
        print(f"estimate for {opts or 'the defaults'}: {est.seconds:.2f} s {est.as_dict()}")
    started = time.perf_counter()
    report_build(campaign=campaign, options=ReportOptions(n_perm=2000, min_group=2))
    print(f"measured for n_perm=2000 min_group=2: {time.perf_counter() - started:.2f} s")
    created, seconds = open_cost()
    print(f"open: {created} questions in {seconds:.2f} s: {seconds / created * 1e6:.1f} us per question")


if __name__ == "__main__":
    main()
