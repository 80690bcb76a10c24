#!/bin/sh
# Bring the database schema up to date (and install the periodic tasks' rows). Run once per upgrade,
# before the workers, beat and the web app start; idempotent.
set -eu
. "$(dirname "$0")/_common.sh"

exec "$PYTHON" manage.py migrate --noinput "$@"
