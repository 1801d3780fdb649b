"""GCIQL: goal-conditioned IQL with hindsight goal relabelling, OGBench's reference goal-conditioned baseline
(OGBench: Benchmarking Offline Goal-Conditioned RL, Park et al., ICLR 2025, arXiv:2410.20092).

Goals are states of the dataset. For a transition ``(s_t, a_t, s_{t+1})`` the value goal ``g`` is the current
state (prob. ``p_current``), a future state of the same trajectory at offset ``k ~ Geometric(1 - gamma)``
(``p_future``), or a random dataset state (the rest); then

    r = 1(g = s_t) - 1,   d = 1(g = s_t)                           (reach the goal, then stop)
    L_V = E[ |tau - 1(u < 0)| u^2 ],   u = min_j Qbar_j(s_t, a_t, g) - V(s_t, g)
    L_Q = sum_j E[ (Q_j(s_t, a_t, g) - r - gamma (1 - d) V(s_{t+1}, g))^2 ]
    L_pi = -Q(s, pi(s, g'), g') / mean|Q| + alpha * 0.5 * sum_i (pi(s, g')_i - a_{t,i})^2     (DDPG+BC)

with actor goals ``g'`` always future states of the trajectory, drawn uniformly between the next state and
the episode's last (OGBench's ``actor_geom_sample=False``); the BC term is OGBench's ``-alpha log pi(a_t |
s, g')`` for a unit-variance Gaussian actor, i.e. half the summed squared error (``bc_term="half_sum"``). Observations are ``[state, goal]``; at
evaluation the environment's ``goal`` observation takes the goal's place. The update is
:class:`~embodia.policies.value_learning.ValueLearner`'s (one action, ``gamma1 = gamma2 = gamma``); what is
GCIQL's own is the relabelled batch (:meth:`GCIQL.sample`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from embodia.data.sampling import WindowSampler, to_torch
from embodia.policies.networks import ObsNormalizer
from embodia.policies.value_learning import ValueLearner, ValueLearningConfig, ValueShape


@dataclass
class GCIQLConfig(ValueLearningConfig):
    """Hyperparameters of GCIQL: OGBench's objective (expectile 0.9, gamma 0.99, goal mixture, DDPG+BC as
    OGBench writes it). Not OGBench's: the networks (embodia's shared 3x256 MLPs; OGBench: 3x512) and the
    batch (``embodia train --batch-size``, 256 by default; OGBench: 1024)."""

    gamma: Annotated[float, Field(gt=0, lt=1)] = 0.99
    """Discount factor, in (0, 1) (also sets the geometric offset of future goals, which needs gamma < 1)."""
    expectile: Annotated[float, Field(gt=0, lt=1)] = 0.9
    """tau in (0, 1) of the expectile regression of V."""
    p_current: Annotated[float, Field(ge=0, le=1)] = 0.2
    """Probability that a value goal is the current state."""
    p_future: Annotated[float, Field(ge=0, le=1)] = 0.5
    """Probability that a value goal is a future state of the same trajectory (else a random state);
    p_current + p_future <= 1."""
    alpha: Annotated[float, Field(ge=0)] = 0.3
    """DDPG+BC: weight (>= 0) of the behaviour-cloning term (OGBench: 0.3 for antmaze / pointmaze navigation,
    embodia's GCIQL datasets; 1.0 for cube, scene and puzzle)."""
    bc_term: Literal["mean", "half_sum"] = "half_sum"
    """DDPG+BC's BC term: OGBench's half the summed squared error over action dimensions."""
    extraction: Literal["ddpg_bc"] = "ddpg_bc"
    """Policy extraction: DDPG+BC (the actor's goals differ from the value's, so AWR weights do not apply)."""

    def __post_init__(self) -> None:
        if self.p_current + self.p_future > 1:
            raise ValueError(f"p_current + p_future must be <= 1, got {self.p_current} + {self.p_future}")


class GCIQL(ValueLearner):
    """Goal-conditioned IQL; draws its own relabelled batches (:meth:`sample`)."""

    name: ClassVar[str] = "gciql"
    config_class: ClassVar[type] = GCIQLConfig
    needs_reward: ClassVar[bool] = False
    """rewards come from hindsight goals (``r = 1(g = s_t) - 1``), not from the dataset"""
    obs_keys: ClassVar[tuple[str, ...]] = ("state", "goal")

    def shape(self) -> ValueShape:
        return ValueShape(1, 1, self.config.gamma, self.config.gamma)

    @property
    def rng(self) -> np.random.Generator:
        """The generator of goal relabelling (seeded with the learner)."""
        if not hasattr(self, "_rng"):
            self._rng = np.random.default_rng(self.seed)
        return self._rng

    @classmethod
    def fit_normalizer(cls, sampler: WindowSampler) -> ObsNormalizer:
        """Goals are states: the goal half is standardized like the state half."""
        states = sampler.arrays["state"]
        return ObsNormalizer.fit(["state", "goal"], {"state": states, "goal": states})

    # ------------------------------------------------------------------ hindsight relabelling
    def _future(self, index: np.ndarray, last: np.ndarray) -> np.ndarray:
        """Value goals: a future state at a geometric offset (OGBench's ``value_geom_sample=True``)."""
        offset = self.rng.geometric(1.0 - self.config.gamma, size=len(index))
        return np.minimum(index + offset, last)

    def _uniform_future(self, index: np.ndarray, last: np.ndarray) -> np.ndarray:
        """Actor goals: uniform between the next state and the episode's last (``actor_geom_sample=False``)."""
        first = np.minimum(index + 1, last)
        return np.round(first + self.rng.uniform(size=len(index)) * (last - first)).astype(index.dtype)

    def sample(self, sampler: WindowSampler, batch_size: int) -> dict[str, Any]:
        cfg, rng = self.config, self.rng
        # transitions whose next state is in the same episode
        last = sampler.episode_last
        candidates = np.flatnonzero(np.arange(len(last)) < last)
        index = candidates[rng.integers(0, len(candidates), size=batch_size)]
        episode_last = last[index]
        draw = rng.uniform(size=batch_size)
        goal = np.where(
            draw < cfg.p_current,
            index,
            np.where(
                draw < cfg.p_current + cfg.p_future,
                self._future(index, episode_last),
                rng.integers(0, len(last), batch_size),
            ),
        )
        success = goal == index
        actor_goal = self._uniform_future(index, episode_last)
        states, actions = sampler.arrays["state"], sampler.arrays["action"]
        batch = {
            "obs": {"state": states[index], "goal": states[goal]},
            "next_obs": {"state": states[index + 1], "goal": states[goal]},
            "actor_obs": {"state": states[index], "goal": states[actor_goal]},
            "action": actions[index],
            "reward": (success.astype(np.float32) - 1.0)[:, None],  # windows of one step
            "valid": np.ones((batch_size, 1), dtype=np.float32),
            "terminal": success,
        }
        return to_torch(batch)
