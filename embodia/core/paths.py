"""Paths: checks on the files a command is asked to write (done before any work starts), and the marker of
configuration fields that name files to read (found by type, to confine what untrusted callers name)."""

from __future__ import annotations

import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from embodia.core.errors import OutputPathError


def output_file(path: str | Path, what: str = "output") -> Path:
    """``path`` as a :class:`~pathlib.Path` that a file can be written to (missing folders are created later).

    Raises:
        OutputPathError: ``path`` is an existing folder, or one of its parents is a file.
    """
    path = Path(path)
    if path.is_dir():
        raise OutputPathError(f"{what} {str(path)!r} is a folder; name a file (e.g. {path / 'out'}...)")
    for parent in path.parents:
        if parent.exists() and not parent.is_dir():
            raise OutputPathError(
                f"{what} {str(path)!r} cannot be written: {str(parent)!r} is a file, not a folder"
            )
    return path


@dataclass(frozen=True)
class PathArgument:
    """Marks a configuration field that names a file or folder to read (``Annotated[str, PathArgument()]``).

    Whoever takes configurations from untrusted callers (the MCP server's tools) finds these fields by type
    (:func:`confine_paths`), wherever the configuration is nested, and confines them; nothing has to know
    which options of which environment or method are paths.
    """

    names: frozenset[str] = frozenset()
    """values that are names of built-in things, not paths (kept as they are)"""
    name_prefixes: tuple[str, ...] = ()
    """prefixes of values that are not paths either (``procedural:...``)"""
    path_prefixes: tuple[str, ...] = ()
    """prefixes put before a path (``hf:FOLDER``): the rest is the path"""


ReadPath = Annotated[str, PathArgument()]
"""A file or folder a configuration reads."""


def _markers(annotation: Any) -> PathArgument | None:
    """The :class:`PathArgument` inside ``annotation`` (``X | None``, ``tuple[X, ...]``, ``dict[str, X]``)."""
    if typing.get_origin(annotation) is Annotated:
        for extra in annotation.__metadata__:
            if isinstance(extra, PathArgument):
                return extra
        return _markers(annotation.__origin__)
    for arg in typing.get_args(annotation):
        found = _markers(arg)
        if found is not None:
            return found
    return None


def path_fields(config_type: type) -> dict[str, PathArgument]:
    """The fields of a dataclass (or pydantic model) whose type holds a :class:`PathArgument`."""
    hints = typing.get_type_hints(config_type, include_extras=True)
    found = {}
    for name, annotation in hints.items():
        marker = _markers(annotation)
        if marker is not None:
            found[name] = marker
    return found


def confine_paths(
    config_type: type, values: Mapping[str, Any], confine: Callable[[str], str]
) -> dict[str, Any]:
    """``values`` (keyword arguments of ``config_type``) with every path field passed through ``confine``.

    Strings inside lists, tuples and dict values of a path field are paths too; names and name prefixes the
    field declares are kept. ``confine`` raises ``ValueError`` for a path it refuses; the message then names
    the field.
    """
    fields = path_fields(config_type)
    out = dict(values)

    def one(marker: PathArgument, value: Any) -> Any:
        if isinstance(value, str):
            if value in marker.names or value.startswith(marker.name_prefixes):
                return value
            for prefix in marker.path_prefixes:
                if value.startswith(prefix):
                    return prefix + confine(value[len(prefix) :])
            return confine(value)
        if isinstance(value, list | tuple):
            return type(value)(one(marker, v) for v in value)
        if isinstance(value, Mapping):
            return {k: one(marker, v) for k, v in value.items()}
        return value

    for name, marker in fields.items():
        if name in out and out[name] is not None:
            try:
                out[name] = one(marker, out[name])
            except ValueError as error:
                raise ValueError(f"{name}: {error}") from None
    return out
