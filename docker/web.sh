#!/bin/sh
# The web app: gunicorn serving the admin, the dashboards, the JSON API and /healthz; whitenoise serves
# the static files collected at image build (`manage.py collectstatic`).
#   WEB_BIND (0.0.0.0), WEB_PORT (8000), WEB_WORKERS (2 processes), WEB_THREADS (4 per process),
#   WEB_TIMEOUT (60 s per request), FORWARDED_ALLOW_IPS (127.0.0.1: the proxies trusted for X-Forwarded-*)
# Extra arguments go to gunicorn.
set -eu
. "$(dirname "$0")/_common.sh"

# gunicorn's worker heartbeat files: on tmpfs, since a container's disk can stall them into timeouts.
if [ -d /dev/shm ] && [ -w /dev/shm ]; then set -- --worker-tmp-dir /dev/shm "$@"; fi

exec "$PYTHON" -m gunicorn crawladmin.wsgi:application \
  --bind "${WEB_BIND:-0.0.0.0}:${WEB_PORT:-8000}" \
  --workers "${WEB_WORKERS:-2}" \
  --threads "${WEB_THREADS:-4}" \
  --timeout "${WEB_TIMEOUT:-60}" \
  --graceful-timeout 30 \
  --forwarded-allow-ips "${FORWARDED_ALLOW_IPS:-127.0.0.1}" \
  --no-control-socket \
  --access-logfile - \
  --error-logfile - \
  "$@"
