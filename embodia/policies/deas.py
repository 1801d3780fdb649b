"""DEAS: DEtached value learning with Action Sequences (Kim, Lee, Seo, Lee, Zhu; ICLR 2026).

The critic scores an *action sequence* ``o_t = a_{t:t+H-1}`` (an option of an SMDP) and is trained
without the actor ("detached", as in IQL), so that values stay on sequences the dataset contains.
With a twin target critic ``Qbar = min(Qbar_1, Qbar_2)`` (Polyak-averaged), per batch of windows:

    value, expectile regression toward in-distribution sequences        (L_V)
        u = Qbar(s_t, o_t) - V(s_t),   L_V = E[ |tau - 1(u < 0)| * l(V(s_t), Qbar(s_t, o_t)) ]
    critic, SMDP target with two discounts, masked at terminals          (L_Q)
        y = sum_{k<H} gamma1^k r_{t+k} + gamma2^H (1 - d) V(s_{t+H}),   L_Q = sum_j l(Q_j(s_t, o_t), y)
    actor, any extraction over sequences                                 (L_pi)
        DDPG+BC:  -Q(s, pi(s)) / mean|Q| + alpha * ||pi(s) - o_t||^2
        AWR:      -exp(beta * (Qbar(s, o_t) - V(s))) * log pi(o_t | s)   (weights clipped at 100)

With ``distributional=True`` (the paper's choice) V and Q output logits over ``bins`` bins, ``l`` is the
cross-entropy against the HL-Gauss distribution of the scalar target (see ``distributional.py``),
and every value above is the distribution's mean; the expectile weights multiply the cross-entropy.
``d`` is 1 when the episode terminated inside the window (its later rewards are masked). The actor
outputs a whole sequence; the runner executes it as an action chunk.

``H = 1``, ``distributional=False`` and ``gamma1 = gamma2`` give IQL with DDPG+BC/AWR extraction.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal

import torch
import torch.nn.functional as F
from pydantic import Field

from embodia.core.validation import validate
from embodia.policies.distributional import Support, cross_entropy, expected_value, hl_gauss, value_range
from embodia.policies.networks import Actor, Critic, ObsNormalizer, expectile_weights, mlp, polyak_update


def sequence_target(
    rewards: torch.Tensor,
    valid: torch.Tensor,
    done: torch.Tensor,
    next_value: torch.Tensor,
    gamma1: float,
    gamma2: float,
) -> torch.Tensor:
    """SMDP target ``sum_{k<H} gamma1^k r_{t+k} valid_k + gamma2^H (1 - d) V(s_{t+H})``.

    Args:
        rewards, valid: ``(B, H)``; ``valid`` is 0 for steps after the episode ended inside the window.
        done: ``(B,)``, 1 when the episode terminated inside the window (nothing to bootstrap).
        next_value: ``(B,)``, ``V(s_{t+H})``.
    """
    horizon = rewards.shape[1]
    discounts = gamma1 ** torch.arange(horizon, dtype=rewards.dtype, device=rewards.device)
    return (rewards * valid * discounts).sum(-1) + gamma2**horizon * (1.0 - done) * next_value


@dataclass
class DEASConfig:
    """Hyperparameters of DEAS (defaults follow the paper's OGBench settings where it reports them)."""

    horizon: Annotated[int, Field(ge=1)] = 4
    """H (>= 1): length of the action sequences the critic scores and the actor outputs (paper: 4 cube, 8 scene/puzzle)."""
    gamma1: Annotated[float, Field(gt=0, le=1)] = 0.9
    """Discount of rewards inside a sequence, in (0, 1] (intra-option; the paper reports 0.9)."""
    gamma2: Annotated[float, Field(gt=0, lt=1)] = 0.999
    """Discount between sequences, in (0, 1) (inter-option; the bootstrap is weighted by gamma2 ** H; paper:
    0.999, authors' robot code: 0.99 — which doubled CubeSingle success at a 10k-step budget, see README;
    1 would make the value support infinite)."""
    expectile: Annotated[float, Field(gt=0, lt=1)] = 0.7
    """tau in (0, 1) of the expectile regression of V toward Qbar (0.5 = mean; paper: 0.7-0.9)."""
    distributional: bool = True
    """Categorical V and Q with HL-Gauss targets (False: scalar heads and squared errors)."""
    bins: Annotated[int, Field(ge=2)] = 101
    """Number of bins (>= 2) of the categorical value distributions."""
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
    """AWR: inverse temperature beta (>= 0) of the advantage weights."""
    execute_steps: Annotated[int, Field(ge=1)] | None = None
    """Steps of each predicted sequence executed before re-planning, 1..H (default: all H)."""

    def __post_init__(self) -> None:
        if self.execute_steps is not None and self.execute_steps > self.horizon:
            raise ValueError(
                f"execute_steps ({self.execute_steps}) cannot exceed horizon ({self.horizon}): "
                "a sequence has only H actions"
            )


class DEAS:
    """DEAS learner over windows from :class:`embodia.data.sampling.WindowSampler` (``window = H``)."""

    name = "deas"
    needs_reward: ClassVar[bool] = True
    """learns from the dataset's rewards (``embodia train`` refuses a store without a ``reward`` key)"""

    def __init__(
        self,
        config: DEASConfig,
        normalizer: ObsNormalizer,
        action_dim: int,
        reward_range: tuple[float, float],
        seed: int = 0,
    ) -> None:
        config = validate(DEASConfig, config, where="deas config")  # a config built in Python, too
        torch.manual_seed(seed)
        self.config = config
        self.window = config.horizon
        self.action_dim = action_dim
        self.normalizer = normalizer
        self.support = Support(
            *value_range(*reward_range, config.horizon, config.gamma1, config.gamma2), config.bins
        )
        out = config.bins if config.distributional else 1
        obs_dim, seq_dim = normalizer.dim, action_dim * config.horizon
        self.critic = Critic(obs_dim, seq_dim, config.hidden, out)
        self.target_critic = copy.deepcopy(self.critic).requires_grad_(False)
        self.value = mlp(obs_dim, config.hidden, out)
        self.actor = Actor(obs_dim, action_dim, config.horizon, config.hidden)
        self.critic_opt = torch.optim.Adam(self.critic.parameters(), lr=config.lr)
        self.value_opt = torch.optim.Adam(self.value.parameters(), lr=config.lr)
        self.actor_opt = torch.optim.Adam(self.actor.parameters(), lr=config.lr)

    # ------------------------------------------------------------------ values
    def _scalar(self, head: torch.Tensor) -> torch.Tensor:
        return expected_value(head, self.support) if self.config.distributional else head.squeeze(-1)

    def q_values(self, obs: torch.Tensor, seq: torch.Tensor, target: bool = False) -> torch.Tensor:
        """``(ensemble, batch)`` expected Q of action sequences."""
        return self._scalar((self.target_critic if target else self.critic)(obs, seq))

    def v_values(self, obs: torch.Tensor) -> torch.Tensor:
        return self._scalar(self.value(obs))

    def _regression(self, head: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """Per-sample loss of a value head toward scalar targets (HL-Gauss CE or squared error)."""
        if self.config.distributional:
            return cross_entropy(head, hl_gauss(target, self.support))
        return (head.squeeze(-1) - target) ** 2

    # ------------------------------------------------------------------ one gradient step
    def update(self, batch: dict[str, Any]) -> dict[str, float]:
        cfg = self.config
        obs = self.normalizer(batch["obs"])
        next_obs = self.normalizer(batch["next_obs"])
        seq = batch["action"].float()  # (B, H, A)
        valid = batch["valid"].float()  # (B, H)
        done = batch["terminal"].float()  # (B,)

        # L_V: expectile-weighted regression of V(s) toward the twin target critic on dataset sequences
        with torch.no_grad():
            q_target = self.q_values(obs, seq, target=True).min(0).values
        v_head = self.value(obs)
        u = q_target - self._scalar(v_head).detach()
        weight = expectile_weights(u, cfg.expectile)
        value_loss = (weight * self._regression(v_head, q_target)).mean()
        self.value_opt.zero_grad(set_to_none=True)
        value_loss.backward()
        self.value_opt.step()

        # L_Q: sum_k gamma1^k r_{t+k} + gamma2^H (1 - d) V(s_{t+H})
        with torch.no_grad():
            y = sequence_target(
                batch["reward"].float(), valid, done, self.v_values(next_obs), cfg.gamma1, cfg.gamma2
            )
        heads = self.critic(obs, seq)
        critic_loss = sum(self._regression(h, y).mean() for h in heads)
        self.critic_opt.zero_grad(set_to_none=True)
        critic_loss.backward()
        self.critic_opt.step()
        polyak_update(self.target_critic, self.critic, cfg.polyak)

        # L_pi: policy extraction over whole sequences
        flat_seq = seq.reshape(seq.shape[0], -1)
        if cfg.extraction == "ddpg_bc":
            pi = self.actor(obs)
            q_pi = self._scalar(self.critic(obs, pi)).min(0).values
            bc = F.mse_loss(pi, flat_seq)
            actor_loss = -q_pi.mean() / q_pi.abs().mean().detach().clamp_min(1e-6) + cfg.alpha * bc
        else:
            with torch.no_grad():
                advantage = q_target - self.v_values(obs)
                weights = torch.exp(cfg.awr_temperature * advantage).clamp(max=100.0)
            bc = F.mse_loss(self.actor(obs), flat_seq)
            actor_loss = -(weights * self.actor.log_prob(obs, flat_seq)).mean()
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
            "v_mean": float(self.v_values(obs).detach().mean()),
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
