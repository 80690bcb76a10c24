# Sourced by the start scripts (not run alone): work from the project root, pick the Python,
# and refuse to start with a value still copied from docker/example.env.
cd "$(dirname "$0")/.."

# The image sets PYTHON; on a machine without Docker the project's .venv is used when there is one.
if [ -z "${PYTHON:-}" ]; then
  if [ -x .venv/bin/python ]; then PYTHON=.venv/bin/python; else PYTHON=python3; fi
fi

for _name in DJANGO_SECRET_KEY DATABASE_URL CELERY_BROKER_URL CRAWLADMIN_API_TOKEN FLOWER_BASIC_AUTH; do
  eval "_value=\${$_name:-}"
  case "$_value" in
    *change-me*)
      echo "$0: $_name still holds the placeholder from docker/example.env; set a real value" >&2
      exit 64
      ;;
  esac
done
unset _name _value
