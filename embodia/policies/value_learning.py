"""Detached value learning: the update that IQL, GCIQL and DEAS share, written once.

A learner here has a critic ``Q`` that scores a sequence of ``C`` actions (``C = 1`` for IQL and GCIQL,
``C = H`` for DEAS), a twin target critic ``Qbar = min_j Qbar_j`` (Polyak-averaged), a value ``V`` and an
actor that outputs ``P`` actions. One gradient step on a batch of windows (:mod:`embodia.data.sampling`):

    value      u = Qbar(s_t, a_{t:t+C}) - V(s_t),   L_V = E[ |tau - 1(u < 0)| * l(V(s_t), Qbar(s_t, a_{t:t+C})) ]
    critic     y = sum_{k<W} gamma1^k r_{t+k} valid_k + gamma2^W (1 - d) V(s_{t+W}),   L_Q = sum_j l(Q_j(s_t, a_{t:t+C}), y)
    actor      DDPG+BC:  -Q(s, pi(s)) / mean|Q| + alpha * ||pi(s) - a_{t:t+P}||^2
               AWR:      -exp(beta * (Qbar(s, a_{t:t+C}) - V(s))) * log pi(a_{t:t+P} | s)   (weights clipped at 100)

with ``W`` the window length, ``d`` = 1 when the episode terminated inside the window, and ``l`` the squared
error, or for categorical heads (DEAS's default) the cross-entropy against the HL-Gauss distribution of
the scalar target (:mod:`embodia.policies.distributional`; every value is then the distribution's mean and
the expectile weights multiply the cross-entropy). "Detached": the critic never sees the actor's actions,
only the dataset's, so its values stay in distribution (IQL's idea, DEAS's over sequences).

The methods differ only in ``C``, ``P``, ``W``, the two discounts, the heads and where batches come from;
each method's module states its equations and sets these.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import torch
import torch.nn.functional as F
from pydantic import Field

from embodia.policies.distributional import Support, cross_entropy, expected_value, hl_gauss
from embodia.policies.learner import NetworkConfig, OfflineLearner
from embodia.policies.networks import Actor, Critic, expectile_weights, mlp, polyak_update


def sequence_target(
    rewards: torch.Tensor,
    valid: torch.Tensor,
    done: torch.Tensor,
    next_value: torch.Tensor,
    gamma1: float,
    gamma2: float,
) -> torch.Tensor:
    """SMDP target ``sum_{k<W} gamma1^k r_{t+k} valid_k + gamma2^W (1 - d) V(s_{t+W})``.

    Args:
        rewards, valid: ``(B, W)``; ``valid`` is 0 for steps after the episode ended inside the window.
        done: ``(B,)``, 1 when the episode terminated inside the window (nothing to bootstrap).
        next_value: ``(B,)``, ``V(s_{t+W})``.
    """
    horizon = rewards.shape[1]
    discounts = gamma1 ** torch.arange(horizon, dtype=rewards.dtype, device=rewards.device)
    return (rewards * valid * discounts).sum(-1) + gamma2**horizon * (1.0 - done) * next_value


@dataclass
class ValueLearningConfig(NetworkConfig):
    """What every detached value learner shares (each method adds its horizons and discounts)."""

    expectile: Annotated[float, Field(gt=0, lt=1)] = 0.7
    """tau in (0, 1) of the expectile regression of V toward Qbar (0.5 = mean)."""
    polyak: Annotated[float, Field(gt=0, le=1)] = 0.005
    """Soft update rate of the target critic, in (0, 1]."""
    extraction: Literal["ddpg_bc", "awr"] = "ddpg_bc"
    """Policy extraction: "ddpg_bc" or "awr"."""
    alpha: Annotated[float, Field(ge=0)] = 1.0
    """DDPG+BC: weight (>= 0) of the behaviour-cloning term."""
    awr_temperature: Annotated[float, Field(ge=0)] = 3.0
    """AWR: inverse temperature beta (>= 0) of the advantage weights."""


@dataclass(frozen=True)
class ValueShape:
    """What distinguishes one detached value learner from another (besides where its batches come from)."""

    critic_horizon: int
    """``C``: actions the critic scores."""
    actor_horizon: int
    """``P``: actions the actor outputs (executed as a chunk when > 1)."""
    gamma1: float
    """Discount inside a window."""
    gamma2: float
    """Discount of the bootstrap ``V(s_{t+W})`` (raised to the window length)."""
    support: Support | None = None
    """Bins of categorical value heads (None: scalar heads)."""


class ValueLearner(OfflineLearner):
    """The shared networks and update (see the module docstring); a method sets :meth:`shape`."""

    def shape(self) -> ValueShape:
        """Horizons, discounts and heads for ``self.config`` (and ``self.reward_range``)."""
        raise NotImplementedError

    def build(self) -> None:
        config, shape = self.config, self.shape()
        self.critic_horizon, self.actor_horizon = shape.critic_horizon, shape.actor_horizon
        self.gamma1, self.gamma2, self.support = shape.gamma1, shape.gamma2, shape.support
        out = shape.support.bins if shape.support is not None else 1
        obs_dim = self.normalizer.dim
        self.critic = Critic(obs_dim, self.action_dim * shape.critic_horizon, config.hidden, out)
        self.target_critic = copy.deepcopy(self.critic).requires_grad_(False)
        self.value = mlp(obs_dim, config.hidden, out)
        self.actor = Actor(obs_dim, self.action_dim, shape.actor_horizon, config.hidden)
        self.critic_opt = torch.optim.Adam(self.critic.parameters(), lr=config.lr)
        self.value_opt = torch.optim.Adam(self.value.parameters(), lr=config.lr)
        self.actor_opt = torch.optim.Adam(self.actor.parameters(), lr=config.lr)

    # ------------------------------------------------------------------ values
    def _scalar(self, head: torch.Tensor) -> torch.Tensor:
        return expected_value(head, self.support) if self.support is not None else head.squeeze(-1)

    def q_values(self, obs: torch.Tensor, actions: torch.Tensor, target: bool = False) -> torch.Tensor:
        """``(ensemble, batch)`` expected Q of action sequences ``(batch, C, action_dim)``."""
        return self._scalar((self.target_critic if target else self.critic)(obs, actions))

    def v_values(self, obs: torch.Tensor) -> torch.Tensor:
        return self._scalar(self.value(obs))

    def _regression(self, head: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """Per-sample loss of a value head toward scalar targets (HL-Gauss CE or squared error)."""
        if self.support is not None:
            return cross_entropy(head, hl_gauss(target, self.support))
        return (head.squeeze(-1) - target) ** 2

    def _actions(self, batch: dict[str, Any], horizon: int) -> torch.Tensor:
        """The dataset's first ``horizon`` actions of each window, ``(B, horizon * action_dim)``."""
        actions = batch["action"].float()
        if actions.ndim == 3:  # (B, W, A) windows
            actions = actions[:, :horizon]
        return actions.reshape(actions.shape[0], -1)

    # ------------------------------------------------------------------ one gradient step
    def update(self, batch: dict[str, Any]) -> dict[str, float]:
        cfg = self.config
        obs = self.normalizer(batch["obs"])
        next_obs = self.normalizer(batch["next_obs"])
        critic_actions = self._actions(batch, self.critic_horizon)
        done = batch["terminal"].float()

        # L_V: expectile-weighted regression of V(s) toward the twin target critic on dataset actions
        with torch.no_grad():
            q_target = self.q_values(obs, critic_actions, target=True).min(0).values
        v_head = self.value(obs)
        v = self._scalar(v_head).detach()
        value_loss = (
            expectile_weights(q_target - v, cfg.expectile) * self._regression(v_head, q_target)
        ).mean()
        self.value_opt.zero_grad(set_to_none=True)
        value_loss.backward()
        self.value_opt.step()

        # L_Q: sum_k gamma1^k r_{t+k} + gamma2^W (1 - d) V(s_{t+W})
        with torch.no_grad():
            y = sequence_target(
                batch["reward"].float(),
                batch["valid"].float(),
                done,
                self.v_values(next_obs),
                self.gamma1,
                self.gamma2,
            )
        critic_loss = sum(self._regression(head, y).mean() for head in self.critic(obs, critic_actions))
        self.critic_opt.zero_grad(set_to_none=True)
        critic_loss.backward()
        self.critic_opt.step()
        polyak_update(self.target_critic, self.critic, cfg.polyak)

        # L_pi: policy extraction (GCIQL's actor sees its own goals: batch["actor_obs"])
        actor_obs = self.normalizer(batch["actor_obs"]) if "actor_obs" in batch else obs
        demonstrated = self._actions(batch, self.actor_horizon)
        if cfg.extraction == "ddpg_bc":
            pi = self.actor(actor_obs)
            q_pi = self._scalar(self.critic(actor_obs, pi)).min(0).values
            bc = F.mse_loss(pi, demonstrated)
            actor_loss = -q_pi.mean() / q_pi.abs().mean().detach().clamp_min(1e-6) + cfg.alpha * bc
        else:
            with torch.no_grad():
                weights = torch.exp(cfg.awr_temperature * (q_target - self.v_values(obs))).clamp(max=100.0)
            bc = F.mse_loss(self.actor(actor_obs), demonstrated)
            actor_loss = -(weights * self.actor.log_prob(actor_obs, demonstrated)).mean()
        self.actor_opt.zero_grad(set_to_none=True)
        actor_loss.backward()
        self.actor_opt.step()
        # the critic received actor gradients only through the graph; clear them before its next step
        self.critic_opt.zero_grad(set_to_none=True)

        return {
            "value_loss": float(value_loss.detach()),
            "critic_loss": float(critic_loss.detach()),
            "actor_loss": float(actor_loss.detach()),
            "bc_mse": float(bc.detach()),
            "q_mean": float(q_target.mean()),
            "v_mean": float(v.mean()),
            "target_mean": float(y.mean()),
        }

    def modules(self) -> dict[str, torch.nn.Module]:
        """Every network, for checkpoints."""
        return {
            "critic": self.critic,
            "target_critic": self.target_critic,
            "value": self.value,
            "actor": self.actor,
        }
