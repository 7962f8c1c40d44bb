"""Set up Django for a benchmark script run from the repository root or bench/."""
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def setup(database_url: str | None = None) -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.base")
    os.environ.setdefault("DEBUG", "false")
    os.environ.setdefault("SECRET_KEY", "bench-only")
    if database_url:
        os.environ["DATABASE_URL"] = database_url
    import django

    django.setup()
