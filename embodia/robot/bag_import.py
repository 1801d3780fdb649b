"""ROS bag -> trajectory store (``embodia data import-mcap``); the rules are in :mod:`embodia.robot.mcap`.

Steps: open the bag (:class:`~embodia.robot.bag_reader.BagReader`: topics whose message definitions
cannot be decoded are skipped with a warning, or refused when named); choose the topics; pre-scan the
non-image topics (converted once, so that text widths are known and a topic whose values change shape
is refused before anything is written); then convert every message with the converter registry
(:mod:`embodia.robot.converters`) and assemble rows (:class:`~embodia.robot.record.EpisodeAssembler`).
A store this import created is removed again when the import fails.
"""

from __future__ import annotations

import json
import shutil
import warnings
from collections.abc import Callable, Iterator
from contextlib import suppress
from pathlib import Path
from typing import Any

import numpy as np

from embodia.core.errors import EmbodiaError
from embodia.robot.errors import BagError


class BagWarning(UserWarning):
    """Something in a bag was left out of the import (topics whose messages cannot be decoded)."""


def _warn(message: str) -> None:
    warnings.warn(message, BagWarning, stacklevel=3)


def import_bag(
    bag: str | Path,
    out: str | Path,
    *,
    topics: list[str] | None = None,
    action: str | None = None,
    step_on: str | None = None,
    episode_topic: str | None = None,
    env_id: str | None = None,
    progress: bool = False,
    on_warning: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Append the episodes of a ROS bag to the store ``out``; see :func:`embodia.robot.mcap.import_mcap`."""
    from embodia.robot.bag_reader import BagReader
    from embodia.robot.mcap import _typestore, read_embodia_metadata

    bag, out = Path(bag), Path(out)
    if not bag.exists():
        raise BagError(f"bag {str(bag)!r} does not exist")
    meta = read_embodia_metadata(bag)
    schema: dict[str, Any] | None = None
    key_of_topic: dict[str, str] = {}
    if meta is not None:
        schema = json.loads(meta["schema"])
        key_of_topic = {topic: key for key, topic in json.loads(meta["topics"]).items()}
        episode_topic = episode_topic or meta["episode_topic"]
        step_on = step_on or meta["step_topic"]
    created = not out.exists()
    job = _Import(bag, out, schema, env_id, progress, on_warning or _warn)
    try:
        with BagReader(bag, _typestore()) as reader:
            job.reader = reader
            named = [t.partition("=")[0] for t in topics or []] + [action, step_on, episode_topic]
            if episode_topic is None and "/episode" in reader.topics:
                episode_topic = "/episode"
            job.check_unreadable([t for t in named if t])
            specs = job.choose(topics, action, key_of_topic, episode_topic)
            job.named = {t for t in named if t}
            return job.run(specs, action, step_on, episode_topic)
    except EmbodiaError:
        if job.sink is not None:
            job.sink.store.close()
            job.sink = None
        if created and out.exists():
            shutil.rmtree(out, ignore_errors=True)  # nothing of a failed import stays behind
        raise
    finally:
        if job.sink is not None:
            job.sink.store.close()


class _Import:
    """One import: the chosen topics, their value encoders, the sink and the counters."""

    def __init__(
        self,
        bag: Path,
        out: Path,
        schema: dict[str, Any] | None,
        env_id: str | None,
        progress: bool,
        warn: Callable[[str], None],
    ) -> None:
        self.bag, self.out, self.schema = bag, out, schema
        self.env_id = env_id or f"ros2:{bag.stem}"
        self.progress, self.warn = progress, warn
        self.reader: Any = None
        self.sink: _TypedSink | None = None
        self.rejected = 0
        self.messages: dict[str, int] = {}
        """messages read per topic"""
        self.failures: dict[str, tuple[int, str]] = {}
        """per topic: messages that could not become values, and the first reason"""
        self.named: set[str] = set()
        """topics the user named: refused, not left out, when they cannot be imported"""

    # ------------------------------------------------------------------ topics
    def check_unreadable(self, named: list[str]) -> None:
        """Refuse a named topic that cannot be decoded; warn about the others."""
        unreadable = self.reader.unreadable
        for topic in named:
            if topic in unreadable:
                msgtype, reason = unreadable[topic]
                raise BagError(f"topic {topic} ({msgtype}) of bag {self.bag} cannot be decoded: {reason}")
        if unreadable:
            listed = "; ".join(f"{t} ({m}: {r})" for t, (m, r) in sorted(unreadable.items()))
            self.warn(f"skipped {len(unreadable)} topic(s) whose messages cannot be decoded: {listed}")

    def choose(
        self,
        topics: list[str] | None,
        action: str | None,
        key_of_topic: dict[str, str],
        episode_topic: str | None,
    ) -> list[tuple[str, str]]:
        """(topic, key) pairs to import, the action topic last."""
        from embodia.robot.converters import converter_for
        from embodia.robot.record import parse_topic_spec

        available = self.reader.topics
        if self.schema is not None and topics is None:
            specs = [(topic, key) for topic, key in key_of_topic.items() if topic in available]
        elif topics:
            specs = [parse_topic_spec(t) for t in topics]
        else:  # every topic whose type has a converter imported by default
            specs = []
            for topic, kind in available.items():
                converter = converter_for(kind)
                if topic != episode_topic and converter is not None and converter.auto:
                    specs.append(parse_topic_spec(topic))
        if action:
            specs = [s for s in specs if s[0] != action] + [(action, "action")]
        missing = [t for t, _ in specs if t not in available]
        if missing or not specs:
            raise BagError(
                f"bag {self.bag} has no topic(s) {missing or 'of a supported type'}; it has {sorted(available)}"
            )
        keys = [k for _, k in specs]
        if len(set(keys)) != len(keys):
            raise BagError(f"two topics map to the same key: {keys}; use TOPIC=KEY to rename")
        return specs

    # ------------------------------------------------------------------ import
    def run(
        self, specs: list[tuple[str, str]], action: str | None, step_on: str | None, episode_topic: str | None
    ) -> dict[str, Any]:
        from embodia.robot.converters import TopicValues, converter_for
        from embodia.robot.errors import RobotConfigError
        from embodia.robot.flatten import field_names
        from embodia.robot.record import EpisodeAssembler

        widths = self._prescan(specs) if self.schema is None else {}
        specs = [s for s in specs if s[0] in widths or self.schema is not None]
        if not specs:
            raise BagError(f"no topic of bag {self.bag} can be imported (see the warnings)")
        key_of = dict(specs)
        step_topic = step_on or action or specs[0][0]
        if step_topic not in key_of:
            raise BagError(f"step topic {step_topic} is not one of the imported topics {list(key_of)}")
        if self.schema:
            roles = {k: v["role"] for k, v in self.schema.items()}
        else:
            roles = {"action": "action"} if action else {}
        self.sink = sink = _TypedSink(self.out, roles, self.schema)
        values = {topic: TopicValues(key, self._width_function(topic, widths)) for topic, key in specs}
        try:
            assembler = EpisodeAssembler([k for _, k in specs], key_of[step_topic], sink, env_id=self.env_id)
        except RobotConfigError as error:
            raise BagError(str(error)) from error
        wanted = [c for c in self.reader.connections if c.topic in key_of or c.topic == episode_topic]
        fields: dict[str, list[str]] = {}
        for connection, msg in self._messages(wanted, "importing messages"):
            topic = connection.topic
            if topic == episode_topic:
                if msg is not None:
                    self._event(msg, assembler, sink)
                continue
            self.messages[topic] = self.messages.get(topic, 0) + 1
            value = self._convert(connection, msg, values[topic])
            if value is None:
                continue
            if key_of[topic] not in fields and converter_for(connection.msgtype) is None:
                fields[key_of[topic]] = field_names(msg)  # the generic fallback's column names
            assembler.value(key_of[topic], value)
        assembler.finish()
        self._report(specs, step_topic, sink.steps)
        store_keys = [name for topic, _ in specs for name in _store_keys(values[topic])]
        return {
            "path": str(self.out),
            "episodes": assembler.episodes,
            "steps": sink.steps,
            "rejected": self.rejected,
            "keys": store_keys,
            "skipped": len(self.reader.unreadable),
            "skipped_topics": sorted(self.reader.unreadable),
            "fields": fields,
        }

    def _fail(self, topic: str, reason: str) -> None:
        self.rejected += 1
        count, first = self.failures.get(topic, (0, reason))
        self.failures[topic] = (count + 1, first)

    def _report(self, specs: list[tuple[str, str]], step_topic: str, steps: int) -> None:
        """An import of nothing is an error that says why; messages left out are a warning naming them."""
        lines = []
        for topic, _ in specs:
            got = self.messages.get(topic, 0)
            failed, reason = self.failures.get(topic, (0, ""))
            if failed:
                lines.append(f"{topic}: {failed} of {got} messages could not be read ({reason})")
            elif got == 0:
                lines.append(f"{topic}: no messages in the bag")
        if steps == 0:
            rule = (
                f"a row is made per message of {step_topic} once every imported topic has delivered a value"
            )
            detail = "; ".join(lines) or "no message of the imported topics"
            raise BagError(
                f"nothing imported from bag {self.bag}: {detail} ({rule}); leave such topics out with --topic"
            )
        if lines:
            self.warn("left out of the import: " + "; ".join(lines))

    def _convert(self, connection: Any, msg: Any, values: Any) -> Any:
        from embodia.robot.converters import ShapeError, convert_message
        from embodia.robot.errors import MessageError

        if msg is None:
            return None
        try:
            return values.encode(convert_message(msg, connection.msgtype))
        except ShapeError as error:
            raise BagError(
                f"topic {connection.topic} ({connection.msgtype}): {error}; leave it out"
            ) from None
        except MessageError as error:
            self._fail(connection.topic, str(error))
            return None

    def _messages(self, connections: list[Any], label: str) -> Iterator[tuple[Any, Any]]:
        """``(connection, message)``; a message that does not decode is counted and given as None."""
        total = sum(c.msgcount for c in connections)
        messages = self.reader.messages(connections)
        if self.progress:
            from rich.progress import track

            messages = track(messages, total=total, description=label)
        for connection, _, raw in messages:
            try:
                msg = self.reader.deserialize(raw, connection)
            except Exception as error:  # damaged message data: rosbags raises several types
                self._fail(connection.topic, f"{type(error).__name__}: {error}")
                msg = None
            yield connection, msg

    def _prescan(self, specs: list[tuple[str, str]]) -> dict[str, dict[str, int]]:
        """Longest text per topic and part (bytes), for every topic that can be imported.

        A topic whose values change shape is refused when it was named (nothing is written yet), and
        left out with a warning when it was chosen by default.
        """
        from embodia.robot.converters import TopicScan, convert_message, converter_for
        from embodia.robot.errors import MessageError

        scans: dict[str, TopicScan] = {}
        texts: dict[str, dict[str, int]] = {}
        for topic, _ in specs:
            converter = converter_for(self.reader.topics[topic])
            if converter is None or not converter.heavy:
                scans[topic] = TopicScan()
            else:
                texts[topic] = {}
        wanted = [c for c in self.reader.connections if c.topic in scans]
        rejected, failures = self.rejected, dict(self.failures)
        for connection, msg in self._messages(wanted, "scanning topics"):
            if msg is not None:
                with suppress(MessageError):  # counted by the import pass
                    scans[connection.topic].add(convert_message(msg, connection.msgtype))
        self.rejected, self.failures = rejected, failures  # the import pass counts what does not decode
        left_out = []
        for topic, scan in scans.items():
            problem = scan.problem()
            what = f"topic {topic} ({self.reader.topics[topic]})"
            if problem and topic in self.named:
                raise BagError(
                    f"{what} cannot become store columns: {problem}; "
                    "leave it out (name the topics to import with --topic)"
                )
            if problem:
                left_out.append(f"{what}: {problem}")
            else:
                texts[topic] = scan.text_bytes
        for what in left_out:
            self.warn(f"left out {what}")
        return texts

    def _width_function(self, topic: str, widths: dict[str, dict[str, int]]) -> Callable[[str], int]:
        from embodia.robot.converters import TEXT_BYTES, text_width

        def width(store_key: str) -> int:
            part = store_key.partition(".")[2]
            needed = widths.get(topic, {}).get(part)
            assert self.sink is not None
            have = self.sink.store.schema.get(store_key)
            if have is not None and have["dtype"] == "uint8" and len(have["shape"]) == 1:
                if needed is not None and needed > have["shape"][0]:
                    raise BagError(
                        f"topic {topic}: texts of up to {needed} bytes do not fit the store's "
                        f"{have['shape'][0]}-byte text column {store_key!r}; import into another store"
                    )
                return int(have["shape"][0])
            return text_width(needed) if needed is not None else TEXT_BYTES

        return width

    def _event(self, msg: Any, assembler: Any, sink: _TypedSink) -> None:
        try:
            event = json.loads(msg.data)
        except (json.JSONDecodeError, TypeError, AttributeError):
            return
        if isinstance(event, dict):
            if event.get("event") == "end":
                sink.pending_event = event  # used when the episode is committed (next start)
            assembler.event(event)  # may commit the previous episode (with the previous start)
            if event.get("event") == "start":
                sink.start(event)


def _store_keys(values: Any) -> list[str]:
    from embodia.robot.converters import store_key

    return [store_key(values.key, part) for part in values.shapes] or [values.key]


class _TypedSink:
    """Stores episodes with the exporter's dtypes, shapes and initial / final states when known."""

    def __init__(self, out: str | Path, roles: dict[str, str], schema: dict[str, Any] | None) -> None:
        from embodia.data.store import TrajectoryStore

        self.store = TrajectoryStore(out, mode="a")
        self.roles = roles
        self.schema = schema
        self.pending_event: dict[str, Any] = {}
        self.steps = 0
        self._start: dict[str, Any] = {}

    def __call__(self, data: dict[str, np.ndarray], info: dict[str, Any]) -> None:
        event, self.pending_event = self.pending_event, {}
        if event.get("event") == "end":
            info["final_state"] = event.get("final_state")
        if self._start.get("initial_state") is not None:
            info["initial_state"] = self._start["initial_state"]
        if self.schema:
            data = {
                k: (
                    v.astype(self.schema[k]["dtype"]).reshape(len(v), *self.schema[k]["shape"])
                    if k in self.schema
                    else v
                )
                for k, v in data.items()
            }
        info = {k: (np.asarray(v) if k.endswith("_state") else v) for k, v in info.items() if v is not None}
        self.store.add_episode(data, roles=self.roles, **info)
        self.steps += len(next(iter(data.values())))

    def start(self, event: dict[str, Any]) -> None:
        self._start = event
