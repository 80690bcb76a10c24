#!/bin/sh
# A Celery worker, in a container or on any machine of the cluster. Configured by the environment:
#   WORKER_QUEUES       queues, comma-separated (required): load, extract, active_scan, inactive_scan,
#                       housekeeping, monitor, render
#   WORKER_POOL         prefork (default: processes, for CPU work) or threads (for I/O: fetching, checking)
#   WORKER_CONCURRENCY  processes or threads (default: celery's, one process per CPU core)
#   WORKER_NAME         node name before "@host" (default: the first queue); unique per machine
#   CRAWLER_NUM         this machine's crawler number: its load / scan / monitor workers also take the
#                       servers pinned to it (queues load.c<N>, active_scan.c<N>, … monitor.c<N>)
#   WORKER_EVENTS       1 (default): send task events, which Flower shows; 0: off
#   LOG_LEVEL           INFO
# and the cluster's shared DATABASE_URL, CELERY_BROKER_URL and DJANGO_SECRET_KEY. Extra arguments go to
# `celery worker`. Without Docker, from a checkout with its .venv:
#   CRAWLER_NUM=2 WORKER_QUEUES=load WORKER_POOL=threads WORKER_CONCURRENCY=32 docker/worker.sh
set -eu
. "$(dirname "$0")/_common.sh"

: "${WORKER_QUEUES:?set WORKER_QUEUES, e.g. load or extract}"
name="${WORKER_NAME:-${WORKER_QUEUES%%,*}}"

# Gossip and mingle are chatter between workers that nothing here uses (state is in PostgreSQL).
set -- -Q "$WORKER_QUEUES" -P "${WORKER_POOL:-prefork}" -n "$name@%h" -l "${LOG_LEVEL:-INFO}" \
  --without-gossip --without-mingle "$@"
if [ -n "${WORKER_CONCURRENCY:-}" ]; then set -- -c "$WORKER_CONCURRENCY" "$@"; fi
if [ "${WORKER_EVENTS:-1}" = 1 ]; then set -- -E "$@"; fi

exec "$PYTHON" -m celery -A crawladmin worker "$@"
