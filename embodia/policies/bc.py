"""Behaviour cloning with action chunks: regress the dataset's next ``H`` actions from the state.

    L = E[ || pi(s_t) - a_{t:t+H-1} ||^2 ]   (over valid steps of the window)

``chunk = 1`` is plain BC; ``chunk > 1`` predicts a sequence that the runner executes as a chunk
(the ACT / diffusion-policy style of action chunking, with a deterministic MLP head).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

import torch
from pydantic import Field

from embodia.core.validation import validate
from embodia.policies.networks import Actor, ObsNormalizer


@dataclass
class BCConfig:
    """Hyperparameters of behaviour cloning."""

    chunk: Annotated[int, Field(ge=1)] = 1
    """H (>= 1): actions predicted (and executed) per decision."""
    hidden: tuple[Annotated[int, Field(ge=1)], ...] = (256, 256, 256)
    """Hidden layer sizes, each >= 1 (LayerNorm + GELU)."""
    lr: Annotated[float, Field(gt=0)] = 3e-4
    """Adam learning rate (> 0)."""
    execute_steps: Annotated[int, Field(ge=1)] | None = None
    """Steps of each chunk executed before re-planning, 1..chunk (default: the whole chunk)."""

    def __post_init__(self) -> None:
        if self.execute_steps is not None and self.execute_steps > self.chunk:
            raise ValueError(
                f"execute_steps ({self.execute_steps}) cannot exceed chunk ({self.chunk}): "
                "a chunk has only that many actions"
            )


class BC:
    """Behaviour cloning learner over windows of ``chunk`` steps."""

    name = "bc"
    needs_reward: ClassVar[bool] = False
    """imitates actions only: a store without rewards is fine"""

    def __init__(
        self,
        config: BCConfig,
        normalizer: ObsNormalizer,
        action_dim: int,
        reward_range: tuple[float, float] = (0.0, 1.0),
        seed: int = 0,
    ) -> None:
        config = validate(BCConfig, config, where="bc config")  # a config built in Python, too
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
