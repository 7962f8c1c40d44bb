"""Settings have no side effect on the disk: importing them creates no folder; Django's start
(campaigns' AppConfig.ready -> common.localdirs) creates var/, the static root and, with the
file-system Celery broker, its queue folders."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(code: str, var_dir: Path) -> None:
    env = {k: v for k, v in os.environ.items()
           if k not in ("REDIS_URL", "DATABASE_URL", "STATIC_ROOT", "CELERY_BROKER_URL", "MEDIA_ROOT")}
    env.update(VAR_DIR=str(var_dir), DJANGO_SETTINGS_MODULE="config.settings.base")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, check=True, timeout=120)


def test_importing_settings_creates_no_folder(tmp_path: Path) -> None:
    var_dir = tmp_path / "var"
    _run("import config.settings.base as s; assert s.CELERY_BROKER_URL == 'filesystem://'", var_dir)
    assert not var_dir.exists()


def test_django_start_creates_the_local_folders(tmp_path: Path) -> None:
    var_dir = tmp_path / "var"
    _run("import django; django.setup()", var_dir)
    for sub in ("staticfiles", "celery/queue", "celery/processed", "celery/control"):
        assert (var_dir / sub).is_dir(), sub
