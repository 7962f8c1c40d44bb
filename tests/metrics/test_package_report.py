"""The report from the replication package alone (issue 22): `metrics.package.report_from_package`
gives, key by key, the figures of `GET /api/campaigns/{id}/report/` with the same options and seed,
on PST, GEP, adaptive-redundancy and hybrid (machine-label) campaigns; the package carries what the
report needs (order of arrival, choices, machine failures, human sample, manifest)."""
from __future__ import annotations

import io
import json
import zipfile
from typing import Any

import pandas as pd
import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from annotation.models import Answer
from autolabel.models import MachineLabelFailure
from metrics.package import report_from_package
from tests.builders.campaigns import make_annotator, make_campaign, make_images, open_campaign
from tests.builders.machine import gep_sources_campaign, machine_labels
from tests.builders.metrics import SMALL_GEP, SMALL_PST, messy_campaign, stereotyped
from tests.builders.package import differences, package_bytes

pytestmark = pytest.mark.django_db

QUICK = {"n_boot": 60, "n_perm": 40, "seed": 11}


def _server(api: APIClient, campaign_id: int, **options: Any) -> dict[str, Any]:
    r = api.get(f"/api/campaigns/{campaign_id}/report/", {**QUICK, **options})
    assert r.status_code == 200, r.content[:500]
    return r.json()


def _same(server: dict[str, Any], package: dict[str, Any]) -> None:
    server = {k: v for k, v in server.items() if k != "annotators"}  # left out without published demographics
    assert differences(server, package) == []


@pytest.mark.parametrize("spec", [SMALL_PST, SMALL_GEP], ids=["pst", "gep"])
def test_messy_campaign_package_report_equals_server_report(api: APIClient, researcher: User,
                                                            spec: dict[str, Any]) -> None:
    campaign = messy_campaign(researcher, spec, seed=3, odd_choices=False)
    zipped = package_bytes(api, campaign.pk)
    for options in ({}, {"aggregation": "dawid_skene", "treatment": "excluded", "gep_tie_policy": "present"},
                    {"exclude_blocked": False, "seed": 99, "confidence": 0.9}):
        server = _server(api, campaign.pk, **options)
        package = report_from_package(zipped, **{**QUICK, **options})
        assert package["counts"]["answers"] == server["counts"]["answers"] > 0
        _same(server, package)


def test_adaptive_campaign_package_report_has_the_redundancy_block(api: APIClient, researcher: User) -> None:
    from annotation.hits import answers_submit, assignment_next

    campaign = make_campaign(researcher, settings=["explicit"], annotation={
        "hit_size": 5, "redundancy": {"min": 2, "max": 5, "threshold": 0.75}})
    make_images(campaign, "explicit", 8)
    open_campaign(campaign)
    people = [make_annotator(f"ad{i}", campaign=campaign)[0] for i in range(5)]
    for who in people:
        while (hit := assignment_next(annotator=who, campaign_id=campaign.pk)[0]) is not None:
            answers_submit(annotator=who, assignment_id=hit["id"], answers=[
                {"question": q["id"], "choice": "No" if who is people[1] and q["id"] % 3 == 0 else "Yes",
                 "time_ms": 900} for q in hit["questions"]])
    zipped = package_bytes(api, campaign.pk)
    server = _server(api, campaign.pk)
    package = report_from_package(zipped, **QUICK)
    assert package["redundancy"]["answers"] == Answer.objects.filter(campaign=campaign).count()
    _same(server, package)
    # Every answer's order of arrival in its question is in the package (1, 2, ... by answer id).
    answers = pd.read_parquet(io.BytesIO(zipfile.ZipFile(io.BytesIO(zipped)).read("data/answers.parquet")))
    for _, group in answers.groupby("question_id"):
        assert group.sort_values("answer_id").arrival.tolist() == list(range(1, len(group) + 1))


def test_hybrid_and_machine_sources_from_the_package(api: APIClient, researcher: User) -> None:
    campaign = gep_sources_campaign(researcher)
    failed = campaign.questions.filter(is_gold=False).order_by("id").first()
    MachineLabelFailure.objects.create(campaign=campaign, question=failed, labeller="clip_cls", error="unreadable")
    zipped = package_bytes(api, campaign.pk)
    z = zipfile.ZipFile(io.BytesIO(zipped))
    manifest = json.loads(z.read("package.json"))
    assert manifest["machine_labellers"] == ["clip_cls"] and manifest["human_sample"] is True
    failures = pd.read_parquet(io.BytesIO(z.read("data/machine_label_failures.parquet")))
    assert failures.question_id.tolist() == [failed.pk]
    for source in ("hybrid:clip_cls", "clip_cls", "human"):
        server = _server(api, campaign.pk, source=source)
        package = report_from_package(zipped, **QUICK, source=source)
        if source != "human":
            assert "auto" in package and package["source"]["name"] == source
        if source.startswith("hybrid"):
            assert package["hybrid"]["clip_cls"]["sample"]["kind"] == "human_sample"
        _same(server, package)
    with pytest.raises(Exception, match="no labels from 'clip_gender'"):
        report_from_package(zipped, source="clip_gender")


def test_pst_machine_labels_from_the_package(api: APIClient, researcher: User) -> None:
    campaign = messy_campaign(researcher, SMALL_PST, seed=8, odd_choices=False)
    machine_labels(campaign, "clip_gender", stereotyped, flip=0.2)
    zipped = package_bytes(api, campaign.pk)
    for source in ("clip_gender", "hybrid:clip_gender"):
        _same(_server(api, campaign.pk, source=source), report_from_package(zipped, **QUICK, source=source))


def test_bad_options_and_bad_packages_are_named(api: APIClient, researcher: User) -> None:
    from common.errors import ApplicationError

    campaign = messy_campaign(researcher, SMALL_PST, seed=4, odd_choices=False)
    zipped = package_bytes(api, campaign.pk)
    with pytest.raises(ApplicationError) as bad:
        report_from_package(zipped, n_boot=-1, colour="red")
    assert "colour" in bad.value.errors
    with pytest.raises(ApplicationError) as broken:
        report_from_package(b"not a zip")
    assert "package" in broken.value.errors
    old = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(zipped)) as src, zipfile.ZipFile(old, "w") as dst:
        for name in src.namelist():
            if name != "package.json":
                dst.writestr(name, src.read(name))
    with pytest.raises(ApplicationError, match="no package.json"):
        report_from_package(old.getvalue())
    hostile = io.BytesIO()  # read through common.zipsafe: unsafe paths are refused before any read
    with zipfile.ZipFile(io.BytesIO(zipped)) as src, zipfile.ZipFile(hostile, "w") as dst:
        for name in src.namelist():
            dst.writestr(name, src.read(name))
        dst.writestr("../escape.txt", "x")
    with pytest.raises(ApplicationError) as unsafe:
        report_from_package(hostile.getvalue())
    assert "unsafe path" in unsafe.value.errors["package"][0]


def test_command_recomputes_from_the_package_with_the_database_unreachable(api: APIClient, researcher: User,
                                                                          tmp_path: Any) -> None:
    """`manage.py report --package` under the settings manage.py uses by default, with DATABASE_URL
    and REDIS_URL pointing at a closed port: the same JSON as the server; HTML and CSV too."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    campaign = messy_campaign(researcher, SMALL_PST, seed=5, odd_choices=False)
    path = tmp_path / "package.zip"
    path.write_bytes(package_bytes(api, campaign.pk))
    server = _server(api, campaign.pk, treatment="excluded")
    root = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SETTINGS_MODULE",)}
    env.update(DATABASE_URL="postgres://postgres@127.0.0.1:9/unreachable", REDIS_URL="redis://127.0.0.1:9/0",
               PYTHONPATH=str(root))

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, str(root / "manage.py"), "report", "--package", str(path), *args],
                              capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=300)

    done = run("--n-boot", str(QUICK["n_boot"]), "--n-perm", str(QUICK["n_perm"]), "--seed", str(QUICK["seed"]),
               "--treatment", "excluded")
    assert done.returncode == 0, done.stderr[-3000:]
    _same(server, json.loads(done.stdout))
    html = run("--n-boot", "20", "--format", "html", "--out", str(tmp_path / "r.html"))
    assert html.returncode == 0, html.stderr[-3000:]
    assert campaign.name in (tmp_path / "r.html").read_text()
    csv = run("--n-boot", "20", "--format", "csv", "--out", str(tmp_path / "r.zip"))
    assert csv.returncode == 0, csv.stderr[-3000:]
    assert "answers.csv" in zipfile.ZipFile(tmp_path / "r.zip").namelist()
    with pytest.raises(CommandError, match="not both"):
        call_command("report", str(campaign.pk), "--package", str(path))
    with pytest.raises(CommandError, match="n_boot"):
        call_command("report", "--package", str(path), "--n-boot", "-3")
