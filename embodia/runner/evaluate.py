"""Evaluate a policy in simulation: success with a Wilson score interval, and the means of metric hooks.

One loop for every evaluation (``embodia eval``, ``embodia nav eval``, training's periodic evaluation, the
offline-RL comparison): seeded :func:`embodia.runner.rollout` blocks, one per evaluation seed, with metric
hooks (:mod:`embodia.runner.hooks`) for what a task measures beyond success, return and length (Habitat's
SPL, soft-SPL, distance to goal and collisions: ``metrics=NAV_METRICS``).

For ``k`` successes in ``n`` episodes, ``p = k/n`` and ``z`` the normal quantile (1.96 for 95 %):

    centre = (p + z^2/(2n)) / (1 + z^2/n),   half = z sqrt(p(1-p)/n + z^2/(4n^2)) / (1 + z^2/n)

The interval is ``[centre - half, centre + half]``; unlike the normal approximation it stays inside
[0, 1] and is informative at 0 % and 100 %.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from embodia.core.errors import PolicyError
from embodia.core.policy import Policy, load_policy
from embodia.runner.episodes import rollout
from embodia.runner.hooks import EpisodeStats, FinalInfo


def wilson_interval(successes: int, trials: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion (``(0, 1)`` when there are no trials)."""
    if trials <= 0:
        return 0.0, 1.0
    p = successes / trials
    denom = 1.0 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denom
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass
class EvalResult:
    """Success over all episodes of all seeds, with its 95 % Wilson interval, and the metric means."""

    env_id: str
    episodes: int
    successes: int
    success_rate: float
    interval: tuple[float, float]
    mean_return: float
    mean_length: float = 0.0
    per_seed: dict[int, float] = field(default_factory=dict)
    """Success rate per evaluation seed."""
    metrics: dict[str, float] = field(default_factory=dict)
    """Mean of each metric hook over the episodes where it is defined (e.g. ``spl``; habitat-lab's SPL is
    NaN for an episode that starts at its goal and does not move); NaN when it is defined for none."""
    metrics_undefined: dict[str, int] = field(default_factory=dict)
    """Per metric, the episodes for which it was NaN (left out of :attr:`metrics`)."""
    steps_per_second: float = 0.0
    interrupted: bool = False
    workers: dict[str, dict[str, float]] = field(default_factory=dict)
    """Parallel evaluations: per worker, the episodes and steps it ran and its seconds."""
    episode_stats: list[EpisodeStats] = field(default_factory=list, repr=False)
    """Every episode's statistics, in order."""

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k != "episode_stats"}
        out["episode_stats"] = [e.__dict__ for e in self.episode_stats]
        return out


def resolve_policy(path: str | Path, runtime: str = "auto") -> tuple[Policy, dict[str, Any]]:
    """A policy folder, or a run directory (its ``policy/`` folder); returns the policy and its metadata.

    ``runtime``: how its network runs (``"auto"``, ``"torch"``, ``"onnx"``; see :func:`load_policy`).
    """
    path = Path(path)
    if (path / "policy" / "config.json").is_file():
        path = path / "policy"
    policy = load_policy(path, runtime=runtime)
    return policy, dict(getattr(policy, "meta", {}))


def evaluate_policy(
    policy: str | Path | Policy,
    env_id: str | None = None,
    *,
    episodes: int = 20,
    seeds: Sequence[int] = (0,),
    seed_stride: int = 10_000,
    env_kwargs: dict[str, Any] | None = None,
    metrics: Sequence[str] = (),
    record: str | Path | None = None,
    video: str | Path | None = None,
    execute_steps: int | None = None,
    workers: int = 1,
    ray_address: str | None = None,
    num_envs: int = 1,
    vector_mode: str = "sync",
    progress: bool = False,
    runtime: str = "auto",
) -> EvalResult:
    """Run ``episodes`` episodes for each seed ``s`` in ``seeds`` (episode seeds ``s * seed_stride + i``).

    Args:
        policy: a policy folder or run directory, ``"expert"`` / ``"random"``, or a policy object.
        env_id: default: the environment the policy was trained for (recorded in its folder).
        metrics: ``info`` keys averaged per episode from its last step (Habitat: :data:`NAV_METRICS`).
        workers: run the episodes on this many local Ray workers (see :func:`embodia.runner.rollout`).
        ray_address: run them on the Ray cluster at this address instead.
        num_envs: step this many environments together, one batched policy call per step
            (see :func:`embodia.runner.rollout`).
        vector_mode: ``"sync"`` or ``"async"`` (see :func:`embodia.runner.rollout`).
        execute_steps: how many actions of each predicted chunk run before the policy is queried again
            (1 = receding horizon; sets ``policy.execute_steps``; default: the policy's own setting).
        runtime: how a policy folder's network runs: ``"torch"``, ``"onnx"`` (its exported model.onnx
            through ONNX Runtime) or ``"auto"`` (see :func:`embodia.core.policy.load_policy`).
    """
    meta: dict[str, Any] = {}
    if isinstance(policy, Path) or (isinstance(policy, str) and policy not in ("expert", "random")):
        policy, meta = resolve_policy(policy, runtime)
    if execute_steps is not None:
        chunk = int(getattr(policy, "chunk_size", 1))
        if chunk <= 1:
            raise PolicyError(
                "execute_steps applies to policies that output action chunks; this policy outputs one action "
                "per step — drop --execute-steps"
            )
        if not 1 <= execute_steps <= chunk:
            raise PolicyError(
                f"execute_steps must be between 1 and the policy's chunk size {chunk}, got {execute_steps}"
            )
        policy.execute_steps = int(execute_steps)
    env_id = env_id or meta.get("env_id")
    if not env_id:
        raise PolicyError("no environment given and the policy folder does not name one; pass --env ENV_ID")
    kwargs = dict(meta.get("env_kwargs") or {}) if env_kwargs is None else dict(env_kwargs)
    stats: list[EpisodeStats] = []
    per_seed: dict[int, float] = {}
    interrupted, seconds_per_step = False, []
    per_worker: dict[str, dict[str, float]] = {}
    for seed in seeds:
        video_path = None
        if video is not None:
            video_path = (
                Path(video) if len(seeds) == 1 else Path(video).with_stem(f"{Path(video).stem}_seed{seed}")
            )
        result = rollout(
            env_id,
            policy,
            episodes=episodes,
            seed=seed * seed_stride,
            record=record,
            video=video_path,
            env_kwargs=kwargs,
            hooks=[FinalInfo(metrics)] if metrics else (),
            workers=workers,
            ray_address=ray_address,
            num_envs=num_envs,
            vector_mode=vector_mode,
            progress=progress,
        )
        stats += result.episodes
        per_seed[seed] = result.success_rate
        for name, row in result.workers.items():
            total = per_worker.setdefault(name, dict.fromkeys(row, 0))
            for key, value in row.items():
                total[key] += value
        seconds_per_step.append(1.0 / max(result.steps_per_second, 1e-9))
        if result.interrupted:
            interrupted = True
            break
    n = len(stats)
    successes = sum(e.success for e in stats)
    return EvalResult(
        env_id=result.env_id,
        episodes=n,
        successes=successes,
        success_rate=successes / max(n, 1),
        interval=wilson_interval(successes, n),
        mean_return=sum(e.return_ for e in stats) / max(n, 1),
        mean_length=sum(e.length for e in stats) / max(n, 1),
        per_seed=per_seed,
        metrics={k: _defined_mean([e.metrics[k] for e in stats]) for k in metrics},
        metrics_undefined={k: sum(math.isnan(e.metrics[k]) for e in stats) for k in metrics},
        steps_per_second=len(seconds_per_step) / max(sum(seconds_per_step), 1e-9),
        interrupted=interrupted,
        workers=per_worker,
        episode_stats=stats,
    )


def _defined_mean(values: list[float]) -> float:
    """The mean of the values that are not NaN (NaN when none is)."""
    defined = [float(v) for v in values if not math.isnan(v)]
    return sum(defined) / len(defined) if defined else math.nan
