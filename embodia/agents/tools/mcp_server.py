"""Serve every registered tool over the Model Context Protocol (official ``mcp`` SDK, stdio transport).

``embodia mcp`` runs :func:`serve_stdio`. The server lists each tool with its JSON schema; a call is
validated against it (bad arguments come back as a tool error the agent can read and correct, per the MCP
spec), runs in a worker thread so the connection stays responsive, and forwards the tool's progress
reports as ``notifications/progress`` when the client asked for them (sent a progress token).

The agent is untrusted (it may have been prompt-injected), so every call runs under the server's
:class:`~embodia.agents.tools.registry.ToolContext`, fixed at start by its operator: path arguments must lie
inside the workspace (default: the current folder) and a model URL must be an allowed endpoint
(``--allow-endpoint``, ``$EMBODIA_MCP_ENDPOINTS``; default: none). The endpoint list also holds for the
whole process (:func:`embodia.agents.llm.allow_only_endpoints`), whatever a tool does.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server

from embodia.agents.llm import allow_only_endpoints
from embodia.agents.tools.registry import ToolContext, ToolError, get_tool, list_tools
from embodia.core.errors import EmbodiaError

ENDPOINTS_ENV = "EMBODIA_MCP_ENDPOINTS"
"""Environment variable of more allowed endpoints (comma- or whitespace-separated)."""

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


def server_context(
    workspace: str | Path | None = None,
    endpoints: Sequence[str] = (),
    environ: Mapping[str, str] | None = None,
) -> ToolContext:
    """The server's tool context: ``workspace`` (default: the current folder), ``endpoints`` plus those in
    ``$EMBODIA_MCP_ENDPOINTS``. Raises :class:`ToolError` for a missing workspace or a non-URL endpoint."""
    extra = (os.environ if environ is None else environ).get(ENDPOINTS_ENV, "")
    return ToolContext.confined(workspace, [*endpoints, *filter(None, re.split(r"[\s,]+", extra))])


async def _call_tool(
    ctx: ServerRequestContext, params: types.CallToolRequestParams, context: ToolContext
) -> types.CallToolResult:
    try:
        tool = get_tool(params.name)
        arguments = tool.validate(params.arguments, context)
    except ToolError as error:
        return _error_result(str(error))

    loop = asyncio.get_running_loop()

    def progress(done: float, total: float | None = None, message: str | None = None) -> None:
        # called from the worker thread: hop back onto the event loop to send the notification
        report = ctx.session.report_progress(float(done), total, message)
        asyncio.run_coroutine_threadsafe(report, loop).result()

    try:
        # always the same worker thread: torch keeps one OpenMP team instead of one per anyio worker
        result: Any = await loop.run_in_executor(_WORKER, lambda: tool.run(arguments, progress, context))
    except EmbodiaError as error:
        return _error_result(f"{type(error).__name__}: {error}")
    text = json.dumps(result)
    structured = result if isinstance(result, dict) else {"result": result}
    return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=structured)


def build_server(context: ToolContext) -> Server:
    """The MCP server object (lowlevel SDK server with tools/list and tools/call) running tools under
    ``context``."""
    from embodia.core.version import __version__

    async def call_tool(
        ctx: ServerRequestContext, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        return await _call_tool(ctx, params, context)

    where = (
        f" File arguments must lie inside the workspace {context.workspace} (relative paths resolve against it)."
        if context.workspace is not None
        else ""
    )
    return Server(
        "embodia",
        version=__version__,
        instructions="Tools from embodia: simulators and trajectories (list_envs, run_episodes, store_info, "
        "train_policy, evaluate_policy) and language-model methods (steering, layer skipping, fine-tuning, "
        f"hallucination evaluation, grounding reliability). Call tools/list for schemas.{where}",
        on_list_tools=_list_tools,
        on_call_tool=call_tool,
    )


async def _serve_stdio(context: ToolContext) -> None:
    server = build_server(context)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def serve_stdio(context: ToolContext | None = None) -> None:
    """Serve over stdin/stdout until the client closes the connection.

    ``context`` defaults to :func:`server_context` (the current folder, the endpoints in
    ``$EMBODIA_MCP_ENDPOINTS``). From here on this process contacts no other endpoint.
    """
    context = context if context is not None else server_context()
    allow_only_endpoints(context.endpoints)
    list_tools()  # import the tool modules before the first request
    anyio.run(_serve_stdio, context)
