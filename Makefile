# The two commands the README opens with. Both create .venv and install with constraints.txt
# (which pins the CPU build of torch) before running.
PYTHON ?= python3
VENV ?= .venv
BIN = $(VENV)/bin
EXTRAS ?= dev,rl,llm,ray

.PHONY: install demo test test-fast lint clean

$(VENV)/.installed: setup.cfg pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q -c constraints.txt -e '.[$(EXTRAS)]'
	touch $@

install: $(VENV)/.installed

# The main job: a benchmark run on built-in instances (no API key needed).
demo: install
	$(BIN)/heuresis demo

# The whole test suite, slow end-to-end tests included (they run on small settings).
test: install
	$(BIN)/python -m pytest -q

test-fast: install
	$(BIN)/python -m pytest -q -m "not slow"

lint: install
	$(BIN)/ruff check heuresis_env agents baselines tests benchmarks examples

clean:
	rm -rf $(VENV) build *.egg-info
