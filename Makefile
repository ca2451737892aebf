# Two commands do all set-up on a fresh machine:
#   make run   -- create .venv, install poolcheck with every peer, run the seed cases
#   make test  -- the same set-up, then the whole test suite (make test-fast: all but the slow tests)
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
STAMP  := $(VENV)/.installed

.PHONY: install run reports browser redis test test-fast test-aarch64 lint bench clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

# torch first, pinned to its CPU build: the open range in the `torch` extra (torch>=2.1) is then
# already satisfied and pip pulls no multi-GB CUDA build. constraints.txt pins the peers to the
# versions the registry and docs were measured with.
$(STAMP): $(PY) pyproject.toml setup.py constraints.txt
	$(PIP) install --quiet "torch==2.13.0"
	$(PIP) install --quiet -c constraints.txt -e ".[openvino,torch,tract,jax,cluster,dev]"
	@# A fresh install (no stamp yet) records its wall time, from the environment's creation, for
	@# `poolcheck bench` to report as the set-up time.
	@[ -e $(STAMP) ] || $(PY) -c "import os, time; print(round(time.time() - os.path.getmtime('$(VENV)/pyvenv.cfg')))" \
	    > $(VENV)/.install-seconds
	touch $(STAMP)

install: $(STAMP)

# The main job: every case on the reference engines (exit 0 when every documented example passes
# or is a recorded erratum); a browsable report lands in reports/engines/ (not committed).
run: $(STAMP)
	$(VENV)/bin/poolcheck run cases/ --report-dir reports/engines

# The committed conformance report: every case on the engines and every peer (exit 1 = some
# case fails somewhere, which is what the report is for; exit 2 = bad input still stops make).
REPORT_PEERS ?= onnxruntime,openvino,torch,onnx_reference,tract,jax,openvino-onnx,torch-onnx
reports: $(STAMP)
	$(VENV)/bin/poolcheck run cases/ --peers $(REPORT_PEERS) --quiet --report-dir reports || [ $$? -eq 1 ]

# Debian's chromium for the HTML report's browser tests; where it cannot be installed (not root,
# no apt-get) those tests skip and say why.
browser:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	{ if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) || \
	    echo "chromium could not be installed: the HTML report's browser tests will skip"; \
	  else echo "chromium is not installed (needs root and apt-get): the HTML report's browser tests will skip"; fi; }

# Debian's redis-server for the shared example database tests (`fuzz --database redis://...`);
# where it cannot be installed (not root, no apt-get) those tests skip and say why.
redis:
	@command -v redis-server >/dev/null 2>&1 || \
	{ if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null) || \
	    echo "redis-server could not be installed: the shared-database tests will skip"; \
	  else echo "redis-server is not installed (needs root and apt-get): the shared-database tests will skip"; fi; }

# The suite runs on one pytest-xdist worker per logical CPU (PYTEST_XDIST_AUTO_NUM_WORKERS=N to
# choose), a whole test file per worker at a time (loadfile: a module's fixtures, some of them
# tens of seconds of real commands, are built once; with worksteal a stolen test built them again
# on the other worker). conftest.py hands out the files that are slow as a whole first.
# The slowest tests are listed at the end (--durations). tests/conftest.py says how the suite is
# grouped; tests/slow/ and tests marked @pytest.mark.slow are what test-fast leaves out.
PYTEST := $(PY) -m pytest -q -n logical --dist loadfile

test: $(STAMP) browser redis
	$(PYTEST) --durations=25

# The inner loop: every test not marked slow (no browser, no redis, no cluster needed).
test-fast: $(STAMP)
	$(PYTEST) -m "not slow" --durations=10

# The engine tests on AArch64 under qemu-user, with the C extension cross-built by setup.py
# (root and apt-get; tools/test-aarch64.sh says what it installs). Not part of make test.
test-aarch64: $(STAMP)
	PY=$(PY) bash tools/test-aarch64.sh

bench: $(STAMP)
	$(VENV)/bin/poolcheck bench --isa all --write-docs docs/benchmarks.md

lint: $(STAMP)
	$(VENV)/bin/ruff check poolcheck tests
	$(VENV)/bin/mypy

clean:
	rm -rf $(VENV) build *.egg-info
