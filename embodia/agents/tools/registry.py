"""The tool registry: typed Python functions that agents call from Python, ``embodia tool ...`` or MCP.

A tool is a function whose first parameter is a dataclass (or pydantic model) of arguments, registered with
:func:`tool` next to its definition::

    @dataclass
    class EchoArgs:
        text: str
        '''What to echo.'''

    @tool("echo")
    def echo(args: EchoArgs, progress: Progress = no_progress) -> dict:
        '''Return the text unchanged.'''
        return {"text": args.text}

The argument type gives the JSON schema (field docstrings become descriptions; unknown arguments are
rejected); :meth:`Tool.run` validates a JSON object against it and raises :class:`ToolArgumentError`
naming every bad field. Results are converted to JSON values (numpy and torch arrays to lists, NaN to
null). Long tools accept ``progress`` and call ``progress(done, total, message)``; the CLI shows a progress
bar and the MCP server forwards it as MCP progress notifications.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib
import inspect
import math
import typing
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from embodia.errors import EmbodiaError

#: modules that register tools; imported by :func:`load_tools`. Add yours here.
_TOOL_MODULES = (
    "embodia.agents.tools.lm",
    "embodia.agents.tools.gateskip",
    "embodia.agents.tools.cold_steer",
    "embodia.agents.tools.hybrid_zo",
    "embodia.agents.tools.emotion_hallucer",
    "embodia.agents.tools.grounding",
)

_TOOLS: dict[str, Tool] = {}
_loaded = False


class ToolError(EmbodiaError):
    """A tool that cannot be found or called."""


class UnknownToolError(ToolError, KeyError):
    """No tool of that name is registered."""

    def __str__(self) -> str:
        return str(self.args[0])


class ToolArgumentError(ToolError, ValueError):
    """Arguments that do not match the tool's schema."""


class Progress(Protocol):
    """``progress(done, total=None, message=None)``: how far a long tool has come."""

    def __call__(self, done: float, total: float | None = None, message: str | None = None) -> None: ...


def no_progress(done: float, total: float | None = None, message: str | None = None) -> None:
    """The progress sink used when nobody listens."""


@dataclass
class Tool:
    """A registered tool: name, description, argument type and the function itself."""

    name: str
    """Unique name (``[a-z0-9_]+``), as agents and the CLI call it."""
    description: str
    """What it does, for the agent deciding whether to call it."""
    params_type: type
    """Dataclass or pydantic model of the arguments."""
    function: Callable[..., Any]
    """The function; called as ``function(params)`` or ``function(params, progress=...)``."""
    reports_progress: bool
    """Whether ``function`` takes a ``progress`` argument (long tools do)."""

    def __post_init__(self) -> None:
        from pydantic import ConfigDict, TypeAdapter

        if dataclasses.is_dataclass(self.params_type) and "__pydantic_config__" not in vars(self.params_type):
            # field docstrings become schema descriptions; unknown arguments are errors, not silently dropped
            self.params_type.__pydantic_config__ = ConfigDict(use_attribute_docstrings=True, extra="forbid")
        self._adapter = TypeAdapter(self.params_type)

    def input_schema(self) -> dict[str, Any]:
        """JSON schema of the arguments (an object schema)."""
        schema = self._adapter.json_schema()
        schema.pop("title", None)
        return schema

    def validate(self, arguments: dict[str, Any] | None) -> Any:
        """Arguments as an instance of ``params_type``; :class:`ToolArgumentError` lists every problem."""
        import pydantic

        if isinstance(arguments, self.params_type):
            return arguments
        if arguments is not None and not isinstance(arguments, dict):
            raise ToolArgumentError(
                f"tool {self.name!r}: arguments must be a JSON object, got {type(arguments).__name__}; "
                f"see `embodia tool schema {self.name}`"
            )
        try:
            return self._adapter.validate_python(arguments or {})
        except pydantic.ValidationError as error:
            problems = []
            for item in error.errors():
                where = ".".join(str(part) for part in item["loc"]) or "(arguments)"
                got = f" (got {item['input']!r})" if "input" in item and item["type"] != "missing" else ""
                problems.append(f"{where}: {item['msg']}{got}")
            raise ToolArgumentError(
                f"tool {self.name!r}: invalid arguments: {'; '.join(problems)}; "
                f"see `embodia tool schema {self.name}`"
            ) from None

    def run(self, arguments: dict[str, Any] | Any | None = None, progress: Progress = no_progress) -> Any:
        """Validate ``arguments``, call the tool, and return its result as a JSON value."""
        params = self.validate(arguments)
        if self.reports_progress:
            result = self.function(params, progress=progress)
        else:
            result = self.function(params)
        return to_jsonable(result)


def to_jsonable(value: Any) -> Any:
    """``value`` as plain JSON types: dataclasses and mappings to dicts, arrays to lists, NaN/inf to None."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Path):
        return str(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_jsonable(v) for v in value]
    if hasattr(value, "tolist"):  # numpy arrays and scalars, torch tensors
        return to_jsonable(value.tolist())
    if hasattr(value, "model_dump"):  # pydantic models
        return to_jsonable(value.model_dump())
    raise TypeError(f"cannot convert {type(value).__name__} to JSON")


def _first_paragraph(text: str | None) -> str:
    return inspect.cleandoc(text or "").split("\n\n")[0].replace("\n", " ").strip()


def tool(name: str | None = None, *, description: str | None = None) -> Callable[[Callable], Callable]:
    """Register the decorated function as a tool (see the module docstring)."""

    def register(function: Callable[..., Any]) -> Callable[..., Any]:
        tool_name = name or function.__name__
        signature = inspect.signature(function)
        parameters = list(signature.parameters.values())
        hints = typing.get_type_hints(function)
        if not parameters or parameters[0].name not in hints:
            raise TypeError(f"tool {tool_name!r}: the first parameter needs a dataclass/pydantic type hint")
        params_type = hints[parameters[0].name]
        if not (dataclasses.is_dataclass(params_type) or hasattr(params_type, "model_json_schema")):
            raise TypeError(
                f"tool {tool_name!r}: {params_type!r} is neither a dataclass nor a pydantic model"
            )
        existing = _TOOLS.get(tool_name)
        if existing is not None and existing.function.__qualname__ != function.__qualname__:
            raise ValueError(f"two tools are named {tool_name!r}: {existing.function} and {function}")
        _TOOLS[tool_name] = Tool(
            name=tool_name,
            description=description or _first_paragraph(function.__doc__),
            params_type=params_type,
            function=function,
            reports_progress="progress" in signature.parameters,
        )
        return function

    return register


def load_tools() -> None:
    """Import every module in ``_TOOL_MODULES`` so that their tools register."""
    global _loaded
    if _loaded:
        return
    for module in _TOOL_MODULES:
        importlib.import_module(module)
    _loaded = True


def list_tools() -> list[Tool]:
    """Every registered tool, sorted by name."""
    load_tools()
    return [_TOOLS[name] for name in sorted(_TOOLS)]


def get_tool(name: str) -> Tool:
    """The tool called ``name``; :class:`UnknownToolError` suggests close names."""
    load_tools()
    if name not in _TOOLS:
        close = difflib.get_close_matches(name, list(_TOOLS), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise UnknownToolError(f"no tool named {name!r}{hint} (`embodia tool list` shows them all)")
    return _TOOLS[name]


def call_tool(name: str, arguments: dict[str, Any] | None = None, progress: Progress = no_progress) -> Any:
    """Validate ``arguments`` and run the tool ``name``; returns a JSON value."""
    return get_tool(name).run(arguments, progress)
