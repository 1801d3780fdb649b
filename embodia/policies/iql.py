"""IQL: Implicit Q-Learning (Kostrikov, Nair, Levine 2022), with an optional n-step target.

Scalar critics over single actions, the same networks as DEAS (``networks.py``):

    L_V = E[ |tau - 1(u < 0)| u^2 ],                 u = min_j Qbar_j(s_t, a_t) - V(s_t)
    L_Q = sum_j E[ (Q_j(s_t, a_t) - y)^2 ],          y = sum_{k<n} gamma^k r_{t+k} + gamma^n (1 - d) V(s_{t+n})
    L_pi (DDPG+BC) = -Q(s, pi(s)) / mean|Q| + alpha ||pi(s) - a_t||^2
    L_pi (AWR)     = -exp(beta (Qbar(s,a) - V(s))) log pi(a | s)

``n_step = 1`` is IQL; ``n_step > 1`` is the n-step variant DEAS compares with (the action is still
one step: the n rewards come from the dataset's behaviour, not from the evaluated action).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal

import torch
import torch.nn.functional as F
from pydantic import Field

from embodia.core.validation import validate
from embodia.policies.networks import Actor, Critic, ObsNormalizer, expectile_loss, mlp, polyak_update


@dataclass
class IQLConfig:
    """Hyperparameters of IQL (OGBench reference values where they exist)."""

    n_step: Annotated[int, Field(ge=1)] = 1
    """Rewards summed before bootstrapping (>= 1; 1 = IQL)."""
    gamma: Annotated[float, Field(gt=0, le=1)] = 0.99
    """Discount factor, in (0, 1]."""
    expectile: Annotated[float, Field(gt=0, lt=1)] = 0.7
    """tau in (0, 1) of the expectile regression of V."""
    polyak: Annotated[float, Field(gt=0, le=1)] = 0.005
    """Soft update rate of the target critic, in (0, 1]."""
    hidden: tuple[Annotated[int, Field(ge=1)], ...] = (256, 256, 256)
    """Hidden layer sizes (each >= 1) of every network (LayerNorm + GELU)."""
    lr: Annotated[float, Field(gt=0)] = 3e-4
    """Adam learning rate (> 0) of all networks."""
    extraction: Literal["ddpg_bc", "awr"] = "ddpg_bc"
    """Policy extraction: "ddpg_bc" or "awr"."""
    alpha: Annotated[float, Field(ge=0)] = 1.0
    """DDPG+BC: weight (>= 0) of the behaviour-cloning term."""
    awr_temperature: Annotated[float, Field(ge=0)] = 3.0
    """AWR: inverse temperature (>= 0) of the advantage weights."""


class IQL:
    """IQL learner over windows of ``n_step`` steps."""

    name = "iql"
    needs_reward: ClassVar[bool] = True
    """learns from the dataset's rewards (``embodia train`` refuses a store without a ``reward`` key)"""

    def __init__(
        self,
        config: IQLConfig,
        normalizer: ObsNormalizer,
        action_dim: int,
        reward_range: tuple[float, float] = (0.0, 1.0),
        seed: int = 0,
    ) -> None:
        config = validate(IQLConfig, config, where="iql config")  # a config built in Python, too
        torch.manual_seed(seed)
        self.config = config
        self.window = config.n_step
        self.action_dim = action_dim
        self.normalizer = normalizer
        obs_dim = normalizer.dim
        self.critic = Critic(obs_dim, action_dim, config.hidden, 1)
        self.target_critic = copy.deepcopy(self.critic).requires_grad_(False)
        self.value = mlp(obs_dim, config.hidden, 1)
        self.actor = Actor(obs_dim, action_dim, 1, config.hidden)
        self.critic_opt = torch.optim.Adam(self.critic.parameters(), lr=config.lr)
        self.value_opt = torch.optim.Adam(self.value.parameters(), lr=config.lr)
        self.actor_opt = torch.optim.Adam(self.actor.parameters(), lr=config.lr)
        self.discounts = config.gamma ** torch.arange(config.n_step, dtype=torch.float32)

    def update(self, batch: dict[str, Any]) -> dict[str, float]:
        cfg = self.config
        obs = self.normalizer(batch["obs"])
        next_obs = self.normalizer(batch["next_obs"])
        action = batch["action"][:, 0].float()  # the first action of the window
        valid = batch["valid"].float()
        done = batch["terminal"].float()
        steps = batch["steps"].float()

        with torch.no_grad():
            q_target = self.target_critic(obs, action).squeeze(-1).min(0).values
        v = self.value(obs).squeeze(-1)
        u = q_target - v
        value_loss = expectile_loss(u, cfg.expectile).mean()
        self.value_opt.zero_grad(set_to_none=True)
        value_loss.backward()
        self.value_opt.step()

        with torch.no_grad():
            rewards = (batch["reward"].float() * valid * self.discounts).sum(-1)
            y = rewards + cfg.gamma**steps * (1.0 - done) * self.value(next_obs).squeeze(-1)
        q = self.critic(obs, action).squeeze(-1)
        critic_loss = ((q - y) ** 2).mean(1).sum()
        self.critic_opt.zero_grad(set_to_none=True)
        critic_loss.backward()
        self.critic_opt.step()
        polyak_update(self.target_critic, self.critic, cfg.polyak)

        if cfg.extraction == "ddpg_bc":
            pi = self.actor(obs)
            q_pi = self.critic(obs, pi).squeeze(-1).min(0).values
            bc = F.mse_loss(pi, action)
            actor_loss = -q_pi.mean() / q_pi.abs().mean().detach().clamp_min(1e-6) + cfg.alpha * bc
        else:
            with torch.no_grad():
                weights = torch.exp(cfg.awr_temperature * (q_target - self.value(obs).squeeze(-1))).clamp(
                    max=100.0
                )
            bc = F.mse_loss(self.actor(obs), action)
            actor_loss = -(weights * self.actor.log_prob(obs, action)).mean()
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
            "target_mean": float(y.mean()),
        }

    def modules(self) -> dict[str, torch.nn.Module]:
        return {
            "critic": self.critic,
            "target_critic": self.target_critic,
            "value": self.value,
            "actor": self.actor,
        }
