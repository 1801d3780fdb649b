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

The argument type gives the JSON schema (field docstrings become descriptions); :meth:`Tool.run`
validates a JSON object against it with :func:`embodia.core.validation.validate` (unknown arguments, NaN
and infinities are refused) and raises :class:`ToolArgumentError` naming every bad field. Results are
converted to JSON values (numpy and torch arrays to lists, NaN to null). Long tools accept ``progress`` and
call ``progress(done, total, message)``; the CLI shows a progress bar and the MCP server forwards it as MCP
progress notifications.

Arguments an agent could abuse are declared by type, so that every tool gets the same checks: a file the
tool reads is an :data:`InputPath`, one it writes an :data:`OutputPath`, a built-in data set or a file
``name_or_input_path(NAME)``, a language model a :data:`ModelSpec` (known name, local folder / .gguf file,
or endpoint URL). Whoever runs the tools fixes a :class:`ToolContext`: the MCP server confines paths to its
workspace and endpoints to those its operator allowed; Python and ``embodia tool run`` are unconfined (the
person typing chooses). Under a confined context relative paths resolve against the workspace and the tool
receives the resolved absolute path.
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import importlib
import inspect
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Protocol

from pydantic import AfterValidator, ValidationInfo

from embodia.agents.llm import KNOWN_MODELS, endpoint_base, endpoints_allowed, is_endpoint
from embodia.core.errors import EmbodiaError
from embodia.core.jsonable import to_jsonable
from embodia.core.paths import confine_paths
from embodia.core.validation import adapter, validate, with_inherited_descriptions

#: modules that register tools; imported by :func:`load_tools`. Add yours here.
_TOOL_MODULES = (
    "embodia.agents.tools.embodied",
    "embodia.agents.tools.lm",
    "embodia.agents.tools.gateskip",
    "embodia.agents.tools.cold_steer",
    "embodia.agents.tools.hybrid_zo",
    "embodia.agents.tools.emotion_hallucer",
    "embodia.agents.tools.grounding",
    "embodia.agents.tools.spatial_dise",
    "embodia.agents.tools.peer_effects",
    "embodia.agents.tools.explainer",
    "embodia.agents.tools.laplacian_attention",
    "embodia.agents.tools.parallel_decode",
    "embodia.agents.tools.vppo",
    "embodia.agents.tools.flow_of_ranks",
    "embodia.agents.tools.navcraft",
    "embodia.agents.tools.vsr",
    "embodia.agents.tools.iqa",
    "embodia.agents.tools.scienceboard",
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


# ---------------------------------------------------------------------------------------------- context
@dataclass(frozen=True)
class ToolContext:
    """What tool arguments may reach, fixed by whoever runs the tools (not by the caller of a tool)."""

    workspace: Path | None = None
    """Paths must lie inside this folder (symlinks followed); relative ones resolve against it. None:
    unconfined."""
    endpoints: tuple[str, ...] | None = None
    """HTTP endpoints (``http://host:port/v1``) a model argument may name. None: any."""

    def __post_init__(self) -> None:
        if self.workspace is not None:
            object.__setattr__(self, "workspace", Path(self.workspace).expanduser().resolve())
        if self.endpoints is not None:
            object.__setattr__(self, "endpoints", tuple(dict.fromkeys(map(endpoint_base, self.endpoints))))

    @classmethod
    def confined(cls, workspace: str | Path | None = None, endpoints: Iterable[str] = ()) -> ToolContext:
        """A server's context: paths inside ``workspace`` (default: the current folder), only ``endpoints``.

        Raises :class:`ToolError` if the workspace is not a folder or an endpoint is not an http(s) URL.
        """
        root = Path(workspace if workspace is not None else Path.cwd()).expanduser().resolve()
        if not root.is_dir():
            raise ToolError(f"the workspace {root} is not an existing folder")
        endpoints = list(endpoints)
        for url in endpoints:
            if not is_endpoint(url) or not endpoint_base(url).partition("://")[2]:
                raise ToolError(f"allowed endpoint {url!r} is not an http:// or https:// URL")
        return cls(root, tuple(endpoints))

    def path(self, value: str, *, output: bool = False) -> str:
        """``value`` unchanged when unconfined; else the resolved absolute path, if it lies in the workspace.

        Raises ``ValueError`` (a field error in validation) for a path outside it; an ``output`` may not be
        the workspace folder itself.
        """
        if self.workspace is None:
            return value
        if not value or "\x00" in value:
            raise ValueError("path is empty or contains a NUL character")
        given = Path(value)
        with contextlib.suppress(RuntimeError):  # ~user of an unknown user stays a plain relative name
            given = given.expanduser()
        try:
            resolved = (self.workspace / given).resolve()  # an absolute ``given`` replaces the workspace
        except (OSError, RuntimeError) as error:  # symlink loops
            raise ValueError(f"path {value!r} cannot be resolved ({type(error).__name__})") from None
        if output and resolved == self.workspace:
            raise ValueError(f"path {value!r} is the workspace folder itself; name a file inside it")
        if not resolved.is_relative_to(self.workspace):
            shown = repr(value) if str(resolved) == value else f"{value!r} (resolves to {resolved})"
            raise ValueError(
                f"path {shown} is outside the workspace {self.workspace}; tools may only read and write "
                "inside it"
            )
        return str(resolved)

    def endpoint(self, url: str) -> str:
        """``url`` if its endpoint (the part before ``#``) is allowed; else ``ValueError``."""
        if self.endpoints is not None and endpoint_base(url) not in self.endpoints:
            base = endpoint_base(url)
            raise ValueError(
                f"endpoint {base} is not allowed by this server; the server's operator must allow it with "
                f"`embodia mcp --allow-endpoint {base}` (or EMBODIA_MCP_ENDPOINTS)"
            )
        return url


UNCONFINED = ToolContext()
"""Python and ``embodia tool run``: any path, any endpoint."""

_CONTEXT_KEY = "tool_context"
"""Key of the :class:`ToolContext` in pydantic's validation context."""


def _context(info: ValidationInfo) -> ToolContext:
    context = info.context.get(_CONTEXT_KEY) if isinstance(info.context, Mapping) else None
    return context if isinstance(context, ToolContext) else UNCONFINED


def _input_path(value: str, info: ValidationInfo) -> str:
    return _context(info).path(value)


def _output_path(value: str, info: ValidationInfo) -> str:
    return _context(info).path(value, output=True)


def _model_spec(value: str, info: ValidationInfo) -> str:
    if value.lower() in KNOWN_MODELS:
        return value
    if is_endpoint(value):
        return _context(info).endpoint(value)
    return _context(info).path(value)


InputPath = Annotated[str, AfterValidator(_input_path)]
"""A file or folder a tool reads: inside the workspace when confined (the tool gets it resolved)."""
OutputPath = Annotated[str, AfterValidator(_output_path)]
"""A file a tool writes: inside the workspace when confined (the tool gets it resolved)."""
ModelSpec = Annotated[str, AfterValidator(_model_spec)]
"""A language model: a known name, a local folder / .gguf file (an :data:`InputPath`), or an endpoint URL
``http(s)://host:port/v1#model`` (an allowed endpoint when confined)."""


def _env_config_type(env_id: str) -> type | None:
    from embodia.envs.registration import env_config_type

    return env_config_type(env_id)


def _method_config_type(method: str) -> type | None:
    from embodia.policies.learner import learner_classes

    return learner_classes(method)[1]


def _confined_options(named_by: str, config_type_of: Callable[[str], type | None]) -> Callable[..., Any]:
    """A validator of an options dict whose type is named by the field ``named_by`` validated before it
    (an environment id, a method): the options that type marks as paths are confined (by type)."""

    def check(value: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        context = _context(info)
        name = info.data.get(named_by) if isinstance(info.data, Mapping) else None
        if context.workspace is None or not value or not name:
            return value
        try:
            config_type = config_type_of(name)
        except Exception:  # an unknown id or method: the tool reports it when it uses the name
            return value
        return value if config_type is None else confine_paths(config_type, value, context.path)

    return check


EnvKwargs = Annotated[dict[str, Any], AfterValidator(_confined_options("env_id", _env_config_type))]
"""Keyword arguments of the environment named by the ``env_id`` field before it; the options the
environment's ``config_type`` marks as paths (:class:`embodia.core.paths.PathArgument`) are confined."""
MethodOptions = Annotated[dict[str, Any], AfterValidator(_confined_options("method", _method_config_type))]
"""Options of the learning method named by the ``method`` field before it; path options are confined."""


def name_or_input_path(*names: str) -> Any:
    """The type of an argument that is one of ``names`` (built-in data, taken as is) or else an
    :data:`InputPath`: ``PairSet = name_or_input_path("embodia-emotion-pairs")``."""
    known = frozenset(names)

    def check(value: str, info: ValidationInfo) -> str:
        return value if value in known else _context(info).path(value)

    return Annotated[str, AfterValidator(check)]


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
        adapter(self.params_type)  # embodia's validation config; a broken argument type fails at registration

    def input_schema(self) -> dict[str, Any]:
        """JSON schema of the arguments (an object schema)."""
        schema = with_inherited_descriptions(adapter(self.params_type).json_schema(), self.params_type)
        schema.pop("title", None)
        return schema

    def validate(self, arguments: dict[str, Any] | Any | None, context: ToolContext | None = None) -> Any:
        """Arguments as an instance of ``params_type``; :class:`ToolArgumentError` lists every problem.

        ``context`` confines paths and endpoints (None: unconfined); an instance is checked again.
        """
        if isinstance(arguments, self.params_type):
            if dataclasses.is_dataclass(arguments):
                arguments = dataclasses.asdict(arguments)
            elif hasattr(arguments, "model_dump"):
                arguments = arguments.model_dump()
        elif arguments is not None and not isinstance(arguments, dict):
            raise ToolArgumentError(
                f"tool {self.name!r}: arguments must be a JSON object, got {type(arguments).__name__}; "
                f"see `embodia tool schema {self.name}`"
            )
        try:
            return validate(
                self.params_type,
                arguments or {},
                where=f"tool {self.name!r}: invalid arguments",
                error=ToolArgumentError,
                context={_CONTEXT_KEY: context or UNCONFINED},
            )
        except ToolArgumentError as error:
            raise ToolArgumentError(f"{error}; see `embodia tool schema {self.name}`") from None

    def run(
        self,
        arguments: dict[str, Any] | Any | None = None,
        progress: Progress = no_progress,
        context: ToolContext | None = None,
    ) -> Any:
        """Validate ``arguments`` under ``context``, call the tool, and return its result as a JSON value.

        While it runs, only the context's endpoints may be contacted (see
        :func:`embodia.agents.llm.endpoints_allowed`), whatever the tool does.
        """
        context = context or UNCONFINED
        params = self.validate(arguments, context)
        with endpoints_allowed(context.endpoints):
            if self.reports_progress:
                result = self.function(params, progress=progress)
            else:
                result = self.function(params)
        return to_jsonable(result)


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


def call_tool(
    name: str,
    arguments: dict[str, Any] | None = None,
    progress: Progress = no_progress,
    context: ToolContext | None = None,
) -> Any:
    """Validate ``arguments`` and run the tool ``name``; returns a JSON value. ``context``: see :class:`Tool`."""
    return get_tool(name).run(arguments, progress, context)
