"""Tool contexts in-process: path types confined to a workspace, model URLs to allowed endpoints, and the
endpoint check in the language-model back end that holds whatever a tool does."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from embodia.agents.llm import (
    EndpointNotAllowedError,
    LanguageModelError,
    OpenAICompatibleLM,
    endpoints_allowed,
    load_lm,
)
from embodia.agents.tools import (
    InputPath,
    ModelSpec,
    OutputPath,
    ToolArgumentError,
    ToolContext,
    ToolError,
    call_tool,
    get_tool,
    name_or_input_path,
    tool,
)
from embodia.agents.tools.mcp_server import server_context
from embodia.cli import main
from tests.agents.conftest import MARKER
from tests.conftest import ROOT

DataSet = name_or_input_path("builtin-set")


@dataclass
class _PathArgs:
    """Arguments of the test tool: one field of each confined type."""

    inputs: list[InputPath] = field(default_factory=list)
    """Files to read."""
    out: OutputPath | None = None
    """File to write."""
    data: DataSet = "builtin-set"
    """The built-in set or a file."""
    model: ModelSpec = "smollm2"
    """A model."""


@tool("test_paths")
def _paths(args: _PathArgs) -> dict:
    """Return the arguments as the tool receives them."""
    if args.out is not None:
        Path(args.out).write_text("written")
    return {"inputs": args.inputs, "out": args.out, "data": args.data, "model": args.model}


@dataclass
class _UrlArgs:
    """Arguments of a careless test tool."""

    url: str
    """An endpoint URL, declared as a plain string (no confined type)."""


@tool("test_careless_url")
def _careless(args: _UrlArgs) -> dict:
    """Load a model from a plain string: only the back end's own check stands in the way."""
    return {"text": load_lm(args.url).generate("hi", max_new_tokens=2)}


@pytest.fixture
def layout(tmp_path: Path):
    """``ws/`` (the workspace, with a file, a folder, symlinks out) next to ``outside/``."""
    ws, outside = tmp_path.resolve() / "ws", tmp_path.resolve() / "outside"
    (ws / "sub").mkdir(parents=True)
    outside.mkdir()
    (ws / "data.json").write_text("{}")
    (outside / "secret.json").write_text("{}")
    (ws / "link.json").symlink_to(outside / "secret.json")
    (ws / "linkdir").symlink_to(outside)
    (ws / "dangling").symlink_to(outside / "new.safetensors")
    (ws / "loop").symlink_to(ws / "loop")
    return ws, outside


def _problem(arguments: dict, context: ToolContext) -> str:
    with pytest.raises(ToolArgumentError) as error:
        call_tool("test_paths", arguments, context=context)
    return str(error.value)


def test_paths_resolve_against_the_workspace_and_stay_inside(layout, tmp_path):
    ws, outside = layout
    context = ToolContext.confined(ws)
    result = call_tool(
        "test_paths", {"inputs": ["data.json", str(ws / "sub")], "out": "sub/out.txt"}, context=context
    )
    # relative paths resolve against the workspace (not the process cwd) and arrive absolute
    assert result["inputs"] == [str(ws / "data.json"), str(ws / "sub")]
    assert result["out"] == str(ws / "sub" / "out.txt") and (ws / "sub" / "out.txt").read_text() == "written"
    assert result["data"] == "builtin-set" and result["model"] == "smollm2"

    for arguments, where in [
        ({"inputs": ["data.json", "/etc/passwd"]}, "inputs.1: path '/etc/passwd' is outside the workspace"),
        ({"inputs": ["link.json"]}, f"inputs.0: path 'link.json' (resolves to {outside / 'secret.json'})"),
        ({"data": "../outside/secret.json"}, "data: path '../outside/secret.json'"),
        ({"data": "~/.bashrc"}, "data: path '~/.bashrc' (resolves to"),
        ({"model": "/etc"}, "model: path '/etc' is outside"),
        ({"out": "../escape.txt"}, "out: path '../escape.txt'"),
        ({"out": str(tmp_path / "escape.txt")}, "out: path"),
        ({"out": "linkdir/escape.txt"}, "out: path 'linkdir/escape.txt'"),
        ({"out": "dangling"}, f"out: path 'dangling' (resolves to {outside / 'new.safetensors'})"),
        ({"out": "."}, "out: path '.' is the workspace folder itself"),
        ({"out": ""}, "out: path is empty"),
        ({"inputs": ["loop"]}, "inputs.0: path 'loop' cannot be resolved"),
    ]:
        message = _problem(arguments, context)
        assert where in message and message.startswith("tool 'test_paths': invalid arguments: "), message
        assert message.endswith("see `embodia tool schema test_paths`")
    assert "tools may only read and write inside it" in _problem({"out": "/etc/x"}, context)
    assert sorted(p.name for p in outside.iterdir()) == ["secret.json"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["outside", "ws"]

    # every problem at once, and the instance built in Python is checked like parsed data
    message = _problem({"inputs": ["/etc/passwd"], "out": "/etc/x", "data": "/etc/passwd"}, context)
    assert all(f"{name}: path" in message for name in ("inputs.0", "out", "data"))
    with pytest.raises(ToolArgumentError, match="out: path '/etc/x' is outside"):
        get_tool("test_paths").run(_PathArgs(out="/etc/x"), context=context)


def test_python_and_the_cli_are_unconfined(tmp_path):
    result = call_tool("test_paths", {"inputs": ["/etc/passwd", "rel"], "model": "http://any.where/v1#m"})
    assert result["inputs"] == ["/etc/passwd", "rel"] and result["model"] == "http://any.where/v1#m"
    params = get_tool("gateskip").validate({"gates_out": "/tmp/x.safetensors"})
    assert params.gates_out == "/tmp/x.safetensors"


def test_model_urls_only_for_allowed_endpoints(tmp_path):
    context = ToolContext.confined(tmp_path, ["http://127.0.0.1:8080/v1/", "https://api.example/v1#ignored"])
    assert context.endpoints == ("http://127.0.0.1:8080/v1", "https://api.example/v1")
    for url in ("http://127.0.0.1:8080/v1#smol", "http://127.0.0.1:8080/v1/", "https://api.example/v1#x"):
        assert call_tool("test_paths", {"model": url}, context=context)["model"] == url
    for url in ("http://127.0.0.1:8081/v1#m", "http://127.0.0.1:8080/v1/x#m", "https://api.example/v1?a=b"):
        message = _problem({"model": url}, context)
        assert "model: endpoint" in message and "--allow-endpoint" in message, message
    # known names are names even if a folder of that name exists; other names are paths
    (tmp_path / "smollm2").mkdir()
    assert call_tool("test_paths", {"model": "SmolLM2"}, context=context)["model"] == "SmolLM2"
    assert call_tool("test_paths", {"model": "mine"}, context=context)["model"] == str(
        tmp_path.resolve() / "mine"
    )
    # no endpoints allowed: every URL refused, for every tool taking a model
    bare = ToolContext.confined(tmp_path)
    for name in ("lm_generate", "emotion_hallucer", "lm_score", "gateskip", "cold_steer"):
        arguments = {"model": "http://127.0.0.1:8080/v1#m"}
        if name == "lm_generate":
            arguments["prompt"] = "hi"
        if name == "lm_score":
            arguments |= {"prompt": "hi", "continuations": ["a"]}
        with pytest.raises(
            ToolArgumentError, match="model: endpoint http://127.0.0.1:8080/v1 is not allowed"
        ):
            get_tool(name).validate(arguments, bare)


def test_schemas_still_describe_paths_as_documented_strings():
    gates_out = get_tool("gateskip").input_schema()["properties"]["gates_out"]
    assert {"type": "string"} in gates_out["anyOf"] and "Save the trained gates" in gates_out["description"]
    pairs = get_tool("emotion_hallucer").input_schema()["properties"]["pairs"]
    assert pairs["type"] == "string" and pairs["default"] == "embodia-emotion-pairs" and pairs["description"]
    model = get_tool("lm_generate").input_schema()["properties"]["model"]
    assert model["type"] == "string" and "endpoint" in model["description"]


def test_server_context_options_and_environment(tmp_path):
    context = server_context(
        tmp_path,
        ["http://a:1/v1/"],
        environ={"EMBODIA_MCP_ENDPOINTS": " http://b:2/v1, http://c:3/v1#m\nhttps://d/v1 ,"},
    )
    assert context.workspace == tmp_path.resolve()
    assert context.endpoints == ("http://a:1/v1", "http://b:2/v1", "http://c:3/v1", "https://d/v1")
    assert server_context(tmp_path, environ={}).endpoints == ()  # default: no endpoint at all
    with pytest.raises(ToolError, match="not an existing folder"):
        server_context(tmp_path / "missing", environ={})
    for bad in ("ftp://x/v1", "http://", "127.0.0.1:8080/v1"):
        with pytest.raises(ToolError, match="is not an http:// or https:// URL"):
            server_context(tmp_path, [bad], environ={})


def test_mcp_command_refuses_bad_options_before_serving(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")  # what the command sets; restored afterwards
    assert main(["mcp", "--workspace", str(tmp_path / "missing")]) == 2
    assert "not an existing folder" in capsys.readouterr().err
    assert main(["mcp", "--workspace", str(tmp_path), "--allow-endpoint", "file:///etc"]) == 2
    assert "not an http:// or https:// URL" in capsys.readouterr().err


def test_the_back_end_refuses_endpoints_outside_the_running_context(recorder, monkeypatch):
    """Defence in depth: a tool that takes a URL as a plain string still cannot reach a non-allowed endpoint."""
    monkeypatch.setenv("OPENAI_API_KEY", "secret-test-key")
    allowed = ToolContext(endpoints=(recorder.url("ok"),))
    with pytest.raises(EndpointNotAllowedError, match="--allow-endpoint"):
        call_tool("test_careless_url", {"url": recorder.url("fail") + "#m"}, context=allowed)
    assert recorder.requests == []
    assert (
        call_tool("test_careless_url", {"url": recorder.url("ok")}, context=allowed)["text"]
        == "recorded answer"
    )
    assert [r["path"] for r in recorder.requests] == ["/ok/v1/chat/completions"]
    # an object built before the context still asks when it sends; a nested context only narrows
    lm = load_lm(recorder.url("fail"))
    with (
        endpoints_allowed([recorder.url("ok")]),
        endpoints_allowed(None),
        pytest.raises(EndpointNotAllowedError),
    ):
        lm.generate("hi")
    with (
        endpoints_allowed([recorder.url("ok")]),
        endpoints_allowed([recorder.url("fail")]),  # the intersection: nothing
        pytest.raises(EndpointNotAllowedError),
    ):
        load_lm(recorder.url("ok"))
    assert len(recorder.requests) == 1


def test_process_wide_endpoint_allow_list_covers_new_threads(recorder):
    """What ``embodia mcp`` sets for its whole process (in a subprocess: it cannot be undone)."""
    code = f"""
import threading
from embodia.agents.llm import EndpointNotAllowedError, allow_only_endpoints, load_lm
allow_only_endpoints([{recorder.url("ok")!r}])
allow_only_endpoints(None)  # no change
outcome = []
def call():
    try:
        load_lm({recorder.url("fail")!r}).generate("hi")
    except EndpointNotAllowedError as error:
        outcome.append(str(error))
thread = threading.Thread(target=call)
thread.start(); thread.join()
print(outcome[0])
print(load_lm({recorder.url("ok")!r}).generate("hi"))
"""
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT, check=True
    )
    refused, answer = result.stdout.strip().splitlines()
    assert "is not allowed in this process" in refused and answer == "recorded answer"
    assert [r["path"] for r in recorder.requests] == ["/ok/v1/chat/completions"]


def test_endpoint_errors_never_echo_what_the_server_sent(recorder, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "secret-test-key")
    for prefix, expected in [
        ("fail", "answered HTTP 500"),
        ("odd", "did not answer in the OpenAI chat-completions format"),
        ("redirect", "answered HTTP 302 (a redirect, which embodia does not follow)"),
    ]:
        with pytest.raises(LanguageModelError) as error:
            OpenAICompatibleLM(recorder.url(prefix), "m").generate("hi")
        assert expected in str(error.value) and MARKER not in str(error.value), str(error.value)
    assert not any(r["path"].startswith("/leak") for r in recorder.requests)
    sent = json.loads(recorder.requests[0]["body"])
    assert (
        sent["model"] == "m" and recorder.requests[0]["headers"]["Authorization"] == "Bearer secret-test-key"
    )
