# Two commands do everything on a fresh machine:
#   make run   - virtualenv, install, migrate, demo data, worker + web on http://127.0.0.1:8000
#   make test  - virtualenv, install, the whole test suite (needs PostgreSQL and Redis, see README)
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8000
# The suite runs on the real services; override to point elsewhere.
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/test
TEST_REDIS_URL ?= redis://127.0.0.1:6379/15

.PHONY: setup run test lint typecheck lock clean

setup: $(STAMP)

$(STAMP): requirements/lock.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements/lock.txt
	touch $(STAMP)

run: setup
	HOST=$(HOST) PORT=$(PORT) BIN=$(BIN) bash scripts/run-demo.sh

test: setup
	bash scripts/ensure-test-tools.sh
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	DATABASE_URL=$${DATABASE_URL:-$(TEST_DATABASE_URL)} REDIS_URL=$${REDIS_URL:-$(TEST_REDIS_URL)} $(BIN)/mypy
	DATABASE_URL=$${DATABASE_URL:-$(TEST_DATABASE_URL)} REDIS_URL=$${REDIS_URL:-$(TEST_REDIS_URL)} \
		$(BIN)/python -m pytest $(PYTEST_ARGS)

lint: setup
	$(BIN)/python -m ruff check .
	$(BIN)/lint-imports

# mypy with the Django plugin on the typed core (files listed in pyproject.toml [tool.mypy]).
typecheck: setup
	DATABASE_URL=$${DATABASE_URL:-$(TEST_DATABASE_URL)} REDIS_URL=$${REDIS_URL:-$(TEST_REDIS_URL)} $(BIN)/mypy

# Re-pin every package after changing requirements/*.in (run in a clean venv).
lock:
	rm -rf .venv-lock && $(PYTHON) -m venv .venv-lock
	.venv-lock/bin/pip install --quiet -r requirements/test.in
	.venv-lock/bin/pip freeze --exclude-editable | sort > requirements/lock.txt
	rm -rf .venv-lock

clean:
	rm -rf $(VENV) var
