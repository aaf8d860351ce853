# Soft Sim developer commands. Everything runs in .venv, bootstrapped from requirements-dev.txt.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test build bench clean

$(STAMP): requirements-dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $(STAMP)

demo: $(STAMP)
	$(PY) tools/demo.py

test: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m pytest -q tests

build: $(STAMP)
	$(PY) tools/build.py

bench: $(STAMP)
	$(PY) -m pip install --quiet -r requirements-bench.txt
	$(PY) bench/run.py

clean:
	rm -rf dist demo_out bench_out wheels
