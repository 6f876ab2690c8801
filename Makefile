# Two entry points for a fresh machine (see README.md): `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --disable-pip-version-check -e '.[dev]'
	touch $@

.PHONY: setup demo test bench
setup: $(STAMP)

demo: $(STAMP)
	$(BIN)/kueue-provreq run examples/gpu-training-admitted.yaml

test: $(STAMP)
	$(BIN)/mypy
	$(BIN)/python -m pytest

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_core.py
