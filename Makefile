# Two commands for a newcomer: `make demo` and `make test`. Both are idempotent
# and cheap when nothing changed (the venv is stamped against pyproject.toml).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.etfarm-installed
DEMO_MODEL := configs/models/tiny_cnn.py:build

.PHONY: setup demo test lint testbed bench docs clean

# Bytecode is written by make's commands even where PYTHONDONTWRITEBYTECODE is set (some CI images set it): else
# every etfarm process, hundreds in `make test`, would compile etfarm and the libraries it imports again (0.25 CPU-s
# for etfarm alone, measured). It goes into the venv and the clone's __pycache__ folders (git ignores them).
unexport PYTHONDONTWRITEBYTECODE

setup: $(STAMP)
	@$(PY) -m compileall -q orchestrator device_agents >/dev/null

# torch==2.13.0 goes in the same pip call as the project, so the resolver takes
# the CPU wheel on disk instead of fetching a multi-GB CUDA build. pip compiles no bytecode (--no-compile: compiling
# all 23,000 modules took 65 of its 105 s); scripts/compile_imported.py compiles the 4,000 etfarm imports (17 s, two processes).
$(STAMP): pyproject.toml setup.py
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --no-compile --disable-pip-version-check "torch==2.13.0" -e ".[test,zoo]"
	@$(PY) scripts/compile_imported.py 2>/dev/null
	@touch $(STAMP)

demo: setup
	$(VENV)/bin/etfarm run --devices local --model $(DEMO_MODEL) --runs 3 --iterations 20

# Debian packages of the testbed (sshd, adb, qemu-user, aarch64 cross g++);
# installed only when missing.
testbed:
	@bash scripts/install-testbed.sh

# ruff (rules in pyproject.toml [tool.ruff]) and the layering contracts ([tool.importlinter]);
# lint-imports imports nothing but needs the packages findable, so it runs with the venv from here.
lint: setup
	$(VENV)/bin/ruff check .
	PYTHONPATH=$(CURDIR) $(VENV)/bin/lint-imports

# The suite runs in TEST_WORKERS parallel processes (pytest-xdist): most integration tests wait on real
# peers (sshd, adb, qemu, Dask, deadlines), so more processes than cores overlap the waits. `--dist loadscope`
# keeps a module's tests on one worker, so a module-scoped fixture (a set of real jobs) is made once, and
# `--no-loadscope-reorder` hands modules out in the order tests/conftest.py gives (the longest first).
# `make test TEST_WORKERS=0` runs it in this process alone. The venv and the Debian packages are set up side
# by side: one waits on pip, the other on apt.
TEST_WORKERS ?= 4

test:
	@$(MAKE) --no-print-directory -j2 setup testbed
	@$(MAKE) --no-print-directory lint
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadscope --no-loadscope-reorder --durations=15

# The documentation site (mkdocs.yml): every warning (a broken link or anchor) fails it. Offline.
docs: setup
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site-docs

bench: setup
	$(PY) -m benchmarks

clean:
	rm -rf $(VENV) build dist *.egg-info site-docs
