"""Set up Django for a benchmark script run from the repository root or bench/."""
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def ensure_database(url: str) -> None:
    """Create the benchmark's own PostgreSQL database when it is missing."""
    import psycopg

    base, name = url.rsplit("/", 1)
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')


def setup(database_url: str | None = None) -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.base")
    os.environ.setdefault("DEBUG", "false")
    os.environ.setdefault("SECRET_KEY", "bench-only")
    if database_url:
        os.environ["DATABASE_URL"] = database_url
    import django

    django.setup()


def start(url: str) -> None:
    """A benchmark's start: its own database created when missing, Django set up on it, migrated."""
    ensure_database(url)
    setup(url)
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
