"""Celery application: Redis broker from REDIS_URL (settings), two queues (`generation`, `default`).
Defaults to the production settings, like config/wsgi.py (workers and beat run in production);
`make run` and the tests name their settings explicitly. manage.py keeps the base settings."""
import os
from typing import Any

from celery import Celery
from celery.signals import worker_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.production")

app = Celery("config")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_init.connect
def _preload_report_libraries(**_: Any) -> None:
    """The worker's parent imports the report's libraries before its pool forks: every child starts with
    them loaded and shares their pages (metrics/core/preload.py)."""
    from metrics.core.preload import preload

    preload()
