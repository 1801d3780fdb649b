"""An MCP client drives a simulation end to end through the official SDK over stdio: list environments,
run and record episodes, verify the store, train a policy on it and evaluate it; a path outside the
server's workspace is refused and nothing is written there."""

from __future__ import annotations

import json

import anyio
from mcp import ClientSession

from tests.agents.test_mcp_confinement import _serve


def test_an_mcp_client_runs_records_verifies_trains_and_evaluates(tmp_path):
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    results: dict = {}
    updates: list[tuple] = []

    async def session_calls() -> None:
        from mcp import stdio_client

        async with (
            stdio_client(_serve("--workspace", str(ws))) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()

            async def on_progress(done: float, total: float | None, message: str | None) -> None:
                updates.append((done, total, message))

            async def call(name: str, tool: str, arguments: dict) -> None:
                results[name] = await session.call_tool(tool, arguments, progress_callback=on_progress)

            await call("envs", "list_envs", {"filter": "PointMaze-Medium"})
            await call(
                "run",
                "run_episodes",
                {
                    "env_id": "embodia/PointMaze-Medium-v0",
                    "policy": "expert",
                    "episodes": 3,
                    "max_steps": 60,
                    "record": "runs/pm.zarr",
                },
            )
            await call("info", "store_info", {"store": "runs/pm.zarr", "verify": True})
            await call(
                "train",
                "train_policy",
                {"method": "bc", "dataset": "runs/pm.zarr", "out": "runs/bc", "steps": 40, "batch_size": 32},
            )
            await call(
                "eval",
                "evaluate_policy",
                {"policy": "runs/bc", "env_id": "embodia/PointMaze-Medium-v0", "episodes": 2},
            )
            await call(
                "outside",
                "run_episodes",
                {"env_id": "embodia/PointMaze-Medium-v0", "record": str(outside / "stolen.zarr")},
            )
            await call("bad", "run_episodes", {"env_id": "embodia/PointMaze-Medium-v0", "episodes": 0})

    anyio.run(session_calls)

    def value(name: str) -> dict:
        assert not results[name].is_error, results[name].content[0].text
        return json.loads(results[name].content[0].text)

    envs = value("envs")["environments"]
    assert [e["id"] for e in envs] == [
        "embodia/PointMaze-Medium-v0",
        "embodia/PointMaze-Medium-SingleTask-v0",
        "embodia/PointMaze-Medium-Play-v0",
    ]
    assert envs[0]["has_expert"] and "Box(2,)" in envs[0]["action_space"]
    run = value("run")
    assert len(run["episodes"]) == 3 and all(e["length"] <= 60 for e in run["episodes"])
    info = value("info")
    assert info["episodes"] == 3 and info["verified"]["ok"] and info["keys"]["action"]["shape"] == [2]
    assert info["steps"] == sum(e["length"] for e in run["episodes"])
    trained = value("train")
    assert trained["step"] == 40 and (ws / "runs" / "bc" / "policy" / "model.safetensors").is_file()
    evaluation = value("eval")
    assert evaluation["episodes"] == 2 and 0.0 <= evaluation["success_rate"] <= 1.0
    refused = results["outside"]
    assert refused.is_error and "outside the workspace" in refused.content[0].text
    assert list(outside.iterdir()) == []
    assert results["bad"].is_error and "episodes" in results["bad"].content[0].text
    # long tools reported progress: one update per episode, training steps up to 40
    assert (3, 3, "episode 2: success") in updates or any(u[0] == 3 and u[1] == 3 for u in updates)
    assert any(u[0] == 40 and u[1] == 40 for u in updates)
