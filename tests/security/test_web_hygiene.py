"""CSRF, production settings (check --deploy), throttles, CSP on annotator pages, body limits,
trace-free 500s."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.cache import cache
from django.test import Client, override_settings
from django.urls import path
from rest_framework.test import APIClient

from .conftest import World

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.django_db


def test_session_requests_without_csrf_token_are_refused(world: World) -> None:
    c = world.campaign.pk
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(world.a.user)
    assert client.post(f"/api/assignments/{world.assignment.pk}/heartbeat/").status_code == 403
    assert client.post(f"/api/campaigns/{c}/consent/", {"consent": True}, format="json").status_code == 403
    researcher = APIClient(enforce_csrf_checks=True)
    researcher.force_login(world.x)
    assert researcher.delete(f"/api/campaigns/{c}/").status_code == 403
    forms = Client(enforce_csrf_checks=True)
    for url in (f"/work/{c}/login/", f"/work/{c}/signup/", "/admin/login/"):
        assert forms.post(url, {"username": "x", "password": "y"}).status_code == 403, url
    # with the token from the page, the same session works
    page = forms.get(f"/work/{c}/login/")
    token = page.cookies["csrftoken"].value
    assert forms.post(f"/work/{c}/login/", {"username": "annie", "password": "wrong",
                                            "csrfmiddlewaretoken": token}).status_code == 200


def test_check_deploy_is_clean_with_production_settings(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("DEBUG", "REDIS_URL")}
    env.update(DJANGO_SETTINGS_MODULE="config.settings.production", SECRET_KEY="k" * 20 + "-Prod-Secret-" + "z9" * 20,
               ALLOWED_HOSTS="audit.example.org", DATABASE_URL=os.environ.get("DATABASE_URL", "sqlite:///x.db"),
               VAR_DIR=str(tmp_path))
    result = subprocess.run([sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"], cwd=ROOT,
                            env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_login_throttle_answers_429(world: World) -> None:
    cache.clear()
    with override_settings(LOGIN_THROTTLE_FAILURES=3):
        api = APIClient()
        for _ in range(3):
            assert api.post("/api/auth/token/", {"username": "xavier", "password": "bad"},
                            format="json").status_code == 400
        blocked = api.post("/api/auth/token/", {"username": "xavier", "password": "xavier-pass-123"}, format="json")
        assert blocked.status_code == 429 and "Too many failed logins" in blocked.json()["detail"]
        # another account from the same IP is not blocked
        assert api.post("/api/auth/token/", {"username": "yvonne", "password": "yvonne-pass-123"},
                        format="json").status_code == 200
        c = world.campaign.pk
        page = Client()
        for _ in range(3):
            assert page.post(f"/work/{c}/login/", {"username": "annie", "password": "bad"}).status_code == 200
        assert page.post(f"/work/{c}/login/", {"username": "annie", "password": "annie-Secret-pass-9"}).status_code == 429
        for _ in range(3):
            page.post("/admin/login/", {"username": "stella", "password": "bad"})
        assert page.post("/admin/login/", {"username": "stella", "password": "stella-pass-123"}).status_code == 429
    cache.clear()


def test_annotator_api_rate_limit(world: World, throttle_clock_frozen: float) -> None:
    cache.clear()
    with override_settings(THROTTLE_RATES={"annotator": "5/minute", "anon": "2/minute"}):
        client = world.client("annotator_a")
        codes = [client.post(f"/api/assignments/{world.assignment.pk}/heartbeat/").status_code for _ in range(7)]
        assert codes[:5] == [200] * 5 and codes[5:] == [429, 429]
        # researchers are not throttled
        x = world.client("researcher_x")
        assert {x.get(f"/api/campaigns/{world.campaign.pk}/").status_code for _ in range(7)} == {200}
        anon = APIClient()
        codes = [anon.post("/api/annotators/", {}, format="json").status_code for _ in range(3)]
        assert codes == [400, 400, 429]
    cache.clear()


def test_throttle_rates_come_from_the_environment(tmp_path: Path) -> None:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.base", "VAR_DIR": str(tmp_path),
           "THROTTLE_ANNOTATOR": "42/minute", "THROTTLE_ANON": "7/hour", "MAX_BODY_BYTES": "1234"}
    code = ("import django; django.setup(); from django.conf import settings as s; "
            "print(s.THROTTLE_RATES['annotator'], s.THROTTLE_RATES['anon'], s.DATA_UPLOAD_MAX_MEMORY_SIZE)")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert result.stdout.split() == ["42/minute", "7/hour", "1234"], result.stderr


def test_annotator_pages_send_a_content_security_policy(world: World) -> None:
    client = world.session_client("annotator_a")
    for url in (f"/work/{world.campaign.pk}/", f"/work/{world.campaign.pk}/login/"):
        response = Client().get(url) if url.endswith("login/") else client.get(url)
        csp = response["Content-Security-Policy"]
        for directive in ("default-src 'self'", "script-src 'self'", "style-src 'self'", "frame-ancestors 'none'",
                          "img-src 'self' data:"):
            assert directive in csp, (url, csp)
        assert "unsafe-inline" not in csp
        html = response.content.decode()
        assert "<script>" not in html and " onclick=" not in html and " style=" not in html


def test_csp_allows_the_s3_origin(tmp_path: Path) -> None:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.base", "VAR_DIR": str(tmp_path),
           "MEDIA_STORAGE": "s3", "S3_ENDPOINT_URL": "https://minio.example:9000/"}
    code = "import django; django.setup(); from django.conf import settings as s; print(s.CONTENT_SECURITY_POLICY)"
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert "img-src 'self' data: https://minio.example:9000;" in result.stdout, result.stderr


def test_huge_bodies_are_413(world: World) -> None:
    client = world.client("annotator_a")
    with override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=1000):
        body = '{"answers": [' + ",".join(['{"question": 1, "choice": "Yes"}'] * 100) + "]}"
        response = client.post(f"/api/assignments/{world.assignment.pk}/submit/", body,
                               content_type="application/json")
        assert response.status_code == 413 and "too large" in response.json()["detail"]
    with override_settings(MAX_UPLOAD_BYTES=1000):
        response = world.client("researcher_x").post(
            f"/api/campaigns/{world.campaign.pk}/images/import/", {"manifest": ("m.csv", b"x" * 5000)},
            format="multipart")
        assert response.status_code == 413


def _boom(request):  # type: ignore[no-untyped-def]
    raise RuntimeError("secret internal detail /srv/app/settings.py")


urlpatterns = [path("api/boom/", _boom), path("boom/", _boom)]


@override_settings(DEBUG=False, ROOT_URLCONF=__name__)
def test_500_without_stack_trace() -> None:
    import config.urls as project_urls

    globals()["handler500"] = project_urls.handler500
    client = Client(raise_request_exception=False)
    api = client.get("/api/boom/")
    assert api.status_code == 500 and api["Content-Type"] == "application/json"
    assert set(api.json()) == {"detail", "errors"}
    page = client.get("/boom/")
    assert page.status_code == 500
    for response in (api, page):
        body = response.content.decode()
        assert "secret internal detail" not in body and "Traceback" not in body and "settings.py" not in body
