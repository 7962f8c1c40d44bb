# Two commands do everything on a fresh machine:
#   make run   - virtualenv, light install (requirements/lock.txt: no torch), migrate, demo audit,
#                worker + web on http://127.0.0.1:8000
#   make test  - virtualenv, light + [gpu] + test installs, the whole test suite (needs PostgreSQL and Redis)
# The lock files are complete closures (scripts/lock.py), installed with --no-deps.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
PIP_INSTALL = $(BIN)/python -m pip install --quiet --no-deps
HOST ?= 127.0.0.1
PORT ?= 8000
# The suite runs on the real services; override to point elsewhere.
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/test
TEST_REDIS_URL ?= redis://127.0.0.1:6379/15

.PHONY: setup setup-test run test lint typecheck lock clean

setup: $(STAMP)

$(STAMP): requirements/lock.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP_INSTALL) -r requirements/lock.txt
	touch $(STAMP)

# The suite needs the [gpu] extra too (the diffusers and CLIP/BLIP code paths run on tiny local models).
setup-test: $(TEST_STAMP)

$(TEST_STAMP): $(STAMP) requirements/gpu-lock.txt requirements/test-lock.txt
	$(PIP_INSTALL) -r requirements/lock.txt -r requirements/gpu-lock.txt -r requirements/test-lock.txt
	touch $(TEST_STAMP)

run: setup
	HOST=$(HOST) PORT=$(PORT) BIN=$(BIN) bash scripts/run-demo.sh

test: setup-test
	bash scripts/ensure-test-tools.sh
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	DATABASE_URL=$${DATABASE_URL:-$(TEST_DATABASE_URL)} REDIS_URL=$${REDIS_URL:-$(TEST_REDIS_URL)} $(BIN)/mypy
	DATABASE_URL=$${DATABASE_URL:-$(TEST_DATABASE_URL)} REDIS_URL=$${REDIS_URL:-$(TEST_REDIS_URL)} \
		$(BIN)/python -m pytest $(PYTEST_ARGS)

lint: setup-test
	$(BIN)/python -m ruff check .
	$(BIN)/lint-imports

# mypy with the Django plugin over every product package (files listed in pyproject.toml [tool.mypy]).
typecheck: setup-test
	DATABASE_URL=$${DATABASE_URL:-$(TEST_DATABASE_URL)} REDIS_URL=$${REDIS_URL:-$(TEST_REDIS_URL)} $(BIN)/mypy

# Re-pin after changing requirements/*.in: pip's resolver (dry run, nothing installed) writes
# lock.txt (light), gpu-lock.txt and test-lock.txt; versions nothing pins are kept.
lock:
	rm -rf .venv-lock && $(PYTHON) -m venv .venv-lock
	.venv-lock/bin/pip install --quiet packaging
	.venv-lock/bin/python scripts/lock.py
	rm -rf .venv-lock

clean:
	rm -rf $(VENV) var
