"""Serve every registered tool over the Model Context Protocol (official ``mcp`` SDK, stdio transport).

``embodia mcp`` runs :func:`serve_stdio`. The server lists each tool with its JSON schema; a call is
validated against it (bad arguments come back as a tool error the agent can read and correct, per the MCP
spec), runs in a worker thread so the connection stays responsive, and forwards the tool's progress
reports as ``notifications/progress`` when the client asked for them (sent a progress token).
"""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server

from embodia.agents.tools.registry import ToolError, get_tool, list_tools
from embodia.errors import EmbodiaError

_WORKER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="embodia-tool")
"""Tools run one at a time on one thread (models are shared; torch keeps one thread pool)."""


def _error_result(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True)


async def _list_tools(
    ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(
        tools=[
            types.Tool(name=t.name, description=t.description, input_schema=t.input_schema())
            for t in list_tools()
        ]
    )


async def _call_tool(ctx: ServerRequestContext, params: types.CallToolRequestParams) -> types.CallToolResult:
    try:
        tool = get_tool(params.name)
        arguments = tool.validate(params.arguments)
    except ToolError as error:
        return _error_result(str(error))

    loop = asyncio.get_running_loop()

    def progress(done: float, total: float | None = None, message: str | None = None) -> None:
        # called from the worker thread: hop back onto the event loop to send the notification
        report = ctx.session.report_progress(float(done), total, message)
        asyncio.run_coroutine_threadsafe(report, loop).result()

    try:
        # always the same worker thread: torch keeps one OpenMP team instead of one per anyio worker
        result: Any = await loop.run_in_executor(_WORKER, lambda: tool.run(arguments, progress))
    except EmbodiaError as error:
        return _error_result(f"{type(error).__name__}: {error}")
    text = json.dumps(result)
    structured = result if isinstance(result, dict) else {"result": result}
    return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=structured)


def build_server() -> Server:
    """The MCP server object (lowlevel SDK server with tools/list and tools/call)."""
    from embodia import __version__

    return Server(
        "embodia",
        version=__version__,
        instructions="Tools from embodia: language-model methods (steering, layer skipping, fine-tuning, "
        "hallucination evaluation, grounding reliability) and more. Call tools/list for schemas.",
        on_list_tools=_list_tools,
        on_call_tool=_call_tool,
    )


async def _serve_stdio() -> None:
    server = build_server()
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def serve_stdio() -> None:
    """Serve over stdin/stdout until the client closes the connection."""
    list_tools()  # import the tool modules before the first request
    anyio.run(_serve_stdio)
