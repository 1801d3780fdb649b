"""Frozen backbones for SRL trained on the rendered videos, and the k-means reference on their features.

The paper's slot model reads frozen DINOv2 ViT-S/14 features (the authors' MOVi-C config
``configs/srl/movi_c.yaml``: ``vit_small_patch14_dinov2``, block 12). No pretrained weights can be
downloaded here, so the frozen backbone is trained on the rendered training videos before the slot model:

- ``autoencoder``: a :class:`~embodia.perception.encoders.ConvEncoder` trained as a frame autoencoder
  (:func:`embodia.perception.srl.train.pretrain_encoder`): ``L = ||D(E(x)) - x||^2``.
- ``geometry``: the network of the geometry teacher
  (:class:`embodia.perception.teachers.GeometryTeacher`, a 16x16 grid of ``dim`` channels) trained on the
  videos' rendered depth with its log-L1 loss and, in place of its segmentation head (the videos' only
  labels are the instance masks the evaluation scores, so they are not used), a frame reconstruction head::

      L = mean |log d_hat - log d| + ||x_hat - x||^2          (x normalised to [-1, 1])

A user with DINOv2 weights saved locally runs the authors' backbone through
:class:`~embodia.perception.encoders.HuggingFaceEncoder` (``scripts/srl_experiment.py --hf-encoder DIR``).

:func:`kmeans_labels` clusters each video's frozen patch features (all frames together, standardised per
channel) into K groups with scikit-learn's ``KMeans``: what the features alone give, without any slot model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch.nn import functional as F

from embodia.perception.encoders import ImageEncoder
from embodia.perception.teachers import GeometryTeacher


@dataclass
class GeometryBackboneConfig:
    """Training of the ``geometry`` backbone on rendered videos."""

    steps: int = 300
    """Adam steps."""
    batch_size: int = 32
    """Frames per step."""
    lr: float = 2e-3
    """Adam learning rate (constant)."""
    dim: int = 64
    """Channels of the 16x16 feature map (the token width D)."""
    width: int = 32
    """Channels of the first block and of the decoder."""
    seed: int = 0
    """Seed of the initialisation and the batches."""


def train_geometry_backbone(
    rgb: np.ndarray, depth: np.ndarray, config: GeometryBackboneConfig | None = None
) -> tuple[GeometryTeacher, list[dict]]:
    """Train :class:`GeometryTeacher`'s network on uint8 videos ``rgb`` (N, T, H, W, 3) and metric ``depth``
    (N, T, H, W), resized to 64x64: log-depth L1 + frame reconstruction; returns it frozen, and a loss log."""
    config = config or GeometryBackboneConfig()
    torch.manual_seed(config.seed)
    model = GeometryTeacher(dim=config.dim, width=config.width, classes=3)  # 3 "classes" = the RGB head
    frames = torch.as_tensor(rgb).flatten(0, 1).permute(0, 3, 1, 2).float().div(255.0).sub(0.5).div(0.5)
    log_depth = torch.as_tensor(depth).flatten(0, 1).float().clamp_min(1e-3).log()[:, None]
    size = (model.image_size,) * 2  # the network takes 64x64 frames; other sizes are resized
    if frames.shape[-2:] != size:
        frames = F.interpolate(frames, size=size, mode="bilinear", align_corners=False)
        log_depth = F.interpolate(log_depth, size=size, mode="bilinear", align_corners=False)
    log_depth = log_depth[:, 0]
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)
    generator = torch.Generator().manual_seed(config.seed)
    log: list[dict] = []
    for step in range(config.steps):
        index = torch.randint(len(frames), (config.batch_size,), generator=generator)
        predicted_depth, predicted_frame = model.predict(frames[index])
        depth_loss = (predicted_depth - log_depth[index]).abs().mean()
        frame_loss = F.mse_loss(predicted_frame, frames[index])
        loss = depth_loss + frame_loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 50 == 0 or step == config.steps - 1:
            log.append({"step": step, "depth_l1": depth_loss.item(), "frame_mse": frame_loss.item()})
    return model.requires_grad_(False).eval(), log


def kmeans_labels(features: torch.Tensor, clusters: int, seed: int = 0) -> np.ndarray:
    """Per-video k-means of frozen patch features (N, T, P, D) -> labels (N, T, g, g), g = sqrt(P)."""
    from sklearn.cluster import KMeans

    n, t, p, _ = features.shape
    grid = int(round(p**0.5))
    labels = []
    for video in features:
        x = video.flatten(0, 1).double().numpy()
        x = (x - x.mean(0)) / (x.std(0) + 1e-4)
        fitted = KMeans(clusters, n_init=3, random_state=seed).fit_predict(x)
        labels.append(fitted.reshape(t, grid, grid))
    return np.stack(labels)


def encoder_tokens(encoder: ImageEncoder, rgb: np.ndarray) -> torch.Tensor:
    """The frozen encoder's patch tokens (N, T, P, D) of uint8 videos (N, T, H, W, 3)."""
    from embodia.perception.srl.model import SRLModel
    from embodia.perception.srl.train import _normalised_frames

    return SRLModel.encode(encoder, _normalised_frames(rgb, encoder))


class PooledEncoder(torch.nn.Module):
    """An encoder whose token grid is average-pooled ``factor`` x ``factor`` (fewer, coarser patches: the
    slot model's cost grows with the patch count)."""

    def __init__(self, encoder: ImageEncoder, factor: int = 2) -> None:
        super().__init__()
        self.encoder, self.factor = encoder, int(factor)
        self.image_size, self.dim = encoder.image_size, encoder.dim
        self.grid = encoder.grid // self.factor
        self.mean, self.std = encoder.mean, encoder.std

    def forward(self, images: torch.Tensor):
        from embodia.perception.encoders import EncoderOutput

        out = self.encoder(images)
        b, _, d = out.patches.shape
        g = self.encoder.grid
        grid = out.patches.transpose(1, 2).reshape(b, d, g, g)
        tokens = F.avg_pool2d(grid, self.factor).flatten(2).transpose(1, 2)
        return EncoderOutput(tokens, out.pooled)
