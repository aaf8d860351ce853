# Soft Sim developer commands. Everything runs in .venv (the newest Blender LTS: bpy 5.2, Python 3.13),
# bootstrapped from requirements-dev.txt; `make test-lts` in .venv-lts (the oldest: bpy 4.2, Python 3.11).
# tools/find_python.sh finds each Python (pythonX.Y on PATH, or pyenv's), or says what to install.
# Override with e.g. `make test PYTHON=/usr/bin/python3.13`.
PYTHON ?= $(shell sh tools/find_python.sh 3.13)
PYTHON_LTS ?= $(shell sh tools/find_python.sh 3.11)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test test-lts test-sanitize test-package-50 build check-windows bench clean

$(STAMP): requirements-dev.txt
	@test -n "$(PYTHON)" || { echo "error: Python 3.13 is needed for the development venv (see above)" >&2; exit 1; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $(STAMP)

demo: $(STAMP)
	$(PY) tools/demo.py

test: $(STAMP)
	$(PY) -m ruff check .
	$(PY) tools/build_native.py --host
	$(PY) -m pytest -q -n auto --dist loadscope tests

# The same tests on the oldest Blender the manifest supports (4.2 LTS), in a second venv from requirements-lts.txt.
VENV_LTS := .venv-lts
PY_LTS := $(VENV_LTS)/bin/python
STAMP_LTS := $(VENV_LTS)/.installed

$(STAMP_LTS): requirements-lts.txt
	@test -n "$(PYTHON_LTS)" || { echo "error: Python 3.11 is needed for the 4.2 LTS venv (see above)" >&2; exit 1; }
	test -x $(PY_LTS) || $(PYTHON_LTS) -m venv $(VENV_LTS)
	$(PY_LTS) -m pip install --quiet --upgrade pip
	$(PY_LTS) -m pip install --quiet -r requirements-lts.txt
	touch $(STAMP_LTS)

test-lts: $(STAMP_LTS)
	$(PY_LTS) tools/build_native.py --host
	$(PY_LTS) -m pytest -q -n auto --dist loadscope tests

# The native kernels' tests against a library built with AddressSanitizer and UndefinedBehaviorSanitizer (the
# system gcc and its libasan; the runtime is preloaded because Python loads the library after start-up).
SANITIZED_LIB := build/native-sanitize/softsim_native.so
# Every native kernel test but the build's own (which runs zig, not the kernels).
SANITIZED_TESTS := $(filter-out tests/test_native_build.py,$(wildcard tests/test_native_*.py))
test-sanitize: $(STAMP)
	$(PY) tools/build_native.py --sanitize
	LD_PRELOAD=$$(gcc -print-file-name=libasan.so) ASAN_OPTIONS=detect_leaks=0 SOFTSIM_NATIVE_LIBRARY=$(SANITIZED_LIB) \
		SOFTSIM_REQUIRE_NATIVE=1 $(PY) -m pytest -q -p no:cacheprovider $(SANITIZED_TESTS)

# The installed-zip test on Blender 5.0 as well (bpy 5.0.1, Python 3.11), in .venv-50.
VENV_50 := .venv-50
PY_50 := $(VENV_50)/bin/python
STAMP_50 := $(VENV_50)/.installed

$(STAMP_50): requirements-blender50.txt
	@test -n "$(PYTHON_LTS)" || { echo "error: Python 3.11 is needed for the Blender 5.0 venv (see above)" >&2; exit 1; }
	test -x $(PY_50) || $(PYTHON_LTS) -m venv $(VENV_50)
	$(PY_50) -m pip install --quiet --upgrade pip
	$(PY_50) -m pip install --quiet -r requirements-blender50.txt
	touch $(STAMP_50)

test-package-50: $(STAMP_50)
	$(PY_50) -m pytest -q tests/test_extension_package.py

build: $(STAMP)
	$(PY) tools/build_native.py --all
	$(PY) tools/build.py

# Runs the cross-built Windows x64 library under Wine against the Linux one (needs wine: apt-get install wine64).
check-windows: $(STAMP)
	$(PY) tools/build_native.py --all
	$(PY) tools/cross_check.py

bench: $(STAMP)
	$(PY) -m pip install --quiet -r requirements-bench.txt
	$(PY) tools/build_native.py --host
	$(PY) bench/run.py

clean:
	rm -rf dist demo_out bench_out wheels build solvers/native/lib
