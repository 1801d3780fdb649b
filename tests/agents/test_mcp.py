"""The MCP server, driven by the official SDK's client over stdio (a real subprocess)."""

from __future__ import annotations

import json
import os
import sys

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

from embodia.agents.tools import list_tools
from tests.conftest import ROOT


async def _session_run(check) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "embodia.cli", "mcp"], cwd=str(ROOT), env=dict(os.environ)
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await check(session)


def test_mcp_lists_validates_calls_and_reports_progress(
    smol,
):  # smol: the model cache exists before the server
    results: dict = {}

    async def check(session: ClientSession) -> None:
        listed = await session.list_tools()
        results["tools"] = {t.name: t for t in listed.tools}
        results["score"] = await session.call_tool(
            "lm_score", {"prompt": "The capital of France is", "continuations": [" Paris", " Berlin"]}
        )
        results["bad"] = await session.call_tool("lm_score", {"prompt": 1, "continuations": [" a"], "x": 0})
        results["unknown"] = await session.call_tool("no_such_tool", {})
        updates: list[tuple[float, float | None, str | None]] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            updates.append((progress, total, message))

        results["long"] = await session.call_tool(
            "hybrid_finetune",
            {"mode": "lora", "steps": 3, "batch_size": 4, "eval_every": 3},
            progress_callback=on_progress,
        )
        results["updates"] = updates

    anyio.run(_session_run, check)

    tools = results["tools"]
    # the server registers every built-in tool (tests may add their own "test_*" ones in this process)
    assert set(tools) == {t.name for t in list_tools() if not t.name.startswith("test_")}
    assert tools["gateskip"].input_schema["properties"]["budgets"]["type"] == "array"

    score = results["score"]
    assert not score.is_error and score.structured_content["best"] == " Paris"
    assert json.loads(score.content[0].text) == score.structured_content

    bad = results["bad"]
    assert bad.is_error
    assert (
        "prompt: Input should be a valid string" in bad.content[0].text
        and "x: Unexpected" in bad.content[0].text
    )
    assert results["unknown"].is_error and "no tool named" in results["unknown"].content[0].text

    long = results["long"]
    assert not long.is_error, long.content[0].text
    assert long.structured_content["mode"] == "lora" and len(long.structured_content["curve"]) == 2
    steps = [p for p, total, _ in results["updates"]]
    assert steps == [1.0, 2.0, 3.0] and all(total == 3 for _, total, _ in results["updates"])
