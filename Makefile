# Two commands do all set-up on a fresh machine:
#   make run   -- create .venv, install poolcheck with every peer, run the seed cases
#   make test  -- the same set-up, then the whole test suite
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
STAMP  := $(VENV)/.installed

.PHONY: install run test lint bench clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

# torch first, pinned to the CPU build that lies on these machines' disk: the open range in the
# `torch` extra (torch>=2.1) is then already satisfied and pip pulls no multi-GB CUDA build.
$(STAMP): $(PY) pyproject.toml setup.py
	$(PIP) install --quiet "torch==2.13.0"
	$(PIP) install --quiet -e ".[openvino,torch,dev]"
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(VENV)/bin/poolcheck run cases/

test: $(STAMP)
	$(PY) -m pytest -q

lint: $(STAMP)
	$(VENV)/bin/ruff check poolcheck tests

clean:
	rm -rf $(VENV) build *.egg-info
