"""Reading ROS 2 launch files (YAML and XML) into one tree of :class:`Entity` objects with line numbers.

Both front ends of ``ros2 launch`` describe the same actions; only the spelling differs::

    launch:                                   <launch>
    - node:                                     <node pkg="demo" exec="talker" if="$(var on)">
        pkg: demo                                 <param name="rate" value="10"/>
        exec: talker                            </node>
        if: $(var on)                           <group scoped="false">
        param: [{name: rate, value: 10}]          <push-ros-namespace namespace="r1"/>
    - group:                                    </group>
        scoped: false                         </launch>
        children:
        - push-ros-namespace: {namespace: r1}

A YAML action is a one-key mapping whose value holds the attributes (a list value, or a ``children`` key,
holds nested actions); an XML action is an element whose attributes are the attributes and whose child
elements are nested actions or, for the names in :data:`SUB_ENTITIES`, lists such as ``param``. YAML keeps
its scalar types; XML values are strings (``NAME-sep`` splits one into a list, as in ROS 2).
"""

from __future__ import annotations

import xml.parsers.expat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from embodia.robot.errors import LaunchFileError

#: per action, the attributes that are lists of sub-entities (YAML: a list of mappings; XML: child elements)
SUB_ENTITIES: dict[str, frozenset[str]] = {
    "node": frozenset({"param", "remap", "env"}),
    "lifecycle_node": frozenset({"param", "remap", "env"}),
    "executable": frozenset({"env"}),
    "include": frozenset({"arg", "let"}),
    "arg": frozenset({"choice"}),
    "group": frozenset({"keep"}),
    "reset": frozenset({"keep"}),
    "param": frozenset({"param"}),
}


@dataclass
class Entity:
    """One action (or sub-entity such as a ``param``) of a launch file, whatever its format."""

    kind: str
    attrs: dict[str, Any]
    """attribute name -> value (YAML types, or strings for XML)"""
    file: Path
    line: int
    children: list[Entity] | None = None
    """nested actions (group, timer, launch); None where the body is a plain mapping"""
    xml_subs: dict[str, list[Entity]] = field(default_factory=dict)
    """XML only: child elements that are sub-entity lists (``<param>`` in ``<node>``), by tag"""
    xml: bool = False
    """read from XML (every value a string) rather than YAML (typed values)"""

    @property
    def where(self) -> str:
        """``FILE:LINE`` for messages."""
        return f"{self.file}:{self.line}"

    def fail(self, message: str) -> LaunchFileError:
        """A :class:`LaunchFileError` that names this entity's file, line and kind."""
        return LaunchFileError(f"{self.where}: {self.kind}: {' '.join(message.split())}")

    def subs(self, name: str) -> list[Entity]:
        """The sub-entities ``name`` (``param``, ``remap``, ``arg`` ...) as entities; [] when absent."""
        if name in self.xml_subs:
            return self.xml_subs[name]
        value = self.attrs.get(name)
        if value is None:
            return []
        if isinstance(value, dict):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            raise self.fail(f"'{name}' must be a list of mappings such as [{{name: x, value: y}}]")
        return [_yaml_sub(name, item, self) for item in value]

    def actions(self) -> list[Entity]:
        """Nested actions (group, timer, the launch root)."""
        return self.children or []


def _yaml_sub(name: str, item: dict[str, Any], parent: Entity) -> Entity:
    return Entity(name, dict(item), parent.file, getattr(item, "line", parent.line))


# ---------------------------------------------------------------------- YAML
class _LineDict(dict):  # type: ignore[type-arg]
    """A mapping that remembers the line it started on."""

    line = 0


class _LineLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` whose mappings are :class:`_LineDict` objects."""


def _construct_mapping(loader: _LineLoader, node: yaml.MappingNode) -> Any:
    data = _LineDict()
    data.line = node.start_mark.line + 1
    yield data
    data.update(loader.construct_mapping(node))


_LineLoader.add_constructor("tag:yaml.org,2002:map", _construct_mapping)


def _yaml_entity(kind: str, body: Any, file: Path, line: int) -> Entity:
    """The entity of ``- kind: body`` (a mapping of attributes, or a list of nested actions)."""
    if body is None:
        body = {}
    if isinstance(body, list):
        return Entity(kind, {}, file, line, children=_yaml_actions(body, file, line, kind))
    if not isinstance(body, dict):
        raise LaunchFileError(
            f"{file}:{line}: {kind}: expected a mapping of attributes (or a list of actions), "
            f"got {type(body).__name__} {body!r}"
        )
    attrs = dict(body)
    children = None
    if "children" in attrs:
        children = _yaml_actions(attrs.pop("children"), file, getattr(body, "line", line), kind)
    return Entity(kind, attrs, file, line, children=children)


def _yaml_actions(entries: Any, file: Path, line: int, parent: str) -> list[Entity]:
    if entries is None:
        return []
    if not isinstance(entries, list):
        raise LaunchFileError(
            f"{file}:{line}: {parent}: the actions must be a list ('- node: {...}' entries)"
        )
    out = []
    for entry in entries:
        entry_line = getattr(entry, "line", line)
        if not isinstance(entry, dict) or len(entry) != 1:
            raise LaunchFileError(
                f"{file}:{entry_line}: each entry of {parent} is one action such as '- node: {{...}}', "
                f"got {entry!r}"
            )
        ((kind, body),) = entry.items()
        out.append(_yaml_entity(str(kind), body, file, entry_line))
    return out


def _read_yaml(path: Path, text: str) -> Entity:
    try:
        data = yaml.load(text, Loader=_LineLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(error, "problem", None) or str(error)
        raise LaunchFileError(
            f"{path}{line}: not valid YAML ({' '.join(str(problem).split())}); fix the syntax"
        ) from error
    if not isinstance(data, dict) or "launch" not in data:
        raise LaunchFileError(f"{path} is not a ROS 2 YAML launch file (no top-level 'launch:' list)")
    root = _yaml_entity("launch", data["launch"], path, getattr(data, "line", 1))
    if root.children is None:
        raise LaunchFileError(f"{path}: 'launch' must be a list of actions")
    return root


# ---------------------------------------------------------------------- XML
def _read_xml(path: Path, text: str) -> Entity:
    """Parse XML with the standard library's expat parser (the one ``xml.etree`` uses), keeping lines."""
    parser = xml.parsers.expat.ParserCreate()
    stack: list[Entity] = []
    roots: list[Entity] = []

    def start(tag: str, attrib: dict[str, str]) -> None:
        attrs: dict[str, Any] = {}
        for key, value in attrib.items():
            if key.endswith("-sep") and key[:-4] in attrib:
                continue
            sep = attrib.get(f"{key}-sep")
            attrs[key] = value.split(sep) if sep else value
        entity = Entity(tag, attrs, path, parser.CurrentLineNumber, xml=True)
        if stack:
            parent = stack[-1]
            if tag in SUB_ENTITIES.get(parent.kind, frozenset()):
                parent.xml_subs.setdefault(tag, []).append(entity)
            else:
                parent.children = [*(parent.children or []), entity]
        else:
            roots.append(entity)
        stack.append(entity)

    def end(tag: str) -> None:
        stack.pop()

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    try:
        parser.Parse(text, True)
    except xml.parsers.expat.ExpatError as error:
        message = xml.parsers.expat.errors.messages.get(error.code, str(error))
        raise LaunchFileError(
            f"{path}:{error.lineno}: not well-formed XML ({message}); fix the syntax"
        ) from error
    root = roots[0]
    if root.kind != "launch":
        raise LaunchFileError(
            f"{path}:{root.line}: the root element is <{root.kind}>; a ROS 2 XML launch file has <launch>"
        )
    root.children = root.children or []
    return root


def read_launch_file(path: Path, where: str = "") -> Entity:
    """The root ``launch`` entity of a YAML or XML launch file (``where``: who asked, for messages).

    Raises:
        LaunchFileError: missing file, a Python launch file, invalid syntax, no ``launch`` root.
    """
    prefix = f"{where}: " if where else ""
    name = path.name
    if name.endswith(".py"):
        raise LaunchFileError(
            f"{prefix}{path} is a Python launch file; embodia runs YAML and XML launch files only "
            "(port it to .launch.yaml or .launch.xml, or run it with ros2 launch)"
        )
    if not path.is_file():
        raise LaunchFileError(f"{prefix}launch file {str(path)!r} does not exist")
    text = path.read_text()
    if name.endswith(".xml") or (not name.endswith((".yaml", ".yml")) and text.lstrip().startswith("<")):
        return _read_xml(path, text)
    return _read_yaml(path, text)
