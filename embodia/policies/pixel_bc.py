"""Behaviour cloning from camera images: an image encoder under the BC actor.

    L = E[ || pi(f(o_t)) - a_{t:t+H-1} ||^2 ],   f = :class:`~embodia.perception.pixel_observations.PixelObservationEncoder`

The same objective as :mod:`embodia.policies.bc`, with the pixel-observation path of
:mod:`embodia.perception.pixel_observations` in front of the MLP head. The encoder is one of

- ``"cnn"``: a small CNN trained end to end with the head;
- a saved encoder folder (:mod:`embodia.perception.encoder_io`): a teacher, frozen with
  ``freeze_encoder=True``; or the VER expert library (kind ``"ver"``), whose library is frozen and whose
  patch-wise router trains with the head under Curriculum Top-K Annealing (the encoder's ``advance()`` is
  called once per update, and its expert-usage entropy is logged);
- ``hf:FOLDER``: a locally saved DINOv2 / CLIP / SigLIP vision model (frozen by default).

The result is a ``"pixel_actor"`` policy folder (:mod:`embodia.policies.pixel_policy`). Flow BC takes the
same path (:mod:`embodia.policies.pixel_flow_bc`); ACT and Diffusion Policy have their papers' image backbones;
the value-based learners read flat ``state`` observations.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

import numpy as np
import torch
from pydantic import Field

from embodia.core.paths import PathArgument
from embodia.policies.learner import ChunkedPolicyConfig, NetworkConfig, OfflineLearner
from embodia.policies.networks import Actor, ObsNormalizer

if TYPE_CHECKING:
    from embodia.data.sampling import WindowSampler


@dataclass
class PixelBCConfig(NetworkConfig, ChunkedPolicyConfig):
    """Hyperparameters of behaviour cloning from images."""

    chunk_field: ClassVar[str] = "chunk"
    chunk: Annotated[int, Field(ge=1)] = 1
    """H (>= 1): actions predicted (and executed) per decision."""
    image_keys: tuple[str, ...] = ("rgb", "goal_rgb")
    """Observation keys holding images, all through one shared encoder (goal-conditioned tasks: both)."""
    state_keys: tuple[str, ...] = ()
    """Flat observation keys appended to the image features (standardised with dataset statistics)."""
    encoder: Annotated[str, PathArgument(names=frozenset({"cnn"}), path_prefixes=("hf:",))] = "cnn"
    """``cnn`` (trained end to end), a saved encoder folder (a teacher, or VER), or ``hf:FOLDER``."""
    freeze_encoder: bool = False
    """No gradient into the encoder (a VER encoder keeps its library frozen and trains its router unless set)."""
    token_channels: Annotated[int, Field(ge=1)] = 8
    """Channels each patch token is projected to before the tokens are flattened."""
    shift: Annotated[int, Field(ge=0)] = 4
    """Random-shift augmentation in pixels (DrQ) during training; 0 turns it off."""


class PixelBC(OfflineLearner):
    """Behaviour cloning from pixels (see the module docstring)."""

    name: ClassVar[str] = "pixel_bc"
    config_class: ClassVar[type] = PixelBCConfig
    needs_reward: ClassVar[bool] = False

    @classmethod
    def observation_keys(cls, config: PixelBCConfig) -> list[str]:
        return [*config.image_keys, *config.state_keys]

    @classmethod
    def window_for(cls, config: PixelBCConfig) -> int:
        return config.chunk

    @classmethod
    def fit_normalizer_for(cls, config: PixelBCConfig, sampler: WindowSampler) -> ObsNormalizer:
        """Statistics of the state keys only (images are normalised by their encoder)."""
        if not config.state_keys:
            return ObsNormalizer([], np.zeros(0, np.float32), np.ones(0, np.float32), sizes=[])
        return ObsNormalizer.fit(list(config.state_keys), sampler.arrays)

    def make_observations(self) -> torch.nn.Module:
        """The pixel-observation path of the config: its image encoder, token projection and state statistics."""
        from embodia.perception.pixel_observations import PixelObservationEncoder, make_image_encoder

        cfg = self.config
        return PixelObservationEncoder(
            make_image_encoder(cfg.encoder),
            cfg.image_keys,
            self.normalizer.mean,
            self.normalizer.std,
            state_keys=cfg.state_keys,
            token_channels=cfg.token_channels,
            freeze_encoder=cfg.freeze_encoder,
        )

    def build(self) -> None:
        cfg = self.config
        self.observations = self.make_observations()
        self.head = Actor(self.observations.dim, self.action_dim, cfg.chunk, cfg.hidden)
        self.actor = PixelActor(self.observations, self.head)
        params = [p for p in self.actor.parameters() if p.requires_grad]
        self.optimizer = self.adam(params)
        self.generator = torch.Generator().manual_seed(self.seed)

    def shifted_observations(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        """The batch's observations, each image randomly shifted (DrQ) by up to ``shift`` pixels."""
        from embodia.perception.pixel_observations import random_shift

        obs = dict(batch["obs"])
        for key in self.config.image_keys:
            obs[key] = random_shift(obs[key], self.config.shift, self.generator)
        return obs

    def update(self, batch: dict[str, Any]) -> dict[str, float]:
        self.actor.train()
        encoder = self.observations.encoder
        if hasattr(encoder, "reset_usage"):
            encoder.reset_usage()  # expert usage of this batch alone
        obs = self.shifted_observations(batch)
        target = batch["action"].float().reshape(len(batch["action"]), -1)
        mask = batch["valid"].float().repeat_interleave(self.action_dim, dim=1)
        loss = (((self.actor(obs) - target) ** 2) * mask).sum() / mask.sum().clamp_min(1.0)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        metrics = {"bc_mse": float(loss.detach())}
        if hasattr(encoder, "advance"):
            encoder.advance()
        if hasattr(encoder, "usage_entropy"):
            metrics["expert_usage_entropy"] = float(encoder.usage_entropy())
        return metrics

    def modules(self) -> dict[str, torch.nn.Module]:
        return {"actor": self.actor}

    def export(self, folder: Path, meta: dict[str, Any]) -> Any:
        from embodia.policies.pixel_policy import load_pixel_policy, save_pixel_policy

        save_pixel_policy(folder, self.actor, self.config, meta=meta, state_sizes=self.normalizer.sizes)
        return load_pixel_policy(Path(folder))


class PixelActor(torch.nn.Module):
    """``pi(f(o))``: the pixel-observation encoder and the BC actor head, one module (saved as one)."""

    def __init__(self, observations: torch.nn.Module, head: Actor) -> None:
        super().__init__()
        self.observations, self.head = observations, head
        self.action_dim, self.horizon = head.action_dim, head.horizon

    def forward(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        return self.head(self.observations(obs))
