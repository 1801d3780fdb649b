"""The image-encoder protocol: shapes, normalisation, and a user's locally saved vision transformer."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from embodia.perception.encoders import ConvEncoder, HuggingFaceEncoder, prepare


def test_prepare_resizes_scales_and_normalises():
    encoder = ConvEncoder(image_size=32, dim=16, depth=2)
    frames = np.full((2, 48, 48, 3), 255, dtype=np.uint8)
    frames[1] = 0
    x = prepare(frames, encoder)
    assert x.shape == (2, 3, 32, 32)
    assert torch.allclose(x[0], torch.ones_like(x[0]))  # (1 - 0.5) / 0.5
    assert torch.allclose(x[1], -torch.ones_like(x[1]))


def test_conv_encoder_tokens_follow_the_patch_grid():
    encoder = ConvEncoder(image_size=32, dim=16, depth=2)
    out = encoder(torch.zeros(3, 3, 32, 32))
    assert encoder.grid == 8 and out.patches.shape == (3, 64, 16) and out.pooled.shape == (3, 16)
    assert torch.allclose(out.pooled, out.patches.mean(dim=1))
    # a bright square in the top-left corner changes the top-left tokens most
    images = torch.zeros(1, 3, 32, 32)
    images[..., :8, :8] = 1.0
    change = (encoder(images).patches - encoder(torch.zeros(1, 3, 32, 32)).patches).norm(dim=-1)[0]
    grid = change.reshape(8, 8)
    assert grid[:3, :3].mean() > grid[5:, 5:].mean()


def test_huggingface_encoder_reads_a_local_dinov2_folder(tmp_path):
    from transformers import Dinov2Config, Dinov2Model

    torch.manual_seed(0)
    config = Dinov2Config(
        image_size=32,
        patch_size=8,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
    )
    Dinov2Model(config).save_pretrained(tmp_path / "dinov2")
    encoder = HuggingFaceEncoder(tmp_path / "dinov2")
    out = encoder(prepare(np.zeros((2, 64, 64, 3), dtype=np.uint8), encoder))
    assert (encoder.image_size, encoder.grid, encoder.dim) == (32, 4, 32)
    assert out.patches.shape == (2, 16, 32) and out.pooled.shape == (2, 32)
    assert not any(p.requires_grad for p in encoder.parameters())  # frozen by default
    with pytest.raises(FileNotFoundError, match="not a saved transformers model"):
        HuggingFaceEncoder(tmp_path)
