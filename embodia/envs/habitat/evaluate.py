"""Evaluate a policy on a navigation environment with Habitat's metrics (success, SPL, soft-SPL, ...).

:func:`evaluate` runs seeded episodes (episode ``i`` uses seed ``seed + i``, as :func:`embodia.rollout`)
and averages the final ``info`` of each episode; Ctrl-C stops early and returns what finished.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

import gymnasium
import numpy as np

from embodia.envs import make
from embodia.policies.base import Policy, make_policy


@dataclass
class NavEpisodeResult:
    seed: int
    scene_id: str
    success: bool
    spl: float
    soft_spl: float
    distance_to_goal: float
    collisions: int
    steps: int


@dataclass
class NavEvaluation:
    env_id: str
    policy: str
    episodes: list[NavEpisodeResult] = field(default_factory=list)
    steps_per_second: float = 0.0
    interrupted: bool = False

    def mean(self, key: str) -> float:
        return float(np.mean([getattr(e, key) for e in self.episodes])) if self.episodes else float("nan")

    def summary(self) -> dict[str, float]:
        keys = ("success", "spl", "soft_spl", "distance_to_goal", "collisions", "steps")
        return {
            "episodes": len(self.episodes),
            **{k: self.mean(k) for k in keys},
            "steps_per_second": self.steps_per_second,
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "env_id": self.env_id,
            "policy": self.policy,
            "summary": self.summary(),
            "episodes": [asdict(e) for e in self.episodes],
        }


def evaluate(
    env: str | gymnasium.Env,
    policy: str | Policy = "expert",
    episodes: int = 50,
    seed: int = 0,
    progress: bool = False,
    **env_kwargs: Any,
) -> NavEvaluation:
    """Run ``episodes`` seeded episodes of ``policy`` and collect Habitat's metrics per episode."""
    owns = isinstance(env, str)
    env_id = env if isinstance(env, str) else (env.spec.id if env.spec else type(env.unwrapped).__name__)
    if owns:
        env = make(env, **env_kwargs)
    result = NavEvaluation(str(env_id), policy if isinstance(policy, str) else type(policy).__name__)
    progress_bar = None
    try:
        agent = make_policy(policy, env)
        if progress:
            from rich.progress import Progress

            progress_bar = Progress()
            progress_bar.start()
            task = progress_bar.add_task(str(env_id), total=episodes)
        started, steps_total = time.perf_counter(), 0
        for i in range(episodes):
            obs, info = env.reset(seed=seed + i)
            agent.reset(seed=seed + i)
            done, steps = False, 0
            while not done:
                obs, _, terminated, truncated, info = env.step(agent.act(obs))
                done, steps = terminated or truncated, steps + 1
            distance = info["distance_to_goal"]
            result.episodes.append(
                NavEpisodeResult(
                    seed + i,
                    str(env.unwrapped.episode.scene_id),
                    bool(info["success"]),
                    float(info["spl"]),
                    float(info["soft_spl"]),
                    float(np.mean(distance)),
                    int(info["collisions"]),
                    steps,
                )
            )
            steps_total += steps
            if progress_bar is not None:
                progress_bar.update(
                    task, advance=1, description=f"{env_id} success {result.mean('success'):.2f}"
                )
        result.steps_per_second = steps_total / max(time.perf_counter() - started, 1e-9)
    except KeyboardInterrupt:
        result.interrupted = True
    finally:
        if progress_bar is not None:
            progress_bar.stop()
        if owns:
            env.close()
    return result
