"""Behaviour cloning with action chunks: regress the dataset's next ``H`` actions from the state.

    L = E[ || pi(s_t) - a_{t:t+H-1} ||^2 ]   (over valid steps of the window)

``chunk = 1`` is plain BC; ``chunk > 1`` predicts a sequence that the runner executes as a chunk (the
action chunking of ACT, Learning Fine-Grained Bimanual Manipulation with Low-Cost Hardware, Zhao et al.,
RSS 2023, arXiv:2304.13705, with a deterministic MLP head).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

import torch
from pydantic import Field

from embodia.policies.learner import ChunkedPolicyConfig, NetworkConfig, OfflineLearner
from embodia.policies.networks import Actor


@dataclass
class BCConfig(NetworkConfig, ChunkedPolicyConfig):
    """Hyperparameters of behaviour cloning."""

    chunk_field: ClassVar[str] = "chunk"
    chunk: Annotated[int, Field(ge=1)] = 1
    """H (>= 1): actions predicted (and executed) per decision."""


class BC(OfflineLearner):
    """Behaviour cloning learner over windows of ``chunk`` steps."""

    name: ClassVar[str] = "bc"
    config_class: ClassVar[type] = BCConfig
    needs_reward: ClassVar[bool] = False
    """imitates actions only: a store without rewards is fine"""

    def build(self) -> None:
        self.actor = Actor(self.normalizer.dim, self.action_dim, self.config.chunk, self.config.hidden)
        self.optimizer = self.adam(self.actor.parameters())

    @classmethod
    def window_for(cls, config: BCConfig) -> int:
        return config.chunk

    def update(self, batch: dict[str, Any]) -> dict[str, float]:
        obs = self.normalizer(batch["obs"])
        target = batch["action"].float().reshape(len(obs), -1)
        mask = batch["valid"].float().repeat_interleave(self.action_dim, dim=1)
        loss = (((self.actor(obs) - target) ** 2) * mask).sum() / mask.sum().clamp_min(1.0)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        return {"bc_mse": float(loss.detach())}

    def modules(self) -> dict[str, torch.nn.Module]:
        return {"actor": self.actor}
