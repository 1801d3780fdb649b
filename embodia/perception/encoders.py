"""The image-encoder protocol: what a perception model needs from a backbone.

An encoder takes a batch of images and returns patch tokens and a pooled vector. It states the image size
and the normalisation it expects, so a caller can feed it raw ``uint8`` frames:

    out = encoder(images)            # images: (B, 3, H, W) float in [0, 1], H = W = encoder.image_size
    out.patches                      # (B, N, D): N = (H / patch)^2 tokens, row-major over the patch grid
    out.pooled                       # (B, D)

:func:`prepare` turns ``uint8`` ``(B, H, W, 3)`` arrays into that input (resize, [0, 1], per-channel
normalisation). :class:`ConvEncoder` is the small CNN trained here; :class:`HuggingFaceEncoder` wraps a
user's locally saved vision transformer (DINOv2, CLIP or SigLIP vision towers through transformers'
``AutoModel``) — nothing is downloaded.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
import torch
from torch import nn


@dataclass
class EncoderOutput:
    patches: torch.Tensor
    """(B, N, D) patch tokens, row-major over the ``grid`` x ``grid`` patch grid."""
    pooled: torch.Tensor
    """(B, D) one vector per image."""


class ImageEncoder(Protocol):
    """What perception models need from a backbone (see the module docstring)."""

    image_size: int
    """Input height and width (pixels)."""
    grid: int
    """Patches per side: ``patches`` has ``grid * grid`` tokens."""
    dim: int
    """Token and pooled-vector width D."""
    mean: tuple[float, float, float]
    std: tuple[float, float, float]

    def __call__(self, images: torch.Tensor) -> EncoderOutput: ...


def prepare(frames: np.ndarray | torch.Tensor, encoder: ImageEncoder) -> torch.Tensor:
    """``uint8`` ``(B, H, W, 3)`` frames -> the encoder's normalised ``(B, 3, S, S)`` float input."""
    x = torch.as_tensor(np.asarray(frames)).float().div(255.0).permute(0, 3, 1, 2)
    if x.shape[-1] != encoder.image_size or x.shape[-2] != encoder.image_size:
        x = nn.functional.interpolate(x, size=(encoder.image_size,) * 2, mode="bilinear", align_corners=False)
    mean = torch.tensor(encoder.mean).view(1, 3, 1, 1)
    std = torch.tensor(encoder.std).view(1, 3, 1, 1)
    return (x - mean) / std


class ConvEncoder(nn.Module):
    """A small CNN: ``depth`` stride-2 3x3 conv blocks (GELU, GroupNorm) to a ``grid`` x ``grid`` map of ``dim``
    channels; tokens are the map's cells plus a learned 2-D position embedding; pooled = their mean."""

    def __init__(self, image_size: int = 64, dim: int = 64, depth: int = 2) -> None:
        super().__init__()
        self.image_size, self.dim, self.depth = int(image_size), int(dim), int(depth)
        self.grid = self.image_size // 2**depth
        self.mean, self.std = (0.5, 0.5, 0.5), (0.5, 0.5, 0.5)
        layers: list[nn.Module] = []
        channels = 3
        for _ in range(depth):
            layers += [nn.Conv2d(channels, dim, 3, stride=2, padding=1), nn.GroupNorm(8, dim), nn.GELU()]
            channels = dim
        layers += [nn.Conv2d(dim, dim, 3, padding=1)]
        self.net = nn.Sequential(*layers)
        self.position = nn.Parameter(torch.zeros(1, self.grid * self.grid, dim))
        nn.init.normal_(self.position, std=0.02)

    kind = "conv"
    """The name of this class in :mod:`.encoder_io`'s registry of encoder folders."""

    def encoder_config(self) -> dict[str, int]:
        return {"image_size": self.image_size, "dim": self.dim, "depth": self.depth}

    def forward(self, images: torch.Tensor) -> EncoderOutput:
        tokens = self.net(images).flatten(2).transpose(1, 2) + self.position
        return EncoderOutput(tokens, tokens.mean(dim=1))


class HuggingFaceEncoder(nn.Module):
    """A vision transformer saved locally (``save_pretrained`` folder of DINOv2, CLIP or SigLIP's vision
    model, or any ``AutoModel`` whose output has ``last_hidden_state``), frozen by default. Its class token
    (when the model has one) is the pooled vector; the other tokens are the patches."""

    def __init__(self, folder: str | Path, *, frozen: bool = True) -> None:
        super().__init__()
        from transformers import AutoConfig, AutoModel

        folder = Path(folder)
        if not (folder / "config.json").is_file():
            raise FileNotFoundError(f"{str(folder)!r} is not a saved transformers model (no config.json)")
        config = AutoConfig.from_pretrained(folder)
        vision = getattr(config, "vision_config", config)
        self.model = AutoModel.from_pretrained(folder)
        if hasattr(self.model, "vision_model"):
            self.model = self.model.vision_model
        self.image_size = int(vision.image_size)
        self.grid = self.image_size // int(vision.patch_size)
        self.dim = int(vision.hidden_size)
        self.mean, self.std = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
        self.frozen = frozen
        if frozen:
            self.model.requires_grad_(False).eval()

    def forward(self, images: torch.Tensor) -> EncoderOutput:
        with torch.set_grad_enabled(not self.frozen and torch.is_grad_enabled()):
            hidden = self.model(pixel_values=images).last_hidden_state
        extra = hidden.shape[1] - self.grid * self.grid
        patches = hidden[:, extra:]
        pooled = hidden[:, 0] if extra > 0 else patches.mean(dim=1)
        return EncoderOutput(patches, pooled)
