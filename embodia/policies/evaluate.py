"""Evaluate a policy in simulation and report its success rate with a Wilson score interval.

For ``k`` successes in ``n`` episodes, ``p = k/n`` and ``z`` the normal quantile (1.96 for 95 %):

    centre = (p + z^2/(2n)) / (1 + z^2/n),   half = z sqrt(p(1-p)/n + z^2/(4n^2)) / (1 + z^2/n)

The interval is ``[centre - half, centre + half]``; unlike the normal approximation it stays inside
[0, 1] and is informative at 0 % and 100 %.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from embodia.errors import PolicyError
from embodia.policies.base import Policy, load_policy
from embodia.runner import rollout


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
    """Success over all episodes of all seeds, with its 95 % Wilson interval."""

    env_id: str
    episodes: int
    successes: int
    success_rate: float
    interval: tuple[float, float]
    mean_return: float
    per_seed: dict[int, float] = field(default_factory=dict)


def resolve_policy(path: str | Path) -> tuple[Policy, dict[str, Any]]:
    """A policy folder, or a run directory (its ``policy/`` folder); returns the policy and its metadata."""
    path = Path(path)
    if (path / "policy" / "config.json").is_file():
        path = path / "policy"
    policy = load_policy(path)
    return policy, dict(getattr(policy, "meta", {}))


def evaluate_policy(
    policy: str | Path | Policy,
    env_id: str | None = None,
    *,
    episodes: int = 20,
    seeds: list[int] | tuple[int, ...] = (0,),
    env_kwargs: dict[str, Any] | None = None,
    record: str | Path | None = None,
    video: str | Path | None = None,
    execute_steps: int | None = None,
    progress: bool = False,
) -> EvalResult:
    """Run ``episodes`` episodes for each seed in ``seeds`` (episode seeds ``seed * 10_000 + i``).

    ``env_id`` defaults to the environment the policy was trained for (recorded in its folder).
    ``execute_steps`` overrides how many actions of each predicted chunk run before the policy is
    queried again (1 = receding horizon; sets ``policy.execute_steps``; default: the policy's own setting,
    usually the whole chunk).
    """
    meta: dict[str, Any] = {}
    if isinstance(policy, (str, Path)):
        policy, meta = resolve_policy(policy)
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
    total = successes = 0
    returns = 0.0
    per_seed: dict[int, float] = {}
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
            seed=seed * 10_000,
            record=record,
            video=video_path,
            env_kwargs=kwargs,
            progress=progress,
        )
        k = sum(e.success for e in result.episodes)
        per_seed[seed] = k / max(len(result.episodes), 1)
        successes += k
        total += len(result.episodes)
        returns += sum(e.return_ for e in result.episodes)
        if result.interrupted:
            break
    return EvalResult(
        env_id=env_id,
        episodes=total,
        successes=successes,
        success_rate=successes / max(total, 1),
        interval=wilson_interval(successes, total),
        mean_return=returns / max(total, 1),
        per_seed=per_seed,
    )
