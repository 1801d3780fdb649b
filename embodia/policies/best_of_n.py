"""Best-of-N sampling: policy extraction that chooses among a behaviour policy's samples with the critic.

One of the extractions the DEAS paper lists (Kim et al., ICLR 2026, arXiv:2510.07730, Sec. 4: "any policy
extraction ... best-of-N sampling from a BC policy"), as in IDQL / SfBC-style selection: train a flow BC
policy on the dataset's sequences (:mod:`embodia.policies.flow`, ``L_flow`` only: the actor never sees the
critic in training), and at each decision draw ``N`` candidate sequences and execute the one the critic
scores highest,

    x^(i) = flow(s, z_i),  z_i ~ N(0, I),  i = 1..N
    a = x^(i*),  i* = argmax_i min_j Q_j(s, x^(i))

(the lower of the twin critics, as in V's target). Every candidate is a sample of the behaviour policy, so
the executed sequence stays in the data's support; the critic only ranks. ``N = 1`` is flow BC.

:class:`BestOfNPolicy` is the exported actor: the flow policy and the critic in one module, so the policy
folder holds both (``config.json``: ``best_of_n``, ``critic_bins``, ``critic_support``) and runs with noise
``(batch, N * horizon * action_dim)`` from :class:`~embodia.policies.actor_policy.ActorPolicy`'s seeded
generator, like any noise-driven actor.
"""

from __future__ import annotations

import torch
from torch import nn

from embodia.policies.flow import FlowPolicy
from embodia.policies.networks import Critic


class BestOfNPolicy(nn.Module):
    """``policy(s, z)``: ``N`` flow samples per observation, the one with the highest ``min_j Q_j`` returned.

    ``centers``: bin centres of categorical critic heads (the value is the distribution's mean), or None for
    scalar heads.
    """

    def __init__(self, flow: FlowPolicy, critic: Critic, samples: int, centers: torch.Tensor | None) -> None:
        super().__init__()
        self.flow, self.critic, self.samples = flow, critic, int(samples)
        self.action_dim, self.horizon, self.flow_steps = flow.action_dim, flow.horizon, flow.flow_steps
        self.noise_dim = self.samples * flow.noise_dim
        self.categorical = centers is not None
        self.register_buffer("centers", centers if centers is not None else torch.zeros(1))

    def scores(self, obs: torch.Tensor, sequences: torch.Tensor) -> torch.Tensor:
        """``min_j Q_j(s, x)`` of flattened sequences ``(B, horizon * action_dim)``, shape ``(B,)``."""
        heads = self.critic(obs, sequences)  # (ensemble, B, bins or 1)
        if self.categorical:
            values = (torch.softmax(heads, dim=-1) * self.centers).sum(-1)
        else:
            values = heads.squeeze(-1)
        return values.min(0).values

    def candidates(self, obs: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
        """The ``N`` flow samples per observation, ``(B, N, horizon * action_dim)``."""
        batch = obs.shape[0]
        repeated = obs.repeat_interleave(self.samples, dim=0)
        return self.flow(repeated, noise.reshape(batch * self.samples, -1)).reshape(batch, self.samples, -1)

    def forward(self, obs: torch.Tensor, noise: torch.Tensor | None = None) -> torch.Tensor:
        """The chosen sequence ``(B, horizon * action_dim)``; ``noise`` ``(B, N * horizon * action_dim)``
        (default zeros, which makes every candidate the same: the flow policy's mean-noise sample)."""
        if noise is None:
            noise = obs.new_zeros(obs.shape[0], self.noise_dim)
        candidates = self.candidates(obs, noise)
        batch, samples, width = candidates.shape
        scores = self.scores(obs.repeat_interleave(samples, dim=0), candidates.reshape(-1, width))
        best = scores.reshape(batch, samples).argmax(1)
        return candidates[torch.arange(batch), best]
