"""Tool ``video_upscale``: in process through ``call_tool`` and, confined to a workspace, over a real MCP client."""

from __future__ import annotations

import anyio
from mcp import ClientSession, stdio_client

from embodia.agents.tools import call_tool, get_tool
from embodia.perception.vff import read_video, write_video
from embodia.perception.video import render_videos
from tests.agents.conftest import mcp_server


def test_video_upscale_in_process(tmp_path):
    write_video(tmp_path / "in.mp4", render_videos("tiny", count=1, seed=3).rgb[0], fps=8)
    result = call_tool(
        "video_upscale",
        {"video": str(tmp_path / "in.mp4"), "out": str(tmp_path / "o.mp4"), "space": 2, "time": 2},
    )
    assert result["output"] == {"frames": 11, "height": 64, "width": 64} and result["fps"] == 16
    assert result["method"].startswith("trilinear")
    assert read_video(tmp_path / "o.mp4")[0].shape == (11, 64, 64, 3)
    schema = get_tool("video_upscale").input_schema()
    assert set(schema["required"]) == {"video", "out"}


def test_paths_outside_the_workspace_are_refused_over_mcp(tmp_path):
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    write_video(outside / "in.mp4", render_videos("tiny", count=1, seed=3).rgb[0], fps=8)
    results = {}

    async def run() -> None:
        async with stdio_client(mcp_server(ws)) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            results["escape"] = await session.call_tool(
                "video_upscale", {"video": str(outside / "in.mp4"), "out": "o.mp4"}
            )

    anyio.run(run)
    message = results["escape"].content[0].text
    assert results["escape"].is_error and "video: path" in message and "is outside the workspace" in message
    assert not (ws / "o.mp4").exists() and sorted(p.name for p in outside.iterdir()) == ["in.mp4"]
