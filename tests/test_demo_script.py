"""`make run`'s script end to end, as a new user runs it: no services (SQLite, local media and the
file-system broker under a fresh VAR_DIR), demo accounts and campaigns, a Celery worker and the web
server. The demo lands on a complete synthetic audit: campaigns open with their placeholder images,
a demo annotator account printed with the others, simulated answers, machine labels of the stated
simulated labeller, and a report with data in every section (the hybrid one too), a comparison of
the two PST campaigns and a replication package to download."""
from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.builders.report_sections import empty_sections

ROOT = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_make_run_serves_the_demo_and_generates_its_images(tmp_path: Path) -> None:
    port = _free_port()
    env = {k: v for k, v in os.environ.items()
           if k not in ("DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE", "CELERY_TASK_ALWAYS_EAGER")}
    env.update(VAR_DIR=str(tmp_path / "var"), HOST="127.0.0.1", PORT=str(port), BIN=str(Path(sys.executable).parent))
    log = tmp_path / "demo.log"
    with log.open("w") as out:
        proc = subprocess.Popen(["bash", "scripts/run-demo.sh"], cwd=ROOT, env=env, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 480  # a loaded 2-core CI machine
        token, done, seen = None, 0, ""
        while time.monotonic() < deadline:
            assert proc.poll() is None, f"the demo script exited ({proc.returncode}):\n{log.read_text()[-3000:]}"
            seen = log.read_text()
            match = re.search(r"researcher\s+\S+\s+API token ([0-9a-f]{40})", seen)
            token = match.group(1) if match else None
            if token:
                try:
                    resp = httpx.get(f"http://127.0.0.1:{port}/api/campaigns/",
                                     headers={"Authorization": f"Token {token}"}, timeout=5)
                except httpx.HTTPError:
                    resp = None
                if resp is not None and resp.status_code == 200:
                    body = resp.json()
                    rows = body["results"] if isinstance(body, dict) else body
                    names = {c["name"] for c in rows}
                    assert {"demo-pst-occupation", "demo-gep"} <= names, names
                    done = sum((c.get("progress") or {}).get("images_done", 0) for c in rows)
                    if done >= 10:
                        break
            time.sleep(1)
        assert token, seen[-3000:]
        assert done >= 10, f"no images generated in time ({done}):\n{seen[-3000:]}"
        _assert_complete_audit(port, token, seen)
        page = httpx.get(f"http://127.0.0.1:{port}/accounts/login/", timeout=5)
        assert page.status_code == 200 and "<form" in page.text
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def _assert_complete_audit(port: int, token: str, printed: str) -> None:
    assert re.search(r"annotator\s+\S+\s+annotator: try the task page", printed), printed[-3000:]
    assert "Synthetic demo" in printed and "10% flipped at random" in printed
    api = httpx.Client(base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Token {token}"}, timeout=120)
    rows = api.get("/api/campaigns/").json()
    rows = rows["results"] if isinstance(rows, dict) else rows
    by_name = {c["name"]: c for c in rows}
    assert {"demo-pst-occupation", "demo-pst-model-b", "demo-gep"} <= set(by_name)
    for name, campaign in by_name.items():
        assert campaign["status"] == "open", (name, campaign["status"])
        kind = "pst" if name.startswith("demo-pst") else "gep"
        report = api.get(f"/api/campaigns/{campaign['id']}/report/").json()
        assert report["counts"]["answers"] > 100 and report["counts"]["ties"] >= (1 if kind == "pst" else 0), name
        assert report["campaign"]["synthetic"] is True
        assert empty_sections(report, kind) == [], name  # every section has data (issue 25)
        groups = report["annotators"]["fields"]["gender"]["groups"]
        assert groups["woman"]["annotators"] >= 5 and groups["man"]["annotators"] >= 5, groups
        hybrid = api.get(f"/api/campaigns/{campaign['id']}/report/", params={"source": "hybrid:sim_labeller"}).json()
        assert hybrid.get("auto", {}).get("sim_labeller") and hybrid.get("hybrid", {}).get("sim_labeller"), name
        assert empty_sections(hybrid, kind, "hybrid") == [], name
        accuracy = hybrid["auto"]["sim_labeller"]["agreement"]["overall"]["accuracy"]
        assert 0.7 < accuracy < 0.97, accuracy  # the stated 10 % flips, seen through the annotators' own errors
    a, b = by_name["demo-pst-occupation"]["id"], by_name["demo-pst-model-b"]["id"]
    compare = api.get("/api/reports/compare/", params={"campaigns": f"{a},{b}"})
    assert compare.status_code == 200, compare.text[:500]
    package = api.get(f"/api/campaigns/{a}/export/dataset/")
    assert package.status_code == 200 and package.content[:2] == b"PK", (package.status_code, package.text[:300])
