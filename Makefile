# Soft Sim developer commands. Everything runs in .venv, bootstrapped from requirements-dev.txt.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test test-lts build bench clean

$(STAMP): requirements-dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $(STAMP)

demo: $(STAMP)
	$(PY) tools/demo.py

test: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m pytest -q -n auto --dist loadscope tests

# The same tests on the oldest Blender the manifest supports (4.2 LTS), in a second venv from requirements-lts.txt.
VENV_LTS := .venv-lts
PY_LTS := $(VENV_LTS)/bin/python
STAMP_LTS := $(VENV_LTS)/.installed

$(STAMP_LTS): requirements-lts.txt
	test -x $(PY_LTS) || $(PYTHON) -m venv $(VENV_LTS)
	$(PY_LTS) -m pip install --quiet --upgrade pip
	$(PY_LTS) -m pip install --quiet -r requirements-lts.txt
	touch $(STAMP_LTS)

test-lts: $(STAMP_LTS)
	$(PY_LTS) -m pytest -q -n auto --dist loadscope tests

build: $(STAMP)
	$(PY) tools/build.py

bench: $(STAMP)
	$(PY) -m pip install --quiet -r requirements-bench.txt
	$(PY) bench/run.py

clean:
	rm -rf dist demo_out bench_out wheels
