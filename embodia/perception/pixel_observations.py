"""The pixel-observation path of policies: camera images (and state vectors) to one feature vector.

A policy that sees ``rgb`` (and, goal-conditioned, ``goal_rgb``) runs every image key through one shared
image encoder (:mod:`.encoders` protocol: a CNN trained end to end, a frozen teacher, the VER expert library
with a trainable router, or a user's DINOv2 / CLIP / SigLIP), projects each patch token to a few channels
and flattens them (so the head keeps *where* things are, which a pooled vector loses), then appends the
standardised state keys:

    f(o) = [ vec(P z_1) , ... , vec(P z_k) , (s - mu) / sigma ],   z_i = encoder(image_i).patches

Training may shift images by up to ``shift`` pixels (replicate padding, a random crop back to size: the
augmentation of DrQ, "Image Augmentation Is All You Need", Kostrikov et al., arXiv:2004.13649), which makes
pixel behaviour cloning from a few demonstrations far less brittle.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from embodia.perception.encoder_io import build_encoder, encoder_spec, load_encoder
from embodia.perception.encoders import ConvEncoder


def images_to_input(frames: torch.Tensor, encoder: nn.Module) -> torch.Tensor:
    """``uint8`` ``(B, H, W, 3)`` frames (a tensor) -> the encoder's normalised ``(B, 3, S, S)`` input."""
    x = frames.float().div(255.0).permute(0, 3, 1, 2)
    size = int(encoder.image_size)
    if x.shape[-1] != size or x.shape[-2] != size:
        x = nn.functional.interpolate(x, size=(size, size), mode="bilinear", align_corners=False)
    mean = torch.tensor(encoder.mean, dtype=x.dtype).view(1, 3, 1, 1)
    std = torch.tensor(encoder.std, dtype=x.dtype).view(1, 3, 1, 1)
    return (x - mean) / std


def random_shift(frames: torch.Tensor, shift: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """DrQ's augmentation on ``uint8`` ``(B, H, W, C)`` frames: pad by ``shift`` (edge pixels), crop back."""
    if shift <= 0:
        return frames
    b, h, w, _ = frames.shape
    padded = nn.functional.pad(frames.permute(0, 3, 1, 2).float(), (shift,) * 4, mode="replicate")
    offsets = torch.randint(0, 2 * shift + 1, (b, 2), generator=generator).tolist()
    crops = [padded[i, :, dy : dy + h, dx : dx + w] for i, (dy, dx) in enumerate(offsets)]
    return torch.stack(crops).permute(0, 2, 3, 1).to(frames.dtype)


def make_image_encoder(name: str, image_size: int = 64) -> nn.Module:
    """``"cnn"`` (a fresh :class:`~.encoders.ConvEncoder`, 8 x 8 grid), a saved encoder folder, or ``hf:FOLDER``."""
    if name == "cnn":
        return ConvEncoder(image_size=image_size, dim=32, depth=3)
    return load_encoder(name)


def encoder_description(encoder: nn.Module) -> dict[str, Any]:
    """What rebuilds ``encoder`` before its weights are loaded (kept in a policy folder's config.json)."""
    model = getattr(encoder, "model", None)
    if model is not None and hasattr(model, "name_or_path") and not hasattr(encoder, "kind"):
        return {"encoder": "hf", "folder": str(Path(model.name_or_path).resolve())}
    return encoder_spec(encoder)


def encoder_from_description(spec: Mapping[str, Any]) -> nn.Module:
    if spec.get("encoder") == "hf":
        from embodia.perception.encoders import HuggingFaceEncoder

        return HuggingFaceEncoder(spec["folder"])
    return build_encoder(dict(spec))


class PixelObservationEncoder(nn.Module):
    """``f(o)`` of the module docstring: shared image encoder, per-token projection, flattened, plus states.

    Args:
        encoder: an image encoder (:mod:`.encoders` protocol).
        image_keys: observation keys holding ``uint8`` ``(H, W, 3)`` images, all through ``encoder``.
        state_mean: mean of the concatenated ``state_keys`` (empty when there are none).
        state_std: their standard deviation.
        state_keys: flat observation keys appended after the image features.
        token_channels: channels each patch token is projected to.
        freeze_encoder: no gradient into ``encoder`` (its own trainable parts, such as VER's router, stay
            trainable only when this is False).
    """

    def __init__(
        self,
        encoder: nn.Module,
        image_keys: Sequence[str],
        state_mean: torch.Tensor,
        state_std: torch.Tensor,
        state_keys: Sequence[str] = (),
        token_channels: int = 8,
        freeze_encoder: bool = False,
    ) -> None:
        super().__init__()
        self.encoder = encoder
        self.image_keys, self.state_keys = list(image_keys), list(state_keys)
        self.freeze_encoder = bool(freeze_encoder)
        if self.freeze_encoder:
            self.encoder.requires_grad_(False)
        self.project = nn.Linear(int(encoder.dim), int(token_channels))
        self.register_buffer("state_mean", torch.as_tensor(state_mean, dtype=torch.float32).reshape(-1))
        self.register_buffer(
            "state_std", torch.as_tensor(state_std, dtype=torch.float32).reshape(-1).clamp_min(1e-3)
        )
        self.token_channels = int(token_channels)
        self.dim = (
            len(self.image_keys) * int(encoder.grid) ** 2 * self.token_channels + self.state_mean.numel()
        )

    def train(self, mode: bool = True) -> PixelObservationEncoder:
        super().train(mode)
        if self.freeze_encoder:
            self.encoder.eval()
        return self

    def forward(self, obs: Mapping[str, torch.Tensor]) -> torch.Tensor:
        frames = torch.cat([obs[k] for k in self.image_keys], dim=0)
        batch = frames.shape[0] // len(self.image_keys)
        with torch.set_grad_enabled(torch.is_grad_enabled() and not self.freeze_encoder):
            patches = self.encoder(images_to_input(frames, self.encoder)).patches
        tokens = self.project(patches).reshape(len(self.image_keys), batch, -1)
        parts = list(tokens.unbind(0))
        if self.state_keys:
            states = torch.cat([obs[k].reshape(batch, -1).float() for k in self.state_keys], dim=-1)
            parts.append((states - self.state_mean) / self.state_std)
        return torch.cat(parts, dim=-1)
