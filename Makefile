# clearloop: `make run` starts the app in demo mode, `make check` is the fast tier (no services),
# `make test` runs the whole suite.
SHELL := /bin/bash
VENV  := .venv
BIN   := $(VENV)/bin
# Django 6 needs Python >= 3.12: scripts/find_python.sh looks on the PATH, then in pyenv's versions.
PYTHON ?= $(shell bash scripts/find_python.sh)
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/clearloop
TEST_REDIS_URL    ?= redis://127.0.0.1:6379/14

.PHONY: run check test install lint services system-deps bench conformance clean messages

# Three install levels, each a stamp on pyproject.toml: `run` needs the app only; `check` adds the
# dev toolchain; `test` adds what the live tiers use (Playwright, a websocket client, test servers).
define venv
	@if [ -z "$(PYTHON)" ]; then echo "clearloop needs Python 3.12 or newer (Django 6). Install python3.12 or set PYTHON=/path/to/python3.12." >&2; exit 1; fi
	@if [ -x $(BIN)/python ] && ! $(BIN)/python -c 'import sys; sys.exit(sys.version_info < (3, 12))'; then rm -rf $(VENV); fi
	[ -x $(BIN)/python ] || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
endef

$(BIN)/.installed-run: pyproject.toml
	$(venv)
	$(BIN)/pip install -q -e .
	touch $@

$(BIN)/.installed-dev: pyproject.toml
	$(venv)
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

$(BIN)/.installed: pyproject.toml
	$(venv)
	$(BIN)/pip install -q -e '.[live]'
	touch $@ $(BIN)/.installed-dev $(BIN)/.installed-run

install: $(BIN)/.installed

run: $(BIN)/.installed-run
	DEBUG=$${DEBUG:-1} $(BIN)/python manage.py migrate --noinput
	DEBUG=$${DEBUG:-1} $(BIN)/python manage.py seed_demo
	DEBUG=$${DEBUG:-1} exec $(BIN)/python manage.py runall

system-deps:
	@bash scripts/system_deps.sh

services:
	@bash scripts/ensure_services.sh

# The UI strings: makemessages (both domains) then compilemessages; needs GNU gettext (scripts/messages.sh).
messages: $(BIN)/.installed-run
	PYTHON=$(BIN)/python bash scripts/messages.sh

lint: $(BIN)/.installed-dev
	$(BIN)/ruff check .
	DEBUG=1 $(BIN)/mypy

# The fast tier: lint (ruff, mypy) and every test that needs no process besides pytest, on SQLite (no
# DATABASE_URL, no REDIS_URL), one pytest process per core (pytest-xdist; CHECK_WORKERS=0: one process).
# Run it while working; `make test` runs everything. mypy is incremental (.mypy_cache); pytest's
# rewritten test modules are cached in __pycache__, so PYTHONDONTWRITEBYTECODE is lifted for it.
CHECK_WORKERS ?= auto
check: lint
	env -u DATABASE_URL -u REDIS_URL -u PYTHONDONTWRITEBYTECODE DEBUG=1 CLEARLOOP_DATA_DIR=data/check \
		$(BIN)/python -m pytest -q -p no:cacheprovider -m "not live and not browser" \
		-n $(CHECK_WORKERS) --dist loadfile

# The whole suite (what CI runs): in two pytest-xdist processes when PostgreSQL takes their
# connections (scripts/test_workers.sh; one process otherwise, or with TEST_WORKERS=0), a test file
# per process at a time and every durability test in one of them, handed out in tests/conftest.py's
# order (--no-loadscope-reorder: files that start the live stack after the others); then the tests
# marked `alone` (they measure time or load, e.g. the hostile-runs soak's slowdown ratio) in one
# process with nothing beside them. 13-14 min here against 20-32 in one process (docs/architecture.md).
# tests/xdist_env.py gives each process a Redis database of its own; each has its own PostgreSQL test
# database and stacks, whose pools need max_connections >= 150.
TEST_WORKERS ?= $(shell bash scripts/test_workers.sh)
TEST_ENV = DATABASE_URL=$(TEST_DATABASE_URL) REDIS_URL=$(TEST_REDIS_URL) DEBUG=1
test: install system-deps services lint
	$(TEST_ENV) $(BIN)/python -m pytest -q -p no:cacheprovider \
		-p tests.xdist_env -n $(TEST_WORKERS) --dist loadgroup --no-loadscope-reorder -m "not alone"
	$(TEST_ENV) $(BIN)/python -m pytest -q -p no:cacheprovider -m alone

bench: install services
	DATABASE_URL=$(TEST_DATABASE_URL) REDIS_URL=$(TEST_REDIS_URL) DEBUG=1 $(BIN)/python -m bench

conformance: install
	bash conformance/run.sh

clean:
	rm -rf $(VENV) data .pytest_cache .ruff_cache
