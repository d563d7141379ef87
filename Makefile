# nnvts: the commands of the README (`make run`, `make quick`, `make test`) and their helpers.
# Each creates the virtual environment on first use, so a fresh clone needs nothing installed by hand.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CORPUS ?= ../shared/corpus

.PHONY: run quick test lint generate check-generated corpus sample-driver bench engines gpu-check bytecode clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

## bytecode: the package (and the fake drivers the tests' driver hosts import) compiled once, here, for
## every process a run starts (its -j workers, each driver host, the test suite's hundreds of nnvts
## commands).  An editable install leaves compiling to import time, and where PYTHONDONTWRITEBYTECODE is
## set (as in many CI images) nothing is ever cached: each process then compiled every module it imported,
## 0.8 s of a 2 s run of one spec file (bench/README.md).  Incremental: only a changed module is compiled
## again; a stale file is never used (Python checks each source's mtime).
bytecode: $(STAMP)
	$(BIN)/python -m compileall -q -j 0 vts nnvts tests/__init__.py tests/fakes

## run: nnvts against the bundled reference driver on the bundled cases (generated_tests/); first says how long
## it will take on this machine (the last run's duration, or a timed 1/50 sample: tools/run_estimate.py)
run: $(STAMP) bytecode
	@$(BIN)/python tools/run_estimate.py --last reports/run.json -- --driver reference --specs generated_tests
	$(BIN)/nnvts run --driver reference --specs generated_tests --json reports/run.json --junit reports/run.xml --html reports/run.html

## quick: about a minute: the generated family in full, then a stable 1/40 sample of every family
quick: $(STAMP) bytecode
	$(BIN)/nnvts run --driver reference --family generated --json reports/quick-generated.json
	$(BIN)/nnvts run --driver reference --shard 1/40 --json reports/quick-sample.json --html reports/quick-sample.html

## test: the test suite (harness self-tests, reference driver, corpus when ../shared is present), one
## pytest-xdist worker per core (the suite is independent tests; no test has a timing threshold)
test: $(STAMP) bytecode
	$(BIN)/python -m pytest -n auto

lint: $(STAMP)
	$(BIN)/ruff check .

generate: $(STAMP)
	$(BIN)/nnvts generate

check-generated: $(STAMP)
	$(BIN)/nnvts generate --check

## corpus: the external NNAPI corpus with the reference driver
corpus: $(STAMP) bytecode
	$(BIN)/nnvts run --driver reference --specs $(CORPUS) -j 2 --json reports/corpus.json --html reports/corpus.html

## sample-driver: the C driver speaking the nnvts protocol (run it with --driver exec:nnvts/drivers/sample_c/sample_driver)
sample-driver:
	$(MAKE) -C nnvts/drivers/sample_c

## bench: MobileNet against ONNX Runtime and a numpy baseline, IPC overhead (installs the bench extras)
bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,bench]'
	$(BIN)/python -m bench.mobilenet
	$(BIN)/python -m bench.ipc_overhead

## engines: the LiteRT, ONNX Runtime and XLA drivers over the corpus, per family, into docs/engines.md (installs the extras);
## then the engine plugins (QNN's HTP, LiteRT with XNNPACK) over the bundled cases (tools/plugin_report.py)
engines: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,litert,onnxruntime,xla,qnn]'
	$(BIN)/python tools/engines_report.py
	$(BIN)/python tools/plugin_report.py --shard 1/50 --corpus-shard 1/20

## gpu-check: the XLA driver on the GPU (JAX with its GPU plugin already installed; reaches no package registry)
gpu-check:
	$(BIN)/python tools/xla_gpu_check.py --corpus $(CORPUS)

clean:
	rm -rf $(VENV) reports build *.egg-info
	$(MAKE) -C nnvts/drivers/sample_c clean
