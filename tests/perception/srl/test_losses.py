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
    # the floor: frames 1 and 2 have two equally likely positives (log 2 each), frames 0 and 3 one (0)
    floor = (0.1 / 0.07) * math.log(2) / 2
    assert floor <= low < floor + 0.1 < high
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


# --- the authors' details (hynnsk/SRL, srl/losses.py, configs/srl/movi_c.yaml) ---

FACTOR = 0.1 / 0.07  # SupCon's tau / tau_base


def _one_hot_patches(frames: int, patches: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Features (1, T, N, 2) with patch 0 of every frame = e0 and patch 1 = e1, and masks (1, T, 2, N) that
    assign patch n of every frame to slot n."""
    labels = torch.arange(patches).repeat(frames).view(1, frames, patches)
    features = torch.nn.functional.one_hot(labels, 2).float()
    masks = torch.nn.functional.one_hot(labels, 2).permute(0, 1, 3, 2).float()
    return features, masks


def test_deblurring_with_four_frame_groups_counts_same_slot_patches_of_other_frames_as_positives():
    features, masks = _one_hot_patches(frames=4, patches=2)
    # each anchor: 4 same-slot patches (itself and one in each other frame, logit 1/tau = 10), 4 others (0)
    expected = FACTOR * math.log(4 * (1 + math.exp(-10)))
    grouped = losses.deblurring_loss(features, features, masks, temperature=0.1, group_frames=4)
    torch.testing.assert_close(grouped, torch.tensor(expected))
    # a 4-frame group is the same contrast as the 8 patches side by side in one frame
    flat = losses.deblurring_loss(
        features.view(1, 1, 8, 2), features.view(1, 1, 8, 2), masks.permute(0, 2, 1, 3).reshape(1, 1, 2, 8),
        temperature=0.1, group_frames=1,
    )  # fmt: skip
    torch.testing.assert_close(grouped, flat)
    # frame by frame (group_frames=1) the other frames' patches are neither positives nor negatives
    single = losses.deblurring_loss(features, features, masks, temperature=0.1, group_frames=1)
    torch.testing.assert_close(single, torch.tensor(FACTOR * math.log(1 + math.exp(-10))))


def test_denoising_with_four_frame_groups_matches_the_frames_side_by_side():
    torch.manual_seed(2)
    adapted, frozen = torch.randn(1, 4, 3, 5), torch.randn(1, 4, 3, 6)
    masks = torch.randn(1, 4, 2, 3).softmax(dim=2)
    grouped = losses.denoising_loss(adapted, frozen, masks, temperature=0.1, topk=2, group_frames=4)
    side_by_side = losses.denoising_loss(
        adapted.view(1, 1, 12, 5), frozen.view(1, 1, 12, 6), masks.permute(0, 2, 1, 3).reshape(1, 1, 2, 12),
        temperature=0.1, topk=8, group_frames=1,
    )  # fmt: skip
    torch.testing.assert_close(grouped, side_by_side)
    assert not torch.isclose(grouped, losses.denoising_loss(adapted, frozen, masks, 0.1, 2, group_frames=1))


def test_denoising_pins_the_supcon_factor_on_a_hand_case():
    features, masks = _one_hot_patches(frames=1, patches=2)
    features = features.repeat(1, 1, 2, 1)  # 4 patches: e0, e1, e0, e1
    masks = masks.repeat(1, 1, 1, 2)
    # anchor: one other patch equal to it (logit 10; its nearest neighbour and same mask), two orthogonal (0)
    loss = losses.denoising_loss(features, features, masks, temperature=0.1, topk=2, group_frames=1)
    torch.testing.assert_close(loss, torch.tensor(FACTOR * math.log(1 + 2 * math.exp(-10))))
    unscaled = losses.denoising_loss(features, features, masks, 0.1, 2, 1, base_temperature=0.1)
    torch.testing.assert_close(loss, unscaled * FACTOR)


def test_slot_contrast_pins_the_supcon_factor_and_the_adjacent_frame_positives():
    slots = torch.tensor([[1.0, 0.0], [0.0, 1.0]]).view(1, 1, 2, 2).expand(1, 2, 2, 2)  # 2 slots, 2 frames
    # anchor (slot 0, t=0): positive (slot 0, t=1) at logit 10, negatives the other slot's two vectors at 0
    expected = FACTOR * math.log(1 + 2 * math.exp(-10))
    torch.testing.assert_close(losses.slot_contrastive_loss(slots, 0.1), torch.tensor(expected))
    # with 3 frames, slot 0 at t=0 and t=2 are neither positive nor negative for each other
    three = torch.tensor([[1.0, 0.0], [0.0, 1.0]]).view(1, 1, 2, 2).expand(1, 3, 2, 2)
    ends = math.log(1 + 3 * math.exp(-10))  # t=0 and t=2: one positive, 3 negatives
    middle = math.log(2 + 3 * math.exp(-10))  # t=1: two positives of equal logit
    torch.testing.assert_close(
        losses.slot_contrastive_loss(three, 0.1), torch.tensor(FACTOR * (2 * ends + middle) / 3)
    )
