"""Extending the product's statistics from a replication package (notebook-style; docs/metrics.md,
"Replication package"). Runs from the product's repository root with no database:

    python docs/examples/package_report.py campaign-12-dataset.zip [--n-boot 1000] [--seed 7]

Each cell below is what a researcher would run in a notebook. `tests/metrics/test_package_example.py`
runs this script on a package built by the test suite, so it cannot rot.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the product's code (repository root)
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.base")  # what manage.py uses; no database


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("package", help="a replication package zip (GET /api/campaigns/{id}/export/dataset/)")
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    # --- Cell 1: the product's report, recomputed from the package (the server's figures, same seed).
    from metrics.package import report_from_package

    report = report_from_package(args.package, n_boot=args.n_boot, seed=args.seed)
    kind = report["campaign"]["kind"]

    # --- Cell 2: the same data object the report is computed from, and the product's own functions.
    from metrics.core import agreement
    from metrics.options import ReportOptions
    from metrics.package.read import package_load
    from metrics.sections.report import question_labels

    package = package_load(args.package)
    data = package.campaign_data()  # CampaignData: questions x answers arrays, exactly as the server's
    options = ReportOptions(n_boot=args.n_boot, seed=args.seed)
    labels, ties = question_labels(data, options)  # majority per question, ties kept as "tie"

    # --- Cell 3: a new statistic. Agreement on the first two answers of every question, in their
    # order of arrival (`data/answers.parquet` column `arrival`): under adaptive redundancy a
    # question stops early only when its first answers agree, so agreement over all answers is biased
    # upwards; the first two answers are collected whatever the outcome.
    import pandas as pd

    answers = pd.read_parquet(_member(args.package, "data/answers.parquet"))
    counted = answers[answers.counted].sort_values(["question_id", "answer_id"])
    counted = counted.assign(rank=counted.groupby("question_id").cumcount())
    first_two = counted[counted["rank"] < 2]
    votes = first_two.groupby(["question_id", "choice"]).size().unstack(fill_value=0)
    votes = votes[votes.sum(axis=1) == 2].to_numpy()
    alpha_first_two = agreement.krippendorff_alpha_from_counts(votes).alpha if votes.size else None

    # --- Cell 4: another new statistic with its interval from a library (statsmodels' Wilson): the
    # share of questions whose counted answers were unanimous.
    from statsmodels.stats.proportion import proportion_confint

    counts = data.vote_counts()
    answered = counts.sum(axis=1) >= 2
    unanimous = int((counts[answered].max(axis=1) == counts[answered].sum(axis=1)).sum())
    n = int(answered.sum())
    low, high = proportion_confint(unanimous, n, alpha=0.05, method="wilson") if n else (None, None)

    headline = (report["pst"].get("paired", report["pst"].get("single", {})).get("overall") if kind == "pst"
                else next((report["gep"][s]["score"] for s in ("neutral", "explicit") if s in report["gep"]), None))
    print(json.dumps({
        "campaign": report["campaign"]["name"], "kind": kind, "headline": headline,
        "questions": int(data.q_id.size), "answers": int(data.a_qidx.size), "ties": int(ties.sum()),
        "labels": {str(k): int(v) for k, v in zip(*np.unique(labels[labels != ""], return_counts=True), strict=True)},
        "alpha_all_answers": report["agreement"]["overall"]["krippendorff_alpha"],
        "alpha_first_two_answers": alpha_first_two,
        "unanimous_share": unanimous / n if n else None, "unanimous_share_ci": [low, high],
    }, indent=2))


def _member(path: str, name: str) -> object:
    """A file of the zip, readable by pandas (the package is a plain zip: unzip it in a notebook)."""
    import io
    import zipfile

    with zipfile.ZipFile(path) as z:
        return io.BytesIO(z.read(name))


if __name__ == "__main__":
    main()
