"""The episode runner: one loop for every place that runs episodes (runs, evaluation, data generation).

:func:`run_episode` resets the environment and the policy with a seed, executes the policy's actions (action
chunks through :class:`embodia.core.chunks.ActionChunker`, the same runner the ROS 2 node uses) until the
episode terminates, is truncated or reaches ``max_steps``, and tells its hooks (:mod:`embodia.runner.hooks`:
recording, video, progress, metrics) about every step. :func:`rollout` runs seeded episodes of an
environment id or object and collects their statistics.

Seeding: episode ``i`` of ``rollout(..., seed=s)`` resets the environment and the policy with seed
``s + i``, so every episode can be re-run alone (and is replayable from its recorded seed).
Episode success is whether ``info["success"]`` was true at any step.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np

from embodia.core.chunks import ActionChunker
from embodia.core.env import supports_state
from embodia.core.errors import EmbodiaError
from embodia.core.paths import output_file
from embodia.core.policy import Policy, make_policy
from embodia.core.seeds import check_seeds
from embodia.data.recorder import EpisodeRecorder, EpisodeTransform
from embodia.data.store import TrajectoryStore
from embodia.envs import make, resolve_id
from embodia.runner.hooks import EpisodeHook, EpisodeStats, RecordingHook, Step, StepCallback, VideoHook
from embodia.runner.parallel import wants_ray


@dataclass
class RolloutResult:
    """Per-episode statistics of a rollout and their means."""

    env_id: str
    policy: str
    episodes: list[EpisodeStats] = field(default_factory=list)
    steps_per_second: float = 0.0
    interrupted: bool = False
    workers: dict[str, dict[str, float]] = field(default_factory=dict)
    """Parallel runs: per worker (``host:pid``), the episodes and steps it ran and its seconds."""

    @property
    def success_rate(self) -> float:
        return float(np.mean([e.success for e in self.episodes])) if self.episodes else 0.0

    @property
    def mean_return(self) -> float:
        return float(np.mean([e.return_ for e in self.episodes])) if self.episodes else 0.0

    @property
    def mean_length(self) -> float:
        return float(np.mean([e.length for e in self.episodes])) if self.episodes else 0.0

    def mean_metric(self, name: str) -> float:
        """Mean of a metric hook's value over the episodes (NaN without episodes)."""
        values = [e.metrics[name] for e in self.episodes if name in e.metrics]
        return float(np.mean(values)) if values else float("nan")

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
            "workers": self.workers,
        }


def run_episode(
    env: gymnasium.Env,
    policy: Policy,
    seed: int,
    *,
    hooks: Sequence[EpisodeHook] = (),
    max_steps: int | None = None,
    index: int = 0,
) -> EpisodeStats:
    """Run one seeded episode of ``policy`` in ``env``; returns its statistics (metrics from the hooks)."""
    capture_state = any(h.wants_state for h in hooks) and supports_state(env)
    obs, info = env.reset(seed=seed)
    policy.reset(seed=seed)
    chunker = ActionChunker(policy, tuple(env.action_space.shape or ()))
    total, steps, success = 0.0, 0, False
    terminated = truncated = False
    try:
        for hook in hooks:
            hook.begin(env, seed, obs, info)
        while not (terminated or truncated):
            action = chunker.next_action(obs)
            state = env.unwrapped.get_state() if capture_state else None
            next_obs, reward, terminated, truncated, info = env.step(action)
            if max_steps is not None and steps + 1 >= max_steps:
                truncated = True
            step = Step(obs, action, float(reward), bool(terminated), bool(truncated), info, state)
            for hook in hooks:
                hook.step(env, step)
            success = success or bool(info.get("success", False))
            total += float(reward)
            steps += 1
            obs = next_obs
    except BaseException:
        for hook in hooks:
            hook.abort(env)
        raise
    stats = EpisodeStats(index, seed, total, steps, success, bool(terminated), bool(truncated))
    try:
        for hook in hooks:
            stats.metrics.update(hook.end(env, stats) or {})
    except KeyboardInterrupt as interrupt:
        # Ctrl-C held while a hook committed this episode (the recorder's store write) comes out here: the
        # episode is finished and may be stored, so its statistics go with the interrupt to the caller
        interrupt.finished_episode = stats  # type: ignore[attr-defined]
        raise
    return stats


def made_with(env: gymnasium.Env) -> dict[str, Any]:
    """The constructor arguments ``env`` was made with beyond its registration's defaults (what a replay passes
    to ``make`` to build the same environment); those JSON cannot store are left out with a warning."""
    import json
    import warnings

    spec = env.spec
    if spec is None or spec.id not in gymnasium.registry:
        return {}
    registered = gymnasium.registry[spec.id].kwargs
    kwargs: dict[str, Any] = {}
    for key, value in spec.kwargs.items():
        try:
            if key in registered and bool(registered[key] == value):
                continue
            json.dumps(value)
        except (TypeError, ValueError):
            warnings.warn(f"{spec.id}: argument {key}={value!r} is not recorded (not JSON)", stacklevel=3)
            continue
        kwargs[key] = value
    return kwargs


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
    hooks: Sequence[EpisodeHook] = (),
    transform: EpisodeTransform | None = None,
    workers: int = 1,
    ray_address: str | None = None,
    num_envs: int = 1,
    vector_mode: str = "sync",
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
        hooks: more hooks (:mod:`embodia.runner.hooks`), e.g. metric hooks such as Habitat's.
        transform: applied to every recorded episode's arrays before they are stored.
        workers: run the episodes on Ray (:mod:`embodia.runner.parallel`) with this many local workers; the
            stored episodes equal the serial run's. With the defaults (1, None) nothing changes and Ray is
            not imported.
        ray_address: run them on the Ray cluster at this address instead.
        num_envs: step this many environments together in a gymnasium vector environment, asking a batch
            policy once per step (:func:`embodia.runner.vector.run_vector_episodes`; the episodes equal the
            serial run's). Not with ``video``, ``hooks`` or Ray workers.
        vector_mode: ``"sync"`` (in this process) or ``"async"`` (a process per environment).
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
    if num_envs > 1:
        if wants_ray(workers, ray_address):
            raise EmbodiaError(
                "--num-envs and --workers cannot be combined: choose one way to run in parallel"
            )
        if video is not None or hooks:
            raise EmbodiaError(
                "videos and metric hooks need the environment object, which a vector environment does not "
                "give: drop --video/--metric, or run with --num-envs 1"
            )
        return _rollout_vectorised(
            env, policy, episodes, seed, record, record_sim_state, commit_every, max_steps, env_kwargs,
            transform, num_envs, vector_mode, progress,
        )  # fmt: skip
    if wants_ray(workers, ray_address):
        return _rollout_on_ray(
            env, policy, episodes, seed, record, record_sim_state, commit_every, video, max_steps, env_kwargs,
            hooks, transform, workers, ray_address, progress,
        )  # fmt: skip
    owns_env = isinstance(env, str)
    if owns_env:
        env_id = resolve_id(env)
        env = make(env_id, **env_kwargs, **({"render_mode": "rgb_array"} if video else {}))
    else:
        env_id = env.spec.id if env.spec else type(env.unwrapped).__name__
        env_kwargs = env_kwargs or made_with(env)
    result = RolloutResult(
        env_id=env_id, policy=str(policy if isinstance(policy, str) else type(policy).__name__)
    )
    all_hooks = list(hooks)
    store = recorder = None
    if record is not None:
        store = record if isinstance(record, TrajectoryStore) else TrajectoryStore(record, mode="a")
        recorder = EpisodeRecorder(store, env_id, env_kwargs, commit_every, transform)
        all_hooks.append(RecordingHook(recorder, record_sim_state))
    video_hook = VideoHook() if video else None
    if video_hook is not None:
        all_hooks.append(video_hook)
    try:
        policy = make_policy(policy, env)
        started, total_steps = time.perf_counter(), 0
        with _progress(progress, episodes, env_id) as advance:
            step_hooks = [*all_hooks, StepCallback(advance.step)] if progress else all_hooks
            for i in range(episodes):
                stats = run_episode(env, policy, seed + i, hooks=step_hooks, max_steps=max_steps, index=i)
                result.episodes.append(stats)
                total_steps += stats.length
                advance.episode(stats)
        result.steps_per_second = total_steps / max(time.perf_counter() - started, 1e-9)
    except KeyboardInterrupt as interrupt:
        result.interrupted = True
        finished = getattr(interrupt, "finished_episode", None)
        if finished is not None:  # Ctrl-C came during its end hooks: it finished (and may be recorded)
            result.episodes.append(finished)
    finally:
        if recorder is not None:
            try:
                recorder.flush()  # finished episodes are saved whatever stopped the rollout
                store.touch()
            finally:
                if store is not record:
                    store.close()  # the writer lock of a store opened here
        if video_hook is not None and video_hook.frames:
            from embodia.data.video import write_video

            fps = video_fps or int(env.metadata.get("render_fps", 20))
            write_video(video, video_hook.frames, fps=fps)
        if owns_env:
            env.close()
    return result


def _rollout_on_ray(
    env: str | gymnasium.Env,
    policy: Any,
    episodes: int,
    seed: int,
    record: str | Path | TrajectoryStore | None,
    record_sim_state: bool,
    commit_every: float,
    video: Path | None,
    max_steps: int | None,
    env_kwargs: dict[str, Any],
    hooks: Sequence[EpisodeHook],
    transform: EpisodeTransform | None,
    workers: int,
    ray_address: str | None,
    progress: bool,
) -> RolloutResult:
    from embodia.runner.parallel import run_parallel

    if not isinstance(env, str):
        raise EmbodiaError(
            "a parallel rollout builds its environments in the workers: pass an environment id"
        )
    if video is not None:
        raise EmbodiaError("videos are rendered by one process: drop --video, or run with --workers 1")
    env_id = resolve_id(env)
    result = RolloutResult(
        env_id=env_id, policy=str(policy if isinstance(policy, str) else type(policy).__name__)
    )
    store = None
    if record is not None:
        store = record if isinstance(record, TrajectoryStore) else TrajectoryStore(record, mode="a")
    try:
        with _progress(progress, episodes, env_id) as advance:
            run = run_parallel(
                env_id,
                policy,
                episodes=episodes,
                seed=seed,
                workers=workers,
                address=ray_address,
                env_kwargs=env_kwargs,
                max_steps=max_steps,
                store=store,
                record_sim_state=record_sim_state,
                commit_every=commit_every,
                transform=transform,
                hooks=hooks,
                on_episode=advance.episode,
            )
    finally:
        if store is not None:
            store.touch()
            if store is not record:
                store.close()
    result.episodes, result.workers, result.interrupted = run.episodes, run.workers, run.interrupted
    result.steps_per_second = sum(e.length for e in run.episodes) / max(run.seconds, 1e-9)
    return result


def _rollout_vectorised(
    env: str | gymnasium.Env,
    policy: Any,
    episodes: int,
    seed: int,
    record: str | Path | TrajectoryStore | None,
    record_sim_state: bool,
    commit_every: float,
    max_steps: int | None,
    env_kwargs: dict[str, Any],
    transform: EpisodeTransform | None,
    num_envs: int,
    vector_mode: str,
    progress: bool,
) -> RolloutResult:
    from embodia.runner.vector import run_vector_episodes

    if not isinstance(env, str):
        raise EmbodiaError("a vectorised rollout builds its environments itself: pass an environment id")
    with _progress(progress, episodes, resolve_id(env)) as advance:
        return run_vector_episodes(
            env,
            policy,
            range(seed, seed + episodes),
            num_envs=num_envs,
            mode=vector_mode,
            max_steps=max_steps,
            env_kwargs=env_kwargs,
            record=record,
            record_sim_state=record_sim_state,
            commit_every=commit_every,
            transform=transform,
            on_episode=advance.episode,
        )


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
