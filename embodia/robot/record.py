"""Topics -> trajectory store: live (a recorder node) or from a bag (``embodia data import-mcap``).

Messages on different topics arrive at different times; the store wants rows. :class:`EpisodeAssembler`
makes one row per message on the *step topic* (by default the action topic): the row holds that
message and the newest message of every other topic (zero-order hold). Rows start once every topic has
delivered at least once. Recording the command topic as the step topic gives the store's convention,
row ``t`` = (observation before the action, action ``t``), because a policy publishes ``a_t`` after it
received ``o_t``.

Episodes are split by std_msgs/String JSON events on an episode topic (what ``embodia robot sim``
publishes): ``start`` (env_id, env_kwargs, seed) begins an episode, ``end`` (success, and from a lockstep
bridge ``commands``: how many commands the episode consumed) ends it. An episode is committed once it is
complete: all its announced commands (and the observations they answer) have arrived — the episode
events and the data travel on different topics, so under load the ``end`` event often overtakes the
episode's last rows — or, without a count, once the next episode has a row. A recorder asked for N
episodes stops when N episodes are *written*, never on the count of ``end`` events; commands that answer
an observation already answered (the bridge republishes an observation nobody answered in time) are
dropped, as the bridge drops them. Without events one episode is committed when the recording stops.
Every committed episode is durable (see :class:`~embodia.data.store.TrajectoryStore`); Ctrl-C commits
what was recorded so far.

Messages become arrays through the converter registry (:mod:`embodia.robot.converters`), as in the bag
import: any type can be recorded (registered converter, else the generic fallback). A topic recorded as
``KEY`` whose converter gives several parts fills ``KEY`` and ``KEY.<part>``; text is stored as UTF-8
bytes of a fixed width (the store's, else :data:`~embodia.robot.converters.TEXT_BYTES`); a message that
does not fit, or whose shape differs from the topic's first, is rejected (logged and counted).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from embodia.core.validation import validate
from embodia.robot import ros
from embodia.robot.config import Name, PositiveInt, Seconds
from embodia.robot.convert import header_stamp_ns, message_class
from embodia.robot.converters import TEXT_BYTES, TopicValues, convert_message
from embodia.robot.errors import MessageError, RobotConfigError


def default_key(topic: str) -> str:
    """``/robot1/joint_states`` -> ``robot1_joint_states`` (store keys cannot contain '/')."""
    return topic.strip("/").replace("/", "_") or "root"


def parse_topic_spec(spec: str) -> tuple[str, str]:
    """``TOPIC`` or ``TOPIC=KEY`` -> (topic, key)."""
    topic, sep, key = spec.partition("=")
    return topic, (key if sep and key else default_key(topic))


@dataclass
class RecordOptions:
    """When a recording stops, and the env_id it stores (the options of :func:`record`, validated)."""

    episodes: PositiveInt | None = None
    """stop after this many episodes (>= 1; None: until Ctrl-C or ``duration``)"""
    duration: Seconds | None = None
    """stop after this many seconds (> 0, finite; None: no time limit)"""
    env_id: Name = "ros2"
    """env_id recorded when no start event names one"""


@dataclass
class _Segment:
    """One episode being assembled: its start stamp (None: unknown), metadata, rows and success."""

    start: int | None
    info: dict[str, Any]
    rows: list[tuple[int | None, dict[str, np.ndarray]]] = field(default_factory=list)
    success: bool | None = None
    expected: int | None = None
    """the number of rows the episode's ``end`` event announced (None: not ended, or not announced)"""
    closed: bool = False
    """a later episode has a row: no row of this one can follow (rows of one topic arrive in order)"""
    end: int | None = None
    """the stamp its ``end`` event gave (the next episode's first observation): later rows are not its own"""
    placeholder: bool = False
    """opened for rows past an ended episode's ``end`` stamp, ahead of the next episode's ``start`` event"""


def _split_at(rows: list, stamp: int) -> tuple[list, list]:
    """(rows before ``stamp``, rows stamped at or after it); unstamped rows stay before."""
    later = [r for r in rows if r[0] is not None and r[0] >= stamp]
    return [r for r in rows if not (r[0] is not None and r[0] >= stamp)], later


@dataclass
class EpisodeAssembler:
    """Rows from asynchronous topic values, episodes from start / end events (see module docstring).

    Episode boundaries are stamps: a ``start`` event carries the stamp of the episode's first
    observation, and a row belongs to the episode with the latest start stamp not after the row's
    stamp. Events and commands come from different publishers and arrive in either order: a row that
    comes before its episode's start event moves into the episode when the event arrives, and an
    episode is committed only once it has all its rows — those its ``end`` event announced, or, once
    the next episode has a row, all there will be (rows of one topic arrive in order) — and the
    observations they answer, or when recording stops. Unstamped rows follow the order of arrival.
    """

    keys: list[str]
    """store keys, one per recorded topic"""
    step_key: str
    """a row is made whenever this key receives a value"""
    on_episode: Callable[[dict[str, np.ndarray], dict[str, Any]], None]
    """called with (data, info) for every finished, non-empty episode"""
    env_id: str = "ros2"
    """env_id recorded when no start event names one"""
    latest: dict[str, np.ndarray] = field(default_factory=dict)
    episodes: int = 0
    """episodes written (handed to ``on_episode``)"""
    ended: int = 0
    """``end`` events received"""
    duplicates: int = 0
    """stamped step messages dropped: a second answer to an observation, or one to a written episode"""
    _stamp: int | None = None
    _written_until: int | None = None
    _segments: list[_Segment] = field(default_factory=list)
    _by_stamp: dict[str, dict[int, np.ndarray]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.step_key not in self.keys:
            raise RobotConfigError(f"step key {self.step_key!r} is not one of the recorded keys {self.keys}")
        self._segments = [_Segment(None, {"env_id": self.env_id})]

    @property
    def rows(self) -> list[dict[str, np.ndarray]]:
        """Rows not yet committed."""
        return [self._resolve(row) for segment in self._segments for _, row in segment.rows]

    def value(self, key: str, array: np.ndarray | dict[str, np.ndarray], stamp_ns: int | None = None) -> None:
        """A new value for ``key`` (with its header stamp, if any); the step key makes a row.

        A value may be a dict ``{store_key: array}`` (a message of several parts): the parts become
        separate store keys when the episode is committed.

        A stamped step message (a policy node stamps each command with the stamp of the observation
        it answers) is paired with the values of exactly that stamp, looked up when its episode is
        committed, so rows stay aligned when observations arrive after the command that answers
        them; unstamped ones (and stamps never seen) take the newest value at the row's arrival.
        """
        self.latest[key] = array
        if stamp_ns is not None and key != self.step_key:
            self._stamp = stamp_ns
            self._by_stamp.setdefault(key, {})[stamp_ns] = array
        if key == self.step_key and len(self.latest) == len(self.keys):
            stamp = stamp_ns if stamp_ns is not None else self._stamp
            index = self._segment_for(stamp)
            ended_at = self._segments[index].end
            if stamp is not None and ended_at is not None and stamp >= ended_at:
                # the next episode's command, ahead of its start event: never a row of the ended one
                self._segments.append(_Segment(ended_at, {"env_id": self.env_id}, placeholder=True))
                index = len(self._segments) - 1
            if stamp_ns is not None and self._answered(index, stamp_ns):
                self.duplicates += 1
                return
            row = dict(self.latest)  # the fallback values
            row["__stamp__"] = stamp_ns
            self._segments[index].rows.append((stamp, row))
            # a row of a later episode: the earlier ones have all theirs (rows of one topic arrive in order)
            for segment in self._segments[:index]:
                segment.closed = True
        self._commit_complete()

    def _answered(self, index: int, stamp: int) -> bool:
        """Whether a step message with this stamp was already taken (a repeat) or its episode written."""
        if self._written_until is not None and stamp <= self._written_until:
            return True
        return any(s == stamp for s, row in self._segments[index].rows if row["__stamp__"] is not None)

    def _complete(self, segment: _Segment) -> bool:
        """Whether an episode has all its rows (those its ``end`` event announced, or a later episode has a
        row), each with its observations: on another topic, the observation a command answers can arrive
        after the next episode's first command."""
        if not segment.closed and (segment.expected is None or len(segment.rows) < segment.expected):
            return False
        return self._unobserved(segment) == 0

    def _unobserved(self, segment: _Segment) -> int:
        """Stamped rows of ``segment`` whose observations (values of exactly their stamp) have not all arrived."""
        stamped = [k for k in self.keys if k != self.step_key and k in self._by_stamp]
        return sum(
            1
            for _, row in segment.rows
            if row["__stamp__"] is not None
            and any(row["__stamp__"] not in self._by_stamp[k] for k in stamped)
        )

    def outstanding(self) -> int | None:
        """What the ended, unwritten episodes still wait for: announced rows not yet received plus rows
        whose observations have not arrived (None when an ended episode announced no row count)."""
        ended = [s for s in self._segments if s.success is not None]
        if any(s.expected is None for s in ended):
            return None
        return sum(max(0, int(s.expected or 0) - len(s.rows)) + self._unobserved(s) for s in ended)

    def _commit_complete(self) -> None:
        """Write every complete episode at the head of the queue (in order; the last open one stays open)."""
        while self._segments and self._complete(self._segments[0]):
            self._commit(self._segments.pop(0))
            if not self._segments:
                self._segments = [_Segment(None, {"env_id": self.env_id})]

    @property
    def open_ended(self) -> list[tuple[int, int | None]]:
        """Ended episodes not yet written: (rows received, rows announced) each."""
        return [(len(s.rows), s.expected) for s in self._segments if s.success is not None]

    def _resolve(self, row: dict[str, Any]) -> dict[str, np.ndarray]:
        stamp = row["__stamp__"]
        values = {}
        for k in self.keys:
            exact = self._by_stamp.get(k, {}).get(stamp) if stamp is not None and k != self.step_key else None
            values[k] = exact if exact is not None else row[k]
        return values

    def _segment_for(self, stamp: int | None) -> int:
        if stamp is None:
            return len(self._segments) - 1
        index = 0
        for i, segment in enumerate(self._segments):
            if segment.start is not None and segment.start <= stamp:
                index = i
        return index

    def event(self, event: dict[str, Any]) -> None:
        """``start`` opens the next episode at its stamp; ``end`` records the current episode's success."""
        kind = event.get("event")
        if kind == "start":
            start = event.get("stamp_ns")
            info = {
                "env_id": str(event.get("env_id", self.env_id)),
                "env_kwargs": event.get("env_kwargs") or {},
                "seed": int(event.get("seed", -1)),
            }
            segment = _Segment(int(start) if start is not None else None, info)
            previous = self._segments[-1]
            if segment.start is not None:  # rows that came before their start event move in
                previous.rows, segment.rows = _split_at(previous.rows, segment.start)
                if previous.placeholder and not previous.rows:
                    self._segments.pop()
            self._segments.append(segment)
            if segment.start is None:  # unstamped streams: the event order is all there is
                while len(self._segments) > 1:
                    self._commit(self._segments.pop(0))
        elif kind == "end":
            # the latest started episode is the one that ended
            segment = self._segments[-1]
            segment.success = bool(event.get("success", False))
            if isinstance(event.get("commands"), int):
                segment.expected = int(event["commands"])
            if isinstance(event.get("stamp_ns"), int):
                segment.end = int(event["stamp_ns"])
                # rows stamped at or after the end came ahead of this event (the data topics are taken
                # first): the next episode's first commands, or safe stops; they wait for the next start
                segment.rows, later = _split_at(segment.rows, segment.end)
                if later:
                    segment.closed = True  # rows of one topic arrive in order: nothing of this one can follow
                    self._segments.append(
                        _Segment(segment.end, {"env_id": self.env_id}, later, placeholder=True)
                    )
            self.ended += 1
            self._commit_complete()

    def finish(self, success: bool | None = None, max_episodes: int | None = None) -> None:
        """Commit every episode still open, in order.

        ``success`` applies to the last one when no ``end`` event gave it; ``max_episodes`` caps the
        total number of committed episodes (a recording of N episodes drops the beginning of episode
        N+1 that arrived while it was draining).
        """
        if success is not None and self._segments[-1].success is None:
            self._segments[-1].success = success
        while self._segments and (max_episodes is None or self.episodes < max_episodes):
            self._commit(self._segments.pop(0))
        self._segments = [_Segment(None, {"env_id": self.env_id})]

    def _commit(self, segment: _Segment) -> None:
        rows = [self._resolve(row) for _, row in segment.rows]
        last = max((stamp for stamp, _ in segment.rows if stamp is not None), default=None)
        if last is not None:  # observations up to this episode's end are no longer needed
            for values in self._by_stamp.values():
                for stamp in [s for s in values if s <= last]:
                    del values[stamp]
            self._written_until = max(last, self._written_until or last)
        if not rows:
            return
        data: dict[str, np.ndarray] = {}
        for k in self.keys:
            values = [row[k] for row in rows]
            if isinstance(values[0], dict):  # several parts: one store key each
                for name in values[0]:
                    data[name] = np.stack([v[name] for v in values])
            else:
                data[k] = np.stack(values)
        info = dict(segment.info)
        if segment.success is not None:
            info["success"] = segment.success
        self.episodes += 1
        self.on_episode(data, info)


class StoreSink:
    """Appends assembled episodes to a trajectory store, the step key's role set to ``action``."""

    def __init__(self, path: str, action_key: str | None, video_codec: str | None = None) -> None:
        from embodia.data.store import TrajectoryStore

        self.store = TrajectoryStore(path, mode="a", video_codec=video_codec)
        self.roles = {action_key: "action"} if action_key else {}
        self.steps = 0

    def text_width(self, store_key: str) -> int:
        """Width of a text column: the store's when it has the key, else ``TEXT_BYTES``."""
        have = self.store.schema.get(store_key)
        if have is not None and have["dtype"] == "uint8" and len(have["shape"]) == 1:
            return int(have["shape"][0])
        return TEXT_BYTES

    def __call__(self, data: dict[str, np.ndarray], info: dict[str, Any]) -> None:
        self.store.add_episode(data, roles=self.roles, **info)
        self.steps += len(next(iter(data.values())))
        self.store.touch()


def _node_base() -> type:
    ros.import_rclpy()
    from rclpy.node import Node

    return Node


class RecorderNode(_node_base()):  # type: ignore[misc]
    """Subscribes topics (types discovered from the ROS graph) and feeds an :class:`EpisodeAssembler`.

    Messages are handled as the executor takes them; within one wait cycle the data topics come
    before the episode topic (subscription order), so the last command of an episode lands in that
    episode even when its ``end`` event is already waiting.
    """

    def __init__(
        self,
        topics: list[tuple[str, str]],
        assembler: EpisodeAssembler,
        episode_topic: str | None,
        name: str = "embodia_recorder",
        discovery_timeout: float = 10.0,
        text_width: Callable[[str], int] | None = None,
    ) -> None:
        super().__init__(name)
        self.assembler = assembler
        self.rejected = 0
        self.messages = 0
        self.max_episodes: int | None = None
        types = self._discover([t for t, _ in topics], discovery_timeout)
        classes = {topic: message_class(types[topic]) for topic, _ in topics}  # any installed type
        width = text_width or (lambda _key: TEXT_BYTES)
        self._data_subscriptions = {}
        for topic, key in topics:
            kind = types[topic]
            values = TopicValues(key, width)
            self._data_subscriptions[topic] = self.create_subscription(
                classes[topic], topic, self._callback(key, kind, values), ros.qos(1000)
            )
        self.episode_topic = episode_topic
        self.following_episodes = False
        self.get_logger().info(f"recording {', '.join(f'{t} ({types[t]}) as {k}' for t, k in topics)}")

    def unconnected(self) -> list[str]:
        """Recorded topics none of whose publishers is connected to this recorder yet."""
        return [t for t, s in self._data_subscriptions.items() if s.get_publisher_count() < 1]

    def follow_episodes(self) -> None:
        """Subscribe the episode topic (after the data topics: see :func:`wait_and_follow_episodes`)."""
        if self.episode_topic and not self.following_episodes:
            self.create_subscription(
                message_class("String"),
                self.episode_topic,
                self._callback(None, "String", None),
                ros.qos(1000),
            )
            self.following_episodes = True

    def _discover(self, topics: list[str], timeout: float) -> dict[str, str]:
        """Wait until every topic is advertised and return its type (``ros2 topic info`` style)."""
        from rclpy.executors import SingleThreadedExecutor

        executor = SingleThreadedExecutor(context=self.context)
        executor.add_node(self)
        deadline = time.monotonic() + timeout
        resolved = {self.resolve_topic_name(t): t for t in topics}
        found: dict[str, str] = {}
        while time.monotonic() < deadline and len(found) < len(topics):
            for name, kinds in self.get_topic_names_and_types():
                if name in resolved and kinds:
                    found[resolved[name]] = kinds[0]
            executor.spin_once(timeout_sec=0.1)
        executor.remove_node(self)
        missing = [t for t in topics if t not in found]
        if missing:
            raise RobotConfigError(
                f"no publisher for {missing} within {timeout:g} s; is the robot / simulator running?"
            )
        return found

    def _callback(self, key: str | None, kind: str, values: TopicValues | None) -> Callable[[Any], None]:
        def callback(msg: Any) -> None:
            self.messages += 1
            if key is None:
                try:
                    event = json.loads(msg.data)
                except json.JSONDecodeError:
                    return
                if isinstance(event, dict):
                    self.assembler.event(event)
                return
            assert values is not None
            try:
                self.assembler.value(key, values.encode(convert_message(msg, kind)), header_stamp_ns(msg))
            except MessageError as error:
                self.rejected += 1
                self.get_logger().warning(f"rejected message for {key}: {error}", throttle_duration_sec=1.0)

        return callback


#: how long a recorder whose episodes have all ended waits without progress (a row or an observation its
#: ended episodes wait for) before it writes what it has: a safety net for lost messages, never what
#: decides a normal stop (that is the rows an episode's ``end`` event announced)
DRAIN_IDLE_SECONDS = 30.0
#: the same for episodes whose ``end`` event announced no row count (not a lockstep bridge): their last
#: rows are recognised only by silence
DRAIN_IDLE_UNANNOUNCED_SECONDS = 1.0


def _drain(node: Any, assembler: EpisodeAssembler, episodes: int, duration: float | None) -> None:
    """Take the rows still on their way after the last ``end`` event, until ``episodes`` are written.

    Progress resets the wait: a machine under load delivers slowly but delivers. Only a stream that
    brings nothing the ended episodes wait for during ``DRAIN_IDLE_SECONDS`` (messages lost) ends the
    wait; the episodes then written are what arrived, and a warning names the ones that are short.
    """
    announced = all(expected is not None for _, expected in assembler.open_ended)
    idle_limit = DRAIN_IDLE_SECONDS if announced else DRAIN_IDLE_UNANNOUNCED_SECONDS

    def progress() -> tuple[int, int]:
        # announced episodes progress only when they wait for less than ever before: commands a policy
        # keeps publishing after the last episode (safe stops) are messages, not progress
        outstanding = assembler.outstanding()
        return assembler.episodes, (-outstanding if outstanding is not None else node.messages)

    best = [progress()]
    last_progress = [time.monotonic()]

    def done() -> bool:
        now = time.monotonic()
        current = progress()
        if current > best[0]:
            best[0], last_progress[0] = current, now
        return assembler.episodes >= episodes or now - last_progress[0] >= idle_limit

    ros.spin(node, None, should_stop=done, duration=duration)
    short = [(got, want) for got, want in assembler.open_ended if want is not None and got < want]
    if announced and short and assembler.episodes < episodes:
        node.get_logger().warning(
            f"no message for {idle_limit:g} s with {len(short)} episode(s) incomplete "
            f"({', '.join(f'{got} of {want} rows' for got, want in short)}): writing what arrived"
        )


#: how often a recorder waiting for the publishers of its topics says which it still waits for
WAIT_LOG_SECONDS = 5.0


def wait_for_publishers(node: RecorderNode, duration: float | None) -> list[str]:
    """Spin until every recorded topic has a connected publisher, ``duration`` runs out or Ctrl-C; returns
    the topics still without one (and says every ``WAIT_LOG_SECONDS`` which they are)."""
    last_log = [time.monotonic()]

    def connected() -> bool:
        missing = node.unconnected()
        now = time.monotonic()
        if missing and now - last_log[0] >= WAIT_LOG_SECONDS:
            last_log[0] = now
            node.get_logger().info(
                f"waiting for a publisher on {', '.join(missing)} before following episodes"
            )
        return not missing

    ros.spin(node, None, should_stop=connected, duration=duration)
    return node.unconnected()


def wait_and_follow_episodes(node: RecorderNode, duration: float | None) -> None:
    """Subscribe the episode topic only once every recorded topic has a connected publisher.

    A simulator bridge started with ``--wait-for-subscribers`` begins its first episode when the episode
    topic has its subscribers, so a recorder that joins the episode topic last is connected to the
    command publisher before any episode starts. DDS discovery is asymmetric and, under load, slow: a
    recorder that subscribed everything at once was seen by the bridge while the policy's command
    publisher was not yet connected to it, and lost the first second of commands. A topic without a
    publisher could never make a row anyway (rows start once every topic has delivered), so the wait
    costs nothing; it ends at ``duration`` or Ctrl-C like the recording.
    """
    if node.episode_topic:
        wait_for_publishers(node, duration)
        node.follow_episodes()


def record(
    topics: Sequence[str],
    out: str,
    *,
    action: str | None = None,
    step_on: str | None = None,
    episode_topic: str | None = "episode",
    episodes: int | None = None,
    duration: float | None = None,
    env_id: str = "ros2",
    argv: Sequence[str] | None = None,
    video_codec: str | None = None,
) -> dict[str, int]:
    """Record ``topics`` (``TOPIC`` or ``TOPIC=KEY``) into the store ``out`` until Ctrl-C, ``duration`` or ``episodes``.

    ``action`` (a topic) is stored under the key ``action`` with the action role; ``step_on`` (a topic)
    paces the rows (default: the action topic, else the first topic). ``video_codec`` (``h264``, ``av1``,
    ``none``) is how a new store keeps camera images (:class:`~embodia.data.store.TrajectoryStore`).
    """
    options = validate(
        RecordOptions,
        {"episodes": episodes, "duration": duration, "env_id": env_id},
        where="recorder",
        error=RobotConfigError,
    )
    episodes, duration, env_id = options.episodes, options.duration, options.env_id
    specs = [parse_topic_spec(t) for t in topics]
    if action:
        specs = [s for s in specs if s[0] != action] + [(action, "action")]
    if not specs:
        raise RobotConfigError("name at least one topic to record")
    keys = [k for _, k in specs]
    if len(set(keys)) != len(keys):
        raise RobotConfigError(f"two topics map to the same key: {keys}; use TOPIC=KEY to rename")
    step_topic = step_on or action or specs[0][0]
    step_key = dict(specs).get(step_topic)
    if step_key is None:
        raise RobotConfigError(f"--step-on {step_topic} is not one of the recorded topics")
    sink = StoreSink(out, "action" if action else None, video_codec)
    assembler = EpisodeAssembler(keys, step_key, sink, env_id=env_id)
    ros.init(argv)
    node = None
    try:
        node = RecorderNode(specs, assembler, episode_topic, text_width=sink.text_width)
        node.max_episodes = episodes
        started = time.monotonic()
        wait_and_follow_episodes(node, duration)
        left = None if duration is None else max(0.0, duration - (time.monotonic() - started))
        ros.spin(
            node,
            None,
            should_stop=lambda: (
                episodes is not None and (assembler.episodes >= episodes or assembler.ended >= episodes)
            ),
            duration=left,
        )
        if episodes is not None and assembler.ended >= episodes and assembler.episodes < episodes:
            left = None if duration is None else max(0.0, duration - (time.monotonic() - started))
            _drain(node, assembler, episodes, left)
    finally:
        # the ending episode, or whatever was recorded since the last boundary
        assembler.finish(max_episodes=episodes)
        sink.store.close()
        if node is not None:
            node.destroy_node()
        ros.shutdown()
    return {
        "episodes": assembler.episodes,
        "steps": sink.steps,
        "rejected": node.rejected if node else 0,
        "duplicates": assembler.duplicates,
    }
