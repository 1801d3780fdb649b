"""Chunked upscaling of frames and files: the chunks join exactly, sizes and counts follow the factors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from embodia.perception.vff import FieldConfig, VFFError, VideoFourierField, upscale_frames
from embodia.perception.vff.upscale import MARKER, check_output, written_by_us

torch.set_num_threads(1)


def test_chunks_join_exactly_and_sizes_follow_the_factors():
    frames = np.random.default_rng(0).integers(0, 256, (9, 6, 7, 3), dtype=np.uint8)
    whole = upscale_frames(frames, 2.0, 2, chunk=100)
    parts = upscale_frames(frames, 2.0, 2, chunk=3)
    assert whole.shape == (17, 12, 14, 3) and np.array_equal(whole, parts)
    assert upscale_frames(frames, 1.5, 2.5, chunk=4).shape == (21, 9, 10, 3)  # floor(8 * 2.5) + 1
    model = VideoFourierField(FieldConfig(bases=4, width=4, depth=1))
    chunked = upscale_frames(frames, 2.0, 2, model, chunk=3, context=2)
    assert chunked.shape == whole.shape and np.abs(chunked.astype(int) - whole).mean() < 40


def test_only_videos_this_module_wrote_are_overwritten(tmp_path):
    mine, theirs = tmp_path / "mine.mp4", tmp_path / "theirs.mp4"
    mine.write_bytes(b"\x00" * 10 + MARKER + b"\x00")
    theirs.write_bytes(b"\x00" * 100)
    assert written_by_us(mine) and not written_by_us(theirs)
    assert check_output(mine, overwrite=True) == mine
    with pytest.raises(VFFError, match="pass --overwrite"):
        check_output(mine, overwrite=False)
    with pytest.raises(VFFError, match="not a video embodia vsr wrote"):
        check_output(theirs, overwrite=True)
