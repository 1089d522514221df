# warpboard: `make scoreboard` runs every case on every Vulkan device and writes the
# reports; it fails (after writing them) when a cell is neither PASS nor expected in
# ci/expectations.txt (`warpboard run` exits 1). `make test` runs the test suite. Both run `make setup`
# first (idempotent).

VENV         ?= .venv
OUT          ?= reports/out
# the translators the scoreboard compares (README, "Score your own translator")
TRANSLATORS  ?= --translator turns --translator subgroup-native --translator structured
# pytest-xdist: 2 workers, tests marked with the same xdist_group stay on one worker.
PYTEST_FLAGS ?= -n 2 --dist loadgroup
# Python keeps the bytecode it compiles (__pycache__/, ignored by git) even where the environment
# says not to (PYTHONDONTWRITEBYTECODE): the tests and the scoreboard start a Python process for
# every worker and command, and each would compile the sources again (docs/measurements.md).
unexport PYTHONDONTWRITEBYTECODE

.PHONY: setup test campaign scoreboard clean

setup:
	ci/setup.sh

test: setup
	$(VENV)/bin/python -m pytest $(PYTEST_FLAGS) -m "not campaign" tests

# the fuzz campaign, mutation and reduction tests (marker `campaign`): a CI job of their own
campaign: setup
	$(VENV)/bin/python -m pytest $(PYTEST_FLAGS) -m campaign tests

scoreboard: setup
	mkdir -p $(OUT)
	$(VENV)/bin/warpboard run $(TRANSLATORS) -o $(OUT)/scoreboard.json --html $(OUT)/scoreboard.html --markdown $(OUT)/scoreboard.md

# Build outputs and reports; keeps .venv (delete it by hand to rebuild from scratch).
clean:
	rm -rf $(OUT) build .warpboard-cache .pytest_cache
	find . -path ./$(VENV) -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +
