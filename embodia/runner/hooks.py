"""What can watch an episode as it runs: recording, video, progress and per-episode metrics are hooks.

The episode runner (:func:`embodia.runner.run_episode`) calls every hook at the start of an episode, after
each step, and at its end; a hook that sets ``wants_state`` gets the simulator state before each step
(``Step.state``), read once for all hooks. Metrics are hooks whose :meth:`EpisodeHook.end` returns values;
they land in :attr:`EpisodeStats.metrics` and evaluations average them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import gymnasium
import numpy as np

if TYPE_CHECKING:
    from embodia.data.recorder import EpisodeRecorder


@dataclass
class Step:
    """One transition, as hooks see it (``obs`` is the observation *before* ``action``)."""

    obs: Any
    action: np.ndarray
    reward: float
    terminated: bool
    truncated: bool
    info: dict[str, Any]
    state: np.ndarray | None = None
    """Simulator state before the step, when some hook wants it and the environment supports it."""


@dataclass
class EpisodeStats:
    """What one episode produced."""

    index: int
    seed: int
    return_: float
    length: int
    success: bool
    terminated: bool
    truncated: bool
    store_index: int | None = None
    """Index of the episode in the store it was recorded to (None: not recorded)."""
    metrics: dict[str, float] = field(default_factory=dict)
    """Values of the metric hooks (e.g. Habitat's ``spl``)."""


class EpisodeHook:
    """Base of every hook: all methods do nothing."""

    wants_state = False
    """Whether :meth:`step` needs ``Step.state`` (the simulator state before the step)."""

    def begin(self, env: gymnasium.Env, seed: int, obs: Any, info: dict[str, Any]) -> None:
        """A new episode was reset with ``seed``."""

    def step(self, env: gymnasium.Env, step: Step) -> None:
        """One step ran."""

    def end(self, env: gymnasium.Env, stats: EpisodeStats) -> dict[str, float] | None:
        """The episode ended normally; metric hooks return their values."""
        return None

    def abort(self, env: gymnasium.Env) -> None:
        """The episode stopped with an exception (Ctrl-C included); forget it."""


class RecordingHook(EpisodeHook):
    """Writes every step to an :class:`~embodia.data.recorder.EpisodeRecorder` (committed in batches).

    ``record_sim_state`` also stores the simulator state before every step (``data/sim_state``).
    """

    def __init__(self, recorder: EpisodeRecorder, record_sim_state: bool = False) -> None:
        self.recorder = recorder
        self.wants_state = record_sim_state
        self.store_index: int | None = None

    def begin(self, env: gymnasium.Env, seed: int, obs: Any, info: dict[str, Any]) -> None:
        from embodia.data.recorder import control_fps

        self.recorder.begin_episode(seed, _state(env), fps=control_fps(env))

    def step(self, env: gymnasium.Env, step: Step) -> None:
        success = bool(step.info.get("success", False))
        self.recorder.add_step(
            step.obs, step.action, step.reward, step.terminated, step.truncated, success, step.state
        )

    def end(self, env: gymnasium.Env, stats: EpisodeStats) -> None:
        stats.store_index = self.recorder.end_episode(_state(env), success=stats.success)

    def abort(self, env: gymnasium.Env) -> None:
        self.recorder.discard_episode()


class VideoHook(EpisodeHook):
    """Collects ``env.render()`` frames of every episode (the environment renders ``rgb_array``)."""

    def __init__(self) -> None:
        self.frames: list[np.ndarray] = []

    def begin(self, env: gymnasium.Env, seed: int, obs: Any, info: dict[str, Any]) -> None:
        self.frames.append(env.render())

    def step(self, env: gymnasium.Env, step: Step) -> None:
        self.frames.append(env.render())


class StepCallback(EpisodeHook):
    """Calls ``on_step(steps_so_far)`` after every step (progress bars)."""

    def __init__(self, on_step: Callable[[int], None]) -> None:
        self.on_step = on_step
        self.steps = 0

    def begin(self, env: gymnasium.Env, seed: int, obs: Any, info: dict[str, Any]) -> None:
        self.steps = 0

    def step(self, env: gymnasium.Env, step: Step) -> None:
        self.steps += 1
        self.on_step(self.steps)


class FinalInfo(EpisodeHook):
    """A metric hook: the listed ``info`` values of the episode's last step (means over robots).

    ``FinalInfo(("spl", "soft_spl", "distance_to_goal", "collisions"))`` gives Habitat's metrics.
    """

    def __init__(self, keys: Sequence[str]) -> None:
        self.keys = tuple(keys)
        self._last: dict[str, Any] = {}

    def begin(self, env: gymnasium.Env, seed: int, obs: Any, info: dict[str, Any]) -> None:
        self._last = info

    def step(self, env: gymnasium.Env, step: Step) -> None:
        self._last = step.info

    def end(self, env: gymnasium.Env, stats: EpisodeStats) -> dict[str, float]:
        missing = [k for k in self.keys if k not in self._last]
        if missing:
            raise KeyError(f"the environment's info has no {missing} (metric hook {self.keys})")
        return {k: float(np.mean(self._last[k])) for k in self.keys}


#: Habitat's navigation metrics, read from the last step's info
NAV_METRICS = ("spl", "soft_spl", "distance_to_goal", "collisions")


def _state(env: gymnasium.Env) -> np.ndarray | None:
    from embodia.core.env import supports_state

    return env.unwrapped.get_state() if supports_state(env) else None
