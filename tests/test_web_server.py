"""The deployment's web server: uWSGI with config/uwsgi.ini (docker-compose.yml `web`, the Dockerfile's CMD),
started on loopback as the tests' real-process fixtures start it (`tests.builders.servers.web`), against the
test database."""
from __future__ import annotations

import configparser
import os
import signal
import time

import pytest
import requests
import yaml

from annotation.services.annotators import annotator_create
from tests.builders.servers import ROOT, db_url, free_port, web

COMMAND = ["uwsgi", "--ini", "config/uwsgi.ini", "--http-socket", "0.0.0.0:8000"]


def _ini() -> configparser.ConfigParser:
    parser = configparser.ConfigParser(strict=False, inline_comment_prefixes=(";",))
    parser.read(ROOT / "config" / "uwsgi.ini")
    return parser


def test_compose_and_the_image_start_the_same_web_server() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    assert compose["services"]["web"]["command"] == COMMAND
    cmd = next(line for line in (ROOT / "Dockerfile").read_text().splitlines() if line.startswith("CMD "))
    assert yaml.safe_load(cmd[4:]) == COMMAND


def test_the_web_server_config_keeps_what_the_application_needs() -> None:
    """What a default uWSGI would get wrong for this application: threads (the report's extraction reads on two
    threads), the app imported after the fork (no shared database connection), SIGTERM as a stop, a request
    time limit, headers past 4 KB, and no kept connection on a worker that serves one request at a time."""
    ini = _ini()["uwsgi"]
    for flag in ("strict", "need-app", "master", "lazy-apps", "enable-threads", "die-on-term"):
        assert ini.get(flag) == "true", flag
    assert ini["module"] == "config.wsgi:application"
    assert 0 < int(ini["harakiri"]) <= 60
    assert int(ini["buffer-size"]) >= 16384
    assert ini["add-header"] == "Connection: close"
    assert "http-socket" not in ini  # given on the command line: a second one in the file would listen twice


@pytest.mark.django_db(transaction=True)
def test_the_web_server_serves_the_api_and_stops_on_sigterm() -> None:
    annotator_create(username="web-server", password="web-server-Secret-9", consent=True)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {"DATABASE_URL": db_url(), "REDIS_URL": os.environ.get("REDIS_URL", "")}
    with web(env, port) as proc:
        response = requests.post(f"{base}/api/auth/token/", json={"username": "web-server",
                                                                  "password": "web-server-Secret-9"}, timeout=10)
        assert response.status_code == 200, response.text
        assert response.json()["token"]
        assert response.headers["Connection"].lower() == "close"
        wrong = requests.post(f"{base}/api/auth/token/", json={"username": "web-server", "password": "nope"},
                              timeout=10)
        assert wrong.status_code in (400, 401), wrong.text
        # A 20 KB cookie (over uWSGI's default 4 KB request buffer) is read, not dropped.
        long = requests.get(f"{base}/", headers={"Cookie": "x=" + "a" * 20_000}, timeout=10)
        assert long.status_code == 200
        proc.send_signal(signal.SIGTERM)  # docker stop
        deadline = time.monotonic() + 15
        while proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert proc.poll() is not None, "uWSGI did not stop on SIGTERM"
        with pytest.raises(requests.ConnectionError):
            requests.get(f"{base}/", timeout=2)

