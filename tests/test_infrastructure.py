"""The project runs on the services it is configured with, reads its settings from the environment,
and CI cannot pass with skipped tests."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

ROOT = Path(__file__).resolve().parent.parent
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
pytest_plugins = ["pytester"]


def _settings_probe(env: dict[str, str], expr: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in (
        "DATABASE_URL", "REDIS_URL", "SECRET_KEY", "DEBUG", "ALLOWED_HOSTS", "MEDIA_STORAGE", "DJANGO_SETTINGS_MODULE")}
    code = f"import django, os; django.setup(); from django.conf import settings as s; print(repr(({expr})))"
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**clean, **env}, capture_output=True,
                          text=True, timeout=60)


@pytest.mark.django_db
def test_ci_runs_on_postgresql_and_a_real_redis_broker() -> None:
    if not IN_CI and not os.environ.get("DATABASE_URL"):
        pytest.skip("outside CI with no DATABASE_URL: runs on the embedded SQLite default")
    assert connection.vendor == "postgresql"
    assert settings.CELERY_BROKER_URL.startswith("redis://")
    from config.celery import app

    with app.connection_for_write() as conn:
        conn.ensure_connection(max_retries=1, timeout=5)
        assert conn.connected


def test_embedded_defaults_without_any_variable(tmp_path: Path) -> None:
    result = _settings_probe({"DJANGO_SETTINGS_MODULE": "config.settings.base", "VAR_DIR": str(tmp_path)},
                             "s.DATABASES['default']['ENGINE'], s.CELERY_BROKER_URL, s.DEBUG, "
                             "s.STORAGES['default']['BACKEND']")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ("('django.db.backends.sqlite3', 'filesystem://', True, "
                                     "'common.media.MediaStorage')")  # local files, signed URLs


def test_settings_come_from_the_environment(tmp_path: Path) -> None:
    env = {"DJANGO_SETTINGS_MODULE": "config.settings.base", "VAR_DIR": str(tmp_path),
           "DATABASE_URL": "postgres://u:p@db.example:5433/audit", "REDIS_URL": "redis://cache:6379/2",
           "DEBUG": "false", "ALLOWED_HOSTS": "a.example,b.example", "MEDIA_STORAGE": "s3",
           "S3_BUCKET": "bkt", "S3_ENDPOINT_URL": "http://127.0.0.1:9000"}
    result = _settings_probe(env, "s.DATABASES['default']['HOST'], s.DATABASES['default']['PORT'], "
                                  "s.DATABASES['default']['NAME'], s.CELERY_BROKER_URL, s.DEBUG, s.ALLOWED_HOSTS, "
                                  "s.STORAGES['default']['BACKEND'], s.STORAGES['default']['OPTIONS']['bucket_name']")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ("('db.example', 5433, 'audit', 'redis://cache:6379/2', False, "
                                     "['a.example', 'b.example'], 'common.s3_media.S3MediaStorage', 'bkt')")


@pytest.mark.parametrize(("env", "message"), [
    ({}, "SECRET_KEY"),
    ({"SECRET_KEY": "x" * 60}, "ALLOWED_HOSTS"),
    ({"SECRET_KEY": "x" * 60, "ALLOWED_HOSTS": "a.example"}, "DATABASE_URL"),
    ({"DEBUG": "maybe"}, "DEBUG='maybe' is not a boolean"),
])
def test_production_fails_loudly_on_missing_settings(tmp_path: Path, env: dict[str, str], message: str) -> None:
    result = _settings_probe({"DJANGO_SETTINGS_MODULE": "config.settings.production", "VAR_DIR": str(tmp_path), **env},
                             "s.DEBUG")
    assert result.returncode != 0
    assert message in result.stderr


def test_a_skipped_test_fails_in_ci(pytester: pytest.Pytester) -> None:
    pytester.makeconftest((ROOT / "conftest.py").read_text())
    pytester.makepyfile("import pytest\n\ndef test_x():\n    pytest.skip('no redis')\n")
    os.environ["CI"] = "true"
    try:
        result = pytester.runpytest_inprocess("-p", "no:django", "-p", "no:cacheprovider")
    finally:
        if not IN_CI:
            del os.environ["CI"]
    result.assert_outcomes(failed=1)
    assert "Skipped tests fail in CI" in result.stdout.str()


def test_make_test_typechecks_every_product_package() -> None:
    """`make test` runs mypy (Django plugin) on the files pyproject.toml lists, before pytest: every
    product package, and those folders exist, so a rename cannot silently drop one from the check."""
    import tomllib

    makefile = (ROOT / "Makefile").read_text()
    test_target = makefile.split("\ntest:", 1)[1].split("\n\n", 1)[0]
    assert "$(BIN)/mypy" in test_target and test_target.index("mypy") < test_target.index("pytest")
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    assert "mypy_django_plugin.main" in config["plugins"]
    for path in config["files"]:
        assert (ROOT / path).is_dir(), path
    apps = {"common", "config", "campaigns", "generation", "annotation", "autolabel", "metrics", "crowd", "console"}
    assert set(config["files"]) == apps
    assert config["disallow_untyped_defs"] is True
