"""Behaviour cloning with action chunks: regress the dataset's next ``H`` actions from the state.

    L = E[ || pi(s_t) - a_{t:t+H-1} ||^2 ]   (over valid steps of the window)

``chunk = 1`` is plain BC; ``chunk > 1`` predicts a sequence that the runner executes as a chunk
(the ACT / diffusion-policy style of action chunking, with a deterministic MLP head).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from embodia.policies.networks import Actor, ObsNormalizer


@dataclass
class BCConfig:
    """Hyperparameters of behaviour cloning."""

    chunk: int = 1
    """H: actions predicted (and executed) per decision."""
    hidden: tuple[int, ...] = (256, 256, 256)
    """Hidden layer sizes (LayerNorm + GELU)."""
    lr: float = 3e-4
    """Adam learning rate."""
    execute_steps: int | None = None
    """Steps of each chunk executed before re-planning (default: the whole chunk)."""


class BC:
    """Behaviour cloning learner over windows of ``chunk`` steps."""

    name = "bc"

    def __init__(
        self,
        config: BCConfig,
        normalizer: ObsNormalizer,
        action_dim: int,
        reward_range: tuple[float, float] = (0.0, 1.0),
        seed: int = 0,
    ) -> None:
        torch.manual_seed(seed)
        self.config = config
        self.window = config.chunk
        self.action_dim = action_dim
        self.normalizer = normalizer
        self.actor = Actor(normalizer.dim, action_dim, config.chunk, config.hidden)
        self.optimizer = torch.optim.Adam(self.actor.parameters(), lr=config.lr)

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
