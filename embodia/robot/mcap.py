"""Trajectory stores <-> ROS 2 bags in MCAP: ``embodia data export STORE --mcap OUT.mcap``, ``data import-mcap``.

Export writes one MCAP file with ROS 2's conventions (profile ``ros2``, schemas as ``ros2msg`` text,
messages CDR-encoded, QoS and type hash in the channel metadata), so ``ros2 bag info/play``,
``rosbags`` and Foxglove read it. Each store key becomes a topic ``<prefix>/<key>`` (characters a ROS
name cannot hold, such as the ``.`` of part keys like ``tf.frames``, written as ``_``):

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

Import reads any ROS 2 bag (an ``.mcap`` file or a rosbag2 directory; ROS 1 ``.bag`` files too): the
chosen topics become keys, rows are made per message of the step topic with the newest message of every
other topic (:class:`embodia.robot.record.EpisodeAssembler`), and episode events split episodes when the
bag has them. Bags written by the export come back with their original keys, dtypes and episode table.
Messages are converted by the converter registry (:mod:`embodia.robot.converters`): a registered
converter per type, else the generic fallback (:mod:`embodia.robot.flatten`: every numeric field, text
fields as JSON). Text becomes a fixed-width UTF-8 column as wide as the bag's longest text rounded up to
64 bytes (or the store's existing width). Without ``topics``, every topic whose type has a converter
imported by default is taken (not String, Clock, TFMessage, nor types only the generic fallback reads).
Topics whose message definitions cannot be decoded (service events of newer rosbag2 versions, types
neither the bag nor the typestore defines) are skipped with a warning, and refused when named. A topic
whose values change shape between messages (LaserScan beams, TFMessage transform counts) is refused,
naming the shapes seen, before anything is written (:mod:`embodia.robot.bag_import`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
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
    topics = _topic_names(order, prefix)
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


def _topic_names(keys: list[str], prefix: str) -> dict[str, str]:
    """Topic of each key: ``<prefix>/<key>``, characters a ROS name cannot hold (``.`` of part keys) as ``_``."""
    topics: dict[str, str] = {}
    for key in keys:
        name = re.sub(r"[^A-Za-z0-9_]", "_", key)
        topic, n = f"{prefix}/{name}", 1
        while topic in topics.values() or topic == f"{prefix}/episode":
            topic, n = f"{prefix}/{name}_{n}", n + 1
        topics[key] = topic
    return topics


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
    on_warning: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Append the episodes of a ROS 2 bag to the trajectory store ``out`` (see the module docstring).

    Args:
        topics: ``TOPIC`` or ``TOPIC=KEY`` to import (default: every topic whose type has a converter
            imported by default; see :mod:`embodia.robot.converters`).
        action: the command topic, stored as key ``action`` (role action).
        step_on: one row per message of this topic (default: the action topic, else the first topic).
        episode_topic: JSON episode events (default: the exporter's, or ``/episode`` when present).
        env_id: env_id of episodes without a start event (default ``ros2:<bag name>``).
        on_warning: called with each warning (default: ``warnings.warn`` with a ``BagWarning``).

    Returns:
        ``path``, ``episodes``, ``steps``, ``rejected`` (messages that could not be converted), ``keys``
        (store keys written), ``skipped`` / ``skipped_topics`` (topics that cannot be decoded) and
        ``fields`` (key -> value names of topics read by the generic converter).

    Raises:
        BagError: a missing or unreadable bag, a named topic that is absent or cannot be decoded, a topic
            whose values change shape, or texts that do not fit an existing text column.
    """
    from embodia.robot.bag_import import import_bag

    return import_bag(
        bag,
        out,
        topics=topics,
        action=action,
        step_on=step_on,
        episode_topic=episode_topic,
        env_id=env_id,
        progress=progress,
        on_warning=on_warning,
    )
