"""Open a bag whose topics cannot all be decoded: the readable ones are read, the others are listed.

``rosbags``' ``AnyReader`` parses every message definition of a bag when it opens it and gives up on the
whole bag at the first it cannot parse: the service-event topics (``.../_service_event``, types
``pkg/srv/Name_Event``) newer rosbag2 versions record carry the raw service definition (``SRV:``, with
``---``) where a message definition belongs, and a topic of a type that is neither defined in the bag
nor known to the default typestore (ROS 2 Jazzy) cannot be decoded either. :class:`BagReader` builds
the type store connection by connection instead: a connection whose definition does not parse, needs a
type nothing defines, or conflicts with another connection's definition is *unreadable* (with the
reason), and the rest of the bag reads normally. ROS 2 bags (an ``.mcap`` file or a rosbag2 directory)
and ROS 1 ``.bag`` files are read.

Messages of uncompressed ROS 2 bags are read from their storage files by *topic name* (the ``mcap``
package for ``.mcap`` files, SQLite for ``.db3``), not through ``rosbags``' connection ids: ``rosbags``
numbers a directory's connections in the order of ``metadata.yaml``, which need not be the storage's
own channel / topic ids (the rosbag2 project's own ``talker`` test bags: ``/topic`` is connection 1 in the
metadata, channel 3 in the file), and then reads no message at all.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from embodia.robot.errors import BagError

_NO_DEFINITION = "the bag has no definition of it and the default typestore lacks it"


def _first_line(error: BaseException) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__


class BagReader:
    """A ROS bag opened for reading, its connections split into readable and unreadable ones.

    Use as a context manager. ``topics`` maps each readable topic to its type; ``unreadable`` maps each
    topic none of whose connections can be decoded to ``(type, reason)``.
    """

    def __init__(self, path: Path, default_typestore: Any) -> None:
        self.path = path
        self.default = default_typestore
        self.ros1 = path.suffix == ".bag"
        self._reader: Any = None
        self._store_of: dict[int, Any] = {}
        self.connections: list[Any] = []
        self.topics: dict[str, str] = {}
        self.unreadable: dict[str, tuple[str, str]] = {}

    def __enter__(self) -> BagReader:
        if self.ros1:
            from rosbags.rosbag1 import Reader
        else:
            from rosbags.rosbag2 import Reader
        try:
            self._reader = Reader(self.path)
            self._reader.open()
        except Exception as error:  # rosbags raises several types for unreadable bags
            self._reader = None
            raise BagError(f"cannot read bag {str(self.path)!r}: {_first_line(error)}") from None
        self._build_typestore()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None

    def _build_typestore(self) -> None:
        from rosbags.interfaces import MessageDefinitionFormat
        from rosbags.typesys import Stores, get_typestore

        store = get_typestore(Stores.EMPTY)
        failed: dict[str, tuple[str, str]] = {}
        for connection in self._reader.connections:
            msgdef = connection.msgdef
            try:
                if msgdef.format == MessageDefinitionFormat.NONE:
                    if connection.msgtype not in self.default.fielddefs:
                        failed[connection.topic] = (connection.msgtype, _NO_DEFINITION)
                        continue
                    target = self.default
                else:
                    store.register(self._definitions(msgdef, connection.msgtype))
                    target = store
                target.get_msgdef(connection.msgtype)  # every nested type must be known
            except KeyError as error:
                failed[connection.topic] = (
                    connection.msgtype,
                    f"its definition needs {error.args[0]}, which is undefined",
                )
                continue
            except Exception as error:  # parse errors (TypesysError), conflicting definitions
                reason = f"its definition cannot be parsed ({_first_line(error)})"
                failed[connection.topic] = (connection.msgtype, reason)
                continue
            self._store_of[connection.id] = target
            self.connections.append(connection)
            self.topics[connection.topic] = connection.msgtype
        self.unreadable = {t: v for t, v in failed.items() if t not in self.topics}

    @staticmethod
    def _definitions(msgdef: Any, msgtype: str) -> dict[str, Any]:
        from rosbags.interfaces import MessageDefinitionFormat
        from rosbags.typesys import get_types_from_idl, get_types_from_msg

        if msgdef.format == MessageDefinitionFormat.MSG:
            return dict(get_types_from_msg(msgdef.data, msgtype))
        types: dict[str, Any] = {}
        separator = "=" * 80 + "\n"
        if msgdef.data.startswith(f"{separator}IDL: "):
            for block in msgdef.data.split(separator)[1:]:
                _, idl = block.split("\n", 1)
                types.update(get_types_from_idl(idl))
        else:
            types.update(get_types_from_idl(msgdef.data))
        return types

    def messages(self, connections: list[Any]) -> Iterator[tuple[Any, int, bytes]]:
        """``(connection, log time ns, raw bytes)`` of these connections in log-time order."""
        if not connections:
            return iter(())
        files = None if self.ros1 else storage_files(self.path)
        if files is None:  # ROS 1, or compressed storage: rosbags decompresses it
            return self._reader.messages(connections=connections)
        return _messages_by_topic(files, {c.topic: c for c in connections})

    def deserialize(self, raw: bytes, connection: Any) -> Any:
        """The message object of one raw message of a readable connection."""
        store = self._store_of[connection.id]
        if self.ros1:
            return store.deserialize_ros1(raw, connection.msgtype)
        return store.deserialize_cdr(raw, connection.msgtype)


def storage_files(path: Path) -> list[Path] | None:
    """The uncompressed storage files of a ROS 2 bag (``.mcap`` / ``.db3``), in order; None if compressed."""
    if path.is_file():
        return [path] if path.suffix in (".mcap", ".db3") else None
    try:
        info = yaml.safe_load((path / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    except (OSError, KeyError, TypeError, yaml.YAMLError):
        return None
    if info.get("compression_format") or info.get("compression_mode"):
        return None
    files = [path / name for name in info.get("relative_file_paths") or []]
    if not files or any(f.suffix not in (".mcap", ".db3") or not f.is_file() for f in files):
        return None
    return files


def _messages_by_topic(files: list[Path], by_topic: dict[str, Any]) -> Iterator[tuple[Any, int, bytes]]:
    for file in files:
        if file.suffix == ".mcap":
            from mcap.reader import make_reader

            with file.open("rb") as stream:
                reader = make_reader(stream)
                for _, channel, message in reader.iter_messages(topics=list(by_topic), log_time_order=True):
                    yield by_topic[channel.topic], message.log_time, message.data
        else:
            db = sqlite3.connect(f"file:{file}?mode=ro", uri=True)
            try:
                marks = ",".join("?" for _ in by_topic)
                rows = db.execute(
                    "SELECT topics.name, messages.timestamp, messages.data FROM messages "
                    f"JOIN topics ON messages.topic_id = topics.id WHERE topics.name IN ({marks}) "
                    "ORDER BY messages.timestamp",
                    list(by_topic),
                )
                for topic, stamp, data in rows:
                    yield by_topic[topic], int(stamp), bytes(data)
            except sqlite3.DatabaseError as error:
                raise BagError(f"cannot read bag storage {str(file)!r}: {error}") from None
            finally:
                db.close()
