"""The NavCraft tools (CoNavBench / NavCraft): ``navcraft_generate`` writes reproducible episode files whose
statistics add up, ``navcraft_evaluate`` runs them, bad arguments and other people's files are refused, and
both tools work over a real MCP client inside its workspace only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, stdio_client

from embodia.agents.navcraft.episode_io import load_episodes
from embodia.agents.navcraft.mission import TAXONOMY
from embodia.agents.tools import ToolArgumentError, ToolContext, call_tool
from tests.agents.conftest import mcp_server

SMALL = {"scenes": 1, "episodes_per_scene": 3, "seed": 0}
TIMING = ("seconds", "episodes_per_second")


def _without_timing(stats: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in stats.items() if k not in TIMING}


@pytest.fixture(scope="module")
def episode_file(tmp_path_factory) -> tuple[Path, dict[str, Any]]:
    """1 scene x 3 episodes written by the tool, and its answer."""
    out = tmp_path_factory.mktemp("navcraft") / "episodes.json"
    return out, call_tool("navcraft_generate", {**SMALL, "out": str(out)})


def test_generate_stats_add_up_and_the_file_holds_the_episodes(episode_file):
    out, result = episode_file
    stats = result["stats"]
    assert result["out"] == str(out) and result["episodes_total"] == result["episodes_listed"] == 3
    assert stats["episodes"] == 3
    for key in ("by_taxonomy", "robots", "items"):  # every episode counted once per breakdown
        assert sum(stats[key].values()) == 3, key
    assert set(stats["by_taxonomy"]) <= set(TAXONOMY)
    assert set(stats["robots"]) <= {"2", "3"} and set(stats["items"]) <= {"1", "2"}  # JSON keys
    assert stats["room_hops"]["min"] >= 2  # min_room_hops default
    assert stats["episodes_per_second"] > 0 and all(v > 0 for v in stats["rejected"].values())
    listed = result["episodes"]
    assert [e["episode_id"] for e in listed] == ["apartment_0#0", "apartment_0#1", "apartment_0#2"]
    for e in listed:
        assert e["instruction"] and 2 <= e["robots"] <= 3
        if e["taxonomy"] == "solo":
            assert e["makespan"] == pytest.approx(e["solo_makespan"])
        else:  # accepted only when it beats the solo plan by more than the 1 s margin
            assert e["solo_makespan"] - e["makespan"] > 1.0
    saved = load_episodes(out)
    assert [ep.episode_id for ep in saved] == [e["episode_id"] for e in listed]
    assert [ep.info["taxonomy"] for ep in saved] == [e["taxonomy"] for e in listed]


def test_generate_is_reproducible_by_seed_and_follows_the_choices(episode_file, tmp_path):
    out, first = episode_file
    again = call_tool("navcraft_generate", {**SMALL, "out": str(tmp_path / "again.json.gz")})
    assert again["episodes"] == first["episodes"]
    assert _without_timing(again["stats"]) == _without_timing(first["stats"])
    assert [ep.mission.instruction for ep in load_episodes(tmp_path / "again.json.gz")] == [
        e["instruction"] for e in first["episodes"]
    ]
    other = call_tool("navcraft_generate", {**SMALL, "seed": 1})
    assert [e["instruction"] for e in other["episodes"]] != [e["instruction"] for e in first["episodes"]]
    assert "out" not in other
    fixed = call_tool(
        "navcraft_generate", {"scenes": 1, "episodes_per_scene": 2, "helpers": [2], "items": [1], "seed": 3}
    )
    assert fixed["stats"]["robots"] == {"3": 2} and fixed["stats"]["items"] == {"1": 2}
    # the tool's own file may be written again
    assert call_tool("navcraft_generate", {**SMALL, "out": str(out)})["episodes"] == first["episodes"]


def test_evaluate_runs_the_written_file(episode_file):
    out, generated = episode_file
    result = call_tool("navcraft_evaluate", {"episodes": str(out), "agent": "planner"})
    assert result["episodes_file"] == str(out) and result["episodes_available"] == result["episodes_run"] == 3
    rows = result["rows"]
    assert [r["episode_id"] for r in rows] == [e["episode_id"] for e in generated["episodes"]]
    for row, listed in zip(rows, generated["episodes"]):
        assert 0.0 <= row["success"] <= 1.0 and 0.0 <= row["step_success"] <= 1.0
        assert row["agent"] == "planner" and row["taxonomy"] == listed["taxonomy"]
        assert row["robots"] == listed["robots"] and "spl" not in row
    summary = {s["taxonomy"]: s for s in result["summary"]}
    assert summary["all"]["episodes"] == 3
    assert sum(s["episodes"] for name, s in summary.items() if name != "all") == 3
    assert summary["all"]["success"] == pytest.approx(sum(r["success"] for r in rows) / 3)
    solo = call_tool(
        "navcraft_evaluate", {"episodes": str(out), "agent": "solo", "disturb": True, "limit": 1}
    )
    assert solo["episodes_run"] == 1 and solo["rows"][0]["agent"] == "solo" and solo["rows"][0]["disturbed"]
    fresh = call_tool("navcraft_evaluate", {"generate": {"episodes_per_scene": 2}, "limit": 1})
    assert fresh["generated"]["episodes_per_scene"] == 2 and fresh["episodes_available"] == 2
    assert fresh["rows"][0]["episode_id"] == "apartment_0#0"


def test_bad_arguments_are_refused_with_one_clear_line(episode_file, tmp_path):
    out, _ = episode_file
    cases = [
        ("navcraft_generate", {"scenes": 0}, "scenes: Input should be greater than or equal to 1"),
        ("navcraft_generate", {"helpers": [4]}, "helpers.0: Input should be less than or equal to 3"),
        ("navcraft_generate", {"scenes": 50, "episodes_per_scene": 200}, "10000 episodes; at most 2000"),
        ("navcraft_generate", {"out": str(tmp_path / "e.txt")}, "must end in .json or .json.gz"),
        ("navcraft_generate", {"min_room_hops": 6}, "lower min_room_hops"),
        ("navcraft_evaluate", {"episodes": str(out), "generate": {}}, "either episodes .* or generate"),
        ("navcraft_evaluate", {}, "either episodes .* or generate"),
        ("navcraft_evaluate", {"episodes": str(out), "model": "smollm2"}, "model is only used by the llm"),
        ("navcraft_evaluate", {"episodes": str(out), "agent": "llm", "limit": 11}, "at most 10 episodes"),
        ("navcraft_evaluate", {"episodes": str(out), "agent": "random"}, "agent: Input should be 'planner'"),
        ("navcraft_evaluate", {"episodes": str(tmp_path / "none.json")}, "no NavCraft episode file at"),
    ]
    for name, arguments, message in cases:
        with pytest.raises(ToolArgumentError, match=message):
            call_tool(name, arguments)
    # a model endpoint the server's operator did not allow is refused before anything runs
    ws = tmp_path / "ws"
    ws.mkdir()
    with pytest.raises(ToolArgumentError, match="model: .*endpoint http://127.0.0.1:9/v1 is not allowed"):
        call_tool(
            "navcraft_evaluate",
            {"generate": {}, "agent": "llm", "model": "http://127.0.0.1:9/v1#m"},
            context=ToolContext.confined(ws),
        )


def test_other_files_are_neither_overwritten_nor_taken_for_episodes(tmp_path):
    notes = tmp_path / "notes.json"
    notes.write_text(json.dumps({"episodes": "mine"}))
    with pytest.raises(ToolArgumentError, match="notes.json' exists and is not a NavCraft episode file"):
        call_tool("navcraft_generate", {**SMALL, "out": str(notes)})
    assert json.loads(notes.read_text()) == {"episodes": "mine"}
    with pytest.raises(ToolArgumentError, match="notes.json' is not a NavCraft episode file"):
        call_tool("navcraft_evaluate", {"episodes": str(notes)})
    (tmp_path / "folder.json").mkdir()
    with pytest.raises(ToolArgumentError, match="is a folder or a symlink"):
        call_tool("navcraft_generate", {**SMALL, "out": str(tmp_path / "folder.json")})


def test_the_tools_over_mcp_stay_inside_the_workspace(tmp_path):
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    results: dict[str, Any] = {}

    async def run() -> None:
        async with stdio_client(mcp_server(ws)) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            results["tools"] = {t.name for t in (await session.list_tools()).tools}
            call = session.call_tool
            results["generate"] = await call(
                "navcraft_generate", {"scenes": 1, "episodes_per_scene": 2, "out": "sets/eps.json"}
            )
            results["evaluate"] = await call("navcraft_evaluate", {"episodes": "sets/eps.json", "limit": 1})
            results["escape_out"] = await call("navcraft_generate", {**SMALL, "out": "../outside/eps.json"})
            results["escape_in"] = await call(
                "navcraft_evaluate", {"episodes": str(ws / "sets" / "eps.json").replace("/ws/", "/outside/")}
            )
            results["bad"] = await call("navcraft_generate", {"scenes": 0})

    anyio.run(run)
    assert {"navcraft_generate", "navcraft_evaluate"} <= results["tools"]
    for name in ("generate", "evaluate"):
        assert not results[name].is_error, results[name].content[0].text
    written = ws / "sets" / "eps.json"
    assert results["generate"].structured_content["out"] == str(written.resolve())
    assert len(load_episodes(written)) == 2
    assert results["evaluate"].structured_content["episodes_run"] == 1
    for name, field in (("escape_out", "out"), ("escape_in", "episodes")):
        message = results[name].content[0].text
        assert (
            results[name].is_error and f"{field}: path" in message and "is outside the workspace" in message
        )
    assert list(outside.iterdir()) == []
    assert results["bad"].is_error and "scenes: Input should be greater than or equal to 1" in (
        results["bad"].content[0].text
    )
