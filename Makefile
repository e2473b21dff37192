# The two commands of the README — `make demo` and `make test` — bootstrap .venv themselves.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
# torch_geometric writes generated modules into TMPDIR and never deletes them (see notes).
SCRATCH := $(CURDIR)/.scratch

.PHONY: demo test lint bench install clean

install: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev]"
	@touch $(STAMP)

demo: $(STAMP)
	$(PY) platform/simulate.py describe --topology fat-tree --k 4
	$(PY) platform/simulate.py describe --topology fat-tree --k 20
	$(PY) platform/simulate.py describe --topology vl2 --k 20
	$(PY) platform/simulate.py describe --topology bcube --n 6 --k 3
	$(PY) platform/simulate.py describe --topology racks --racks 2,2,2,2 --server minsky

test: $(STAMP)
	@mkdir -p $(SCRATCH)
	TMPDIR=$(SCRATCH) $(PY) -m pytest -q
	$(PY) -m ruff check .

lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

bench: $(STAMP)
	@mkdir -p $(SCRATCH) benchmarks/results
	TMPDIR=$(SCRATCH) $(PY) benchmarks/run.py

clean:
	rm -rf $(SCRATCH) .pytest_cache .ruff_cache
