#!/bin/sh
# The cluster's one beat: periodic tasks from the database schedule (django-celery-beat), editable in the
# admin. Exactly one per cluster: two would dispatch everything twice (harmless, guarded, but wasted).
# Remote control on, as node beat@<host>: `celery inspect ping` (docker/healthcheck.py beat) then says
# whether its scheduler is still ticking. LOG_LEVEL (INFO); extra arguments go to `celery beat`.
set -eu
. "$(dirname "$0")/_common.sh"

exec "$PYTHON" -m celery -A crawladmin beat --enable-remote-control -n "beat@%h" -l "${LOG_LEVEL:-INFO}" "$@"
