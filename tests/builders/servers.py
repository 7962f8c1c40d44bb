"""Real processes on 127.0.0.1 for tests: a free port, the project served by the deployment's web server
(uWSGI with config/uwsgi.ini), a private Redis server, and the URL of the test
database (for a subprocess to connect to it)."""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import requests
from django.db import connection

ROOT = Path(__file__).resolve().parents[2]
UWSGI = str(Path(sys.executable).parent / "uwsgi")
PG_BIN = next(iter(sorted(Path("/usr/lib/postgresql").glob("*/bin"))), None) if Path("/usr/lib/postgresql").exists() \
    else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def db_url() -> str:
    s = connection.settings_dict
    auth = s["USER"] + (f":{s['PASSWORD']}" if s["PASSWORD"] else "")
    return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


def wait_http(url: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            requests.get(url, timeout=2)
            return
        except requests.RequestException:
            time.sleep(0.2)
    raise AssertionError(f"{url} did not come up")


def web_command(port: int) -> list[str]:
    """The web server's command line on 127.0.0.1:`port`: the deployment's (docker-compose.yml `web`) with one
    process of four threads, so that a test's concurrent requests are served."""
    return [UWSGI, "--ini", str(ROOT / "config" / "uwsgi.ini"), "--http-socket", f"127.0.0.1:{port}",
            "--processes", "1", "--threads", "4"]


@contextmanager
def web(env: dict[str, str], port: int) -> Iterator[subprocess.Popen[bytes]]:
    """The web server (`web_command`) in its own process group (SIGKILL takes master and workers)."""
    full = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.test", "DEBUG": "false",
            "CONN_MAX_AGE": "60", **env}
    log = tempfile.TemporaryFile()  # never a pipe: a full pipe would block the server's logging
    proc = subprocess.Popen(web_command(port), cwd=ROOT, env=full, start_new_session=True,
                            stdout=log, stderr=log)
    try:
        try:
            wait_http(f"http://127.0.0.1:{port}/")
        except AssertionError as exc:  # say why: the server's own last words
            log.seek(0)
            raise AssertionError(f"{exc}; the server's log ends: {log.read()[-2000:].decode(errors='replace')}") from None
        yield proc
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        log.close()


@contextmanager
def private_redis(port: int) -> Iterator[None]:
    binary = shutil.which("redis-server")
    assert binary, "redis-server is needed (apt-get install redis-server)"
    proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        yield
    finally:
        proc.terminate()
        proc.wait(timeout=10)
