"""docker-compose.yml is not run here (no Docker engine), so check that it is valid and uses the
settings names the code reads."""
from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def _compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_compose_describes_the_production_shape() -> None:
    services = _compose()["services"]
    assert {"web", "worker-gpu", "worker-default", "db", "redis", "s3"} <= set(services)
    assert "gunicorn" in services["web"]["command"]
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
