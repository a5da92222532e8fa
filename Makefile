# The two commands: `make run` (demo on 127.0.0.1:8000) and `make test` (the whole suite).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: install run test test-file test-task lint bench clean messages

# Each step says what it does and roughly how long it takes on a quiet 2-core machine.
# pip runs with -qq: its errors are printed, not setuptools' notes about editable installs.
$(STAMP): pyproject.toml clients/python/pyproject.toml
	@echo "[install 1/4] a virtual environment in $(VENV)/ and a current pip (seconds)"
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install -qq --upgrade pip
	@echo "[install 2/4] torch, pinned to the local CPU wheel so nothing pulls a CUDA build (about a minute)"
	@$(BIN)/python -m pip install -qq "torch==2.13.0"
	@echo "[install 3/4] Concord and its dependencies: Django, Celery, spaCy, MiniLM, test tools (1-3 minutes)"
	@$(BIN)/python -m pip install -qq -e ".[dev]"
	@echo "[install 4/4] the Python client, which tests/clients/ runs against a live server (seconds)"
	@$(BIN)/python -m pip install -qq -e "clients/python[pandas,datasets]"
	@touch $(STAMP)

install: $(STAMP)

# Embedded SQLite and in-process Celery, whatever the shell has in DATABASE_URL / REDIS_URL.
# `make run PORT=8080` (or HOST=0.0.0.0) serves elsewhere; the demo's links use that address.
HOST ?= 127.0.0.1
PORT ?= 8000
LOCAL := env -u DATABASE_URL -u REDIS_URL CONCORD_BASE_URL=http://$(HOST):$(PORT)/
run: install
	@echo "[run 1/3] migrating the embedded SQLite database, db.sqlite3 (seconds)"
	@$(LOCAL) $(BIN)/python manage.py migrate --noinput
	@echo "[run 2/3] demo accounts and one demo study per task type (under a minute)"
	@$(LOCAL) $(BIN)/python manage.py seed_demo --without-replays
	@echo "[run 3/3] serving; the six source-study replays build beside it (1-3 minutes; log: replays.log)"
	@echo "Concord runs on http://$(HOST):$(PORT)/ (log in with an account printed above)"
	@$(LOCAL) $(BIN)/python manage.py seed_demo --replays-only > replays.log 2>&1 &
	@# judge runs started from the page go on a thread of the server, never blocking the page
	@$(LOCAL) CONCORD_EAGER_IN_BACKGROUND=1 $(BIN)/python manage.py runserver $(HOST):$(PORT)

# Uses DATABASE_URL / REDIS_URL when set (CI: PostgreSQL and Redis), SQLite otherwise.
test: install
	$(BIN)/python -m pytest -q

# The fast loop, for a developer between edits (never CI): the migrated test database is kept
# between runs under a name keyed by the migrations (tests/template_db.py), and the pytest
# plugins that no test uses as a plugin are not loaded.
#   make test-file FILE=tests/test_toy_task_type.py
#   make test-task SLUG=stance   (its tests/task_types/<slug>/ and the contract tests)
FAST := $(BIN)/python -m pytest -q --reuse-db -p no:schemathesis -p no:anyio -p no:faker
CONTRACT_TESTS := tests/annotation/test_task_type_contract.py tests/studies/test_registry_checks.py \
	tests/llm_judges/test_prompts.py tests/llm_judges/test_builtin_prompt_wording.py tests/test_house.py
test-file: install
	@test -n "$(FILE)" || { echo "usage: make test-file FILE=tests/…py"; exit 2; }
	$(FAST) $(FILE)

test-task: install
	@test -d "tests/task_types/$(SLUG)" || { echo "usage: make test-task SLUG=<a folder of tests/task_types/>"; exit 2; }
	$(FAST) tests/task_types/$(SLUG) $(CONTRACT_TESTS)

# The house's checks, the same as CI runs before the tests.
lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	env -u DATABASE_URL -u REDIS_URL $(BIN)/python manage.py makemigrations --check --dry-run
	$(BIN)/lint-imports
	env -u DATABASE_URL -u REDIS_URL $(BIN)/mypy

bench: install
	$(BIN)/python bench/import_speed.py

clean:
	rm -rf $(VENV) db.sqlite3* staticfiles .pytest_cache .test-db

# Translation catalogues (docs/i18n.md): extract the marked strings into every .po (needs GNU
# gettext's xgettext), then compile them all (pure Python). `make messages LOCALE=xx` for another.
# (task_types/?* leaves out the packages, which keep their own catalogues, but not annotation/task_types.)
LOCALE ?= de
MM := env -u DATABASE_URL -u REDIS_URL $(abspath $(BIN))/python $(CURDIR)/manage.py makemessages -l $(LOCALE) --no-location
messages: install
	$(MM) --ignore='task_types/?*' --ignore='tests/*' --ignore='.venv/*' --ignore='clients/*' \
		--ignore='static/vendor/*' --ignore='bench/*' --ignore='data/*' --ignore='staticfiles/*'
	$(MM) -d djangojs --ignore='task_types/?*' --ignore='tests/*' --ignore='.venv/*' \
		--ignore='clients/*' --ignore='static/vendor/*' --ignore='bench/*' --ignore='data/*' \
		--ignore='staticfiles/*'
	for app in $$(ls -d task_types/*/ | grep -v __pycache__); do (cd $$app && mkdir -p locale && $(MM) && $(MM) -d djangojs); done
	env -u DATABASE_URL -u REDIS_URL $(BIN)/python manage.py compile_catalogs
