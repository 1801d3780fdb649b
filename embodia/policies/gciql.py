"""GCIQL: goal-conditioned IQL with hindsight goal relabelling (OGBench's reference goal-conditioned baseline).

Goals are states of the dataset. For a transition ``(s_t, a_t, s_{t+1})`` the value goal ``g`` is
the current state (prob. ``p_current``), a future state of the same trajectory at offset
``k ~ Geometric(1 - gamma)`` (``p_future``), or a random dataset state (the rest); then

    r = 1(g = s_t) - 1,   d = 1(g = s_t)                           (reach the goal, then stop)
    L_V = E[ |tau - 1(u < 0)| u^2 ],   u = min_j Qbar_j(s_t, a_t, g) - V(s_t, g)
    L_Q = sum_j E[ (Q_j(s_t, a_t, g) - r - gamma (1 - d) V(s_{t+1}, g))^2 ]
    L_pi = -Q(s, pi(s, g'), g') / mean|Q| + alpha ||pi(s, g') - a_t||^2     (DDPG+BC)

with actor goals ``g'`` always future states of the trajectory. Observations are ``[state, goal]``;
at evaluation the environment's ``goal`` observation takes the goal's place.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

import numpy as np
import torch
import torch.nn.functional as F
from pydantic import Field

from embodia.core.validation import validate
from embodia.data.sampling import WindowSampler, to_torch
from embodia.policies.networks import Actor, Critic, ObsNormalizer, expectile_loss, mlp, polyak_update


@dataclass
class GCIQLConfig:
    """Hyperparameters of GCIQL (OGBench's defaults)."""

    gamma: Annotated[float, Field(gt=0, lt=1)] = 0.99
    """Discount factor, in (0, 1) (also sets the geometric offset of future goals, which needs gamma < 1)."""
    expectile: Annotated[float, Field(gt=0, lt=1)] = 0.9
    """tau in (0, 1) of the expectile regression of V."""
    p_current: Annotated[float, Field(ge=0, le=1)] = 0.2
    """Probability that a value goal is the current state."""
    p_future: Annotated[float, Field(ge=0, le=1)] = 0.5
    """Probability that a value goal is a future state of the same trajectory (else a random state);
    p_current + p_future <= 1."""
    polyak: Annotated[float, Field(gt=0, le=1)] = 0.005
    """Soft update rate of the target critic, in (0, 1]."""
    hidden: tuple[Annotated[int, Field(ge=1)], ...] = (256, 256, 256)
    """Hidden layer sizes, each >= 1 (LayerNorm + GELU)."""
    lr: Annotated[float, Field(gt=0)] = 3e-4
    """Adam learning rate (> 0)."""
    alpha: Annotated[float, Field(ge=0)] = 0.3
    """DDPG+BC: weight (>= 0) of the behaviour-cloning term (OGBench: 0.3 for navigation, 1.0 for
    manipulation)."""

    def __post_init__(self) -> None:
        if self.p_current + self.p_future > 1:
            raise ValueError(f"p_current + p_future must be <= 1, got {self.p_current} + {self.p_future}")


class GCIQL:
    """Goal-conditioned IQL; draws its own relabelled batches (``sample``)."""

    name = "gciql"
    needs_reward: ClassVar[bool] = False
    """rewards come from hindsight goals (``r = 1(g = s_t) - 1``), not from the dataset"""
    obs_keys = ("state", "goal")

    def __init__(
        self,
        config: GCIQLConfig,
        normalizer: ObsNormalizer,
        action_dim: int,
        reward_range: tuple[float, float] = (-1.0, 0.0),
        seed: int = 0,
    ) -> None:
        config = validate(GCIQLConfig, config, where="gciql config")  # a config built in Python, too
        torch.manual_seed(seed)
        self.config = config
        self.window = 1
        self.action_dim = action_dim
        self.normalizer = normalizer
        self.rng = np.random.default_rng(seed)
        obs_dim = normalizer.dim
        self.critic = Critic(obs_dim, action_dim, config.hidden, 1)
        self.target_critic = copy.deepcopy(self.critic).requires_grad_(False)
        self.value = mlp(obs_dim, config.hidden, 1)
        self.actor = Actor(obs_dim, action_dim, 1, config.hidden)
        self.critic_opt = torch.optim.Adam(self.critic.parameters(), lr=config.lr)
        self.value_opt = torch.optim.Adam(self.value.parameters(), lr=config.lr)
        self.actor_opt = torch.optim.Adam(self.actor.parameters(), lr=config.lr)

    @staticmethod
    def fit_normalizer(sampler: WindowSampler) -> ObsNormalizer:
        """Goals are states: the goal half is standardized like the state half."""
        states = sampler.arrays["state"]
        return ObsNormalizer.fit(["state", "goal"], {"state": states, "goal": states})

    # ------------------------------------------------------------------ hindsight relabelling
    def _future(self, index: np.ndarray, last: np.ndarray) -> np.ndarray:
        offset = self.rng.geometric(1.0 - self.config.gamma, size=len(index))
        return np.minimum(index + offset, last)

    def sample(self, sampler: WindowSampler, batch_size: int) -> dict[str, Any]:
        cfg, rng = self.config, self.rng
        # transitions whose next state is in the same episode
        last = sampler._episode_last
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
        actor_goal = self._future(index, episode_last)
        states, actions = sampler.arrays["state"], sampler.arrays["action"]
        batch = {
            "obs": {"state": states[index], "goal": states[goal]},
            "next_obs": {"state": states[index + 1], "goal": states[goal]},
            "actor_obs": {"state": states[index], "goal": states[actor_goal]},
            "action": actions[index],
            "reward": success.astype(np.float32) - 1.0,
            "terminal": success,
        }
        return to_torch(batch)

    # ------------------------------------------------------------------ one gradient step
    def update(self, batch: dict[str, Any]) -> dict[str, float]:
        cfg = self.config
        obs, next_obs = self.normalizer(batch["obs"]), self.normalizer(batch["next_obs"])
        action, done = batch["action"].float(), batch["terminal"].float()

        with torch.no_grad():
            q_target = self.target_critic(obs, action).squeeze(-1).min(0).values
        v = self.value(obs).squeeze(-1)
        u = q_target - v
        value_loss = expectile_loss(u, cfg.expectile).mean()
        self.value_opt.zero_grad(set_to_none=True)
        value_loss.backward()
        self.value_opt.step()

        with torch.no_grad():
            y = batch["reward"].float() + cfg.gamma * (1.0 - done) * self.value(next_obs).squeeze(-1)
        critic_loss = ((self.critic(obs, action).squeeze(-1) - y) ** 2).mean(1).sum()
        self.critic_opt.zero_grad(set_to_none=True)
        critic_loss.backward()
        self.critic_opt.step()
        polyak_update(self.target_critic, self.critic, cfg.polyak)

        actor_obs = self.normalizer(batch["actor_obs"])
        pi = self.actor(actor_obs)
        q_pi = self.critic(actor_obs, pi).squeeze(-1).min(0).values
        bc = F.mse_loss(pi, action)
        actor_loss = -q_pi.mean() / q_pi.abs().mean().detach().clamp_min(1e-6) + cfg.alpha * bc
        self.actor_opt.zero_grad(set_to_none=True)
        actor_loss.backward()
        self.actor_opt.step()
        self.critic_opt.zero_grad(set_to_none=True)
        return {
            "value_loss": float(value_loss.detach()),
            "critic_loss": float(critic_loss.detach()),
            "actor_loss": float(actor_loss.detach()),
            "bc_mse": float(bc.detach()),
            "q_mean": float(q_target.mean()),
            "v_mean": float(v.detach().mean()),
        }

    def modules(self) -> dict[str, torch.nn.Module]:
        return {
            "critic": self.critic,
            "target_critic": self.target_critic,
            "value": self.value,
            "actor": self.actor,
        }
