"""Celery application: Redis broker from REDIS_URL (settings), two queues (`generation`, `default`).
Defaults to the production settings, like config/wsgi.py (workers and beat run in production);
`make run` and the tests name their settings explicitly. manage.py keeps the base settings."""
import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.production")

app = Celery("config")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
