# Two entry points for a fresh machine: `make demo` and `make test`.
# Each (re)creates .venv when it is missing or when pyproject.toml changed.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test lint bench clean sandbox

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install --quiet --upgrade pip
	@$(BIN)/python -m pip install --quiet -e '.[dev,postgres]'
	@touch $(STAMP)

demo: $(STAMP)
	@$(BIN)/campaign demo

# Lint, types, then the whole suite on SQLite files, then again on a throwaway PostgreSQL
# server on loopback (scripts/pg-test-server: found on the machine, or installed from Debian's
# packages) for every test that opens a ledger of the pass (the others would run the same
# twice: tests/conftest.py leaves them out there). The report tests open the workbook in LibreOffice Calc (headless):
# scripts/ensure-libreoffice finds it, or installs it from Debian's packages. The dashboard's
# browser tests drive Debian's Chromium (headless) through Playwright, never a downloaded
# browser: scripts/ensure-chromium finds it, or installs it the same way. Tests spend
# most of their time waiting on servers and subprocesses, so they run
# in up to 4 pytest-xdist workers (one per CPU, at least 2); every test has its own files,
# ports and database. PYTEST_WORKERS=0 runs them in one process. Work stealing: a worker
# left idle takes tests queued for another, so the slow tests (marked `slow`) do not end
# the pass on one worker. The two passes run at once (scripts/test-passes: each report
# printed whole when its pass ends, exit 0 only when both passed); TEST_PASSES=serial runs
# them one after the other. While working: `pytest -n 2 -m "not slow"` (docs/development.md).
PYTEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 2); [ $$n -lt 2 ] && n=2; [ $$n -gt 4 ] && n=4; echo $$n)
PYTEST := $(BIN)/python -m pytest -n $(PYTEST_WORKERS) $(if $(filter 0,$(PYTEST_WORKERS)),,--dist worksteal)

test: $(STAMP)
	@bash scripts/ensure-libreoffice >/dev/null
	@bash scripts/ensure-chromium >/dev/null
	@$(BIN)/ruff check scheduler tests benchmarks docs/hooks
	@echo "# types (mypy: [tool.mypy] in pyproject.toml)"
	@$(BIN)/mypy
	@echo "# docs (mkdocs.yml: a strict build into site/, reference pages generated)"
	@NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict
	@bash scripts/test-passes -- $(PYTEST)

lint: $(STAMP)
	@$(BIN)/ruff check scheduler tests benchmarks docs/hooks
	@$(BIN)/ruff format --check scheduler tests benchmarks

bench: $(STAMP)
	@for b in benchmarks/[a-z]*.py; do echo "# $$b"; $(BIN)/python $$b --quick || exit 1; done

sandbox: $(STAMP)
	@$(BIN)/campaign sandbox --port 8787

clean:
	rm -rf $(VENV) state reports site .pytest_cache
