"""FG-ARI and mBO on hand-checked cases."""

from __future__ import annotations

import numpy as np
import pytest

from embodia.perception.metrics import MetricShapeError, fg_ari, mbo, upsample_labels, video_fg_ari, video_mbo


def _video() -> np.ndarray:
    """Two frames of 4x4: background 0, object 1 (left half of the top rows), object 2 (right half)."""
    true = np.zeros((2, 4, 4), dtype=np.uint8)
    true[:, :2, :2] = 1
    true[:, :2, 2:] = 2
    return true


def test_perfect_and_permuted_segmentations_score_one():
    true = _video()
    assert video_fg_ari(true, true) == pytest.approx(1.0)
    assert video_mbo(true, true) == pytest.approx(1.0)
    permuted = np.choose(true, [5, 9, 3])  # 0->5, 1->9, 2->3: other ids, same partition
    assert video_fg_ari(true, permuted) == pytest.approx(1.0)
    assert video_mbo(true, permuted) == pytest.approx(1.0)


def test_background_labels_do_not_change_fg_ari():
    true = _video()
    pred = true.copy()
    pred[true == 0] = 1  # background merged into object 1's slot: FG-ARI ignores background pixels
    assert video_fg_ari(true, pred) == pytest.approx(1.0)
    assert video_mbo(true, pred) < 1.0  # but the IoU of object 1 falls


def test_everything_in_one_slot_scores_zero_fg_ari():
    true = _video()
    assert video_fg_ari(true, np.zeros_like(true)) == pytest.approx(0.0)


def test_half_right_case_matches_hand_computed_iou():
    true = _video()
    pred = np.zeros_like(true)
    pred[:, :2, :] = 7  # one predicted mask covers both objects (16 pixels over the two frames)
    # object 1: 8 pixels, all inside the 16-pixel mask -> IoU 8/16; the background label has IoU 0.
    # object 2: the same -> mBO = 0.5. FG-ARI: one cluster for two objects -> 0.
    assert video_mbo(true, pred) == pytest.approx(0.5)
    assert video_fg_ari(true, pred) == pytest.approx(0.0)
    pred[:, 0, 0] = 3  # split 2 of object 1's pixels off: the 7-mask has 14 pixels left
    # object 1: 6 / (8 + 14 - 6) = 6/16 with the 7-mask (2/8 with the 3-mask); object 2: 8 / (8 + 14 - 8)
    assert video_mbo(true, pred) == pytest.approx((6 / 16 + 8 / 14) / 2)


def test_batch_means_skip_videos_without_foreground_and_shapes_are_checked():
    true = np.stack([_video(), np.zeros((2, 4, 4), dtype=np.uint8)])
    pred = np.stack([_video(), np.zeros((2, 4, 4), dtype=np.uint8)])
    assert fg_ari(true, pred) == pytest.approx(1.0)
    assert mbo(true, pred) == pytest.approx(1.0)
    with pytest.raises(MetricShapeError):
        fg_ari(true, pred[:, :1])


def test_upsample_labels_is_nearest():
    grid = np.array([[[0, 1], [2, 3]]])
    up = upsample_labels(grid, 4)
    assert up.shape == (1, 4, 4)
    np.testing.assert_array_equal(up[0], np.repeat(np.repeat(grid[0], 2, 0), 2, 1))
