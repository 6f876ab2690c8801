# Two entry points for a fresh machine (see README.md): `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --disable-pip-version-check -e '.[dev,docs,cluster,sim]'
	touch $@

.PHONY: setup demo test bench bench-sim docs docs-check
setup: $(STAMP)

demo: $(STAMP)
	$(BIN)/kueue-provreq run examples/gpu-training-admitted.yaml

# property tests run hypothesis' deterministic `ci` profile (200 examples per state machine);
# `make test HYPOTHESIS_PROFILE=thorough` runs the 10,000-example one
HYPOTHESIS_PROFILE ?= ci
export HYPOTHESIS_PROFILE

test: $(STAMP)
	$(BIN)/ruff check kueue_provreq tests benchmarks docs
	$(BIN)/mypy
	$(BIN)/python -m pytest
	$(MAKE) docs-check

# the Sphinx site and its doctests, warnings as errors; diagrams as SVG when graphviz is
# installed (`make docs` installs it from Debian's packages), as Mermaid text otherwise
docs-check: $(STAMP)
	$(BIN)/python -m sphinx -q -W --keep-going -b html docs docs/_build/html
	$(BIN)/python -m sphinx -q -W -b doctest docs docs/_build/doctest

docs: $(STAMP)
	command -v dot >/dev/null || (apt-get update -qq && apt-get install -y -qq graphviz) || \
		echo "graphviz not installed: diagrams will be Mermaid text only"
	$(MAKE) docs-check
	@echo "open docs/_build/html/index.html"

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_core.py

# 100,000 simulated workloads against the settle benchmark (long: minutes)
bench-sim: $(STAMP)
	$(BIN)/python benchmarks/bench_sim.py
