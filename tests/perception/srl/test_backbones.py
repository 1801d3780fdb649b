"""The frozen backbones of the SRL experiment and the k-means reference on their features."""

from __future__ import annotations

import numpy as np
import torch

from embodia.perception.encoders import EncoderOutput
from embodia.perception.srl.backbones import (
    GeometryBackboneConfig,
    PooledEncoder,
    kmeans_labels,
    train_geometry_backbone,
)
from embodia.perception.video import render_videos

torch.set_num_threads(1)


class _GridEncoder(torch.nn.Module):
    """A 4x4 grid whose single channel is the patch index (row-major)."""

    image_size, grid, dim, mean, std = 8, 4, 1, (0.5,) * 3, (0.5,) * 3

    def forward(self, images: torch.Tensor) -> EncoderOutput:
        tokens = torch.arange(16.0).view(1, 16, 1).expand(len(images), 16, 1)
        return EncoderOutput(tokens, tokens.mean(dim=1))


def test_pooled_encoder_averages_each_two_by_two_block_of_patches():
    pooled = PooledEncoder(_GridEncoder(), 2)
    assert pooled.grid == 2 and pooled.dim == 1
    out = pooled(torch.zeros(1, 3, 8, 8)).patches[0, :, 0]
    # block (0, 0) holds patches 0, 1, 4, 5; block (0, 1) 2, 3, 6, 7; ...
    torch.testing.assert_close(out, torch.tensor([2.5, 4.5, 10.5, 12.5]))


def test_kmeans_separates_two_clusters_of_patch_features():
    left, right = torch.tensor([1.0, 0.0]), torch.tensor([0.0, 1.0])
    frame = torch.stack([left, left, right, right])  # a 2x2 grid: top row one cluster, bottom the other
    features = frame.expand(1, 3, 4, 2) + 0.01 * torch.randn(
        1, 3, 4, 2, generator=torch.Generator().manual_seed(0)
    )
    labels = kmeans_labels(features, clusters=2)
    assert labels.shape == (1, 3, 2, 2)
    assert (labels[:, :, 0] == labels[0, 0, 0, 0]).all() and (labels[:, :, 1] == labels[0, 0, 1, 0]).all()
    assert labels[0, 0, 0, 0] != labels[0, 0, 1, 0]


def test_geometry_backbone_learns_depth_and_frames_and_is_frozen():
    videos = render_videos("tiny", 2, seed=0)
    model, log = train_geometry_backbone(
        videos.rgb, videos.depth, GeometryBackboneConfig(steps=20, batch_size=4, dim=16, width=8)
    )
    first, last = log[0], log[-1]
    assert last["depth_l1"] < first["depth_l1"] and last["frame_mse"] < first["frame_mse"]
    assert not any(p.requires_grad for p in model.parameters())
    assert np.isfinite(first["depth_l1"])
