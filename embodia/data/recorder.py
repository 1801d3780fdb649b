"""Buffer episodes in memory and commit them to a :class:`TrajectoryStore`.

Row ``t`` of an episode holds the observation *before* action ``t``, the action, the reward and flags
it produced, and (optionally) the simulator state before the action (``sim_state``). The states
before the first and after the last action go to the episode table (``initial_state``, ``final_state``).
The environment's control frequency (:func:`control_fps`) goes with each episode; the store records it
(``TrajectoryStore.fps``) and refuses episodes of another one.

Commits are batched in time: a finished episode is committed together with the others that finished
within ``commit_every`` seconds (each zarr write costs ~2 ms of CPU whatever its size, so committing
every short episode alone would dominate a fast simulator). :meth:`EpisodeRecorder.flush` commits what
is pending; the runner calls it when it stops for any reason, Ctrl-C and errors included. A process
killed with SIGKILL loses at most the episodes of the last ``commit_every`` seconds; everything
committed before stays readable. ``commit_every=0`` commits each episode as it ends.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from embodia.core.interrupts import held_interrupt
from embodia.data.store import TrajectoryStore

#: a function applied to every finished episode's arrays before it is stored (e.g. relabelling terminals)
EpisodeTransform = Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]]


def control_fps(env: Any) -> float | None:
    """An environment's control frequency in steps per second, None if it does not say.

    gymnasium's convention: ``metadata["render_fps"]``, which MuJoCo environments set to ``1 / dt`` (one
    frame per step; gymnasium vector environments copy it from their first environment), else
    ``1 / env.unwrapped.dt``.
    """
    fps = (getattr(env, "metadata", None) or {}).get("render_fps")
    if fps is None:
        dt = getattr(getattr(env, "unwrapped", env), "dt", None)
        fps = 1.0 / float(dt) if isinstance(dt, (int, float)) and dt > 0 else None
    try:
        fps = float(fps) if fps is not None else None
    except (TypeError, ValueError):
        return None
    return fps if fps is not None and 0 < fps < float("inf") else None


class EpisodeBuffer:
    """Collects the steps of one episode at a time; :meth:`finish_episode` returns it as ``(data, info)``.

    What :meth:`TrajectoryStore.add_episodes` takes; the recorder below commits these, and parallel workers
    (:mod:`embodia.runner.parallel`) send them to the one process that writes the store.
    """

    def __init__(
        self,
        env_id: str,
        env_kwargs: Mapping[str, Any] | None = None,
        transform: EpisodeTransform | None = None,
    ) -> None:
        self.env_id = env_id
        self.env_kwargs = dict(env_kwargs or {})
        self.transform = transform
        self._rows: dict[str, list[np.ndarray]] = {}
        self._seed = -1
        self._initial_state: np.ndarray | None = None
        self.fps: float | None = None
        """the control frequency of the environment that runs the episodes (:func:`control_fps`)"""
        self.active = False

    def begin_episode(
        self, seed: int, initial_state: np.ndarray | None = None, fps: float | None = None
    ) -> None:
        """Start an episode run with ``reset(seed=seed)`` at ``fps`` steps per second (None: as before)."""
        self._rows = {}
        self._seed = seed
        self._initial_state = None if initial_state is None else np.array(initial_state, dtype=np.float64)
        self.fps = fps if fps is not None else self.fps
        self.active = True

    def add_step(
        self,
        obs: Mapping[str, np.ndarray] | np.ndarray,
        action: np.ndarray,
        reward: float,
        terminated: bool,
        truncated: bool,
        success: bool,
        sim_state: np.ndarray | None = None,
    ) -> None:
        rows = self._rows
        items = obs.items() if isinstance(obs, Mapping) else (("obs", obs),)
        for key, value in items:
            rows.setdefault(key, []).append(value)
        rows.setdefault("action", []).append(action)
        rows.setdefault("reward", []).append(reward)
        rows.setdefault("terminated", []).append(terminated)
        rows.setdefault("truncated", []).append(truncated)
        rows.setdefault("success", []).append(success)
        if sim_state is not None:
            rows.setdefault("sim_state", []).append(sim_state)

    def finish_episode(
        self, final_state: np.ndarray | None = None, success: bool | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]] | None:
        """The finished episode as ``(data, info)``; None if it had no steps."""
        self.active = False
        if not self._rows:
            return None
        data = {key: _stack(key, values) for key, values in self._rows.items()}
        if self.transform is not None:
            data = self.transform(data)
        self._rows = {}
        info = {
            "env_id": self.env_id,
            "env_kwargs": self.env_kwargs,
            "seed": self._seed,
            "success": success,
            "initial_state": self._initial_state,
            "final_state": final_state,
            "fps": self.fps,
        }
        return data, info

    def discard_episode(self) -> None:
        self._rows = {}
        self.active = False


class EpisodeRecorder(EpisodeBuffer):
    """Collects steps of one episode at a time; :meth:`end_episode` commits it (batched in time)."""

    def __init__(
        self,
        store: TrajectoryStore,
        env_id: str,
        env_kwargs: Mapping[str, Any] | None = None,
        commit_every: float = 2.0,
        transform: EpisodeTransform | None = None,
    ) -> None:
        super().__init__(env_id, env_kwargs, transform)
        self.store = store
        self.commit_every = float(commit_every)
        self._pending: list[tuple[dict[str, np.ndarray], dict[str, Any]]] = []
        self._last_commit = time.monotonic()

    def end_episode(self, final_state: np.ndarray | None = None, success: bool | None = None) -> int | None:
        """Finish the episode; returns the index it has (or will have) in the store, None if it had no steps.

        The episode is committed now if ``commit_every`` seconds have passed since the last commit,
        otherwise with the next commit or :meth:`flush`.
        """
        episode = self.finish_episode(final_state, success)
        if episode is None:
            return None
        return self.add_finished(episode)

    def add_finished(self, episode: tuple[dict[str, np.ndarray], dict[str, Any]]) -> int:
        """Queue an episode finished elsewhere (a parallel worker's); committed like the others."""
        index = self.store.num_episodes + len(self._pending)
        self._pending.append(episode)
        if time.monotonic() - self._last_commit >= self.commit_every:
            self.flush()
        return index

    def flush(self) -> None:
        """Commit every finished episode that is still pending."""
        if self._pending:
            with held_interrupt():  # Ctrl-C waits until the write is done and the queue is empty
                pending, self._pending = self._pending, []  # a write the file system refused is not retried
                self.store.add_episodes(pending)
        self._last_commit = time.monotonic()

    @property
    def pending(self) -> int:
        """Finished episodes not yet committed."""
        return len(self._pending)


_DTYPES = {"reward": np.float32, "terminated": np.bool_, "truncated": np.bool_, "success": np.bool_}


def _stack(key: str, values: list) -> np.ndarray:
    dtype = _DTYPES.get(key)
    if key == "action":
        actions = np.asarray(values)
        return actions.astype(np.float32) if actions.dtype == np.float64 else actions
    return np.asarray(values, dtype=dtype) if dtype else np.stack(values)
