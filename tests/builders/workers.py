"""Real Celery worker processes for tests, on the test database and the configured Redis broker."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import quote

from django.conf import settings
from django.db import connection

ROOT = Path(__file__).resolve().parent.parent.parent


def test_database_url() -> str:
    """The URL of the database this test runs on (pytest-django's `test_<name>`)."""
    s = connection.settings_dict
    if connection.vendor == "postgresql":
        auth = quote(s.get("USER") or "", safe="")
        if s.get("PASSWORD"):
            auth += ":" + quote(s["PASSWORD"], safe="")
        host = s.get("HOST") or "127.0.0.1"
        port = s.get("PORT") or 5432
        return f"postgres://{auth + '@' if auth else ''}{host}:{port}/{s['NAME']}"
    if connection.vendor == "sqlite" and s["NAME"] and ":memory:" not in str(s["NAME"]) and "mode=memory" not in str(s["NAME"]):
        return f"sqlite:///{s['NAME']}"
    raise AssertionError("worker tests need a database other processes can open: set DATABASE_URL (PostgreSQL)")


def broker_reset() -> None:
    """Empty our queues and the unacked set on this test's Redis database."""
    import redis

    assert settings.CELERY_BROKER_URL.startswith("redis://"), "worker tests need REDIS_URL (a real broker)"
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    client.delete("generation", "default", "unacked", "unacked_index", "unacked_mutex")


def process_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a worker or beat process: this test's database, broker and media."""
    return {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.test",
            "DATABASE_URL": test_database_url(), "REDIS_URL": settings.REDIS_URL,
            "CELERY_BROKER_URL": settings.CELERY_BROKER_URL, "MEDIA_ROOT": str(settings.MEDIA_ROOT),
            "MEDIA_STORAGE": "local", "CONN_MAX_AGE": "0", "PYTHONUNBUFFERED": "1", **(env or {})}


class Worker:
    def __init__(self, log_dir: Path, *, env: dict[str, str] | None = None, queues: str = "generation,default"):
        self.name = f"gentest-{uuid.uuid4().hex[:8]}@%h"
        self.log = log_dir / f"worker-{uuid.uuid4().hex[:6]}.log"
        self.handle = self.log.open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", queues, "--concurrency", "1",
             "-P", "prefork", "-n", self.name, "--without-gossip", "--without-mingle", "--without-heartbeat",
             "--loglevel", "INFO"],
            cwd=ROOT, env=process_env(env), stdout=self.handle, stderr=subprocess.STDOUT, start_new_session=True)

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_ready(self, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if " ready." in self.text():
                return
            assert self.proc.poll() is None, f"worker exited:\n{self.text()[-3000:]}"
            time.sleep(0.2)
        raise AssertionError(f"worker not ready after {timeout}s:\n{self.text()[-3000:]}")

    def kill(self) -> None:
        """SIGKILL the whole worker (main process and pool children): no chance to ack or requeue."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()
        self.handle.close()


def wait_for(predicate: Any, *, timeout: float, what: str, worker: Worker | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        if worker is not None:
            assert worker.proc.poll() is None, f"worker died:\n{worker.text()[-3000:]}"
        time.sleep(0.25)
    raise AssertionError(f"timed out waiting for {what}" + (f"\n{worker.text()[-3000:]}" if worker else ""))


class Beat(Worker):
    """A real `celery beat` (the periodic sweeper's clock), its schedule file in `log_dir`."""

    def __init__(self, log_dir: Path, *, env: dict[str, str] | None = None):
        self.name = "beat"
        self.log = log_dir / f"beat-{uuid.uuid4().hex[:6]}.log"
        self.handle = self.log.open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config", "beat", "--loglevel", "INFO",
             "-s", str(log_dir / f"beat-schedule-{uuid.uuid4().hex[:6]}")],
            cwd=ROOT, env=process_env(env), stdout=self.handle, stderr=subprocess.STDOUT, start_new_session=True)

    def wait_ready(self, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if "beat: Starting" in self.text() or "Scheduler: Sending" in self.text():
                return
            assert self.proc.poll() is None, f"beat exited:\n{self.text()[-3000:]}"
            time.sleep(0.2)
        raise AssertionError(f"beat not ready after {timeout}s:\n{self.text()[-3000:]}")
