"""Detached value learning: the update that IQL, GCIQL and DEAS share, written once.

A learner here has a critic ``Q`` that scores a sequence of ``C`` actions (``C = 1`` for IQL and GCIQL,
``C = H`` for DEAS), a twin target critic ``Qbar = min_j Qbar_j`` (Polyak-averaged), a value ``V`` and an
actor that outputs ``P`` actions. One gradient step on a batch of windows (:mod:`embodia.data.sampling`):

    value      u = Qbar(s_t, a_{t:t+C}) - V(s_t),   L_V = E[ |tau - 1(u < 0)| * l(V(s_t), Qbar(s_t, a_{t:t+C})) ]
    critic     y = sum_{k<W} gamma1^k r_{t+k} valid_k + gamma2^W (1 - d) V(s_{t+W}),   L_Q = sum_j l(Q_j(s_t, a_{t:t+C}), y)
    actor      DDPG+BC:  -Q(s, pi(s)) / mean|Q| + alpha * ||pi(s) - a_{t:t+P}||^2
               AWR:      -exp(beta * (Qbar(s, a_{t:t+C}) - V(s))) * log pi(a_{t:t+P} | s)   (weights clipped at 100)
               FQL:      L_flow + alpha * E_z||mu(s, z) - flow(s, z)||^2 - E_z[mean_j Q_j(s, mu(s, z))]
                         (:func:`embodia.policies.flow.fql_actor_loss`; the policy is the one-step mu)
               best-of-N: L_flow only; acting draws N flow samples and executes argmax_i min_j Q_j(s, x^(i))
                         (:mod:`embodia.policies.best_of_n`; the policy folder holds the flow and the critic)

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
from typing import Annotated, Any, ClassVar, Literal

import torch
import torch.nn.functional as F
from pydantic import Field

from embodia.policies.best_of_n import BestOfNPolicy
from embodia.policies.distributional import Support, cross_entropy, expected_value, hl_gauss
from embodia.policies.flow import FlowPolicy, flow_matching_loss, fql_actor_loss
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
        rewards: ``(B, W)``.
        valid: ``(B, W)``, 0 for steps after the episode ended inside the window.
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
    extraction: Literal["ddpg_bc", "awr", "fql", "best_of_n"] = "ddpg_bc"
    """Policy extraction: "ddpg_bc", "awr", "fql" (a flow BC policy and a one-step policy distilled from it
    while maximising Q, :mod:`embodia.policies.fql`), or "best_of_n" (a flow BC policy; acting executes the
    best of ``candidates`` samples by the critic, :mod:`embodia.policies.best_of_n`)."""
    alpha: Annotated[float, Field(ge=0)] = 1.0
    """Weight (>= 0) of the behaviour term: DDPG+BC's BC term; FQL's distillation term (FQL uses 300 on cube
    and scene, 1000 on puzzle: see :mod:`embodia.policies.paper_settings`)."""
    flow_steps: Annotated[int, Field(ge=1)] = 10
    """FQL and best-of-N extraction: Euler steps (>= 1) of the flow BC policy (FQL: 10)."""
    candidates: Annotated[int, Field(ge=1)] = 32
    """Best-of-N extraction: N (>= 1), flow samples the critic chooses among at each decision (1: flow BC)."""
    normalize_q_loss: bool = False
    """FQL extraction: divide the Q term by mean |Q| (FQL's option; makes alpha independent of the value scale)."""
    bc_term: Literal["mean", "half_sum"] = "mean"
    """DDPG+BC's BC term: the squared error averaged over action values ("mean"), or OGBench's half of its sum
    over action dimensions ("half_sum", ``-log pi`` of a unit-variance Gaussian up to a constant)."""
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
    value_target_distribution: bool = False
    """Categorical heads: V's target is the target critic's own distribution (of the ensemble member with the
    lower mean), as in the DEAS authors' code, instead of the HL-Gauss projection of the lower mean."""


class ValueLearner(OfflineLearner):
    """The shared networks and update (see the module docstring); a method sets :meth:`shape`."""

    actor_gradients_only: ClassVar[bool] = True
    """The actor step computes gradients for the actor only (False: the full backward pass it replaced,
    kept as the baseline of ``benchmarks/bench_deas_throughput.py``; the parameters end the same)."""

    def shape(self) -> ValueShape:
        """Horizons, discounts and heads for ``self.config`` (and ``self.reward_range``)."""
        raise NotImplementedError

    def build(self) -> None:
        config, shape = self.config, self.shape()
        self.critic_horizon, self.actor_horizon = shape.critic_horizon, shape.actor_horizon
        self.gamma1, self.gamma2, self.support = shape.gamma1, shape.gamma2, shape.support
        self.value_target_distribution = shape.value_target_distribution and shape.support is not None
        out = shape.support.bins if shape.support is not None else 1
        obs_dim = self.normalizer.dim
        self.critic = Critic(obs_dim, self.action_dim * shape.critic_horizon, config.hidden, out)
        self.target_critic = copy.deepcopy(self.critic).requires_grad_(False)
        self.value = mlp(obs_dim, config.hidden, out)
        self.critic_opt = self.adam(self.critic.parameters())
        self.value_opt = self.adam(self.value.parameters())
        if config.extraction == "fql":
            horizon, hidden = shape.actor_horizon, config.hidden
            self.flow = FlowPolicy(obs_dim, self.action_dim, horizon, hidden, config.flow_steps)
            self.actor = FlowPolicy(obs_dim, self.action_dim, horizon, hidden, flow_steps=0)
            self.actor_opt = self.adam([*self.flow.parameters(), *self.actor.parameters()])
        elif config.extraction == "best_of_n":
            self.flow = FlowPolicy(
                obs_dim, self.action_dim, shape.actor_horizon, config.hidden, config.flow_steps
            )
            centers = shape.support.centers() if shape.support is not None else None
            self.actor = BestOfNPolicy(self.flow, self.critic, config.candidates, centers)
            self.actor_opt = self.adam(self.flow.parameters())
        else:
            self.actor = Actor(obs_dim, self.action_dim, shape.actor_horizon, config.hidden)
            self.actor_opt = self.adam(self.actor.parameters())

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
            target_heads = self.target_critic(obs, critic_actions)  # (ensemble, B, bins or 1)
            target_means = self._scalar(target_heads)
            q_target, lower = target_means.min(0)
            if self.value_target_distribution:  # the lower member's own categorical distribution
                chosen = target_heads.gather(0, lower[None, :, None].expand(1, *target_heads.shape[1:]))[0]
                target_probs = torch.softmax(chosen, dim=-1)
        v_head = self.value(obs)
        v = self._scalar(v_head).detach()
        if self.value_target_distribution:
            regression = cross_entropy(v_head, target_probs)
        else:
            regression = self._regression(v_head, q_target)
        value_loss = (expectile_weights(q_target - v, cfg.expectile) * regression).mean()
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
        # the flow policies' mask: steps of the demonstrated sequence after the episode ended are left out
        flow_extraction = cfg.extraction in ("fql", "best_of_n")
        mask = (
            batch["valid"].float()[:, : self.actor_horizon].repeat_interleave(self.action_dim, dim=1)
            if flow_extraction
            else None
        )
        if cfg.extraction == "ddpg_bc":
            pi = self.actor(actor_obs)
            q_pi = self._scalar(self.critic(actor_obs, pi)).min(0).values
            bc = F.mse_loss(pi, demonstrated)
            bc_term = bc if cfg.bc_term == "mean" else 0.5 * ((pi - demonstrated) ** 2).sum(-1).mean()
            actor_loss = -q_pi.mean() / q_pi.abs().mean().detach().clamp_min(1e-6) + cfg.alpha * bc_term
        elif cfg.extraction == "fql":
            actor_loss, fql_metrics = fql_actor_loss(
                self.flow,
                self.actor,
                actor_obs,
                demonstrated,
                mask,
                lambda o, a: self._scalar(self.critic(o, a)).mean(0),
                alpha=cfg.alpha,
                normalize_q=cfg.normalize_q_loss,
            )
            bc = torch.tensor(fql_metrics["bc_mse"])
        elif cfg.extraction == "best_of_n":  # flow BC; the critic chooses among samples only when acting
            actor_loss = flow_matching_loss(self.flow, actor_obs, demonstrated, mask)
            bc = actor_loss
        else:
            with torch.no_grad():
                weights = torch.exp(cfg.awr_temperature * (q_target - self.v_values(obs))).clamp(max=100.0)
            bc = F.mse_loss(self.actor(actor_obs), demonstrated)
            actor_loss = -(weights * self.actor.log_prob(actor_obs, demonstrated)).mean()
        self.actor_opt.zero_grad(set_to_none=True)
        if self.actor_gradients_only:
            # gradients for the actor's parameters only: the critic's weight gradients (a third of the
            # backward pass through the critic) are never computed, and the critic's .grad stays untouched
            actor_loss.backward(inputs=[p for group in self.actor_opt.param_groups for p in group["params"]])
        else:  # the benchmark's baseline: a full backward pass, then the critic's gradients thrown away
            actor_loss.backward()
            self.critic_opt.zero_grad(set_to_none=True)
        self.actor_opt.step()

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
        modules = {"critic": self.critic, "target_critic": self.target_critic, "value": self.value}
        if not isinstance(self.actor, BestOfNPolicy):  # best-of-N's actor is the flow and the critic
            modules["actor"] = self.actor
        if hasattr(self, "flow"):
            modules["flow"] = self.flow
        return modules
