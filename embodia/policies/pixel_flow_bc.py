"""Flow behaviour cloning from camera images: an image encoder under the flow BC velocity field.

    x_0 ~ N(0, I),   x_1 = a_{t:t+H},   tau ~ U[0, 1],   x_tau = (1 - tau) x_0 + tau x_1
    L_flow = E[ || v(f(o_t), x_tau, tau) - (x_1 - x_0) ||^2 ],
    f = :class:`~embodia.perception.pixel_observations.PixelObservationEncoder`

:mod:`embodia.policies.flow`'s flow BC (Lipman et al., "Flow Matching for Generative Modeling", ICLR 2023,
arXiv:2210.02747; the linear path and Euler sampler of Park, Li, Levine, "Flow Q-Learning", ICML 2025,
arXiv:2502.02538) with :mod:`embodia.policies.pixel_bc`'s pixel-observation path in front of the velocity
field: the encoder's features ``f(o)`` take the place of the state, and the gradient of ``L_flow`` trains the
encoder with the field (a saved encoder can be frozen, as for pixel BC). Images get the same random-shift
augmentation as pixel BC. A sequence is sampled with ``K`` Euler steps from noise drawn per decision.

The result is a ``"pixel_actor"`` policy folder (:mod:`embodia.policies.pixel_policy`) that records
``noise_dim`` and ``flow_steps``; its policy draws the noise from a generator seeded at ``reset(seed)``, as the
flat flow policies do. Like them it does not export to ONNX yet (the noise is an input per decision).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

import torch
from pydantic import Field

from embodia.policies.flow import FlowPolicy, euler_sample, flow_matching_loss
from embodia.policies.pixel_bc import PixelBC, PixelBCConfig


@dataclass
class PixelFlowBCConfig(PixelBCConfig):
    """Hyperparameters of flow behaviour cloning from images (pixel BC's, and the number of Euler steps)."""

    flow_steps: Annotated[int, Field(ge=1)] = 10
    """K (>= 1): Euler steps of sampling (FQL: 10)."""


class PixelFlowBC(PixelBC):
    """Flow BC from pixels (see the module docstring); observations, statistics, windows and the policy folder
    as pixel BC's."""

    name: ClassVar[str] = "pixel_flow_bc"
    config_class: ClassVar[type] = PixelFlowBCConfig
    needs_reward: ClassVar[bool] = False

    def build(self) -> None:
        cfg = self.config
        self.observations = self.make_observations()
        flow = FlowPolicy(self.observations.dim, self.action_dim, cfg.chunk, cfg.hidden, cfg.flow_steps)
        self.actor = PixelFlowActor(self.observations, flow)
        self.optimizer = self.adam([p for p in self.actor.parameters() if p.requires_grad])
        self.generator = torch.Generator().manual_seed(self.seed)

    def update(self, batch: dict[str, Any]) -> dict[str, float]:
        self.actor.train()
        obs = self.shifted_observations(batch)
        actions = batch["action"].float().reshape(len(batch["action"]), -1)
        mask = batch["valid"].float().repeat_interleave(self.action_dim, dim=1)
        loss = flow_matching_loss(self.actor.flow, self.observations(obs), actions, mask)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        return {"flow_loss": float(loss.detach())}


class PixelFlowActor(torch.nn.Module):
    """``flow(f(o), z)``: the pixel-observation encoder and a flow policy integrated from the noise ``z``."""

    def __init__(self, observations: torch.nn.Module, flow: FlowPolicy) -> None:
        super().__init__()
        self.observations, self.flow = observations, flow
        self.action_dim, self.horizon = flow.action_dim, flow.horizon
        self.noise_dim, self.flow_steps = flow.noise_dim, flow.flow_steps

    def forward(self, obs: dict[str, torch.Tensor], noise: torch.Tensor | None = None) -> torch.Tensor:
        """Sequences ``(B, horizon * action_dim)`` in [-1, 1]; ``noise`` defaults to zeros (its mean)."""
        features = self.observations(obs)
        if noise is None:
            noise = features.new_zeros(features.shape[0], self.noise_dim)
        return euler_sample(self.flow, features, noise, self.flow_steps)
