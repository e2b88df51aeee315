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
	@$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

demo: $(STAMP)
	@$(BIN)/campaign demo

test: $(STAMP)
	@$(BIN)/ruff check scheduler tests benchmarks
	@$(BIN)/python -m pytest

lint: $(STAMP)
	@$(BIN)/ruff check scheduler tests benchmarks
	@$(BIN)/ruff format --check scheduler tests benchmarks

bench: $(STAMP)
	@for b in benchmarks/*.py; do echo "# $$b"; $(BIN)/python $$b --quick || exit 1; done

sandbox: $(STAMP)
	@$(BIN)/campaign sandbox --port 8787

clean:
	rm -rf $(VENV) state reports .pytest_cache
