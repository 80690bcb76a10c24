# crawladmin — the commands a newcomer types. `make demo`, `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python

.PHONY: install pywb demo test unit integration chaos testweb migrate lint clean docs

$(VENV)/.installed: requirements.txt requirements-dev.txt requirements-flower.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -r requirements-dev.txt
	touch $@

install: $(VENV)/.installed

# pywb, the replay tool the archive tests replay an export in, in a venv of its own: it pins a redis client
# older than Celery's (requirements-pywb.txt). tests/test_archive_replay.py makes it too when it is missing.
PYWB_VENV ?= .venv-pywb
$(PYWB_VENV)/.installed: requirements-pywb.txt
	$(PYTHON) -m venv $(PYWB_VENV)
	$(PYWB_VENV)/bin/pip install -q -r requirements-pywb.txt
	touch $@

pywb: $(PYWB_VENV)/.installed

# Embedded default: SQLite + in-process broker and worker. Starts the local test web, crawls it,
# prints the summary, then serves the admin with a password printed once.
# `make demo CHANNEL=json://127.0.0.1:9000/` also sends the demo servers' down and up alerts there.
demo: install
	$(PY) manage.py demo $(if $(CHANNEL),--channel '$(CHANNEL)')

# Every test but the chaos crawl and the slow ones (`make test-slow`): unit, the embedded end-to-end crawl, and the cluster crawl against
# PostgreSQL and Redis (127.0.0.1:5432 and a redis-server it starts itself; see README "Tests"). In one process
# unless TEST_WORKERS says how many (pytest-xdist; 0: none apart); see docs/development.md for what two cost.
TEST_WORKERS ?= 0
test: install pywb
	$(PY) -m pytest -m "not chaos and not slow" -n $(TEST_WORKERS) --durations=25

# The tests that take minutes each (marker `slow`): the unattended crawl, the health web, the jobs cluster,
# every command walked, the heartbeat's grace. CI runs them after `make test`.
test-slow: install pywb
	$(PY) -m pytest -m "slow and not chaos" --durations=10

unit: install pywb
	$(PY) -m pytest -m "not integration"

integration: install
	$(PY) -m pytest -m "integration and not chaos"

# The chaos crawl (tests/test_chaos.py): 20,000 pages on a private PostgreSQL and Redis while the
# load worker is SIGKILLed three times and Redis and PostgreSQL restart; about 5 minutes a run. CI runs it
# CHAOS_RUNS times in a row and every run must pass (any pytest exit code but 0, 5 = nothing ran included).
CHAOS_RUNS ?= 3
chaos: install
	@for i in $$(seq $(CHAOS_RUNS)); do \
		echo "== chaos run $$i of $(CHAOS_RUNS)"; \
		$(PY) -m pytest -m chaos -s tests/test_chaos.py || exit 1; \
	done

# The user guide (docs/, MkDocs): the references generated from the code first, then the site, failing on any
# warning (a broken link, a page left out of the navigation). The site is written to var/site.
docs: install
	$(PY) manage.py reference --out docs/reference
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet

testweb: install
	$(PY) -m testweb --port 8000

migrate: install
	$(PY) manage.py migrate

clean:
	rm -rf $(VENV) $(PYWB_VENV) var staticfiles .pytest_cache

lint: install
	$(VENV)/bin/ruff check .

# Benchmarks print figures; they are not tests.
.PHONY: bench bench-agents bench-ranking bench-monitor bench-dashboard bench-throughput
bench: bench-agents bench-ranking bench-monitor bench-dashboard bench-throughput

bench-agents: install
	$(PY) -m bench.agents_vs_sequential

bench-ranking: install
	$(PY) -m bench.ranking --db

bench-monitor: install
	$(PY) -m bench.monitor_checks

bench-dashboard: install
	$(PY) -m bench.dashboard

# Ours against Scrapy on a generated 50,000-page web served by our own nginx (Scrapy: bench-only dependency).
bench-throughput: install
	$(VENV)/bin/pip install -q -r requirements-bench.txt
	$(PY) -m bench.throughput
