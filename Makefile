# Everything the project needs is installed from here: `make test` on a fresh machine works.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
RUN_STAMP := $(VENV)/.installed-run
# what the kernels compiled ahead of time are built from: an edit rebuilds them
KERNEL_SOURCES := $(wildcard streamlearn/_kernels/*.py) streamlearn/types.py

.PHONY: install run lint test test-fast bench clean clean-kernels

# the install compiles the kernels ahead of time (setup.py): no first run compiles. Where
# it could not (no C compiler), `streamlearn warmup` fills numba's cache instead.
$(STAMP): pyproject.toml setup.py $(KERNEL_SOURCES)
	command -v prometheus >/dev/null || (apt-get update -qq && \
		apt-get install -y -qq --no-install-recommends prometheus >/dev/null)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[dev]"
	$(BIN)/python -c "import streamlearn._kernels as k; raise SystemExit(not k.uses_aot())" \
		|| $(BIN)/streamlearn warmup
	touch $(STAMP)

install: $(STAMP)

# what the example needs and no more: the package and river (make test installs the rest)
$(RUN_STAMP): pyproject.toml setup.py $(KERNEL_SOURCES)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet -e . "river>=0.21"
	touch $(RUN_STAMP)

run: $(if $(wildcard $(STAMP)),$(STAMP),$(RUN_STAMP))
	$(BIN)/python examples/phishing_svmlight.py | $(BIN)/streamlearn learn --algo pdm --eps 0.01 --model phishing.ckpt
	$(BIN)/streamlearn inspect phishing.ckpt

lint: $(STAMP)
	$(BIN)/ruff check streamlearn tests benchmarks examples
	$(BIN)/ruff format --check streamlearn tests benchmarks examples
	$(BIN)/mypy
	$(BIN)/lint-imports

test: lint
	$(BIN)/pytest -q

# the loop while working: everything but the tests that start a Kafka broker or Prometheus
test-fast: lint
	$(BIN)/pytest -q -m "not kafka and not prometheus"

bench: $(STAMP)
	command -v wrk >/dev/null || (apt-get update -qq && \
		apt-get install -y -qq --no-install-recommends wrk >/dev/null)
	$(BIN)/pip install --quiet -e ".[dev,bench]"
	$(BIN)/python benchmarks/bench_engine_a9a.py
	$(BIN)/python benchmarks/bench_presentation_cost.py
	$(BIN)/python benchmarks/bench_schedule.py
	$(BIN)/python benchmarks/bench_first_run.py
	$(BIN)/python benchmarks/bench_first_examples.py
	$(BIN)/python benchmarks/bench_startup.py
	$(BIN)/python benchmarks/bench_parse.py
	$(BIN)/python benchmarks/bench_learn_throughput.py
	$(BIN)/python benchmarks/bench_river_adapter.py
	$(BIN)/python benchmarks/bench_river_multiclass.py
	$(BIN)/python benchmarks/bench_multilabel.py
	$(BIN)/python benchmarks/bench_keyed.py --keys 1000 10000
	$(BIN)/python benchmarks/bench_serve_kafka.py --replay-every 0
	$(BIN)/python benchmarks/bench_endless.py --plot benchmarks/endless.png
	$(BIN)/python benchmarks/bench_http.py
	$(BIN)/python benchmarks/bench_group.py --plot benchmarks/group.png
	$(BIN)/python benchmarks/bench_soak.py --plot benchmarks/soak.png
	$(BIN)/python benchmarks/bench_checkpoint_memory.py
	$(BIN)/python benchmarks/bench_stdin_restart.py

clean: clean-kernels
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache

# numba recompiles a cached kernel only when its own file changes, not when a helper it
# inlines from another file (rules.py, ring.py) does: drop every compiled copy, the
# kernels compiled ahead of time included (`pip install -e .` builds them again).
clean-kernels:
	find streamlearn -name '*.nbi' -delete -o -name '*.nbc' -delete
	rm -f streamlearn/_kernels/_aot_*.so streamlearn/_kernels/_aot_*.pyd
	rm -rf build
