"""Flow-matching policies over action sequences, and flow behaviour cloning.

Flow matching (Lipman et al., "Flow Matching for Generative Modeling", ICLR 2023, arXiv:2210.02747) with
the linear path that FQL uses (Park, Li, Levine, "Flow Q-Learning", ICML 2025, arXiv:2502.02538): a
velocity field ``v(s, x, t)`` over flattened action sequences ``x`` of ``H * action_dim`` values is trained
to carry Gaussian noise to the dataset's sequences,

    x_0 ~ N(0, I),   x_1 = a_{t:t+H},   tau ~ U[0, 1],   x_tau = (1 - tau) x_0 + tau x_1
    L_flow = E[ || v(s, x_tau, tau) - (x_1 - x_0) ||^2 ]                                   (flow BC)

and a sequence is sampled by integrating ``dx/dtau = v`` from noise with ``K`` Euler steps,

    x_{k+1} = x_k + v(s, x_k, k / K) / K,   k = 0 .. K-1,   a = clip(x_K, -1, 1).

:class:`FlowPolicy` is the network of both kinds of noise-driven policy: a velocity field integrated for
``flow_steps`` Euler steps (flow BC), or, with ``flow_steps = 0``, FQL's one-step policy ``mu(s, z)`` that
maps noise to a sequence in one pass (:mod:`embodia.policies.fql`). Either way ``policy(obs, noise)`` is a
deterministic function of the observation and the noise, which the policy folder runs with noise drawn from
a generator seeded at ``reset(seed)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

import torch
from pydantic import Field
from torch import nn

from embodia.policies.learner import ChunkedPolicyConfig, NetworkConfig, OfflineLearner
from embodia.policies.networks import mlp


class FlowPolicy(nn.Module):
    """``a = policy(s, z)``: a velocity field integrated from noise ``z`` (``flow_steps >= 1``), or a
    one-step map of ``(s, z)`` (``flow_steps = 0``); sequences of ``horizon`` actions, flattened, in [-1, 1].

    FQL's actor networks have no LayerNorm (its ``actor_layer_norm=False``); neither have these.
    """

    def __init__(
        self, obs_dim: int, action_dim: int, horizon: int, hidden: Sequence[int], flow_steps: int = 10
    ) -> None:
        super().__init__()
        self.action_dim, self.horizon, self.flow_steps = action_dim, horizon, int(flow_steps)
        self.noise_dim = action_dim * horizon
        time_input = 1 if self.flow_steps > 0 else 0
        self.net = mlp(obs_dim + self.noise_dim + time_input, hidden, self.noise_dim, layer_norm=False)

    def velocity(self, obs: torch.Tensor, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        """``v(s, x, t)`` with ``t`` of shape ``(B, 1)`` (flow policies only)."""
        return self.net(torch.cat([obs, x, t], dim=-1))

    def forward(self, obs: torch.Tensor, noise: torch.Tensor | None = None) -> torch.Tensor:
        """A sequence ``(B, horizon * action_dim)`` for each observation; ``noise`` defaults to zeros (the
        mean of the noise distribution; the policy folder passes sampled noise)."""
        if noise is None:
            noise = obs.new_zeros(obs.shape[0], self.noise_dim)
        if self.flow_steps == 0:
            return self.one_step(obs, noise).clamp(-1.0, 1.0)
        return euler_sample(self, obs, noise, self.flow_steps)

    def one_step(self, obs: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
        """The one-step policy's output before clipping (what FQL distils; ``forward`` clips it)."""
        return self.net(torch.cat([obs, noise], dim=-1))


def flow_matching_loss(
    policy: FlowPolicy, obs: torch.Tensor, actions: torch.Tensor, mask: torch.Tensor | None = None
) -> torch.Tensor:
    """``L_flow`` for flattened sequences ``actions`` ``(B, D)``; ``mask`` ``(B, D)`` leaves out padded steps."""
    x1 = actions
    x0 = torch.randn_like(x1)
    t = torch.rand(x1.shape[0], 1, dtype=x1.dtype, device=x1.device)
    xt = (1.0 - t) * x0 + t * x1
    error = (policy.velocity(obs, xt, t) - (x1 - x0)) ** 2
    if mask is None:
        return error.mean()
    return (error * mask).sum() / mask.sum().clamp_min(1.0)


def euler_sample(policy: FlowPolicy, obs: torch.Tensor, noise: torch.Tensor, steps: int) -> torch.Tensor:
    """Integrate ``dx/dt = v(s, x, t)`` from ``x_0 = noise`` with ``steps`` Euler steps; clipped to [-1, 1]."""
    x = noise
    for k in range(steps):
        t = torch.full((x.shape[0], 1), k / steps, dtype=x.dtype, device=x.device)
        x = x + policy.velocity(obs, x, t) / steps
    return x.clamp(-1.0, 1.0)


@dataclass
class FlowBCConfig(NetworkConfig, ChunkedPolicyConfig):
    """Hyperparameters of flow behaviour cloning (FQL's BC flow defaults)."""

    chunk_field: ClassVar[str] = "chunk"
    chunk: Annotated[int, Field(ge=1)] = 1
    """H (>= 1): actions per sampled sequence (executed as a chunk when > 1)."""
    flow_steps: Annotated[int, Field(ge=1)] = 10
    """K (>= 1): Euler steps of sampling (FQL: 10)."""


class FlowBC(OfflineLearner):
    """Flow BC: ``L_flow`` on the dataset's sequences; the policy samples with ``K`` Euler steps."""

    name: ClassVar[str] = "flow_bc"
    config_class: ClassVar[type] = FlowBCConfig
    needs_reward: ClassVar[bool] = False
    """imitates actions only"""

    def build(self) -> None:
        cfg = self.config
        self.actor = FlowPolicy(self.normalizer.dim, self.action_dim, cfg.chunk, cfg.hidden, cfg.flow_steps)
        self.optimizer = self.adam(self.actor.parameters())

    @classmethod
    def window_for(cls, config: FlowBCConfig) -> int:
        return config.chunk

    def update(self, batch: dict[str, Any]) -> dict[str, float]:
        obs = self.normalizer(batch["obs"])
        actions = batch["action"].float().reshape(len(obs), -1)
        mask = batch["valid"].float().repeat_interleave(self.action_dim, dim=1)
        loss = flow_matching_loss(self.actor, obs, actions, mask)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        return {"flow_loss": float(loss.detach())}

    def modules(self) -> dict[str, nn.Module]:
        return {"actor": self.actor}


def fql_actor_loss(
    flow: FlowPolicy,
    actor: FlowPolicy,
    obs: torch.Tensor,
    actions: torch.Tensor,
    mask: torch.Tensor,
    q_value: Any,
    *,
    alpha: float,
    q_weight: float = 1.0,
    normalize_q: bool = False,
) -> tuple[torch.Tensor, dict[str, float]]:
    """FQL's policy extraction (Park et al. 2025, eq. 8), for any critic ``q_value(obs, actions) -> (B,)``:

        L = L_flow(flow) + alpha * E_z[ || mu(s, z) - flow(s, z) ||^2 ] - q_weight * E_z[ Q(s, mu(s, z)) ]

    The flow policy learns the data by flow BC; the one-step policy ``mu`` (``actor``, ``flow_steps = 0``)
    maximises Q while staying near the flow policy's sample for the same noise (the distillation target is
    constant: no gradient runs through the Euler steps). As in the authors' code (``agents/fql.py``), the
    distillation term sees ``mu``'s *unclipped* output and only the action given to Q is clipped to
    [-1, 1]: clipping before both would leave an output past the bound with no gradient from either term,
    stuck there. ``normalize_q`` divides the Q term by ``mean |Q|`` (FQL's ``normalize_q_loss``, which
    makes ``alpha`` independent of the value scale).
    """
    flow_loss = flow_matching_loss(flow, obs, actions, mask)
    noise = torch.randn_like(actions)
    with torch.no_grad():
        target = euler_sample(flow, obs, noise, flow.flow_steps)
    raw = actor.one_step(obs, noise)
    distill = ((raw - target) ** 2).mean()
    one_step = raw.clamp(-1.0, 1.0)
    q = q_value(obs, one_step)
    q_loss = -q.mean()
    if normalize_q:
        q_loss = q_loss / q.abs().mean().detach().clamp_min(1e-6)
    loss = flow_loss + alpha * distill + q_weight * q_loss
    metrics = {
        "flow_loss": float(flow_loss.detach()),
        "distill_loss": float(distill.detach()),
        "q_pi": float(q.mean().detach()),
        "bc_mse": float(((one_step.detach() - actions) ** 2).mean()),
    }
    return loss, metrics
