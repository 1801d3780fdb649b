"""Run episodes: environment + policy (+ recorder, + video) -> per-episode statistics.

Seeding: episode ``i`` of ``rollout(..., seed=s)`` resets the environment and the policy with seed
``s + i``, so every episode can be re-run alone (and is replayable from its recorded seed).

Action chunks: a policy whose ``act`` returns an array with one more dimension than the action space
(``(chunk, action_dim)``) has the chunk executed step by step; the policy is queried again when the
chunk is used up, or after ``execute_steps`` steps if the policy sets that attribute (receding horizon).

Episode success is whether ``info["success"]`` was true at any step.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np

from embodia.core.paths import output_file
from embodia.core.seeds import check_seeds
from embodia.data.recorder import EpisodeRecorder
from embodia.data.store import TrajectoryStore
from embodia.envs import make, resolve_id
from embodia.errors import EmbodiaError
from embodia.policies.base import Policy, make_policy


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


@dataclass
class RolloutResult:
    """Per-episode statistics of a rollout and their means."""

    env_id: str
    policy: str
    episodes: list[EpisodeStats] = field(default_factory=list)
    steps_per_second: float = 0.0
    interrupted: bool = False

    @property
    def success_rate(self) -> float:
        return float(np.mean([e.success for e in self.episodes])) if self.episodes else 0.0

    @property
    def mean_return(self) -> float:
        return float(np.mean([e.return_ for e in self.episodes])) if self.episodes else 0.0

    @property
    def mean_length(self) -> float:
        return float(np.mean([e.length for e in self.episodes])) if self.episodes else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "env_id": self.env_id,
            "policy": self.policy,
            "episodes": [asdict(e) for e in self.episodes],
            "success_rate": self.success_rate,
            "mean_return": self.mean_return,
            "mean_length": self.mean_length,
            "steps_per_second": self.steps_per_second,
            "interrupted": self.interrupted,
        }


class _ChunkRunner:
    """Turns a policy's outputs (single actions or chunks) into one action per step."""

    def __init__(self, policy: Policy, action_ndim: int) -> None:
        self.policy = policy
        self.action_ndim = action_ndim
        self.execute_steps = getattr(policy, "execute_steps", None)
        self._queue: np.ndarray | None = None
        self._cursor = 0

    def reset(self) -> None:
        self._queue, self._cursor = None, 0

    def next_action(self, obs: Any) -> np.ndarray:
        limit = len(self._queue) if self._queue is not None else 0
        if self.execute_steps is not None:
            limit = min(limit, int(self.execute_steps))
        if self._queue is None or self._cursor >= limit:
            out = np.asarray(self.policy.act(obs))
            if out.ndim == self.action_ndim + 1:
                self._queue, self._cursor = out, 0
            else:
                self._queue, self._cursor = out[None], 0
        action = self._queue[self._cursor]
        self._cursor += 1
        return action


def run_episode(
    env: gymnasium.Env,
    policy: Policy,
    seed: int,
    *,
    recorder: EpisodeRecorder | None = None,
    frames: list[np.ndarray] | None = None,
    max_steps: int | None = None,
    on_step: Callable[[int], None] | None = None,
    record_sim_state: bool = False,
) -> tuple[EpisodeStats, int | None]:
    """Run one seeded episode; returns its stats and, when recording, its index in the store.

    When recording, the simulator state before the first and after the last step are saved with the
    episode; ``record_sim_state`` saves it before every step too (``data/sim_state``).
    """
    unwrapped = env.unwrapped
    can_state = recorder is not None and hasattr(unwrapped, "get_state")
    per_step_state = can_state and record_sim_state
    obs, info = env.reset(seed=seed)
    policy.reset(seed=seed)
    runner = _ChunkRunner(policy, len(env.action_space.shape or ()))
    if recorder is not None:
        recorder.begin_episode(seed, unwrapped.get_state() if can_state else None)
    if frames is not None:
        frames.append(env.render())
    total, steps, success = 0.0, 0, False
    terminated = truncated = False
    try:
        while not (terminated or truncated):
            action = runner.next_action(obs)
            state = unwrapped.get_state() if per_step_state else None
            next_obs, reward, terminated, truncated, info = env.step(action)
            if max_steps is not None and steps + 1 >= max_steps:
                truncated = True
            step_success = bool(info.get("success", False))
            if recorder is not None:
                recorder.add_step(obs, action, reward, terminated, truncated, step_success, state)
            if frames is not None:
                frames.append(env.render())
            success = success or step_success
            total += float(reward)
            steps += 1
            obs = next_obs
            if on_step is not None:
                on_step(steps)
    except BaseException:
        if recorder is not None:
            recorder.discard_episode()
        raise
    store_index = None
    if recorder is not None:
        store_index = recorder.end_episode(unwrapped.get_state() if can_state else None, success=success)
    stats = EpisodeStats(0, seed, total, steps, success, bool(terminated), bool(truncated), store_index)
    return stats, store_index


def rollout(
    env: str | gymnasium.Env,
    policy: str | Policy = "random",
    *,
    episodes: int = 1,
    seed: int = 0,
    record: str | Path | TrajectoryStore | None = None,
    record_sim_state: bool = False,
    commit_every: float = 2.0,
    video: str | Path | None = None,
    video_fps: int | None = None,
    max_steps: int | None = None,
    env_kwargs: dict[str, Any] | None = None,
    progress: bool = False,
) -> RolloutResult:
    """Run ``episodes`` seeded episodes and return their statistics.

    Args:
        env: an environment id (created here, closed at the end) or an environment object.
        policy: ``"random"``, ``"expert"`` (the env's scripted oracle), a policy folder, or a policy object.
        episodes: number of episodes; episode ``i`` uses seed ``seed + i``.
        record: a store path (opened for appending) or store; finished episodes are committed in
            batches at most ``commit_every`` seconds apart, and all of them when the rollout stops.
        record_sim_state: also record the full simulator state before every step (``sim_state``;
            lets users restore any step of a demonstration, ~20x more data for manipulation envs).
        video: write an mp4 of all episodes here (the env must render, ids are created with rgb_array).
        max_steps: cut episodes at this many steps (on top of the env's own time limit).
        env_kwargs: constructor arguments when ``env`` is an id (recorded with each episode).
        progress: show a progress bar.

    Ctrl-C stops after committing the episodes already finished; the result says ``interrupted``.
    """
    env_kwargs = dict(env_kwargs or {})
    if episodes < 1:
        raise EmbodiaError(f"episodes must be at least 1, got {episodes}")
    check_seeds(seed, episodes)
    if max_steps is not None and max_steps < 1:
        raise EmbodiaError(f"max_steps must be at least 1, got {max_steps}")
    if video is not None:
        video = output_file(video, "video")
    owns_env = isinstance(env, str)
    if owns_env:
        env_id = resolve_id(env)
        env = make(env_id, **env_kwargs, **({"render_mode": "rgb_array"} if video else {}))
    else:
        env_id = env.spec.id if env.spec else type(env.unwrapped).__name__
    policy_name = policy if isinstance(policy, str) else type(policy).__name__
    store = None
    if record is not None:
        store = record if isinstance(record, TrajectoryStore) else TrajectoryStore(record, mode="a")
    recorder = EpisodeRecorder(store, env_id, env_kwargs, commit_every) if store is not None else None
    frames: list[np.ndarray] | None = [] if video else None
    result = RolloutResult(env_id=env_id, policy=str(policy_name))
    try:
        policy = make_policy(policy, env)
        started, total_steps = time.perf_counter(), 0
        with _progress(progress, episodes, env_id) as advance:
            for i in range(episodes):
                stats, _ = run_episode(
                    env,
                    policy,
                    seed + i,
                    recorder=recorder,
                    frames=frames,
                    max_steps=max_steps,
                    on_step=advance.step,
                    record_sim_state=record_sim_state,
                )
                stats.index = i
                result.episodes.append(stats)
                total_steps += stats.length
                advance.episode(stats)
        result.steps_per_second = total_steps / max(time.perf_counter() - started, 1e-9)
    except KeyboardInterrupt:
        result.interrupted = True
    finally:
        if recorder is not None:
            try:
                recorder.flush()  # finished episodes are saved whatever stopped the rollout
                store.touch()
            finally:
                if store is not record:
                    store.close()  # the writer lock of a store opened here
        if frames:
            from embodia.data.video import write_video

            fps = video_fps or int(env.metadata.get("render_fps", 20))
            write_video(video, frames, fps=fps)
        if owns_env:
            env.close()
    return result


class _NoProgress:
    def step(self, steps: int) -> None:
        pass

    def episode(self, stats: EpisodeStats) -> None:
        pass

    def __enter__(self) -> _NoProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


class _RichProgress(_NoProgress):
    def __init__(self, episodes: int, env_id: str) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[status]}"),
            TimeElapsedColumn(),
            transient=False,
        )
        self._task = self._progress.add_task(env_id, total=episodes, status="")
        self._successes = 0
        self._done = 0

    def step(self, steps: int) -> None:
        if steps % 50 == 0:
            self._progress.update(self._task, status=f"step {steps}")

    def episode(self, stats: EpisodeStats) -> None:
        self._done += 1
        self._successes += int(stats.success)
        self._progress.update(self._task, advance=1, status=f"success {self._successes}/{self._done}")

    def __enter__(self) -> _RichProgress:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()


def _progress(enabled: bool, episodes: int, env_id: str) -> _NoProgress:
    return _RichProgress(episodes, env_id) if enabled else _NoProgress()
