"""docs/examples/package_report.py (the worked example of docs/metrics.md) runs on a replication
package built here, with the database unreachable, and prints the report's headline figure next to
its two new statistics."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from metrics.package import report_from_package
from tests.builders.metrics import SMALL_PST, messy_campaign
from tests.builders.package import package_bytes

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]


def test_the_worked_example_runs_on_a_package(api: APIClient, researcher: User, tmp_path: Path) -> None:
    campaign = messy_campaign(researcher, SMALL_PST, seed=6, odd_choices=False)
    path = tmp_path / "package.zip"
    path.write_bytes(package_bytes(api, campaign.pk))
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    env.update(DATABASE_URL="postgres://postgres@127.0.0.1:9/unreachable", REDIS_URL="redis://127.0.0.1:9/0")
    done = subprocess.run([sys.executable, str(ROOT / "docs" / "examples" / "package_report.py"), str(path),
                           "--n-boot", "50", "--seed", "3"], capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout)
    report = report_from_package(str(path), n_boot=50, seed=3)
    assert out["kind"] == "pst" and out["headline"] == report["pst"]["paired"]["overall"]
    assert out["questions"] == report["counts"]["questions"] and out["answers"] == report["counts"]["answers"]
    assert out["alpha_all_answers"] == report["agreement"]["overall"]["krippendorff_alpha"]
    assert -1 <= out["alpha_first_two_answers"] <= 1
    low, high = out["unanimous_share_ci"]
    assert 0 <= low <= out["unanimous_share"] <= high <= 1
