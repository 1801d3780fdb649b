"""Re-simulate recorded episodes from their recorded initial state and actions.

For each episode: create the environment from the recorded id and kwargs, reset it with the recorded
seed (which rebuilds the task and goal), restore the recorded initial simulator state, then apply the
recorded actions one by one. With ``verify``, what the re-simulation produces is compared with the
recording: every non-image observation at every step, the simulator state at every step where the
store holds ``sim_state``, and the final simulator state. The largest absolute difference is the
episode's *deviation*.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from embodia.core.env import supports_state
from embodia.core.errors import ReplayMismatchError, StoreError
from embodia.core.paths import output_file
from embodia.data.store import TrajectoryStore
from embodia.envs import env_ids, make


@dataclass
class ReplayResult:
    """Outcome of replaying one episode."""

    episode: int
    length: int
    max_deviation: float
    reset_deviation: float
    success: bool
    recorded_success: bool
    return_: float
    recorded_return: float
    frames: list[np.ndarray] = field(default_factory=list, repr=False)


def replay_episode(
    store: TrajectoryStore,
    index: int,
    *,
    verify: bool = True,
    render: bool = False,
    width: int | None = None,
    height: int | None = None,
) -> ReplayResult:
    """Re-simulate episode ``index`` of ``store`` (see module docstring)."""
    meta = store.episode_meta(index)
    schema = store.schema
    vector_obs = [k for k in store.obs_keys if not np.issubdtype(np.dtype(schema[k]["dtype"]), np.integer)]
    wanted = ["action", *(["sim_state"] if "sim_state" in schema else []), *(vector_obs if verify else [])]
    if "action" not in schema:
        raise StoreError(f"store {str(store.path)!r} has no 'action' key: nothing to replay")
    episode = store.episode(index, keys=wanted)
    kwargs = dict(meta.env_kwargs)
    if render:
        kwargs["render_mode"] = "rgb_array"
        if width and height:
            kwargs.update(width=width, height=height)
    env = make(meta.env_id, **kwargs)
    unwrapped = env.unwrapped
    try:
        obs, _ = env.reset(seed=meta.seed)
        has_state = supports_state(env) and meta.initial_state is not None
        reset_deviation = 0.0
        if has_state:
            initial = meta.initial_state
            reset_deviation = float(np.max(np.abs(unwrapped.get_state() - initial), initial=0.0))
            unwrapped.set_state(initial)
        frames = [env.render()] if render else []
        recorded_states = episode.get("sim_state")
        deviation, total, success = 0.0, 0.0, False
        for t, action in enumerate(episode["action"]):
            if verify:
                for key in vector_obs:
                    diff = np.asarray(obs[key], dtype=np.float64) - episode[key][t]
                    deviation = max(deviation, float(np.max(np.abs(diff), initial=0.0)))
                if recorded_states is not None:
                    diff = unwrapped.get_state() - recorded_states[t]
                    deviation = max(deviation, float(np.max(np.abs(diff))))
            obs, reward, terminated, truncated, info = env.step(action)
            total += float(reward)
            success = success or bool(info.get("success", False))
            if render:
                frames.append(env.render())
        if verify and has_state and meta.final_state is not None and np.isfinite(meta.final_state).all():
            deviation = max(deviation, float(np.max(np.abs(unwrapped.get_state() - meta.final_state))))
    finally:
        env.close()
    return ReplayResult(
        episode=meta.index,
        length=meta.length,
        max_deviation=deviation,
        reset_deviation=reset_deviation,
        success=success,
        recorded_success=meta.success,
        return_=total,
        recorded_return=meta.return_,
        frames=frames,
    )


def _check_has_states(store: TrajectoryStore) -> None:
    """Refuse, in one line, a store of foreign data (a LeRobot import): no simulator states, no environment."""
    if not store.num_episodes or "sim_state" in store.schema:
        return
    meta = store.episode_meta(0)
    if meta.initial_state is None and meta.env_id not in env_ids():
        raise StoreError(
            f"store {str(store.path)!r} holds no simulator states: its episodes ({meta.env_id}) were recorded "
            "outside embodia, so there is nothing to re-simulate or verify; info, view, train and export work on it"
        )


def replay(
    store: TrajectoryStore | str | Path,
    episodes: list[int] | None = None,
    *,
    verify: bool = True,
    tolerance: float = 1e-6,
    video: str | Path | None = None,
    fps: int = 20,
    progress: bool = False,
) -> list[ReplayResult]:
    """Replay several episodes (all by default); optionally verify and render them to one mp4.

    Raises:
        ReplayMismatchError: ``verify`` and some episode deviates by more than ``tolerance``
            (raised after all episodes ran and the video, if any, was written).
    """
    if video is not None:
        video = output_file(video, "video")
    if not isinstance(store, TrajectoryStore):
        store = TrajectoryStore(store, mode="r")
    _check_has_states(store)
    indices = list(range(store.num_episodes)) if episodes is None else list(episodes)
    for index in indices:
        if not -store.num_episodes <= index < store.num_episodes:
            store.episode_meta(index)  # raises EpisodeIndexError naming the range, before anything runs
    results: list[ReplayResult] = []
    frames: list[np.ndarray] = []
    iterator = indices
    if progress:
        from rich.progress import track

        iterator = track(indices, description="replaying", transient=True)
    for index in iterator:
        result = replay_episode(store, index, verify=verify, render=video is not None)
        frames.extend(result.frames)
        result.frames = []
        results.append(result)
    if video is not None and frames:
        from embodia.data.video import write_video

        write_video(video, frames, fps=fps)
    if verify:
        worst = max(results, key=lambda r: r.max_deviation, default=None)
        if worst is not None and worst.max_deviation > tolerance:
            raise ReplayMismatchError(
                f"replay diverged: episode {worst.episode} deviates by {worst.max_deviation:.3g} from its "
                f"recorded states (tolerance {tolerance:g}); the simulator or its version differs from the recording"
            )
    return results
