# The two commands of the README — `make demo` and `make test` — bootstrap .venv themselves.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
# torch_geometric writes generated modules into TMPDIR and never deletes them (see notes).
SCRATCH := $(CURDIR)/.scratch

.PHONY: demo test e2e lint bench install clean

install: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev]"
	@touch $(STAMP)

demo: $(STAMP)
	@mkdir -p $(SCRATCH)
	$(PY) platform/simulate.py describe --topology fat-tree --k 4
	TMPDIR=$(SCRATCH) $(PY) platform/train.py --config tune/configs/demo.yaml

# The unit tests run on every core (pytest-xdist, at most 4 workers); the integration tests,
# which start Ray clusters and MLflow servers sized for the whole machine, one at a time.
test: $(STAMP)
	@mkdir -p $(SCRATCH)
	TMPDIR=$(SCRATCH) $(PY) -m pytest -q -m "not integration" -n auto --maxprocesses 4 --durations=10
	TMPDIR=$(SCRATCH) $(PY) -m pytest -q -m integration --durations=15
	$(PY) -m ruff check .

# The MLflow UI checked in headless Chromium (e2e/test_mlflow_ui.py); not part of `make test`.
e2e: $(STAMP)
	@mkdir -p $(SCRATCH)
	TMPDIR=$(SCRATCH) $(PY) -m pytest -q -s e2e/

lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

bench: $(STAMP)
	@mkdir -p $(SCRATCH) benchmarks/results
	TMPDIR=$(SCRATCH) $(PY) benchmarks/run.py

clean:
	rm -rf $(SCRATCH) .pytest_cache .ruff_cache
