"""One validation mechanism for everything a user or an agent configures: node configs, training configs,
tool arguments.

Configs are plain dataclasses whose fields carry their type, and where it matters their range, as
``Annotated[float, Field(gt=0, le=1000)]``; cross-field rules live in ``__post_init__`` and raise
``ValueError``. :func:`validate` builds an instance from plain data (parsed YAML / JSON) with pydantic,
which checks every field at once and says where each problem is::

    node.yaml: command.low.0: Input should be a finite number (got nan); rate_hz: Input should be less
    than or equal to 1000 (got 5000)

Every config validated here rejects unknown fields (a typo must not silently change what runs), NaN and
infinite floats, and takes its field descriptions from the field docstrings (JSON schemas show them).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from typing import Any, TypeVar

from embodia.core.errors import ConfigError, EmbodiaError

T = TypeVar("T")

#: what every validated config refuses: unknown fields, NaN / inf; field docstrings become descriptions
CONFIG = {
    "extra": "forbid",
    "allow_inf_nan": False,
    "use_attribute_docstrings": True,
    "revalidate_instances": "always",  # an instance built in Python is checked like parsed data
}


def prepare(cls: type) -> type:
    """Give a dataclass embodia's pydantic config (unless it declares its own); returns ``cls``."""
    from pydantic import ConfigDict

    if dataclasses.is_dataclass(cls) and "__pydantic_config__" not in vars(cls):
        cls.__pydantic_config__ = ConfigDict(**CONFIG)
        for field in dataclasses.fields(cls):  # nested config dataclasses get the same rules
            for inner in _dataclasses_in(field.type if not isinstance(field.type, str) else None):
                prepare(inner)
    return cls


def _dataclasses_in(annotation: Any) -> list[type]:
    import typing

    if annotation is None:
        return []
    if dataclasses.is_dataclass(annotation) and isinstance(annotation, type):
        return [annotation]
    return [c for arg in typing.get_args(annotation) for c in _dataclasses_in(arg)]


@functools.cache
def adapter(cls: type) -> Any:
    """The (cached) pydantic ``TypeAdapter`` of a config class."""
    import typing

    from pydantic import TypeAdapter

    if dataclasses.is_dataclass(cls):
        prepare(cls)
        for hint in typing.get_type_hints(cls, include_extras=True).values():
            for inner in _dataclasses_in(hint):
                prepare(inner)
    return TypeAdapter(cls)


def problems(error: Any) -> str:
    """A pydantic ``ValidationError`` as one line: ``where: what (got value); ...``."""
    parts = []
    for item in error.errors():
        where = ".".join(str(part) for part in item["loc"])
        message = str(item["msg"]).removeprefix("Value error, ")
        got = ""
        if (
            "input" in item
            and item["type"] not in ("missing", "value_error")
            and not isinstance(item["input"], Mapping)
        ):
            got = f" (got {_short(item['input'])})"
        parts.append(f"{where}: {message}{got}" if where else f"{message}{got}")
    return "; ".join(parts)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def validate(
    cls: type[T],
    data: Any,
    *,
    where: str,
    error: type[EmbodiaError] = ConfigError,
    context: Mapping[str, Any] | None = None,
) -> T:
    """``data`` (a mapping, or already a ``cls``) as a validated ``cls`` instance.

    Args:
        cls: a dataclass (or pydantic model) whose fields declare types and ranges.
        data: plain data, e.g. parsed from YAML or JSON; an instance of ``cls`` is re-validated.
        where: what the data is, for the message (a file name, ``"deas config"``, ``"tool 'x'"``).
        error: the exception type raised for invalid data (one per kind, see :mod:`embodia.core.errors`).
        context: passed to field validators that need it (e.g. the workspace that confines paths).

    Raises:
        ``error``: naming every invalid field, in one line.
    """
    from pydantic import ValidationError

    try:
        return adapter(cls).validate_python(data, context=dict(context or {}))
    except ValidationError as invalid:
        raise error(f"{where}: {problems(invalid)}") from None


def schema(cls: type) -> dict[str, Any]:
    """The JSON schema of a config class (field docstrings as descriptions, inherited ones included)."""
    return with_inherited_descriptions(adapter(cls).json_schema(), cls)


def with_inherited_descriptions(json_schema: dict[str, Any], cls: type) -> dict[str, Any]:
    """Fill in the descriptions pydantic leaves out: fields a dataclass inherits from a dataclass base keep
    their docstrings there, which ``use_attribute_docstrings`` does not read. ``json_schema`` is the schema
    of ``cls``; nested config dataclasses (its ``$defs``, named by class) are completed too."""
    classes = {cls.__name__: cls}
    pending = [cls]
    while pending:
        for field in dataclasses.fields(pending.pop()):
            for inner in _dataclasses_in(field.type if not isinstance(field.type, str) else None):
                if inner.__name__ not in classes:
                    classes[inner.__name__] = inner
                    pending.append(inner)
    targets = [(json_schema, cls)] + [
        (definition, classes[name])
        for name, definition in json_schema.get("$defs", {}).items()
        if name in classes and dataclasses.is_dataclass(classes[name])
    ]
    for target, owner in targets:
        docs = _attribute_docstrings(owner)
        for name, prop in target.get("properties", {}).items():
            if "description" not in prop and name in docs:
                prop["description"] = docs[name]
    return json_schema


def field_docs(cls: type) -> dict[str, str]:
    """``field -> docstring`` of a config dataclass, inherited fields included (what ``--help`` shows)."""
    return dict(_attribute_docstrings(cls))


@functools.cache
def _attribute_docstrings(cls: type) -> dict[str, str]:
    """``field -> docstring`` over the class and its bases (the nearest class wins), read from the source."""
    import ast
    import inspect
    import textwrap

    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__[:-1]):
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError, SyntaxError):
            continue
        body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
        for node, after in zip(body, body[1:]):
            if (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            ):
                docs[node.target.id] = inspect.cleandoc(after.value.value)
    return docs
