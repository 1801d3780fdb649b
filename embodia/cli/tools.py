"""``embodia tool list | schema NAME | run NAME --args JSON|@file.json`` and
``embodia mcp [--workspace DIR] [--allow-endpoint URL ...]``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from embodia.agents.tools.registry import ToolArgumentError
from embodia.core.cli_args import output_file_path


def _parse_args_option(value: str | None) -> dict[str, Any]:
    if value is None:
        return {}
    source = "--args"
    if value.startswith("@"):
        path = Path(value[1:]).expanduser()
        if not path.is_file():
            raise ToolArgumentError(f"--args {value}: no such file {path}")
        source, value = str(path), path.read_text()
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError as error:
        raise ToolArgumentError(
            f"{source} is not valid JSON ({error.msg} at line {error.lineno} column {error.colno}); "
            'pass a JSON object such as \'{"prompt": "hi"}\' or @file.json'
        ) from None
    if not isinstance(parsed, dict):
        raise ToolArgumentError(f"{source} must hold a JSON object of arguments, got {type(parsed).__name__}")
    return parsed


def cmd_tool_list(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from embodia.agents.tools.registry import list_tools

    tools = list_tools()
    if args.json:
        print(json.dumps([{"name": t.name, "description": t.description} for t in tools], indent=2))
        return 0
    table = Table(title=f"{len(tools)} embodia tools")
    table.add_column("name", no_wrap=True)
    table.add_column("description", overflow="fold")
    for t in tools:
        table.add_row(t.name, t.description)
    Console().print(table)
    return 0


def cmd_tool_schema(args: argparse.Namespace) -> int:
    from embodia.agents.tools.registry import get_tool

    t = get_tool(args.name)
    print(
        json.dumps({"name": t.name, "description": t.description, "input_schema": t.input_schema()}, indent=2)
    )
    return 0


def cmd_tool_run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from embodia.agents.tools.registry import get_tool

    t = get_tool(args.name)
    arguments = t.validate(_parse_args_option(args.args))  # fail before any model loads
    if args.quiet or not t.reports_progress:
        result = t.run(arguments)
    else:
        with Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[message]}"),
            console=Console(stderr=True),
            transient=True,
        ) as bar:
            task = bar.add_task(t.name, total=None, message="")

            def progress(done: float, total: float | None = None, message: str | None = None) -> None:
                bar.update(task, completed=done, total=total, message=message or "")

            result = t.run(arguments, progress)
    text = json.dumps(result, indent=2)
    if args.out:
        Path(args.out).write_text(text + "\n")
    print(text)
    return 0


def cmd_mcp(args: argparse.Namespace) -> int:
    import os

    # Before torch loads: tools run on a worker thread while the event loop idles on the main one; with
    # OpenMP's default spin-waiting the two thread teams starved each other (a 3-step fine-tune took
    # 160 s instead of 18 s on 2 cores). Passive waiting costs nothing measurable here.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    from embodia.agents.tools.mcp_server import serve_stdio, server_context

    serve_stdio(server_context(args.workspace, args.allow_endpoint or ()))  # bad options fail before serving
    return 0


def add_commands(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("tool", help="list, describe and run agent tools")
    tool_sub = p.add_subparsers(dest="tool_command", required=True, metavar="SUBCOMMAND")

    q = tool_sub.add_parser("list", help="every registered tool")
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=cmd_tool_list)

    q = tool_sub.add_parser("schema", help="a tool's description and JSON schema of its arguments")
    q.add_argument("name")
    q.set_defaults(func=cmd_tool_schema)

    q = tool_sub.add_parser("run", help="run a tool; prints its JSON result")
    q.add_argument("name")
    q.add_argument("--args", metavar="JSON|@FILE", help="arguments as a JSON object, or @path to a JSON file")
    q.add_argument("--out", type=output_file_path, metavar="FILE.json", help="also write the result here")
    q.add_argument("--quiet", action="store_true", help="no progress bar")
    q.set_defaults(func=cmd_tool_run)

    p = subparsers.add_parser("mcp", help="serve every tool over MCP (stdio) for LLM agents and IDEs")
    p.add_argument("--transport", choices=["stdio"], default="stdio", help="MCP transport (stdio)")
    p.add_argument(
        "--workspace",
        metavar="DIR",
        help="the only folder tools may read and write (default: the current folder); relative paths in tool "
        "arguments resolve against it",
    )
    p.add_argument(
        "--allow-endpoint",
        action="append",
        metavar="URL",
        help="an OpenAI-compatible endpoint (http://host:port/v1) a model argument may name; repeatable. "
        "Also $EMBODIA_MCP_ENDPOINTS (comma- or space-separated). Default: none (the API key goes nowhere)",
    )
    p.set_defaults(func=cmd_mcp)
