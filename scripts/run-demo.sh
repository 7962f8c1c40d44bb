#!/usr/bin/env bash
# Runs the product with its demo: migrate, demo accounts and campaigns, a Celery worker for both
# queues, and the web server. Ctrl-C stops everything.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-.venv/bin}
HOST=${HOST:-127.0.0.1}
PORT=${PORT:-8000}
# The demo chooses its settings explicitly (config/wsgi.py and config/celery.py default to production;
# manage.py to base): DEMO_SETTINGS_MODULE may name another module, an inherited DJANGO_SETTINGS_MODULE
# is not used.
export DJANGO_SETTINGS_MODULE=${DEMO_SETTINGS_MODULE:-config.settings.base}

$BIN/python manage.py migrate --noinput -v0
$BIN/python manage.py collectstatic --noinput -v0
$BIN/python manage.py demo

# Queue generation of the demo campaigns (placeholder images) so the worker below produces them
# while the UI shows progress. Idempotent: a second run queues only what is still pending.
if [ "${GENERATE:-1}" = 1 ]; then
  for id in $($BIN/python manage.py shell -v 0 -c "from campaigns.models import Campaign; print(' '.join(str(c.pk) for c in Campaign.objects.filter(owner__username='researcher', name__startswith='demo-', status__in=['draft', 'generating', 'generated'])))"); do
    $BIN/python manage.py campaign generate "$id"
  done
fi

LOG_DIR="${VAR_DIR:-var}/log"
mkdir -p "$LOG_DIR"
$BIN/celery -A config worker -Q generation,default --concurrency 1 --loglevel INFO >"$LOG_DIR/worker.log" 2>&1 &
WORKER=$!
trap 'kill $WORKER 2>/dev/null || true' EXIT INT TERM

echo
echo "Open http://$HOST:$PORT/ (researcher console and API docs at /api/docs/)."
echo "Log in with the demo accounts above. Worker log: $LOG_DIR/worker.log. Ctrl-C stops."
echo
$BIN/python manage.py runserver "$HOST:$PORT" --noreload
