"""Trajectory stores <-> ROS 2 bags in MCAP: ``embodia data export STORE --mcap OUT.mcap``, ``data import-mcap``.

Export writes one MCAP file with ROS 2's conventions (profile ``ros2``, schemas as ``ros2msg`` text,
messages CDR-encoded, QoS and type hash in the channel metadata), so ``ros2 bag info/play``,
``rosbags`` and Foxglove read it. Each store key becomes a topic ``<prefix>/<key>``:

==========================  ===================================================================
store key                   message
==========================  ===================================================================
images (H, W, C) uint8      sensor_msgs/Image (rgb8 / rgba8 / mono8), stamped with the step time
bool scalars (flags)        std_msgs/Bool
other scalars (reward)      std_msgs/Float64
everything else             std_msgs/Float64MultiArray, the row shape in ``layout.dim``
==========================  ===================================================================

Step ``t`` of the bag's episodes is logged at ``1 us + t * 1/rate_hz`` (episodes follow each other
without gaps); the action is logged 1 ns after the other messages of its step, so time order is
causal order for every reader. ``<prefix>/episode`` carries std_msgs/String JSON
events: ``start`` (env_id, env_kwargs, seed, initial_state) before an episode's first step and ``end``
(success, length, return, final_state) after its last. An MCAP metadata record ``embodia`` holds the
store schema (dtype, shape, role per key), so importing the bag restores the store exactly (float64
carries float32 and small integers exactly; integers beyond 2**53 would be rounded).

Import reads any ROS 2 bag (an ``.mcap`` file or a rosbag2 directory) with ``rosbags``: the chosen
topics become keys, rows are made per message of the step topic with the newest message of every other
topic (:class:`embodia.robot.record.EpisodeAssembler`), and episode events split episodes when the bag
has them. Bags written by the export come back with their original keys, dtypes and episode table.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from embodia.robot.errors import BagError

EMBODIA_METADATA = "embodia"
_START_NS = 1_000  # bag time of the first step (the first start event is logged 1 ns before it)
_QOS = [
    {
        "history": "keep_last",
        "depth": 10,
        "reliability": "reliable",
        "durability": "volatile",
        "deadline": {"sec": 9223372036, "nsec": 854775807},
        "lifespan": {"sec": 9223372036, "nsec": 854775807},
        "liveliness": "automatic",
        "liveliness_lease_duration": {"sec": 9223372036, "nsec": 854775807},
        "avoid_ros_namespace_conventions": False,
    }
]


def _typestore() -> Any:
    from rosbags.typesys import Stores, get_typestore

    return get_typestore(Stores.ROS2_JAZZY)


def message_type_for(key: str, spec: dict[str, Any]) -> str:
    """The ROS 2 message type a store key is exported as (see the module docstring)."""
    shape, dtype = tuple(spec["shape"]), np.dtype(spec["dtype"])
    if dtype == np.uint8 and len(shape) == 3 and shape[2] in (1, 3, 4):
        return "sensor_msgs/msg/Image"
    if shape == ():
        return "std_msgs/msg/Bool" if dtype == np.bool_ else "std_msgs/msg/Float64"
    return "std_msgs/msg/Float64MultiArray"


class _Builder:
    """rosbags message objects for export (CDR-serialised by rosbags, byte-exact ROS 2 encoding)."""

    def __init__(self, typestore: Any) -> None:
        self.ts = typestore
        t = typestore.types
        self.Time, self.Header = t["builtin_interfaces/msg/Time"], t["std_msgs/msg/Header"]
        self.Dim, self.Layout = t["std_msgs/msg/MultiArrayDimension"], t["std_msgs/msg/MultiArrayLayout"]
        self.types = t

    def header(self, ns: int, frame: str) -> Any:
        sec, nanosec = divmod(int(ns), 1_000_000_000)
        return self.Header(stamp=self.Time(sec=sec, nanosec=nanosec), frame_id=frame)

    def build(self, msgtype: str, value: np.ndarray, ns: int, key: str) -> Any:
        t = self.types
        if msgtype == "sensor_msgs/msg/Image":
            channels = value.shape[2]
            encoding = {1: "mono8", 3: "rgb8", 4: "rgba8"}[channels]
            data = np.ascontiguousarray(value, dtype=np.uint8).reshape(-1)
            return t[msgtype](
                header=self.header(ns, key),
                height=value.shape[0],
                width=value.shape[1],
                encoding=encoding,
                is_bigendian=0,
                step=value.shape[1] * channels,
                data=data,
            )
        if msgtype == "std_msgs/msg/Bool":
            return t[msgtype](data=bool(value))
        if msgtype == "std_msgs/msg/Float64":
            return t[msgtype](data=float(value))
        values = np.asarray(value, dtype=np.float64)
        dims, stride = [], int(values.size)
        for axis, size in enumerate(values.shape):
            dims.append(self.Dim(label=f"{key}{axis}", size=int(size), stride=stride))
            stride //= max(int(size), 1)
        return t[msgtype](layout=self.Layout(dim=dims, data_offset=0), data=values.reshape(-1))

    def string(self, text: str) -> Any:
        return self.types["std_msgs/msg/String"](data=text)


def _state_list(value: np.ndarray | None) -> list[float] | None:
    if value is None or not np.isfinite(np.asarray(value, dtype=np.float64)).any():
        return None
    return [float(x) for x in np.asarray(value, dtype=np.float64)]


def export_mcap(
    store_path: str | Path,
    out: str | Path,
    *,
    prefix: str = "/embodia",
    rate_hz: float = 20.0,
    episodes: list[int] | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """Write the episodes of a trajectory store as a ROS 2 bag (one MCAP file); returns a summary.

    The file is written next to ``out`` and renamed into place when complete, so an interrupted export
    never leaves a truncated bag behind.
    """
    from mcap.writer import CompressionType, Writer

    from embodia.core.version import __version__
    from embodia.data.store import TrajectoryStore

    store = TrajectoryStore(store_path, mode="r")
    out = Path(out)
    if out.suffix != ".mcap":
        raise BagError(f"--mcap output must end in .mcap, got {str(out)!r}")
    indices = list(range(store.num_episodes)) if episodes is None else episodes
    if not indices:
        raise BagError(f"store {str(store.path)!r} has no episodes to export")
    schema = store.schema
    order = [k for k in schema if schema[k]["role"] != "action"] + [
        k for k in schema if schema[k]["role"] == "action"
    ]
    prefix = "/" + prefix.strip("/") if prefix.strip("/") else ""
    topics = {key: f"{prefix}/{key}" for key in order}
    episode_topic = f"{prefix}/episode"
    ts = _typestore()
    builder = _Builder(ts)
    dt_ns = int(round(1e9 / rate_hz))
    tmp = out.with_name(out.name + ".partial")
    out.parent.mkdir(parents=True, exist_ok=True)
    messages = 0
    with open(tmp, "wb") as stream:
        writer = Writer(stream, compression=CompressionType.ZSTD)
        writer.start(profile="ros2", library=f"embodia {__version__}")
        schema_ids: dict[str, int] = {}
        channels: dict[str, tuple[int, str]] = {}
        qos = _qos_yaml()
        for key, msgtype in [
            *((k, message_type_for(k, schema[k])) for k in order),
            ("episode", "std_msgs/msg/String"),
        ]:
            if msgtype not in schema_ids:
                text, _ = ts.generate_msgdef(msgtype, ros_version=2)
                schema_ids[msgtype] = writer.register_schema(
                    name=msgtype, encoding="ros2msg", data=text.encode()
                )
            topic = episode_topic if key == "episode" else topics[key]
            metadata = {"offered_qos_profiles": qos, "topic_type_hash": ts.hash_rihs01(msgtype)}
            channels[key] = (writer.register_channel(topic, "cdr", schema_ids[msgtype], metadata), msgtype)
        writer.add_metadata(
            EMBODIA_METADATA,
            {
                "format": "1",
                "schema": json.dumps(schema),
                "topics": json.dumps(topics),
                "episode_topic": episode_topic,
                "step_topic": topics[order[-1]],
                "rate_hz": repr(float(rate_hz)),
            },
        )

        def write(key: str, msg: Any, ns: int) -> None:
            nonlocal messages
            channel, msgtype = channels[key]
            data = bytes(ts.serialize_cdr(msg, msgtype))
            writer.add_message(channel, log_time=ns, data=data, publish_time=ns, sequence=messages)
            messages += 1

        clock = _START_NS
        action_key = order[-1]
        for index in _progress(indices, progress, "exporting episodes"):
            data = store.episode(index)
            meta = store.episode_meta(index)
            start = {
                "event": "start",
                "episode": index,
                "env_id": meta.env_id,
                "env_kwargs": meta.env_kwargs,
                "seed": meta.seed,
                "initial_state": _state_list(meta.initial_state),
            }
            write("episode", builder.string(json.dumps(start)), clock - 1)
            for t in range(meta.length):
                for key in order:
                    # the action 1 ns after its observation: time order is causal order for any reader
                    stamp = clock + 1 if key == action_key else clock
                    write(key, builder.build(channels[key][1], data[key][t], clock, key), stamp)
                clock += dt_ns
            end = {
                "event": "end",
                "episode": index,
                "success": meta.success,
                "length": meta.length,
                "return": meta.return_,
                "final_state": _state_list(meta.final_state),
            }
            write("episode", builder.string(json.dumps(end)), clock - dt_ns + 2)
        writer.finish()
    tmp.replace(out)
    return {
        "path": str(out),
        "episodes": len(indices),
        "messages": messages,
        "topics": sorted(topics.values()),
    }


def _qos_yaml() -> str:
    import yaml

    return yaml.safe_dump(_QOS, sort_keys=False).strip()


def _progress(items: list[Any], enabled: bool, label: str) -> Iterator[Any]:
    if not enabled:
        yield from items
        return
    from rich.progress import track

    yield from track(items, description=label)


def read_embodia_metadata(path: Path) -> dict[str, str] | None:
    """The ``embodia`` metadata record of an MCAP file written by :func:`export_mcap` (None otherwise)."""
    if path.is_dir() or path.suffix != ".mcap":
        return None
    from mcap.reader import make_reader

    with open(path, "rb") as stream:
        try:
            for record in make_reader(stream).iter_metadata():
                if record.name == EMBODIA_METADATA:
                    return dict(record.metadata)
        except Exception as error:  # the mcap reader raises several types for damaged files
            raise BagError(f"{path} is not a readable MCAP file ({type(error).__name__}: {error})") from error
    return None


def import_mcap(
    bag: str | Path,
    out: str | Path,
    *,
    topics: list[str] | None = None,
    action: str | None = None,
    step_on: str | None = None,
    episode_topic: str | None = None,
    env_id: str | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """Append the episodes of a ROS 2 bag to the trajectory store ``out`` (see the module docstring).

    Args:
        topics: ``TOPIC`` or ``TOPIC=KEY`` to import (default: every topic of a supported type).
        action: the command topic, stored as key ``action`` (role action).
        step_on: one row per message of this topic (default: the action topic, else the first topic).
        episode_topic: JSON episode events (default: the exporter's, or ``/episode`` when present).
        env_id: env_id of episodes without a start event (default ``ros2:<bag name>``).
    """
    from rosbags.highlevel import AnyReader

    from embodia.robot.convert import normalize_type, to_array
    from embodia.robot.errors import MessageError, RobotConfigError
    from embodia.robot.record import RECORDABLE, EpisodeAssembler, parse_topic_spec

    bag = Path(bag)
    if not bag.exists():
        raise BagError(f"bag {str(bag)!r} does not exist")
    meta = read_embodia_metadata(bag)
    schema: dict[str, Any] | None = None
    if meta is not None:
        schema = json.loads(meta["schema"])
        key_of_topic = {topic: key for key, topic in json.loads(meta["topics"]).items()}
        episode_topic = episode_topic or meta["episode_topic"]
        step_on = step_on or meta["step_topic"]
    try:
        reader = AnyReader([bag], default_typestore=_typestore())
        reader.open()
    except Exception as error:  # rosbags raises several types for unreadable bags
        raise BagError(f"cannot read bag {str(bag)!r}: {type(error).__name__}: {error}") from error
    sink: _TypedSink | None = None
    try:
        available = {c.topic: c.msgtype for c in reader.connections}
        if episode_topic is None and "/episode" in available:
            episode_topic = "/episode"
        if schema is not None and topics is None:
            specs = [(topic, key) for topic, key in key_of_topic.items() if topic in available]
        elif topics:
            specs = [parse_topic_spec(t) for t in topics]
        else:
            specs = [
                parse_topic_spec(t)
                for t, kind in available.items()
                if t != episode_topic and _short(kind) in RECORDABLE
            ]
        if action:
            specs = [s for s in specs if s[0] != action] + [(action, "action")]
        missing = [t for t, _ in specs if t not in available]
        if missing or not specs:
            raise BagError(
                f"bag {bag} has no topic(s) {missing or 'of a supported type'}; it has {sorted(available)}"
            )
        for topic, _ in specs:
            if _short(available[topic]) not in RECORDABLE:
                raise BagError(
                    f"{topic} has type {available[topic]}, which cannot become an array ({RECORDABLE})"
                )
        key_of = dict(specs)
        step_topic = step_on or action or specs[0][0]
        if step_topic not in key_of:
            raise BagError(f"step topic {step_topic} is not one of the imported topics {list(key_of)}")
        roles = (
            {k: v["role"] for k, v in schema.items()} if schema else ({"action": "action"} if action else {})
        )
        sink = _TypedSink(out, roles, schema)
        try:
            assembler = EpisodeAssembler(
                [k for _, k in specs], key_of[step_topic], sink, env_id=env_id or f"ros2:{bag.stem}"
            )
        except RobotConfigError as error:
            raise BagError(str(error)) from error
        wanted = [c for c in reader.connections if c.topic in key_of or c.topic == episode_topic]
        rejected = 0
        count = sum(c.msgcount for c in wanted)
        for connection, _, raw in _progress_messages(reader, wanted, progress, count):
            msg = reader.deserialize(raw, connection.msgtype)
            if connection.topic == episode_topic:
                try:
                    event = json.loads(msg.data)
                except json.JSONDecodeError:
                    continue
                if isinstance(event, dict):
                    if event.get("event") == "end":
                        sink.pending_event = event  # used when the episode is committed (next start)
                    assembler.event(event)  # may commit the previous episode (with the previous start)
                    if event.get("event") == "start":
                        sink.start(event)
                continue
            key = key_of[connection.topic]
            try:
                value = to_array(msg, normalize_type(connection.msgtype))
            except MessageError:
                rejected += 1
                continue
            assembler.value(key, np.asarray(value))
        assembler.finish()
    finally:
        reader.close()
        if sink is not None:
            sink.store.close()
    return {
        "path": str(out),
        "episodes": assembler.episodes,
        "steps": sink.steps,
        "rejected": rejected,
        "keys": [k for _, k in specs],
    }


def _short(msgtype: str) -> str:
    return msgtype.rsplit("/", 1)[-1]


def _progress_messages(reader: Any, connections: list[Any], enabled: bool, total: int) -> Iterator[Any]:
    messages = reader.messages(connections=connections)
    if not enabled:
        yield from messages
        return
    from rich.progress import track

    yield from track(messages, total=total, description="importing messages")


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
                k: v.astype(self.schema[k]["dtype"]).reshape(len(v), *self.schema[k]["shape"])
                for k, v in data.items()
            }
        info = {k: (np.asarray(v) if k.endswith("_state") else v) for k, v in info.items() if v is not None}
        self.store.add_episode(data, roles=self.roles, **info)
        self.steps += len(next(iter(data.values())))

    def start(self, event: dict[str, Any]) -> None:
        self._start = event
