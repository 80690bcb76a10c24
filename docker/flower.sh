#!/bin/sh
# Flower, the Celery monitor (workers, queues, tasks), never without authentication. Flower reads its
# options from FLOWER_* variables: FLOWER_BASIC_AUTH=user:password[,user2:password2] (required),
# FLOWER_PORT (5555), FLOWER_ADDRESS (all interfaces). Every FLOWER_* variable must be a Flower option:
# Flower stops on one it does not know. Needs requirements-flower.txt. Extra arguments go to Flower.
set -eu
. "$(dirname "$0")/_common.sh"

: "${FLOWER_BASIC_AUTH:?set FLOWER_BASIC_AUTH=user:password; Flower is not started without authentication}"

exec "$PYTHON" -m celery -A crawladmin flower "$@"
