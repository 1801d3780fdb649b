"""Episodes in Rerun: export a trajectory store, or log live rollouts, to an ``.rrd`` recording.

Rerun is the viewer LeRobot users know; a recording opens in its native viewer (``rerun FILE.rrd``) or its
web viewer (``embodia view STORE --out FILE.rrd --serve``). One :class:`EpisodeLogger` writes both: an
episode's arrays go out with ``send_columns``, one chunk per entity and episode (logging row by row is many
times slower), so the export streams a store one episode at a time and :class:`RerunHook` buffers a live
episode's rows and sends them when the episode ends.

Layout of a recording (application id ``embodia``):

==========================  ===========================================================================
entity                      what
==========================  ===========================================================================
``obs/<key>``               camera keys (uint8 ``(H, W)``, ``(H, W, 3|4)``): ``rr.Image``; depth keys (float
                            ``(H, W)`` / ``(H, W, 1)``, name holds ``depth``): ``rr.DepthImage``; any other
                            numeric key (``state``, ``gps``, ``goal``...): ``rr.Scalars``, one series per
                            dimension (named ``key[i]``)
``action``                  ``rr.Scalars``, one series per dimension
``reward``, ``success``     ``rr.Scalars``
``flags/terminated|truncated``  ``rr.Scalars`` (0 / 1)
``episodes``                ``rr.TextLog`` at each episode start: index, seed, outcome, return, length
``instruction``             ``rr.TextDocument`` at the episode start (kitchen's ``instruction`` bytes)
``map/image``               navigation: the top-down map of the episode's scene (``rr.Image``)
``map/path``, ``map/goal``  the episode's path (``rr.LineStrips2D``) and goal (``rr.Points2D``), in map pixels
``map/agent``               the robot's position at every step (``rr.Points2D``)
==========================  ===========================================================================

Timelines: ``step`` (running over every logged episode), ``episode_step`` (restarts at 0) and ``episode``
(the store's episode index, or the rollout's); where the control frequency is known (the store's ``fps``,
the live environment's), also ``episode_time``: seconds since the episode began (``episode_step / fps``), so
that the viewer plays episodes at the speed they ran. Everything logged at an episode start (text, map)
carries that episode's first step.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import gymnasium
import numpy as np

from embodia.core.errors import OutputPathError
from embodia.core.paths import output_file
from embodia.runner.hooks import EpisodeHook, EpisodeStats, Step

if TYPE_CHECKING:
    import rerun as rr

APPLICATION_ID = "embodia"
#: store keys that are bookkeeping, not something to plot
_SKIPPED_KEYS = ("sim_state",)
_FLAG_KEYS = ("terminated", "truncated")
#: rows per image chunk, so one chunk stays a few tens of MB even for large cameras
_IMAGE_ROWS_PER_CHUNK = 256


@dataclass
class NavMap:
    """A navigation episode's top-down map and the start pose that turns ``gps`` into world points."""

    topdown: Any  # embodia.envs.habitat.topdown.TopDownMap
    start_position: np.ndarray
    start_yaw: float

    @classmethod
    def from_env(cls, env: gymnasium.Env) -> NavMap | None:
        """The map of a navigation env that was just reset (None for any other env)."""
        base = env.unwrapped
        if not all(hasattr(base, name) for name in ("pathfinder", "scene", "backend")):
            return None
        from embodia.envs.habitat.topdown import TopDownMap

        position, yaw = base.backend.get_pose(0)
        return cls(TopDownMap(base.pathfinder, base.scene, scale=2), np.asarray(position, float), float(yaw))

    def world_xy(self, gps: np.ndarray) -> np.ndarray:
        """Invert Habitat's GPS sensor (``[forward, right]`` in the start frame) to world ``(x, y)``."""
        cs, sn = math.cos(self.start_yaw), math.sin(self.start_yaw)
        forward, right = gps[:, 0].astype(float), gps[:, 1].astype(float)
        dx, dy = cs * forward + sn * right, sn * forward - cs * right
        return self.start_position[:2] + np.stack([dx, dy], axis=1)

    def goal_xy(self, goal: np.ndarray) -> np.ndarray:
        """A PointNav goal ``[rho, phi]`` seen from the start pose, in world ``(x, y)``."""
        rho, phi = float(goal[0]), float(goal[1])
        angle = self.start_yaw + phi
        return self.start_position[:2] + rho * np.array([math.cos(angle), math.sin(angle)])

    def to_pixels(self, xy: np.ndarray) -> np.ndarray:
        """World ``(x, y)`` rows -> Rerun 2D positions ``(col, row)`` in the map image."""
        row, col = self.topdown.to_pixel((xy[:, 0], xy[:, 1]))
        return np.stack([col, row], axis=1).astype(np.float32)


@dataclass
class _Times:
    """The three timelines of an episode's rows."""

    step: np.ndarray
    episode_step: np.ndarray
    episode: np.ndarray
    fps: float | None = None
    """control frequency: adds the ``episode_time`` timeline (seconds) when known"""

    def columns(self, lo: int = 0, hi: int | None = None) -> list:
        """The time columns of rows ``lo:hi`` (all rows' columns are built once and reused per entity)."""
        import rerun as rr

        if lo == 0 and hi is None:
            if not hasattr(self, "_all"):
                self._all = self.columns(0, len(self.step))
            return self._all
        columns = [
            rr.TimeColumn(name, sequence=getattr(self, name)[lo:hi])
            for name in ("step", "episode_step", "episode")
        ]
        if self.fps:
            columns.append(rr.TimeColumn("episode_time", duration=self.episode_step[lo:hi] / self.fps))
        return columns


def entity_kind(key: str, row: np.ndarray) -> str:
    """How a key's rows are shown: ``image``, ``depth``, ``instruction``, ``scalars`` or ``skip``."""
    if key in _SKIPPED_KEYS:
        return "skip"
    if key == "instruction" and row.dtype == np.uint8 and row.ndim == 1:
        return "instruction"
    shape = row.shape
    if (
        row.dtype == np.uint8
        and (row.ndim == 2 or (row.ndim == 3 and shape[2] in (3, 4)))
        and min(shape[:2]) > 1
    ):
        return "image"
    if (
        "depth" in key.lower()
        and np.issubdtype(row.dtype, np.floating)
        and (row.ndim == 2 or (row.ndim == 3 and shape[2] == 1))
    ):
        return "depth"
    if np.issubdtype(row.dtype, np.number) or row.dtype == np.bool_:
        return "scalars"
    return "skip"


def entity_path(key: str, role: str) -> str:
    """Where a store key lives in the recording (see the module docstring)."""
    if role == "obs":
        return f"obs/{key}"
    if key in _FLAG_KEYS:
        return f"flags/{key}"
    return key


class EpisodeLogger:
    """Logs whole episodes to a :class:`rerun.RecordingStream` with ``send_columns`` (see the module docstring)."""

    def __init__(self, recording: rr.RecordingStream, fps: float | None = None) -> None:
        self.recording = recording
        self.fps = fps
        """steps per second of the logged episodes (None: unknown, no ``episode_time`` timeline)"""
        self.step = 0
        """The next value of the global ``step`` timeline."""
        self.kinds: dict[str, str] = {}
        """What each logged entity is (see :func:`default_blueprint`)."""
        self._static_done: set[str] = set()

    def log_episode(
        self,
        episode: int,
        seed: int,
        data: Mapping[str, np.ndarray],
        roles: Mapping[str, str],
        *,
        success: bool,
        return_: float,
        nav_map: NavMap | None = None,
        note: str = "",
    ) -> int:
        """Log one episode's arrays (rows of equal length; ``roles`` as in a store schema); returns its length."""
        import rerun as rr

        length = len(data["action"]) if "action" in data else len(next(iter(data.values())))
        if length == 0:
            return 0
        start = self.step
        steps = np.arange(start, start + length, dtype=np.int64)
        indexes = _Times(steps, steps - start, np.full(length, episode, dtype=np.int64), self.fps)
        rec = self.recording
        rec.set_time("step", sequence=start)
        rec.set_time("episode_step", sequence=0)
        rec.set_time("episode", sequence=episode)
        if self.fps:
            rec.set_time("episode_time", duration=0.0)
        outcome = "success" if success else "no success"
        text = f"episode {episode}, seed {seed}, {outcome}, return {return_:.3g}, length {length}"
        note_column = rr.TextLog.columns(text=[text + (f" ({note})" if note else "")], level=["INFO"])
        rec.send_columns("episodes", indexes=indexes.columns(0, 1), columns=note_column)  # log() is slower
        self.kinds["episodes"] = "log"
        for key, values in data.items():
            kind = entity_kind(key, values[0])
            path = entity_path(key, roles.get(key, "obs"))
            if kind == "image":
                self._images(path, values, indexes)
            elif kind == "depth":
                self._depth(path, values, indexes)
            elif kind == "instruction":
                from embodia.envs.kitchen.env import decode_instruction

                rec.log("instruction", rr.TextDocument(decode_instruction(values[0])))
                self.kinds["instruction"] = "text"
            elif kind == "scalars":
                self._scalars(path, key, values, indexes)
            if kind in ("image", "depth", "scalars"):
                self.kinds[path] = kind
        if nav_map is not None:
            self._nav(nav_map, data, indexes)
        self.step += length
        return length

    # ------------------------------------------------------------------ per kind
    def _scalars(self, path: str, key: str, values: np.ndarray, indexes: _Times) -> None:
        import rerun as rr

        rows = np.asarray(values, dtype=np.float64).reshape(len(values), -1)
        if path not in self._static_done:
            names = [key] if rows.shape[1] == 1 else [f"{key}[{i}]" for i in range(rows.shape[1])]
            self.recording.log(path, rr.SeriesLines(names=names), static=True)
            self._static_done.add(path)
        column = rows[:, 0] if rows.shape[1] == 1 else rows
        self.recording.send_columns(
            path, indexes=indexes.columns(), columns=rr.Scalars.columns(scalars=column)
        )

    def send_blueprint(self) -> None:
        """Make :func:`default_blueprint` of what was logged the recording's default layout."""
        if self.kinds:
            self.recording.send_blueprint(default_blueprint(self.kinds))

    def _images(self, path: str, values: np.ndarray, indexes: _Times) -> None:
        import rerun as rr

        height, width = values.shape[1:3]
        if path not in self._static_done:
            model = {2: "L", 3: "RGB", 4: "RGBA"}[values.shape[3] if values.ndim == 4 else 2]
            fmt = rr.components.ImageFormat(
                width=width, height=height, color_model=model, channel_datatype="U8"
            )
            self.recording.log(path, rr.Image.from_fields(format=fmt), static=True)
            self._static_done.add(path)
        self._send_blocks(path, np.ascontiguousarray(values).reshape(len(values), -1), indexes, rr.Image)

    def _depth(self, path: str, values: np.ndarray, indexes: _Times) -> None:
        import rerun as rr

        height, width = values.shape[1:3]
        if path not in self._static_done:
            fmt = rr.components.ImageFormat(width=width, height=height, channel_datatype="F32")
            self.recording.log(path, rr.DepthImage.from_fields(format=fmt, meter=1.0), static=True)
            self._static_done.add(path)
        flat = np.ascontiguousarray(values, dtype=np.float32).reshape(len(values), -1)
        self._send_blocks(path, flat.view(np.uint8).reshape(len(values), -1), indexes, rr.DepthImage)

    def _send_blocks(self, path: str, flat: np.ndarray, indexes: _Times, archetype: type) -> None:
        for lo in range(0, len(flat), _IMAGE_ROWS_PER_CHUNK):
            hi = lo + _IMAGE_ROWS_PER_CHUNK
            columns = archetype.columns(buffer=flat[lo:hi])
            self.recording.send_columns(path, indexes=indexes.columns(lo, hi), columns=columns)

    def _nav(self, nav_map: NavMap, data: Mapping[str, np.ndarray], indexes: _Times) -> None:
        import rerun as rr

        rec = self.recording
        rec.log("map/image", rr.Image(nav_map.topdown.base))
        self.kinds["map"] = "map"
        gps = data.get("gps")
        if gps is None or gps.ndim != 2 or gps.shape[1] != 2:  # multi-robot or no gps: the map alone
            return
        pixels = nav_map.to_pixels(nav_map.world_xy(gps))
        rec.log("map/path", rr.LineStrips2D([pixels], colors=[(30, 90, 210)], radii=[0.8]))
        goal = data.get("goal")
        if (
            goal is not None
            and goal.ndim == 2
            and goal.shape[1] == 2
            and np.issubdtype(goal.dtype, np.floating)
        ):
            goal_pixel = nav_map.to_pixels(nav_map.goal_xy(goal[0])[None])
            rec.log("map/goal", rr.Points2D(goal_pixel, colors=[(230, 30, 30)], radii=[3.0]))
        columns = rr.Points2D.columns(positions=pixels).partition([1] * len(pixels))
        rec.send_columns("map/agent", indexes=indexes.columns(), columns=columns)


#: archetype of a chunk's components -> entity kind (for recordings read back, e.g. by ``embodia view --serve``)
_ARCHETYPE_KINDS = {"Image": "image", "DepthImage": "depth", "Scalars": "scalars", "TextDocument": "text"}


def entity_kinds(chunks: Any, kinds: dict[str, str]) -> Any:
    """Pass ``chunks`` (a recording's, as :class:`rerun.chunk.RrdReader` streams them) through, noting in
    ``kinds`` what each entity is, so that :func:`default_blueprint` can lay out a recording read from disk."""
    for chunk in chunks:
        path = chunk.entity_path.lstrip("/")
        if path.startswith("map/"):
            kinds["map"] = "map"
        elif path == "episodes":
            kinds[path] = "log"
        else:
            for name in chunk.to_record_batch().schema.names:
                kind = _ARCHETYPE_KINDS.get(name.partition(":")[0])
                if kind is not None:
                    kinds[path] = kind
                    break
        yield chunk


def default_blueprint(kinds: Mapping[str, str]) -> Any:
    """The layout a recording opens with: cameras, depth and the navigation map on the left, time series
    (actions, observations, reward / success / flags) in the middle, the instruction and the episode log on
    the right. ``kinds`` maps entity paths to ``image``, ``depth``, ``map``, ``scalars``, ``text``, ``log``."""
    import rerun.blueprint as rrb

    def of(kind: str) -> list[str]:
        return sorted(path for path, k in kinds.items() if k == kind)

    pictures = [rrb.Spatial2DView(origin=path, name=path.removeprefix("obs/")) for path in of("image")]
    pictures += [rrb.Spatial2DView(origin=path, name=path.removeprefix("obs/")) for path in of("depth")]
    if "map" in kinds:
        pictures.append(rrb.Spatial2DView(origin="map", name="top-down map and path"))
    outcome = [path for path in ("reward", "success", "flags/terminated", "flags/truncated") if path in kinds]
    series = [rrb.TimeSeriesView(origin=path, name=path) for path in of("scalars") if path not in outcome]
    if outcome:
        series.append(rrb.TimeSeriesView(origin="/", contents=outcome, name="reward, success, flags"))
    text = [rrb.TextDocumentView(origin=path, name=path) for path in of("text")]
    text += [rrb.TextLogView(origin=path, name="episodes") for path in of("log")]
    columns = [
        (rrb.Vertical(*views), share) for views, share in ((pictures, 2), (series, 3), (text, 1.2)) if views
    ]
    layout = rrb.Horizontal(*(c for c, _ in columns), column_shares=[share for _, share in columns])
    return rrb.Blueprint(layout, collapse_panels=True)


def open_recording(path: str | Path, recording_id: str | None = None) -> rr.RecordingStream:
    """A recording stream of its own (never Rerun's global one) that writes ``path``."""
    import rerun as rr

    recording = rr.RecordingStream(APPLICATION_ID, recording_id=recording_id)
    recording.set_log_time_enabled(False)  # only the episode timelines: log time would differ per run
    recording.set_log_tick_enabled(False)
    recording.save(str(path))
    return recording


def check_output(out_path: str | Path, overwrite: bool) -> Path:
    """``out_path`` as a file that may be written; an existing one only with ``overwrite``."""
    out = output_file(out_path, "recording")
    if out.exists() and not overwrite:
        raise OutputPathError(
            f"recording {str(out)!r} already exists; choose another file, or replace it with --overwrite "
            "(`embodia view`)"
        )
    return out


def export_store(
    store_path: str | Path,
    out_path: str | Path,
    episodes: Sequence[int] | None = None,
    *,
    overwrite: bool = False,
    nav_maps: bool = True,
) -> dict[str, Any]:
    """Write a trajectory store's episodes to an ``.rrd`` recording, reading one episode at a time.

    Args:
        store_path: the trajectory store.
        out_path: the ``.rrd`` file; it is written next to itself and renamed when complete.
        episodes: store episode indices (negative count from the end); default all.
        overwrite: replace an existing ``out_path``.
        nav_maps: for navigation episodes, rebuild each episode's scene from its env id and seed to draw
            the top-down map and path.

    Returns:
        ``{"store", "out", "episodes", "steps", "fps", "bytes"}`` (``fps``: the store's, None if unknown).

    Raises:
        StoreNotFoundError, StoreCorruptError, ...: the store's own errors.
        EpisodeIndexError: an episode index past the end of the store.
        OutputPathError: ``out_path`` exists (without ``overwrite``) or cannot be written.
    """
    from embodia.data.store import TrajectoryStore

    out = check_output(out_path, overwrite)
    store = TrajectoryStore(store_path, mode="r")
    try:
        chosen = list(range(store.num_episodes)) if episodes is None else list(episodes)
        metas = [store.episode_meta(i) for i in chosen]  # refuses bad indices before anything is written
        roles = {key: spec["role"] for key, spec in store.schema.items()}
        out.parent.mkdir(parents=True, exist_ok=True)
        partial = out.with_name(f".{out.name}.{os.getpid()}.partial")
        recording = open_recording(partial)
        logger = EpisodeLogger(recording, fps=store.fps)
        maps = _NavMaps() if nav_maps else None
        try:
            for meta in metas:
                data = store.episode(meta.index)
                nav_map = maps.get(meta.env_id, meta.env_kwargs, meta.seed) if maps else None
                logger.log_episode(
                    meta.index,
                    meta.seed,
                    data,
                    roles,
                    success=meta.success,
                    return_=meta.return_,
                    nav_map=nav_map,
                )
            logger.send_blueprint()
            recording.flush()
            recording.disconnect()
            os.replace(partial, out)
        finally:
            if maps is not None:
                maps.close()
            partial.unlink(missing_ok=True)
    finally:
        store.close()
    return {
        "store": str(store_path),
        "out": str(out),
        "episodes": [m.index for m in metas],
        "steps": logger.step,
        "fps": logger.fps,
        "bytes": out.stat().st_size,
    }


class _NavMaps:
    """One navigation env per (env id, arguments), reset with each episode's seed to get its map."""

    def __init__(self) -> None:
        self._envs: dict[str, gymnasium.Env] = {}

    def get(self, env_id: str, env_kwargs: dict[str, Any], seed: int) -> NavMap | None:
        if not env_id.startswith("embodia/Nav-"):
            return None
        key = f"{env_id} {sorted(env_kwargs.items())}"
        if key not in self._envs:
            from embodia.envs import make

            self._envs[key] = make(env_id, **env_kwargs)
        env = self._envs[key]
        env.reset(seed=seed)
        return NavMap.from_env(env)

    def close(self) -> None:
        for env in self._envs.values():
            env.close()
        self._envs.clear()


class RerunHook(EpisodeHook):
    """Logs live episodes to an ``.rrd`` file (``embodia run ENV --view FILE.rrd``).

    A step only appends the transition to the episode's buffer; the episode goes out with ``send_columns``
    when it ends (:meth:`end`), or, marked interrupted, when it stops with an exception (:meth:`abort`).
    Call :meth:`close` after the rollout to finish the file.
    """

    def __init__(self, path: str | Path, *, overwrite: bool = False) -> None:
        self.path = check_output(path, overwrite)
        self.recording: rr.RecordingStream | None = None  # opened by the first episode
        self.logger: EpisodeLogger | None = None
        self.episodes = 0
        self._steps: list[Step] = []
        self._roles: dict[str, str] = {}
        self._seed = 0
        self._nav_map: NavMap | None = None

    def begin(self, env: gymnasium.Env, seed: int, obs: Any, info: dict[str, Any]) -> None:
        if self.recording is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.recording = open_recording(self.path)
            self.logger = EpisodeLogger(self.recording)
        from embodia.data.recorder import control_fps

        self.logger.fps = control_fps(env)
        self._steps, self._seed = [], seed
        self._nav_map = NavMap.from_env(env)

    def step(self, env: gymnasium.Env, step: Step) -> None:
        self._steps.append(step)  # one append: the episode's arrays are built once, at its end

    def end(self, env: gymnasium.Env, stats: EpisodeStats) -> None:
        self._send(stats.index, stats.success, stats.return_, "")

    def abort(self, env: gymnasium.Env) -> None:
        success = any(bool(s.info.get("success", False)) for s in self._steps)
        return_ = float(sum(s.reward for s in self._steps))
        self._send(self.episodes, success, return_, "interrupted: the episode did not finish")

    def _send(self, index: int, success: bool, return_: float, note: str) -> None:
        steps, self._steps = self._steps, []
        data = _columns(steps)
        if data and self.logger is not None:
            roles = {
                key: ("obs" if key not in ("action", "reward", "success", *_FLAG_KEYS) else "other")
                for key in data
            }
            self.logger.log_episode(
                index,
                self._seed,
                data,
                roles,
                success=success,
                return_=return_,
                nav_map=self._nav_map,
                note=note,
            )
        self.episodes += 1

    def close(self) -> None:
        """Finish the file (nothing is written when no episode began)."""
        if self.recording is not None:
            if self.logger is not None:
                self.logger.send_blueprint()
            self.recording.flush()
            self.recording.disconnect()
            self.recording = None


def _columns(steps: Sequence[Step]) -> dict[str, np.ndarray]:
    """A live episode's steps as store-like arrays (observation keys, action, reward, flags)."""
    if not steps:
        return {}
    first = steps[0].obs
    keys = list(first) if isinstance(first, Mapping) else None
    data = (
        {key: np.stack([s.obs[key] for s in steps]) for key in keys}
        if keys is not None
        else {"obs": np.stack([s.obs for s in steps])}
    )
    data["action"] = np.stack([np.asarray(s.action) for s in steps])
    data["reward"] = np.array([s.reward for s in steps], dtype=np.float32)
    data["terminated"] = np.array([s.terminated for s in steps])
    data["truncated"] = np.array([s.truncated for s in steps])
    data["success"] = np.array([bool(s.info.get("success", False)) for s in steps])
    return data
