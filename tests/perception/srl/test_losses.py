"""Each SRL loss on constructed cases where the right answer is known."""

from __future__ import annotations

import math

import torch

from embodia.perception.srl import losses

torch.set_num_threads(1)


def test_reconstruction_is_zero_for_a_perfect_reconstruction():
    x = torch.randn(2, 3, 5, 4)
    assert losses.reconstruction_loss(x, x) == 0
    assert losses.reconstruction_loss(x + 1, x) > 0


def test_slot_contrast_is_lower_for_consistent_slots_than_for_shuffled_ones():
    torch.manual_seed(0)
    base = torch.randn(3, 1, 5, 16)
    consistent = base.expand(3, 4, 5, 16) + 0.05 * torch.randn(3, 4, 5, 16)
    shuffled = torch.stack([consistent[:, t, torch.randperm(5)] for t in range(4)], dim=1)
    low, high = losses.slot_contrastive_loss(consistent), losses.slot_contrastive_loss(shuffled)
    assert low >= 0 and low < 0.1 < high
    assert losses.slot_contrastive_loss(consistent[:, :1]) == 0  # a single frame has no pairs


def test_slot_regulariser_picks_the_flat_slot_of_the_duplicate_pair():
    n = 8
    slots = torch.tensor([[1.0, 0.0], [1.0, 0.01], [0.0, 1.0]]).view(1, 1, 3, 2)  # slots 0 and 1 duplicate
    sharp = torch.full((n,), 0.01)
    sharp[0] = 1 - 0.01 * (n - 1)
    flat = torch.full((n,), 1.0 / n) + torch.linspace(-0.01, 0.01, n)
    attn = torch.stack([sharp, flat, sharp.flip(0)]).view(1, 1, 3, n)
    chosen = losses.choose_redundant_slots(attn, slots, pairs=1)
    assert chosen.tolist() == [[False, True, False]]
    loss = losses.slot_regularization_loss(attn, slots, pairs=1)
    expected = (flat * (flat.log() + math.log(n))).sum()
    torch.testing.assert_close(loss, expected)
    assert loss >= 0
    uniform = torch.full((1, 1, 3, n), 1.0 / n)
    assert losses.slot_regularization_loss(uniform, slots, pairs=2) < 1e-6


def _clustered(labels: torch.Tensor, dim: int = 8, noise: float = 0.05) -> torch.Tensor:
    torch.manual_seed(1)
    centres = torch.nn.functional.normalize(torch.randn(int(labels.max()) + 1, dim), dim=-1)
    return centres[labels] + noise * torch.randn(*labels.shape, dim)


def test_deblurring_is_lower_when_decoder_outputs_follow_the_encoder_grouping():
    labels = torch.randint(0, 3, (2, 2, 12))  # (B, T, N) encoder-side assignment
    target = _clustered(labels)
    masks = torch.nn.functional.one_hot(labels, 3).permute(0, 1, 3, 2).float()  # (B, T, K, N)
    aligned = losses.deblurring_loss(target.clone(), target, masks)
    blurred = losses.deblurring_loss(target.mean(dim=2, keepdim=True).expand_as(target), target, masks)
    assert 0 < aligned < blurred


def test_denoising_is_lower_when_features_agree_with_the_decoder_masks():
    labels = torch.randint(0, 3, (2, 2, 12))
    features = _clustered(labels)
    masks = torch.nn.functional.one_hot(labels, 3).permute(0, 1, 3, 2).float()
    clean = losses.denoising_loss(features.clone(), features, masks, topk=2)
    noisy = losses.denoising_loss(torch.randn_like(features), features, masks, topk=2)
    assert 0 < clean < noisy
