"""FQL and QC-FQL: flow Q-learning, on single actions or on action chunks.

FQL: Park, Li, Levine, "Flow Q-Learning", ICML 2025, arXiv:2502.02538. QC-FQL: Li, Zhou, Levine,
"Reinforcement Learning with Action Chunking", arXiv:2507.07969 (Q-chunking with FQL's actor). The
baselines DEAS compares with on OGBench (DEAS, arXiv:2510.07730, Table 1: FQL, n-step FQL, QC-FQL).

With ``H = horizon``, ``o_t = a_{t:t+H}`` the dataset's chunk (flattened), a twin critic ``Q_j`` and its
Polyak-averaged target ``Qbar_j``, per batch of windows of ``H`` steps:

    critic (Q-learning on chunks, the next chunk from the one-step policy)            (L_Q)
        o' = mu(s_{t+H}, z'),  z' ~ N(0, I)
        y  = sum_{k<H} gamma^k r_{t+k} valid_k + gamma^H (1 - d) agg_j Qbar_j(s_{t+H}, o')   (agg: mean or min)
        L_Q = sum_j E[ (Q_j(s_t, o_t) - y)^2 ]
    actor (FQL's extraction, :func:`embodia.policies.flow.fql_actor_loss`)                (L_pi)
        L_pi = L_flow + alpha * E_z || mu(s, z) - flow(s, z) ||^2 - E_z[ mean_j Q_j(s, mu(s, z)) ]

``H = 1`` is FQL; ``H > 1`` is QC-FQL (the critic scores whole chunks, the actor outputs them and the
runner executes them open-loop); ``action_chunking = False`` with ``H > 1`` is n-step FQL (critic and
actor on the first action, an H-step return from the dataset's behaviour). ``d`` = 1 when the episode
terminated inside the window. One difference from the authors' code: QC's code drops windows whose episode
ended before the last step from the critic loss (``valid[..., -1]``); here they stay, with the rewards up
to the terminal and no bootstrap, as in DEAS's target (:func:`embodia.policies.value_learning.sequence_target`).

The exported policy is the one-step policy ``mu(s, z)`` with ``z ~ N(0, I)`` drawn per decision from a
generator seeded at ``reset(seed)``, as FQL samples at evaluation.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal

import torch
from pydantic import Field

from embodia.policies.flow import FlowPolicy, fql_actor_loss
from embodia.policies.learner import ChunkedPolicyConfig, NetworkConfig, OfflineLearner
from embodia.policies.networks import Critic, polyak_update
from embodia.policies.value_learning import sequence_target


@dataclass
class FQLConfig(NetworkConfig, ChunkedPolicyConfig):
    """Hyperparameters of FQL / QC-FQL (FQL's defaults; ``alpha`` is per environment, see
    :mod:`embodia.policies.paper_settings`). Networks: embodia's 3x256 MLPs, where FQL uses 4x512."""

    chunk_field: ClassVar[str] = "horizon"

    horizon: Annotated[int, Field(ge=1)] = 1
    """H (>= 1): 1 = FQL; > 1 = QC-FQL (chunks of H actions; the Q-chunking paper uses 5)."""
    action_chunking: bool = True
    """With H > 1: True = QC-FQL (chunked critic and actor), False = n-step FQL (single actions, H-step returns)."""
    gamma: Annotated[float, Field(gt=0, lt=1)] = 0.99
    """Discount, in (0, 1) (FQL: 0.99 on the manipulation tasks)."""
    alpha: Annotated[float, Field(ge=0)] = 10.0
    """Weight (>= 0) of the distillation term (FQL's BC coefficient; FQL: 300 cube / scene, 1000 puzzle)."""
    flow_steps: Annotated[int, Field(ge=1)] = 10
    """K (>= 1): Euler steps of the flow policy (FQL: 10)."""
    q_agg: Literal["mean", "min"] = "mean"
    """How the target critics are combined in the TD target (FQL: mean for manipulation, min for antmaze)."""
    normalize_q_loss: bool = False
    """Divide the actor's Q term by mean |Q| (FQL's option; off in its reported runs)."""
    q_weight: Annotated[float, Field(ge=0)] = 1.0
    """Weight (>= 0) of the actor's Q term (FQL: 1; 0 leaves flow BC + distillation, an ablation)."""
    polyak: Annotated[float, Field(gt=0, le=1)] = 0.005
    """Soft update rate of the target critic, in (0, 1]."""


class FQL(OfflineLearner):
    """FQL / n-step FQL / QC-FQL over windows of ``H`` steps."""

    name: ClassVar[str] = "fql"
    config_class: ClassVar[type] = FQLConfig

    @property
    def chunk(self) -> int:
        """Actions per critic input and per policy output (H with action chunking, else 1)."""
        return self.config.horizon if self.config.action_chunking else 1

    def build(self) -> None:
        cfg, obs_dim = self.config, self.normalizer.dim
        self.critic = Critic(obs_dim, self.action_dim * self.chunk, cfg.hidden)
        self.target_critic = copy.deepcopy(self.critic).requires_grad_(False)
        self.flow = FlowPolicy(obs_dim, self.action_dim, self.chunk, cfg.hidden, cfg.flow_steps)
        self.actor = FlowPolicy(obs_dim, self.action_dim, self.chunk, cfg.hidden, flow_steps=0)
        self.critic_opt = self.adam(self.critic.parameters())
        self.actor_opt = self.adam([*self.flow.parameters(), *self.actor.parameters()])

    @classmethod
    def window_for(cls, config: FQLConfig) -> int:
        return config.horizon

    def td_target(self, batch: dict[str, Any], next_obs: torch.Tensor) -> torch.Tensor:
        """``y`` of the module docstring, ``(B,)`` (no gradient)."""
        with torch.no_grad():
            noise = torch.randn(next_obs.shape[0], self.actor.noise_dim)
            next_q = self.target_critic(next_obs, self.actor(next_obs, noise)).squeeze(-1)
            next_q = next_q.mean(0) if self.config.q_agg == "mean" else next_q.min(0).values
            gamma = self.config.gamma
            return sequence_target(
                batch["reward"].float(),
                batch["valid"].float(),
                batch["terminal"].float(),
                next_q,
                gamma,
                gamma,
            )

    def update(self, batch: dict[str, Any]) -> dict[str, float]:
        cfg = self.config
        obs, next_obs = self.normalizer(batch["obs"]), self.normalizer(batch["next_obs"])
        actions = batch["action"].float()[:, : self.chunk]
        flat = actions.reshape(len(obs), -1)

        y = self.td_target(batch, next_obs)
        q = self.critic(obs, flat).squeeze(-1)
        critic_loss = ((q - y) ** 2).mean(1).sum()
        self.critic_opt.zero_grad(set_to_none=True)
        critic_loss.backward()
        self.critic_opt.step()
        polyak_update(self.target_critic, self.critic, cfg.polyak)

        mask = batch["valid"].float()[:, : self.chunk].repeat_interleave(self.action_dim, dim=1)
        actor_loss, metrics = fql_actor_loss(
            self.flow,
            self.actor,
            obs,
            flat,
            mask,
            lambda o, a: self.critic(o, a).squeeze(-1).mean(0),
            alpha=cfg.alpha,
            q_weight=cfg.q_weight,
            normalize_q=cfg.normalize_q_loss,
        )
        self.actor_opt.zero_grad(set_to_none=True)
        # gradients for the flow and one-step policies only (the critic's weight gradients are not computed)
        actor_loss.backward(inputs=[p for group in self.actor_opt.param_groups for p in group["params"]])
        self.actor_opt.step()
        return {
            "critic_loss": float(critic_loss.detach()),
            "actor_loss": float(actor_loss.detach()),
            "q_mean": float(q.detach().mean()),
            "target_mean": float(y.mean()),
            **metrics,
        }

    def modules(self) -> dict[str, torch.nn.Module]:
        return {
            "critic": self.critic,
            "target_critic": self.target_critic,
            "flow": self.flow,
            "actor": self.actor,
        }
