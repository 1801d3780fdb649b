"""Shapes and mask normalisation of the SRL model."""

from __future__ import annotations

import torch
from torch import nn

from embodia.perception.encoders import ConvEncoder
from embodia.perception.srl import SlotAttention, SRLModel

torch.set_num_threads(1)


def test_slot_attention_shapes_and_masks_sum_to_one_over_slots():
    torch.manual_seed(0)
    sa = SlotAttention(16, 16, iters=3)
    slots, attn, over_patches = sa(torch.randn(2, 5, 16), torch.randn(2, 30, 16))
    assert slots.shape == (2, 5, 16) and attn.shape == (2, 5, 30) and over_patches.shape == (2, 5, 30)
    torch.testing.assert_close(attn.sum(dim=1), torch.ones(2, 30))
    torch.testing.assert_close(over_patches.sum(dim=2), torch.ones(2, 5))


def test_model_outputs_have_the_documented_shapes_and_normalised_masks():
    torch.manual_seed(0)
    encoder = ConvEncoder(image_size=32, dim=16, depth=2).requires_grad_(False)
    frames = torch.randn(2, 3, 3, 32, 32)
    features = SRLModel.encode(encoder, frames)
    assert features.shape == (2, 3, 64, 16)
    model = SRLModel(feat_dim=16, patches=64, num_slots=4, slot_dim=8, proj_dim=8)
    out = model(features)
    assert out.slots.shape == (2, 3, 4, 8)
    assert out.attn.shape == out.dec_masks.shape == out.attn_patches.shape == (2, 3, 4, 64)
    assert out.recon.shape == out.target.shape == (2, 3, 64, 16)
    assert out.adapted.shape == (2, 3, 64, 8)
    torch.testing.assert_close(out.dec_masks.sum(dim=2), torch.ones(2, 3, 64))
    torch.testing.assert_close(out.attn.sum(dim=2), torch.ones(2, 3, 64))
    # the encoder is frozen: no gradient reaches its tokens
    out.recon.sum().backward()
    assert not out.target.requires_grad


def test_projectors_are_one_bias_free_linear_map_each():
    model = SRLModel(feat_dim=16, patches=64, num_slots=4, slot_dim=8, proj_dim=8)
    for projector, inp in ((model.project_feat, 16), (model.project_adapted, 8)):
        assert type(projector) is nn.Linear and projector.bias is None
        assert projector.weight.shape == (8, inp)
