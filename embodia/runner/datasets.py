"""Offline datasets: generate them with scripted experts, or import OGBench's official ``.npz`` files.

``generate_dataset`` runs a play environment (``embodia/<Name>-Play-v0``, see
:mod:`embodia.envs.ogbench.play`) with its noisy expert and records every episode. Each row's
``terminated`` is the single-task terminal flag of OGBench's relabelled datasets (the state before
the action satisfies task ``task_id``); the episode itself goes on, as OGBench's play data does.
Windows sampled for training stop bootstrapping at those rows.

``import_ogbench_npz`` reads the official files (``observations``, ``actions``, ``terminals`` marking
the last step of each trajectory, and where present ``rewards``, ``masks``, ``qpos``,
``button_states``) into a store; with ``task_id`` it labels rewards for that single task from
``qpos`` / ``button_states`` with ogbench's own ``relabel_dataset``.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np

from embodia.core.errors import EmbodiaError
from embodia.data.store import TrajectoryStore
from embodia.envs import make, resolve_id
from embodia.runner.episodes import RolloutResult, rollout


def success_as_terminal(data: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Play data: each row's terminal flag is the single-task success of its state (the episode goes on)."""
    return {**data, "terminated": np.array(data["success"], dtype=bool)}


def family_name(env_id: str) -> str:
    """``embodia/CubeSingle-SingleTask-v0`` (or ``-Play-v0``, ``-v0``) -> ``CubeSingle``."""
    name = resolve_id(env_id).removeprefix("embodia/").rsplit("-v", 1)[0]
    return name.removesuffix("-SingleTask").removesuffix("-Play")


def play_env_id(env_id: str) -> str:
    """``embodia/CubeSingle-v0`` / ``...-SingleTask-v0`` -> ``embodia/CubeSingle-Play-v0``."""
    return resolve_id(f"embodia/{family_name(env_id)}-Play-v0")


def dataset_environment(store: Any) -> tuple[str | None, dict[str, Any]]:
    """The environment a store's episodes evaluate on, when they all come from one: (id, kwargs) or (None, {}).

    A policy folder records it, so ``embodia eval``, the ONNX runtime and the ROS 2 node know what to run
    without ``--env``. Play data (``-Play-v0``, OGBench's data-collection mode) evaluates on the
    single-task environment its rewards label (``-SingleTask-v0`` with the same ``task_id``); episodes of
    several environments, or of one with differing arguments, name none.
    """
    if store.num_episodes == 0:
        return None, {}
    env_ids = set(store.episodes_table()["env_id"].tolist())
    if len(env_ids) != 1:
        return None, {}
    env_id = env_ids.pop()
    kwargs = [store.episode_meta(i).env_kwargs for i in range(store.num_episodes)]
    if any(k != kwargs[0] for k in kwargs):
        return None, {}
    try:
        resolved = resolve_id(env_id)
    except EmbodiaError:  # not an embodia environment (a robot's recording): nothing to evaluate on
        return None, {}
    if resolved.endswith("-Play-v0"):
        resolved = resolve_id(f"embodia/{family_name(resolved)}-SingleTask-v0")
    return resolved, dict(kwargs[0])


def noisy_expert(env: Any, noise: float) -> Any:
    """The environment's scripted expert with Gaussian action noise (a policy factory, picklable for Ray)."""
    return env.unwrapped.make_expert(noise=noise)


def generate_dataset(
    env_id: str,
    episodes: int,
    out: str | Path,
    *,
    noise: float = 0.1,
    seed: int = 0,
    task_id: int | None = None,
    sparse: bool = False,
    max_steps: int | None = None,
    record_sim_state: bool = False,
    overwrite: bool = False,
    video_codec: str | None = None,
    workers: int = 1,
    ray_address: str | None = None,
    progress: bool = False,
) -> RolloutResult:
    """Record ``episodes`` noisy-expert play episodes of ``env_id``'s family into the store ``out``.

    Args:
        env_id: an OGBench family id (``embodia/CubeSingle-v0``, ``...-SingleTask-v0`` or ``...-Play-v0``).
        episodes: number of episodes (1000 steps each unless ``max_steps``); episode ``i`` has seed ``seed + i``.
        out: the trajectory store (appended to, unless ``overwrite``).
        noise: std of the Gaussian noise on the expert's actions (OGBench's play data: 0.1-0.2).
        task_id: the single task whose rewards and terminals label the data (default: ogbench's default task).
        sparse: label with sparse rewards (-1 until the task is solved, 0 when it is; the Q-chunking
            authors' ``--sparse``) instead of ogbench's dense ones.
        video_codec: camera observations of a new store as ``"h264"`` or ``"av1"`` video, or ``"none"`` (raw);
            None: raw, or what an existing store has (:class:`~embodia.data.store.TrajectoryStore`).
        workers: generate in parallel on this many local Ray workers (the same store as a serial run).
        ray_address: generate on the Ray cluster at this address instead.
    """
    play_id = play_env_id(env_id)
    env_kwargs: dict[str, Any] = {} if task_id is None else {"task_id": int(task_id)}
    if sparse:
        env_kwargs["sparse"] = True
    with TrajectoryStore(out, mode="w" if overwrite else "a", video_codec=video_codec) as store:
        result = rollout(
            play_id,
            functools.partial(noisy_expert, noise=noise),
            episodes=episodes,
            seed=seed,
            max_steps=max_steps,
            env_kwargs=env_kwargs,
            record=store,
            record_sim_state=record_sim_state,
            transform=success_as_terminal,
            workers=workers,
            ray_address=ray_address,
            progress=progress,
        )
    result.policy = f"expert(noise={noise})"
    return result


def import_ogbench_npz(
    path: str | Path,
    out: str | Path,
    *,
    env_id: str,
    task_id: int | None = None,
    overwrite: bool = False,
) -> int:
    """Import an OGBench dataset file into a trajectory store; returns the number of episodes.

    Raises:
        EmbodiaError: the file is missing, unreadable, or lacks ``observations``/``actions``/``terminals``.
    """
    path = Path(path)
    if not path.is_file():
        raise EmbodiaError(f"no dataset file at {str(path)!r}")
    try:
        with np.load(path) as npz:
            data = {key: npz[key] for key in npz.files}
    except Exception as error:
        raise EmbodiaError(f"cannot read {str(path)!r} as an .npz dataset: {error}") from error
    missing = [key for key in ("observations", "actions", "terminals") if key not in data]
    if missing:
        raise EmbodiaError(
            f"{path} is not an OGBench dataset: missing {', '.join(missing)} (keys: {sorted(data)})"
        )
    n = len(data["observations"])
    if task_id is not None:
        _relabel(env_id, task_id, data, path)
    ends = np.flatnonzero(data["terminals"].astype(bool)) + 1
    if len(ends) == 0 or ends[-1] != n:
        ends = np.append(ends, n)
    rewards = data.get("rewards", np.zeros(n, dtype=np.float32)).astype(np.float32)
    terminals = (data["masks"] == 0) if "masks" in data else np.zeros(n, dtype=bool)
    env_id = resolve_id(env_id)
    with TrajectoryStore(out, mode="w" if overwrite else "a") as store:
        _add_npz_episodes(store, data, ends, rewards, terminals, env_id, task_id)
    return len(ends)


def _add_npz_episodes(
    store: TrajectoryStore,
    data: dict[str, np.ndarray],
    ends: np.ndarray,
    rewards: np.ndarray,
    terminals: np.ndarray,
    env_id: str,
    task_id: int | None,
) -> None:
    batch, start = [], 0
    for end in ends:
        rows = slice(start, end)
        episode = {
            "state": data["observations"][rows].astype(np.float32),
            "action": data["actions"][rows].astype(np.float32),
            "reward": rewards[rows],
            "terminated": terminals[rows],
            "truncated": np.arange(start, end) == end - 1,
            "success": terminals[rows],
        }
        info = {"env_id": env_id, "env_kwargs": {} if task_id is None else {"task_id": task_id}, "seed": -1}
        batch.append((episode, info))
        start = end
        if len(batch) == 64:
            store.add_episodes(batch)
            batch = []
    store.add_episodes(batch)
    store.touch()


def _relabel(env_id: str, task_id: int, data: dict[str, np.ndarray], path: Path) -> None:
    from ogbench.relabel_utils import relabel_dataset

    if "qpos" not in data:
        raise EmbodiaError(
            f"{path} has no 'qpos': single-task labels cannot be computed; import without --task-id"
        )
    env = make(f"embodia/{family_name(env_id)}-SingleTask-v0", task_id=task_id)
    try:
        raw = env.unwrapped.raw
        raw.reset(seed=0)
        relabel_dataset(env.unwrapped.raw_id, raw, data)
    finally:
        env.close()
