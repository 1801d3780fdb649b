"""Re-render a recorded trajectory store through other cameras: a state-only recording becomes a pixel dataset.

A recording keeps the simulator state, so what the robot would have seen through any camera can be rendered
later, without running the policy again: the idea of robomimic's ``dataset_states_to_obs`` (Mandlekar et al.,
"What Matters in Learning from Offline Human Demonstrations for Robot Manipulation", CoRL 2021) and
ManiSkill's ``replay_trajectory`` (Gu et al., "ManiSkill2", ICLR 2023). For each episode of the source store:

1. the recorded environment is made again (``make(env_id, **env_kwargs)``) with the requested cameras added
   to its arguments, exactly as a live recording with those cameras would make it, and reset with the
   episode's seed (which rebuilds the task and goal);
2. the observation before every action is rendered at the state it was recorded in: with per-step states
   (``sim_state``, ``embodia run --record-sim-state``) each one is restored with ``set_state``; with the
   initial state alone, the episode is re-simulated from it with the recorded actions (as ``embodia replay``
   does) and checked against the recorded observations and final state, so pixels never show a diverged
   simulation;
3. the episode is written to a new store with every original key unchanged, the new images added (an image
   key the new cameras also produce is rendered again at the new size), and the environment arguments that
   make those images recorded with it, so re-rendered and live-recorded stores are interchangeable.

Cameras. An environment that takes camera observations (:class:`embodia.core.env.CameraEnv`, e.g. the
kitchens: ``agentview``, ``eye_in_hand``) renders them under ``<camera>_rgb`` through its own observation
code (``cameras``, ``camera_height``, ``camera_width`` arguments). Every environment that renders also has
the camera ``render``: the frames of ``env.render()`` (what ``embodia run --video`` shows; PointMaze's view
of the maze from above), stored as ``render_rgb`` and sized by the environment's ``width`` / ``height``.

The new store is written into a hidden folder next to the destination and renamed into place when complete,
so a failure (or Ctrl-C) leaves no destination behind; an existing destination is never written into.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np

from embodia.core.env import supports_state
from embodia.core.errors import EmbodiaError, ReplayMismatchError, StoreError
from embodia.data.edit_output import check_destination
from embodia.data.episode_meta import EpisodeMeta
from embodia.data.store import TrajectoryStore
from embodia.data.store_integrity import PATH_PROBLEMS, classify_path
from embodia.envs import make
from embodia.envs.registration import resolve_id

RENDER_CAMERA = "render"
"""The camera of ``env.render()``, which every rendering environment has."""


@dataclass(frozen=True)
class CameraPlan:
    """What to render for the episodes of one environment, and the arguments that make it render that."""

    env_id: str
    """the registered environment id"""
    env_kwargs: dict[str, Any]
    """the constructor arguments recorded with the new episodes: the source's plus the cameras and sizes"""
    observation_cameras: tuple[str, ...]
    """cameras rendered through the environment's observations (``<camera>_rgb``), in its order"""
    render: bool
    """whether ``env.render()`` frames are rendered too (``render_rgb``)"""
    size: tuple[int, int]
    """(height, width) of every rendered image"""

    @property
    def image_keys(self) -> tuple[str, ...]:
        """The observation keys this plan renders."""
        return (
            *(f"{camera}_rgb" for camera in self.observation_cameras),
            *(("render_rgb",) if self.render else ()),
        )

    def make_env(self) -> gymnasium.Env:
        """The environment that renders these images (``render_mode`` added when ``render()`` is used)."""
        return make(
            self.env_id, **{**self.env_kwargs, **({"render_mode": "rgb_array"} if self.render else {})}
        )


@dataclass
class RerenderResult:
    """What :func:`rerender` wrote."""

    path: Path
    """the new store"""
    episodes: int
    steps: int
    image_keys: dict[str, tuple[int, ...]] = field(default_factory=dict)
    """each rendered key and its image shape"""
    restored_states: int = 0
    """episodes whose per-step states were restored (the others were re-simulated from their initial state)"""


def available_cameras(env_id: str) -> tuple[str, ...]:
    """The camera names :func:`rerender` accepts for ``env_id`` (its observation cameras, then ``render``)."""
    from gymnasium.envs.registration import load_env_creator

    env_class = load_env_creator(gymnasium.spec(resolve_id(env_id)).entry_point)
    names = tuple(getattr(env_class, "camera_names", ())) if hasattr(env_class, "observe") else ()
    metadata = getattr(env_class, "metadata", {}) or {}
    renders = "rgb_array" in metadata.get("render_modes", ())
    return (*names, *((RENDER_CAMERA,) if renders else ()))


def plan_cameras(
    env_id: str, env_kwargs: Mapping[str, Any], cameras: Sequence[str], size: tuple[int, int]
) -> CameraPlan:
    """How to render ``cameras`` at ``size`` (height, width) for episodes of ``env_id`` made with ``env_kwargs``.

    When observation cameras are asked for, those the episodes were recorded with (``env_kwargs["cameras"]``)
    stay on and are rendered again at the new size: one environment has one camera size, and the new episodes
    record the arguments that made their images. Asking for ``render`` alone leaves them as they are.

    Raises:
        EmbodiaError: a camera the environment does not have (naming the ones it has).
    """
    env_id = resolve_id(env_id)
    available = available_cameras(env_id)
    for camera in cameras:
        if camera not in available:
            have = ", ".join(available) if available else "none (it neither takes cameras nor renders)"
            raise EmbodiaError(f"unknown camera {camera!r} for {env_id}; its cameras: {have}")
    kwargs = dict(env_kwargs)
    height, width = size
    requested = [camera for camera in cameras if camera != RENDER_CAMERA]
    observation_cameras: tuple[str, ...] = ()
    if requested:
        existing = kwargs.get("cameras") or ()
        existing = (existing,) if isinstance(existing, str) else tuple(existing)
        observation_cameras = tuple(dict.fromkeys([*existing, *requested]))
        kwargs.update(cameras=list(observation_cameras), camera_height=height, camera_width=width)
    render = RENDER_CAMERA in cameras
    if render:
        kwargs.update(height=height, width=width)
    return CameraPlan(env_id, kwargs, observation_cameras, render, (height, width))


def rerender(
    source: str | Path | TrajectoryStore,
    out: str | Path,
    cameras: Sequence[str],
    size: int | tuple[int, int],
    *,
    video_codec: str | None = None,
    tolerance: float = 1e-6,
    progress: bool = False,
) -> RerenderResult:
    """Render ``cameras`` at every recorded state of ``source`` into the new store ``out`` (module docstring).

    Args:
        source: the recorded store (read only).
        out: the new store; must not exist (or be an empty folder).
        cameras: camera names (:func:`available_cameras`).
        size: image size, ``N`` (square) or ``(height, width)``.
        video_codec: camera compression of the new store (``"h264"``, ``"av1"``, ``"none"``); ``None`` keeps
            the source's.
        tolerance: largest deviation from the recorded observations allowed where an episode is re-simulated
            from its initial state.
        progress: show a progress bar.

    Raises:
        StoreError: ``out`` exists, or the source holds no simulator states to restore.
        EmbodiaError: an unknown camera, a bad size, or an environment that cannot restore states.
        ReplayMismatchError: a re-simulated episode left its recorded observations (nothing is written).
    """
    store = source if isinstance(source, TrajectoryStore) else TrajectoryStore(source, mode="r")
    size = _checked_size(size)
    cameras = list(dict.fromkeys(cameras))
    if not cameras or any(not isinstance(c, str) or not c.strip() for c in cameras):
        raise EmbodiaError(
            f"name at least one camera to render (e.g. --cameras {RENDER_CAMERA}), got {cameras!r}"
        )
    out = Path(out)
    _check_destination(out)
    metas = [store.episode_meta(i) for i in range(store.num_episodes)]
    if not metas:
        raise StoreError(f"store {str(store.path)!r} has no episodes: nothing to rerender")
    per_step = "sim_state" in store.schema
    for meta in metas:
        if not per_step and not _has_initial_state(meta):
            raise StoreError(
                f"cannot rerender {str(store.path)!r}: episode {meta.index} has no simulator state (no sim_state "
                "key, no initial state; recorded without states or imported from another format); rerendering "
                "restores recorded states: record with `embodia run ENV --record STORE --record-sim-state`"
            )
    if not per_step and "action" not in store.schema:
        raise StoreError(f"cannot rerender {str(store.path)!r}: it has neither per-step states nor actions")
    plans = {
        key: plan_cameras(meta.env_id, meta.env_kwargs, cameras, size) for key, meta in _env_groups(metas)
    }
    codec = store.video_codec if video_codec is None else video_codec
    result = RerenderResult(path=out, episodes=0, steps=0)
    with _new_store(out, fps=store.fps, video_codec=codec) as target:
        envs: dict[str, gymnasium.Env] = {}
        try:
            for meta in _progress(metas, progress):
                key = _env_key(meta)
                if key not in envs:
                    envs[key] = _make_checked(plans[key])
                data, info = _rerender_episode(envs[key], store, meta, plans[key], tolerance)
                roles = {k: v["role"] for k, v in store.schema.items()}
                target.add_episode(data, roles=roles, **info)
                result.episodes += 1
                result.steps += meta.length
                result.restored_states += per_step
                for name in plans[key].image_keys:
                    result.image_keys[name] = tuple(data[name].shape[1:])
        finally:
            for env in envs.values():
                env.close()
    return result


# ---------------------------------------------------------------------------------------------- one episode
def _rerender_episode(
    env: gymnasium.Env, store: TrajectoryStore, meta: EpisodeMeta, plan: CameraPlan, tolerance: float
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    episode = store.episode(meta.index)
    schema = store.schema
    compared = [
        k
        for k in store.obs_keys
        if k not in plan.image_keys and np.issubdtype(np.dtype(schema[k]["dtype"]), np.floating)
    ]
    unwrapped = env.unwrapped
    images: dict[str, list[np.ndarray]] = {key: [] for key in plan.image_keys}
    deviation = 0.0
    env.reset(seed=meta.seed)
    states = episode.get("sim_state")
    try:
        if states is not None:
            for t, state in enumerate(states):
                unwrapped.set_state(state)
                deviation = max(deviation, _capture(env, plan, None, images, episode, t, compared))
        else:
            unwrapped.set_state(meta.initial_state)
            _capture(env, plan, None, images, episode, 0, compared)
            actions = episode["action"]
            for t, action in enumerate(actions):
                obs, *_ = env.step(action)
                if t + 1 < len(actions):
                    deviation = max(deviation, _capture(env, plan, obs, images, episode, t + 1, compared))
            final = meta.final_state
            if final is not None and np.isfinite(final).all():
                deviation = max(deviation, float(np.max(np.abs(unwrapped.get_state() - final))))
    except ValueError as error:  # set_state refuses a state of another environment
        raise EmbodiaError(
            f"cannot restore the states of episode {meta.index} of {str(store.path)!r} in {plan.env_id}: {error}"
        ) from None
    if deviation > tolerance:
        how = "restored states give observations" if states is not None else "re-simulation"
        raise ReplayMismatchError(
            f"cannot rerender episode {meta.index} of {str(store.path)!r}: its {how} deviating by {deviation:.3g} "
            f"from the recording (tolerance {tolerance:g}); the simulator or its version differs from the "
            "recording's (check with `embodia replay STORE --verify`); nothing was written"
        )
    data = dict(episode)
    height, width = plan.size
    for key, frames in images.items():
        stacked = np.stack(frames)
        if stacked.shape[1:3] != (height, width):
            raise EmbodiaError(
                f"{plan.env_id} renders {key} at {stacked.shape[1]}x{stacked.shape[2]}, whatever size is asked "
                f"for; rerender it with --size {stacked.shape[1]}x{stacked.shape[2]}"
            )
        data[key] = stacked
    info = {
        "env_id": meta.env_id,
        "env_kwargs": plan.env_kwargs,
        "seed": meta.seed,
        "success": meta.success,
        "initial_state": meta.initial_state,
        "final_state": meta.final_state,
    }
    return data, info


def _capture(
    env: gymnasium.Env,
    plan: CameraPlan,
    obs: Mapping[str, np.ndarray] | None,
    images: dict[str, list[np.ndarray]],
    episode: Mapping[str, np.ndarray],
    row: int,
    compared: Sequence[str],
) -> float:
    """Render the plan's images at the current state; returns how far the observation is from ``row``'s."""
    deviation = 0.0
    if plan.observation_cameras:
        obs = env.unwrapped.observe() if obs is None else obs
        for camera in plan.observation_cameras:
            images[f"{camera}_rgb"].append(np.asarray(obs[f"{camera}_rgb"]))
    if obs is not None:
        for key in compared:
            if key in obs:
                diff = np.asarray(obs[key], dtype=np.float64) - episode[key][row]
                deviation = max(deviation, float(np.max(np.abs(diff), initial=0.0)))
    if plan.render:
        images["render_rgb"].append(np.ascontiguousarray(env.render(), dtype=np.uint8))
    return deviation


# ---------------------------------------------------------------------------------------------- helpers
def _checked_size(size: int | tuple[int, int]) -> tuple[int, int]:
    pair = (size, size) if isinstance(size, int) else tuple(size)
    if len(pair) != 2 or any(isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in pair):
        raise EmbodiaError(f"image size must be N or (height, width) in pixels >= 1, got {size!r}")
    return int(pair[0]), int(pair[1])


def _has_initial_state(meta: EpisodeMeta) -> bool:
    return meta.initial_state is not None and bool(np.isfinite(meta.initial_state).all())


def _env_key(meta: EpisodeMeta) -> str:
    return json.dumps([meta.env_id, meta.env_kwargs], sort_keys=True)


def _env_groups(metas: Sequence[EpisodeMeta]) -> Iterator[tuple[str, EpisodeMeta]]:
    """One (key, first episode) per distinct environment of the store."""
    seen: dict[str, EpisodeMeta] = {}
    for meta in metas:
        seen.setdefault(_env_key(meta), meta)
    return iter(seen.items())


def _make_checked(plan: CameraPlan) -> gymnasium.Env:
    env = plan.make_env()
    if not supports_state(env):
        env.close()
        raise EmbodiaError(
            f"{plan.env_id} cannot restore simulator states (no get_state/set_state): cannot rerender"
        )
    return env


def _progress(metas: list[EpisodeMeta], show: bool) -> Sequence[EpisodeMeta] | Iterator[EpisodeMeta]:
    if not show:
        return metas
    from rich.console import Console
    from rich.progress import track

    # on stderr: stdout is left to what the command prints
    return track(metas, description="rerendering", transient=True, console=Console(stderr=True))


def _check_destination(out: Path) -> None:
    kind = classify_path(out)
    if kind in PATH_PROBLEMS:
        raise StoreError(f"cannot write the new store: {str(out)!r} {PATH_PROBLEMS[kind]}")
    if kind == "store":
        raise StoreError(
            f"{str(out)!r} already holds a trajectory store; rerender writes a new store: choose another path"
        )
    check_destination(out)  # nor inside a store


@contextlib.contextmanager
def _new_store(out: Path, **options: Any) -> Iterator[TrajectoryStore]:
    """A new store (``TrajectoryStore`` options) built in a hidden folder next to ``out`` and renamed to ``out``
    when the block succeeds.

    On any failure (Ctrl-C included) the hidden folder, and the parent folders this created, are removed:
    they hold only what this wrote. ``out`` itself is never written into.
    """
    created = [parent for parent in reversed(out.parents) if not parent.exists()]  # outermost first
    partial: Path | None = None
    store: TrajectoryStore | None = None
    try:
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            partial = out.parent / f".{out.name}.rerender-{secrets.token_hex(4)}"
            partial.mkdir()  # exclusive: the name is this run's alone
        except OSError as error:
            partial = None
            raise StoreError(f"cannot create the new store next to {str(out)!r}: {error.strerror}") from None
        store = TrajectoryStore(partial, mode="a", **options)
        yield store
        store.touch()
        store.close()
        _check_destination(out)  # nothing appeared there meanwhile
        try:
            os.rename(partial, out)  # atomic, onto an empty folder too
        except OSError as error:
            raise StoreError(
                f"cannot move the new store into place at {str(out)!r}: {error.strerror}; nothing was written there"
            ) from None
    except BaseException:
        if store is not None:
            store.close()
        if partial is not None:
            shutil.rmtree(partial, ignore_errors=True)
        for parent in reversed(created):
            try:
                parent.rmdir()  # only if still empty
            except OSError:
                break
        raise
