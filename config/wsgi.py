"""WSGI entry point (uWSGI with config/uwsgi.ini in the deployment; gunicorn serves it too). Defaults to the production settings: a server started without
DJANGO_SETTINGS_MODULE must not come up with DEBUG-friendly defaults (docs/deployment.md). The demo
(`make run`) and the tests name their settings explicitly."""
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.production")
application = get_wsgi_application()

# A report built in a request (under the work budget) finds its libraries loaded (metrics/core/preload.py).
from metrics.core.preload import preload  # noqa: E402 - after the app registry is ready

preload()
