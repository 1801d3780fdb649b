"""``embodia mcp`` treats the agent as untrusted: driven by the official MCP client over stdio (a real
subprocess), paths outside the workspace and endpoints its operator did not allow are refused."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

from tests.agents.conftest import MARKER
from tests.conftest import ROOT

KEY = "secret-test-key"


def _serve(*args: str, cwd: Path = ROOT, env: dict[str, str] | None = None) -> StdioServerParameters:
    environment = {k: v for k, v in os.environ.items() if k != "EMBODIA_MCP_ENDPOINTS"}
    environment |= {"OPENAI_API_KEY": KEY, **(env or {})}
    return StdioServerParameters(
        command=sys.executable, args=["-m", "embodia.cli", "mcp", *args], cwd=str(cwd), env=environment
    )


def _calls(params: StdioServerParameters, calls: dict[str, tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """Call each ``name: (tool, arguments)`` in one server session; the results by name."""
    results: dict[str, Any] = {}

    async def run(check: Callable[[ClientSession], Awaitable[None]]) -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            init = await session.initialize()
            results["instructions"] = init.instructions
            await check(session)

    async def check(session: ClientSession) -> None:
        for name, (tool, arguments) in calls.items():
            results[name] = await session.call_tool(tool, arguments)

    anyio.run(run, check)
    return results


def _error(result: Any) -> str:
    assert result.is_error, result.content[0].text
    return result.content[0].text


def test_mcp_confines_paths_to_the_workspace(tmp_path, smol):  # smol: the model cache exists
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    pair = {
        "pairs": [
            {
                "id": "p1",
                "category": "knowledge",
                "basic": {"question": "Is fear an emotion?", "answer": "yes"},
                "hallucinated": {"question": "Is fear a colour?", "answer": "no"},
            }
        ]
    }
    (ws / "pairs.json").write_text(json.dumps(pair))
    (outside / "secret.json").write_text(json.dumps(pair))  # readable pairs: refusal is the only guard
    (ws / "link.json").symlink_to(outside / "secret.json")
    (ws / "linkdir").symlink_to(outside)
    before = sorted(p.name for p in outside.iterdir())

    results = _calls(
        _serve("--workspace", str(ws)),  # cwd is the repository: relative paths must resolve against ws
        {
            "passwd": ("emotion_hallucer", {"pairs": "/etc/passwd", "limit": 1}),
            "absolute": ("emotion_hallucer", {"pairs": str(outside / "secret.json"), "limit": 1}),
            "symlink": ("emotion_hallucer", {"pairs": "link.json", "limit": 1}),
            "up": ("gateskip", {"gates_out": "../outside.safetensors", "steps": 1}),
            "abs_out": ("gateskip", {"gates_out": str(outside / "gates.safetensors"), "steps": 1}),
            "linked_out": ("gateskip", {"gates_out": "linkdir/gates.safetensors", "steps": 1}),
            "model_dir": ("lm_score", {"prompt": "a", "continuations": [" b"], "model": str(outside)}),
            "inside": ("emotion_hallucer", {"pairs": "pairs.json", "limit": 1}),
        },
    )
    for name, field in [
        ("passwd", "pairs: path '/etc/passwd'"),
        ("absolute", f"pairs: path '{outside / 'secret.json'}'"),
        ("symlink", "pairs: path 'link.json' (resolves to"),
        ("up", "gates_out: path '../outside.safetensors' (resolves to"),
        ("abs_out", "gates_out: path"),
        ("linked_out", "gates_out: path 'linkdir/gates.safetensors'"),
        ("model_dir", "model: path"),
    ]:
        message = _error(results[name])
        assert field in message and f"is outside the workspace {ws.resolve()}" in message, message
        assert "tools may only read and write inside it" in message
    assert "root:" not in _error(results["passwd"])  # nothing of the file came back
    inside = results["inside"]
    assert not inside.is_error, inside.content[0].text
    assert inside.structured_content["pairs"] == 1
    assert str(ws.resolve()) in results["instructions"]
    # nothing was written outside the workspace
    assert sorted(p.name for p in outside.iterdir()) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["outside", "ws"]


def test_mcp_refuses_endpoints_not_allowed_and_sends_no_key(tmp_path, recorder):
    """No --allow-endpoint: every URL is refused and the recording server receives nothing."""
    results = _calls(
        _serve(cwd=tmp_path),  # default workspace: the current folder
        {
            "generate": (
                "lm_generate",
                {"prompt": "hi", "model": recorder.url("ok") + "#m", "max_new_tokens": 2},
            ),
            "evaluate": ("emotion_hallucer", {"model": recorder.url("ok"), "limit": 1}),
            "outside": ("emotion_hallucer", {"pairs": "../x.json", "limit": 1}),
        },
    )
    for name in ("generate", "evaluate"):
        message = _error(results[name])
        assert f"model: endpoint {recorder.url('ok')} is not allowed by this server" in message, message
        assert f"--allow-endpoint {recorder.url('ok')}" in message
    assert f"outside the workspace {tmp_path.resolve()}" in _error(results["outside"])
    assert recorder.requests == []


def test_mcp_sends_the_key_only_to_allowed_endpoints_and_never_echoes_them(tmp_path, recorder):
    endpoints = " , ".join(recorder.url(p) for p in ("fail", "odd"))
    results = _calls(
        _serve(
            "--workspace",
            str(tmp_path),
            "--allow-endpoint",
            recorder.url("ok"),
            "--allow-endpoint",
            recorder.url("redirect") + "/",
            env={"EMBODIA_MCP_ENDPOINTS": endpoints},
        ),
        {
            "ok": (
                "lm_generate",
                {"prompt": "hi", "model": recorder.url("ok") + "#smol", "max_new_tokens": 3},
            ),
            "fail": ("lm_generate", {"prompt": "hi", "model": recorder.url("fail")}),
            "odd": ("lm_generate", {"prompt": "hi", "model": recorder.url("odd")}),
            "redirect": ("lm_generate", {"prompt": "hi", "model": recorder.url("redirect")}),
            "other": ("lm_generate", {"prompt": "hi", "model": recorder.url("leak")}),
        },
    )
    ok = results["ok"]
    assert not ok.is_error, ok.content[0].text
    assert ok.structured_content["text"] == "recorded answer"
    for name, expected in [
        ("fail", "answered HTTP 500"),
        ("odd", "did not answer in the OpenAI chat-completions format"),
        ("redirect", "answered HTTP 302 (a redirect, which embodia does not follow)"),
        ("other", "is not allowed by this server"),
    ]:
        message = _error(results[name])
        assert expected in message and MARKER not in message, message
    paths = [r["path"] for r in recorder.requests]
    assert paths == [f"/{p}/v1/chat/completions" for p in ("ok", "fail", "odd", "redirect")]  # no /leak
    first = recorder.requests[0]
    assert first["headers"]["Authorization"] == f"Bearer {KEY}"
    body = json.loads(first["body"])
    assert body["model"] == "smol" and body["max_tokens"] == 3


def test_mcp_confines_paths_nested_in_environment_and_method_arguments(tmp_path):
    """Paths inside ``env_kwargs`` and a method's ``config`` are confined by their type, not by tool."""
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    from embodia.envs.habitat.scene import load_scene

    scene = json.loads(json.dumps(load_scene("apartment_0").to_dict()))
    (outside / "room.json").write_text(json.dumps(scene))  # a valid scene: only the refusal protects it
    (ws / "room.json").write_text(json.dumps(scene))
    results = _calls(
        _serve("--workspace", str(ws)),
        {
            "scene_out": (
                "run_episodes",
                {"env_id": "embodia/Nav-PointNav-v0", "policy": "random", "max_steps": 2,
                 "env_kwargs": {"scenes": [str(outside / "room.json")], "sensors": "none"}},
            ),
            "scene_up": (
                "run_episodes",
                {"env_id": "embodia/Nav-PointNav-v0", "policy": "random", "max_steps": 2,
                 "env_kwargs": {"scenes": "../outside/room", "sensors": "none"}},
            ),
            "dataset": (
                "run_episodes",
                {"env_id": "embodia/Nav-PointNav-v0", "env_kwargs": {"dataset": "/etc/passwd"}},
            ),
            "scenes_dir": (
                "run_episodes",
                {"env_id": "embodia/Nav-ObjectNav-v0", "env_kwargs": {"scenes_dir": "/"}},
            ),
            "encoder": (
                "train_policy",
                {"method": "pixel_bc", "dataset": "missing.zarr", "out": "run",
                 "config": {"encoder": f"hf:{outside}"}},
            ),
            "scene_in": (
                "run_episodes",
                {"env_id": "embodia/Nav-PointNav-v0", "policy": "random", "max_steps": 2,
                 "env_kwargs": {"scenes": ["room.json", "apartment_1", "procedural:office:3"], "sensors": "none"}},
            ),
        },
    )  # fmt: skip
    for name, field in [
        ("scene_out", f"env_kwargs: scenes: path '{outside / 'room.json'}'"),
        ("scene_up", "env_kwargs: scenes: path '../outside/room' (resolves to"),
        ("dataset", "env_kwargs: dataset: path '/etc/passwd'"),
        ("scenes_dir", "env_kwargs: scenes_dir: path '/'"),
        ("encoder", f"config: encoder: path '{outside}'"),
    ]:
        message = _error(results[name])
        assert field in message and f"is outside the workspace {ws.resolve()}" in message, message
    inside = results["scene_in"]  # a scene file in the workspace, shipped names and procedural scenes pass
    assert not inside.is_error, inside.content[0].text
    assert inside.structured_content["episodes"][0]["length"] <= 2
