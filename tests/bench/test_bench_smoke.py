"""Smoke tests of the benchmark scripts (bench/): each runs with tiny sizes in a subprocess, on its
own PostgreSQL database (derived from the test database's name, dropped afterwards), and must print
complete output with its integrity checks passed. They keep the scripts from rotting; the real
figures are in bench/README.md."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings

ROOT = Path(__file__).resolve().parents[2]


def _server() -> tuple[str, str]:
    """(postgres://user@host:port, the test database's name)."""
    db = settings.DATABASES["default"]
    if db["ENGINE"] != "django.db.backends.postgresql":
        pytest.skip("the benchmarks need PostgreSQL (DATABASE_URL); CI runs them there")
    host, port, user = db.get("HOST") or "127.0.0.1", db.get("PORT") or 5432, db.get("USER") or "postgres"
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    return f"postgres://{user}{password}@{host}:{port}", db["NAME"]


@pytest.fixture(scope="module")
def bench_template() -> Iterator[str]:
    """A database migrated once (in a subprocess, as the scripts do), copied for each benchmark: the
    scripts' own migrate step then finds nothing to do (about 4 s saved per script)."""
    import psycopg

    base, test_name = _server()
    name = f"{test_name}_bench_tmpl_{uuid.uuid4().hex[:6]}"[:63]
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    out = subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, 'bench'); import _django; "
                          f"_django.start({f'{base}/{name}'!r})"], capture_output=True, text=True, env=env, cwd=ROOT,
                         timeout=240)
    assert out.returncode == 0, out.stderr[-3000:]
    yield name
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def bench_database_url(bench_template: str) -> Iterator[str]:
    import psycopg

    base, test_name = _server()
    name = f"{test_name}_bench_{uuid.uuid4().hex[:8]}"[:63]
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{bench_template}"')
    yield f"{base}/{name}"
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def run(script: str, *args: str, url: str, timeout: int = 240, ok_line: bool = True) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SETTINGS_MODULE",)}
    env["DATABASE_URL"] = url
    out = subprocess.run([sys.executable, str(ROOT / "bench" / script), *args], capture_output=True, text=True,
                         env=env, cwd=ROOT, timeout=timeout)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    lines = out.stdout.strip().splitlines()
    if ok_line:
        assert lines[-1] == "smoke: OK", out.stdout[-3000:]
    return lines


def test_annotation_load_smoke(bench_database_url: str) -> None:
    lines = run("annotation_load.py", "--smoke", url=bench_database_url)
    result = json.loads(lines[-2])
    scenarios = {(r["scenario"], r["n"]) for r in result["rows"]}
    assert {("trivial", 1), ("hit", 1), ("hit", 3), ("paced", 3), ("one-question", 3)} <= scenarios
    for row in result["rows"]:
        assert row["error_count"] == 0
        if row["scenario"] != "trivial":
            assert row["integrity"]["ok"] and row["integrity"]["answers_stored"] > 0, row
            assert row["next_p95_ms"] > 0 and row["submit_p95_ms"] > 0 and row["answers_per_s"] > 0
    assert result["summary"]["integrity_ok"]


def test_annotation_load_chained_smoke(bench_database_url: str) -> None:
    """The chained cycle: the submit takes the next HIT, so after each annotator's first HIT request a
    cycle is one request."""
    lines = run("annotation_load.py", "--smoke", "--scenarios", "hit-chained,one-question-chained",
                url=bench_database_url)
    rows = json.loads(lines[-2])["rows"]
    assert {(r["scenario"], r["n"]) for r in rows} == {("hit-chained", 1), ("hit-chained", 3),
                                                      ("one-question-chained", 3)}
    for row in rows:
        assert row["error_count"] == 0 and row["integrity"]["ok"], row
        assert row["cycles"] > 2 * row["n"], row
        # One HIT request per annotator, then one submit per cycle (two requests per cycle unchained). The
        # count itself, not rate x elapsed: both are rounded, and at ~400 requests/s their product was off by 1.
        assert row["requests"] <= row["cycles"] + row["n"] + 1, row


def test_imports_smoke(bench_database_url: str) -> None:
    lines = run("imports.py", "--images", "300", "--rows", "300", "--smoke", url=bench_database_url)
    manifest, batch = json.loads(lines[-2])
    assert manifest["rows"] == manifest["stored"] == 300 and manifest["peak_rss_mb"] > 0
    assert batch["rows"] == 300 and batch["answers"] == batch["stored"] == 3000 and batch["peak_rss_mb"] > 0


def test_package_build_smoke(bench_database_url: str) -> None:
    lines = run("package_build.py", "--sizes", "3000", "--n-boot", "50", "--smoke", url=bench_database_url)
    (row,) = json.loads(lines[-2])
    assert row["answers"] >= 2800 and row["build_s"] > 0 and row["zip_mb"] > 0 and row["report_from_package_s"] > 0


def test_report_scale_smoke(bench_database_url: str) -> None:
    lines = run("report_scale.py", "--sizes", "3000", "--paper", "paper-pst", "--n-boot", "50", "--smoke",
                url=bench_database_url, ok_line=False)
    pst, row = json.loads(lines[-1])
    assert row["answers"] >= 2800 and row["report_s"] > 0 and row["csv_s"] > 0 and row["peak_rss_mb_report"] > 0
    assert row["kind"] == "gep" and row["gep_score"] is not None
    # The paper's PST design: 920 images, R = 3 answers per person, STS computed.
    assert pst["kind"] == "pst" and pst["images"] == 920 and pst["answers"] == 3 * (120 + 2 * 800)
    assert pst["pst_paired"] is not None and pst["report_s"] > 0


def test_import_steps_smoke(bench_database_url: str) -> None:
    lines = run("import_steps.py", "--rows", "30", "--explain", url=bench_database_url, ok_line=False)
    text = "\n".join(lines)
    assert "30 rows, 300 answers (300 in the file)" in text, text[-2000:]
    assert text.count("--- EXPLAIN INSERT INTO") == 2 and "COMMIT (deferred FK checks)" in text, text[-2000:]


def test_profile_hit_smoke(bench_database_url: str) -> None:
    lines = run("profile_hit.py", "--annotators", "3", "--cycles", "5", "--lines", "3", "--questions", "600",
                url=bench_database_url, ok_line=False)
    text = "\n".join(lines)
    # The SQL engine's cycle: 2 token lookups, 2 x BEGIN/COMMIT, 3 + 3 engine statements.
    assert "statements per cycle: 12" in text, text[-2000:]
    timed = [line for line in lines if " ms  x" in line]
    assert len(timed) == 7, text[-2000:]  # the token lookup and the six engine statements


def test_ppi_coverage_smoke(tmp_path: Path) -> None:
    """No database: the simulation alone, a few runs per scenario, its JSON complete."""
    out = tmp_path / "ppi.json"
    run("ppi_coverage.py", "--runs", "5", "--score-runs", "2", "--json", str(out), url="", ok_line=False)
    result = json.loads(out.read_text())
    assert set(result) == {"frequency", "vector", "sts", "gep_score"}
    for scenario in result.values():
        assert {"hybrid", "human_only", "machine_only"} <= set(scenario)
        assert 0 <= scenario["hybrid"]["coverage"] <= 1 and scenario["hybrid"]["mean_width"] > 0


def test_autolabel_embedding_bench_smoke() -> None:
    """bench/autolabel.py with the tiny CLIP: one row per batch size, images/s measured."""
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "autolabel.py"), "--images", "8", "--size", "64",
                          "--batch-sizes", "1,4"], capture_output=True, text=True, cwd=ROOT, timeout=240,
                         env={k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"})
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    rows = json.loads(out.stdout.strip().splitlines()[-1])
    assert [r["batch"] for r in rows] == [1, 4] and all(r["images_per_s"] > 0 and r["images"] == 8 for r in rows)


def test_compare_smoke(bench_database_url: str) -> None:
    lines = run("compare.py", "--attributes", "2", "--draws", "200", "--runs", "1", "--lines", "3", "--smoke",
                url=bench_database_url)
    result = json.loads(lines[-2])
    assert result["pairs"] == 3 and result["draws"] == 200 and result["answers"] > 0
    assert result["rows"] == 3 * 2 * (1 + 15)  # 3 pairs x (neutral, explicit) x (score + every attribute)
    assert result["best_cpu_s"] > 0 and result["cpu_by_part_s"]["significance"] > 0
    assert 0 < result["pooled_alpha"] < 1


def test_archive_export_smoke(bench_database_url: str) -> None:
    lines = run("archive_export.py", "--sizes", "3000", "--smoke", url=bench_database_url)
    (row,) = json.loads(lines[-2])
    assert row["answers"] > 2000 and row["rows"] > row["answers"] and row["estimate_s"] > 0 and row["cpu_s"] > 0
