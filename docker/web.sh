#!/bin/sh
# The web app: gunicorn serving the admin, the dashboards, the JSON API and /healthz; whitenoise serves
# the static files collected at image build (`manage.py collectstatic`).
#   WEB_BIND (0.0.0.0), WEB_PORT (8000), WEB_WORKERS (2 processes), WEB_THREADS (4 per process),
#   WEB_TIMEOUT (60 s per request), FORWARDED_ALLOW_IPS (127.0.0.1: the proxies trusted for X-Forwarded-*)
# Extra arguments go to gunicorn.
#
# gthread workers: each process serves WEB_THREADS requests at once, so one waiting on PostgreSQL or
# Redis does not hold up the rest, and keep-alive connections (the grid's script, API pollers) stay
# open. A page's Python is CPU-bound and holds its process's GIL, so WEB_WORKERS is the number of cores
# the web app may use; WEB_THREADS covers the waits. bench/dashboard.py starts the web app with this
# script (bench/DASHBOARD.md: its figures, and how 2 x 4 compared with other settings).
set -eu
. "$(dirname "$0")/_common.sh"

# gunicorn's worker heartbeat files: on tmpfs, since a container's disk can stall them into timeouts.
if [ -d /dev/shm ] && [ -w /dev/shm ]; then set -- --worker-tmp-dir /dev/shm "$@"; fi

exec "$PYTHON" -m gunicorn crawladmin.wsgi:application \
  --bind "${WEB_BIND:-0.0.0.0}:${WEB_PORT:-8000}" \
  --worker-class gthread \
  --workers "${WEB_WORKERS:-2}" \
  --threads "${WEB_THREADS:-4}" \
  --timeout "${WEB_TIMEOUT:-60}" \
  --graceful-timeout 30 \
  --forwarded-allow-ips "${FORWARDED_ALLOW_IPS:-127.0.0.1}" \
  --no-control-socket \
  --access-logfile - \
  --error-logfile - \
  "$@"
