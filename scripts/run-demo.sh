#!/usr/bin/env bash
# Runs the product with its demo: migrate, demo accounts, campaigns and their synthetic audit, a Celery
# worker for both queues, and the web server. Ctrl-C stops everything.
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
# Demo accounts, campaigns and a complete synthetic audit of them (placeholder images generated in
# this process, simulated annotators and machine labels, through the product's services; idempotent).
$BIN/python manage.py demo

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
