"""docker-compose.yml is not run here (no Docker engine), so check that it is valid and uses the
settings names the code reads."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent


def _compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_compose_describes_the_production_shape() -> None:
    services = _compose()["services"]
    assert {"web", "worker-gpu", "worker-default", "db", "redis", "s3"} <= set(services)
    assert services["web"]["command"][:3] == ["uwsgi", "--ini", "config/uwsgi.ini"]  # tests/test_web_server.py
    gpu = services["worker-gpu"]
    assert gpu["command"][gpu["command"].index("-Q") + 1] == "generation"
    assert gpu["command"][gpu["command"].index("--concurrency") + 1] == "1"
    assert gpu["deploy"]["resources"]["reservations"]["devices"][0]["driver"] == "nvidia"
    default = services["worker-default"]
    assert default["command"][default["command"].index("-Q") + 1] == "default"
    for name in ("web", "worker-gpu", "worker-default"):
        assert "db" in services[name]["depends_on"] and "redis" in services[name]["depends_on"]


def test_compose_environment_names_are_read_by_the_settings() -> None:
    settings_text = "\n".join(p.read_text() for p in (ROOT / "config" / "settings").glob("*.py"))
    read = set(re.findall(r'env_(?:str|bool|int|list|required)\("([A-Z0-9_]+)"', settings_text))
    read |= {"DATABASE_URL", "DJANGO_SETTINGS_MODULE"}  # dj-database-url and Django itself
    external = {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "OPENAI_API_KEY", "HF_HOME"}  # boto3, openai, HF
    env = _compose()["x-app-env"]
    unknown = set(env) - read - external
    assert not unknown, f"docker-compose sets variables no code reads: {unknown}"
    for must in ("SECRET_KEY", "DATABASE_URL", "REDIS_URL", "MEDIA_STORAGE", "ALLOWED_HOSTS"):
        assert must in env


# -- Issue 24: the TLS proxy, its client-address header, and the settings each entry point uses --------
CADDYFILE = ROOT / "deploy" / "Caddyfile"


def _caddy_directives() -> list[str]:
    """The Caddyfile's directive lines (comments and blank lines dropped), its blocks balanced."""
    lines = [line.split("#", 1)[0].strip() for line in CADDYFILE.read_text().splitlines()]
    lines = [line for line in lines if line]
    depth = 0
    for line in lines:
        bare = re.sub(r"\{[^{}\s]+\}", "", line)  # placeholders such as {remote_host}, {$SITE_DOMAIN:localhost}
        depth += bare.count("{") - bare.count("}")
        assert depth >= 0, line
    assert depth == 0
    return lines


def test_only_the_tls_proxy_is_published_and_the_web_server_is_not() -> None:
    compose = _compose()
    services = compose["services"]
    proxy = services["proxy"]
    assert proxy["image"].startswith("caddy:")
    assert {"80:80", "443:443"} <= set(proxy["ports"])
    assert "./deploy/Caddyfile:/etc/caddy/Caddyfile:ro" in proxy["volumes"]
    assert "ports" not in services["web"] and services["web"]["expose"] == ["8000"]
    published = {name for name, service in services.items() if service.get("ports")}
    assert published == {"proxy"}, published
    env = compose["x-app-env"]
    assert str(env["TRUSTED_PROXY_COUNT"]) == "1" and env["TRUSTED_PROXY_HEADER"] == "X-Forwarded-For"
    assert env["SITE_URL"].split(":-", 1)[-1].startswith("https://")
    assert set(compose["volumes"]) >= {"caddy_data", "caddy_config"}


def test_the_proxy_overwrites_the_client_address_header_and_keeps_tls() -> None:
    lines = _caddy_directives()
    text = "\n".join(lines)
    sites = [line for line in lines if line.endswith("{")
             and not line.startswith(("reverse_proxy", "log", "request_body", "servers")) and line != "{"]
    assert sites == ["{$SITE_DOMAIN:localhost} {"], sites  # a bare domain: Caddy serves it over HTTPS
    assert "reverse_proxy web:8000 {" in lines
    # Overwrite (header_up replaces the value) with the TCP peer; never the client's own claim appended.
    assert "header_up X-Forwarded-For {remote_host}" in lines
    assert "header_up X-Forwarded-Proto {scheme}" in lines
    assert not re.search(r"X-Forwarded-For\s+.*\{(http\.request\.header|client_ip)", text)
    for forged in ("X-Real-IP", "Forwarded", "True-Client-IP", "CF-Connecting-IP"):
        assert f"header_up -{forged}" in lines, forged
    for weakening in ("trusted_proxies", "auto_https off", "tls off", "http://"):
        assert weakening not in text, weakening
    assert "max_size 1GB" in lines


def test_the_proxy_refuses_headers_the_web_server_would_drop() -> None:
    """uWSGI drops a request whose line and headers pass its buffer (config/uwsgi.ini `buffer-size`); behind the
    proxy that would be a 502. Caddy answers 431 first: its `max_header_size` (Go reads up to 4 KB past it), plus
    the headers it adds, stays under the buffer."""
    import configparser

    lines = _caddy_directives()
    assert lines[0] == "{" and "servers {" in lines  # the global options block comes first
    size = next(line.split()[1] for line in lines if line.startswith("max_header_size "))
    assert size.endswith("KB")
    ini = configparser.ConfigParser(strict=False, inline_comment_prefixes=(";",))
    ini.read(ROOT / "config" / "uwsgi.ini")
    assert int(size[:-2]) * 1024 + 4096 + 1024 < int(ini["uwsgi"]["buffer-size"])


def test_the_app_counts_the_address_the_proxy_wrote(rf: Any, settings: Any) -> None:
    """What the proxy forwards (one entry, overwritten) is what every per-address limit counts; a
    client-sent X-Forwarded-For never reaches the app (the proxy replaced it), and without the proxy
    setting the header is ignored."""
    from common.clientaddr import client_address

    settings.TRUSTED_PROXY_COUNT = 1
    request = rf.get("/", REMOTE_ADDR="172.18.0.5", HTTP_X_FORWARDED_FOR="198.51.100.7")
    assert client_address(request) == "198.51.100.7"
    settings.TRUSTED_PROXY_COUNT = 0
    assert client_address(request) == "172.18.0.5"


def _settings_module(code: str, tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SETTINGS_MODULE", "SECRET_KEY", "ALLOWED_HOSTS")}
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**clean, "VAR_DIR": str(tmp_path), **env},
                          capture_output=True, text=True, timeout=120)


def test_wsgi_and_celery_default_to_production_and_manage_py_to_base(tmp_path: Path) -> None:
    for module in ("config.wsgi", "config.celery"):
        probe = (f"import os, {module}; from django.conf import settings; "
                 "print(os.environ['DJANGO_SETTINGS_MODULE'], settings.DEBUG)")
        refused = _settings_module(probe, tmp_path)  # production refuses to start without its secrets
        assert refused.returncode != 0 and "SECRET_KEY" in refused.stderr, (module, refused.stderr[-500:])
        ok = _settings_module(probe, tmp_path, SECRET_KEY="s" * 60, ALLOWED_HOSTS="audit.example")
        assert ok.returncode == 0, ok.stderr[-1000:]
        assert ok.stdout.split()[-2:] == ["config.settings.production", "False"], (module, ok.stdout)
    manage = _settings_module("import os, manage; os.environ.pop('DJANGO_SETTINGS_MODULE', None); "
                              "import sys; sys.argv = ['manage.py', 'diffsettings', '--output', 'unified']; "
                              "manage.main()", tmp_path)
    assert manage.returncode == 0, manage.stderr[-1000:]
    assert "DEBUG = True" in manage.stdout or "+ DEBUG = True" in manage.stdout
    demo = (ROOT / "scripts" / "run-demo.sh").read_text()
    assert "export DJANGO_SETTINGS_MODULE=${DEMO_SETTINGS_MODULE:-config.settings.base}" in demo
