"""An MCP client is the agent: it lists ScienceBoard tasks, starts one, acts and gets the checker's verdict."""

from __future__ import annotations

import json

import anyio
from mcp import ClientSession, stdio_client

from tests.agents.test_mcp_confinement import _serve


def test_an_mcp_client_solves_a_task_and_cannot_write_outside_its_workspace(tmp_path):
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    results: dict = {}

    async def calls() -> None:
        async with (
            stdio_client(_serve("--workspace", str(ws))) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            tools = {t.name for t in (await session.list_tools()).tools}
            results["tools"] = tools

            async def call(name: str, tool: str, arguments: dict) -> dict:
                results[name] = await session.call_tool(tool, arguments)
                return json.loads(results[name].content[0].text) if not results[name].is_error else {}

            await call("tasks", "scienceboard_tasks", {"domain": "kalgebra", "difficulty": "hard"})
            started = await call("reset", "scienceboard_reset", {"task": "kalgebra-gcd-lcm"})
            session_id = started["session"]
            await call(
                "shot", "scienceboard_screenshot", {"session": session_id, "out": str(outside / "x.png")}
            )
            await call(
                "shell",
                "scienceboard_step",
                {"session": session_id, "action": {"type": "shell", "text": "id"}},
            )
            for i, text in enumerate(["g:=gcd(84,36)", "l:=lcm(84,36)", "check:=g*l-84*36"]):
                await call(
                    f"step{i}",
                    "scienceboard_step",
                    {"session": session_id, "action": {"type": "command", "text": text}},
                )
            await call("done", "scienceboard_step", {"session": session_id, "action": {"type": "done"}})
            await call("after", "scienceboard_step", {"session": session_id, "action": {"type": "done"}})

    anyio.run(calls)
    assert {
        "scienceboard_tasks",
        "scienceboard_reset",
        "scienceboard_step",
        "scienceboard_screenshot",
    } <= results["tools"]
    listed = json.loads(results["tasks"].content[0].text)["tasks"]
    assert [t["id"] for t in listed] == [
        "kalgebra-binomial-coefficient",
        "kalgebra-collatz-steps",
        "kalgebra-gcd-lcm",
        "kalgebra-newton-sqrt2",
        "kalgebra-recursive-fibonacci",
        "kalgebra-trapezoid-pi",
    ]
    started = json.loads(results["reset"].content[0].text)
    assert "oracle" not in started["task"] and "evaluate" not in started["task"]  # no solutions for the agent
    assert results["shot"].is_error and "outside the workspace" in results["shot"].content[0].text
    assert list(outside.iterdir()) == []
    shell = json.loads(results["shell"].content[0].text)
    assert shell["info"]["refused"] and "does not allow shell" in shell["observation"]["output"]
    assert json.loads(results["step2"].content[0].text)["observation"]["output"] == "0"
    done = json.loads(results["done"].content[0].text)
    assert done["terminated"] and done["reward"] == 1.0 and done["info"]["success"]
    assert results["after"].is_error and "no open session" in results["after"].content[0].text
