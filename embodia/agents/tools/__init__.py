"""Agent tools: one registry behind the Python API, ``embodia tool ...`` and the MCP server (``embodia mcp``).

>>> from embodia.agents.tools import call_tool, list_tools
>>> [t.name for t in list_tools()]            # doctest: +SKIP
>>> call_tool("lm_generate", {"prompt": "Say hi"})  # doctest: +SKIP
"""

from __future__ import annotations

from embodia.agents.tools.registry import (
    UNCONFINED,
    EnvKwargs,
    InputPath,
    MethodOptions,
    ModelSpec,
    OutputPath,
    Progress,
    Tool,
    ToolArgumentError,
    ToolContext,
    ToolError,
    UnknownToolError,
    call_tool,
    get_tool,
    list_tools,
    name_or_input_path,
    no_progress,
    tool,
)

__all__ = [
    "UNCONFINED",
    "EnvKwargs",
    "InputPath",
    "MethodOptions",
    "ModelSpec",
    "OutputPath",
    "Progress",
    "Tool",
    "ToolArgumentError",
    "ToolContext",
    "ToolError",
    "UnknownToolError",
    "call_tool",
    "get_tool",
    "list_tools",
    "name_or_input_path",
    "no_progress",
    "tool",
]
