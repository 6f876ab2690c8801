# Two entry points for a fresh machine (see README.md): `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --disable-pip-version-check -e '.[dev,docs,cluster,sim]'
	touch $@

.PHONY: setup demo test test-oracle bench bench-sim docs docs-check docs-screenshots compiled test-compiled bench-compiled oracle stories
setup: $(STAMP)

# `make demo`: the package with its runtime dependencies only (no dev, docs, test or `sim`
# tools: a venv of its own, .venv-demo/), then the story a platform engineer asks about, on
# Kueue's own provisioning sample (examples/demo/): the objects, why the Job waits, and what
# happens if Cluster Autoscaler fails it twice.
DEMO_VENV := .venv-demo
DEMO := $(DEMO_VENV)/bin/kueue-provreq
DEMO_STAMP := $(DEMO_VENV)/.installed

$(DEMO_STAMP): pyproject.toml
	$(PY) -m venv $(DEMO_VENV)
	$(DEMO_VENV)/bin/pip install -q --disable-pip-version-check -e .
	touch $@

demo: $(DEMO_STAMP)
	@printf '\n== 1/3  Kueue'"'"'s provisioning sample: a Job of 3 GPU pods, a ClusterQueue whose admission\n'
	@printf '        check asks Cluster Autoscaler for the nodes with a ProvisioningRequest\n\n'
	@printf '$$ kueue-provreq validate -f examples/demo/\n'
	@$(DEMO) validate -f examples/demo/
	@printf '\n== 2/3  Created at 09:00, still suspended at 09:07: why is it waiting?\n\n'
	@printf '$$ kueue-provreq explain -f examples/demo/cluster/dump.yaml --at 2024-01-01T09:07:00Z\n'
	@$(DEMO) explain -f examples/demo/cluster/dump.yaml --at 2024-01-01T09:07:00Z
	@printf '\n== 3/3  From 09:00: what if Cluster Autoscaler fails it twice (Failed=True), then provisions in 2 minutes?\n\n'
	@printf '$$ kueue-provreq forecast -f examples/demo/cluster/dump.yaml --at 2024-01-01T09:00:00Z --autoscaler fail@1m,fail@1m,provision@2m\n'
	@$(DEMO) forecast -f examples/demo/cluster/dump.yaml --at 2024-01-01T09:00:00Z --autoscaler fail@1m,fail@1m,provision@2m
	@printf '\nMore: README.md (every command), docs/ (make docs), make test (the whole suite).\n'

# property tests run hypothesis' deterministic `ci` profile (200 examples per state machine);
# `make test HYPOTHESIS_PROFILE=thorough` runs the 10,000-example one
HYPOTHESIS_PROFILE ?= ci
export HYPOTHESIS_PROFILE

test: $(STAMP)
	$(BIN)/ruff check kueue_provreq tests benchmarks docs
	$(BIN)/mypy
	$(BIN)/python -m pytest
	$(MAKE) docs-check

# the Sphinx site and its doctests, warnings as errors; no network (the diagrams show as Mermaid
# text unless `make docs` has fetched the script that draws them)
docs-check: $(STAMP)
	$(BIN)/python -m sphinx -q -W --keep-going -b html docs docs/_build/html
	$(BIN)/python -m sphinx -q -W -b doctest docs docs/_build/doctest

# The browser side of the docs comes from the npm registry, each package pinned by version and
# SHA-512, fetched once into .cache/docs/ (neither is committed; docs/diagrams.rst says why):
# Mermaid's single-file build, served with the site to draw the state diagrams, and
# playwright-core, which drives Debian's chromium for `make docs-screenshots`.
DOCS_CACHE := .cache/docs
MERMAID_VERSION := 12.3.0
MERMAID_SHA512 := sha512-4113TdXeLAsMruJ79OpFL5O8+LTFXhQqZ260rF3tgUmiNAtRm4Uume04I+65PRN6yZ69J4f8rVYWW8zRk65UYw==
PLAYWRIGHT_VERSION := 1.65.1
PLAYWRIGHT_SHA512 := sha512-hqPpz7blSMPxWVdoeE1yiBSzXsKiVOd2k+kjCvmUywD2GPO2Dd9HfcWnq9NN0GHbNZDFgZ9JfBFr+X5/BLo0qw==
MERMAID := docs/_vendor/mermaid/.mermaid-$(MERMAID_VERSION)
PLAYWRIGHT := $(DOCS_CACHE)/playwright-core-$(PLAYWRIGHT_VERSION)/index.mjs

# $(call npm_pack,NAME,VERSION,SHA512): fetch one package tarball and check it against the pin
define npm_pack
	@command -v npm >/dev/null || { echo "make: npm is needed to fetch $(1) (apt-get install npm)" >&2; exit 1; }
	@echo "fetching $(1)@$(2) from the npm registry into $(DOCS_CACHE)/ (once)"
	@mkdir -p $(DOCS_CACHE)
	@cd $(DOCS_CACHE) && npm pack --silent --no-fund $(1)@$(2) >/dev/null
	@$(PY) -c 'import base64, hashlib, sys; f, pin = sys.argv[1:]; got = "sha512-" + base64.b64encode(hashlib.sha512(open(f, "rb").read()).digest()).decode(); sys.exit(None if got == pin else f"{f}: SHA-512 {got} is not the pinned {pin}")' $(DOCS_CACHE)/$(1)-$(2).tgz '$(3)'
endef

$(DOCS_CACHE)/mermaid-$(MERMAID_VERSION).tgz:
	$(call npm_pack,mermaid,$(MERMAID_VERSION),$(MERMAID_SHA512))

$(DOCS_CACHE)/playwright-core-$(PLAYWRIGHT_VERSION).tgz:
	$(call npm_pack,playwright-core,$(PLAYWRIGHT_VERSION),$(PLAYWRIGHT_SHA512))

$(MERMAID): $(DOCS_CACHE)/mermaid-$(MERMAID_VERSION).tgz
	rm -rf $(@D) && mkdir -p $(@D)
	tar -xzf $< -C $(@D) --strip-components=2 package/dist/mermaid.min.js
	tar -xzf $< -C $(@D) --strip-components=1 package/LICENSE
	touch $@

$(PLAYWRIGHT): $(DOCS_CACHE)/playwright-core-$(PLAYWRIGHT_VERSION).tgz
	rm -rf $(@D) && mkdir -p $(@D)
	tar -xzf $< -C $(@D) --strip-components=1
	touch $@

docs: $(STAMP) $(MERMAID)
	$(MAKE) docs-check
	@echo "open docs/_build/html/index.html"

# the built site in a real browser, offline: every diagram drawn, complete, labels apart, within
# its frame; PNGs of the pages and diagrams in docs/_build/screenshots/
docs-screenshots: docs $(PLAYWRIGHT)
	command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium)
	PLAYWRIGHT_CORE=$(abspath $(PLAYWRIGHT)) node docs/screenshots.mjs docs/_build/html docs/_build/screenshots

# The real Kueue and a local control plane (etcd, kube-apiserver, kube-controller-manager, the
# Kueue manager), built with the go command from the modules pinned in oracle/*/go.mod into
# .oracle/bin/, with the CRDs and webhook manifests of the same module versions (oracle/README.md).
# `kueue-provreq testbed up` starts them; the tests that need them skip without them.
oracle:
	bash oracle/build.sh

# every scenario of specs/ and every example that is a scenario (examples/*.yaml) on the model and
# on the real Kueue (a testbed of its own, started and
# stopped here; needs `make oracle`): both verdicts per scenario, then
# `model N passed, M failed; real Kueue N passed, M failed, K skipped; disagree D`
test-oracle: $(STAMP)
	$(BIN)/python oracle/compare.py specs $(wildcard examples/*.yaml)

# Random stories on the model and on the real Kueue of a testbed started for them (`make oracle`
# first): `make stories STORIES=200` runs 200 from seed 0 (CI runs the first 20, tests/test_stories.py)
STORIES ?= 20
STORIES_STATE := .oracle/stories-testbed
stories: $(STAMP)
	@kubeconfig=$$($(BIN)/kueue-provreq testbed up --state $(STORIES_STATE)) || exit 2; \
	$(BIN)/kueue-provreq stories --cluster $$kubeconfig --count $(STORIES); status=$$?; \
	$(BIN)/kueue-provreq testbed down --state $(STORIES_STATE); exit $$status

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_core.py

# 100,000 simulated workloads against the settle benchmark (long: minutes)
bench-sim: $(STAMP)
	$(BIN)/python benchmarks/bench_sim.py

# The mypyc build (issue 10, measured again for issue 25; docs/performance.rst, "No compiled
# build, measured"): mypyc (shipped with the pinned mypy of the dev extra) over every core module,
# the hand-written models with them (native classes), in a copy of the package in build/compiled/.
# Interpreted stay: api/frozen.py (FrozenMap is a Mapping), api/quantity.py (an attrs class),
# api/immutable.py (the tests' guard) and errors.py (which interpreted edges subclass). Nothing
# else uses it; `make test-compiled` runs conformance, the engine and the property tests against it.
COMPILED_DIR := build/compiled
COMPILED_MODULES := kueue_provreq/world.py kueue_provreq/world_builder.py \
	$(addprefix kueue_provreq/api/,config.py constants.py evolve.py job.py memo.py meta.py model.py naming.py \
		objects.py provisioning.py queues.py workload.py) \
	$(filter-out %/__init__.py,$(sort $(wildcard kueue_provreq/engine/*.py kueue_provreq/controllers/*.py kueue_provreq/machines/*.py)))
COMPILED_STAMP := $(COMPILED_DIR)/.built

$(COMPILED_STAMP): $(STAMP) pyproject.toml $(shell find kueue_provreq -name '*.py')
	rm -rf $(COMPILED_DIR) && mkdir -p $(COMPILED_DIR)
	tar -cf - --exclude=__pycache__ kueue_provreq pyproject.toml | tar -xf - -C $(COMPILED_DIR)
	cd $(COMPILED_DIR) && $(abspath $(BIN))/mypyc $(COMPILED_MODULES) >mypyc.log 2>&1 || { tail -20 mypyc.log; exit 1; }
	touch $@

compiled: $(COMPILED_STAMP)

# The compiled build checked (not in CI, which keeps its time): the bundled scenarios, the engine,
# fast against verify mode and the property tests, run against build/compiled/ (first on
# PYTHONPATH; `python -P`: not the checkout's own package); tests/test_compiled.py checks that it
# compares by value wherever the package does.
COMPILED_TESTS := tests/test_compiled.py tests/test_engine.py tests/test_fast_verify.py tests/test_stateful.py \
	tests/test_parts.py tests/test_cohorts.py tests/test_partial_admission.py tests/test_scheduler_queue.py \
	tests/test_workload_controller.py tests/test_write_workload.py tests/test_job_kinds.py \
	tests/test_invariants_upstream.py tests/test_stories.py
test-compiled: $(COMPILED_STAMP)
	PYTHONPATH=$(abspath $(COMPILED_DIR)) $(BIN)/python -P -c 'import kueue_provreq.engine.manager as m; \
		assert m.__file__.endswith(".so"), f"not the compiled engine: {m.__file__}"'
	PYTHONPATH=$(abspath $(COMPILED_DIR)) $(BIN)/kueue-provreq conform specs/
	PYTHONPATH=$(abspath $(COMPILED_DIR)) $(BIN)/python -P -m pytest -p no:cacheprovider $(COMPILED_TESTS)

# pure against compiled, alternated in one run (benchmarks/bench_compiled.py)
bench-compiled: $(COMPILED_STAMP)
	$(BIN)/python benchmarks/bench_compiled.py
