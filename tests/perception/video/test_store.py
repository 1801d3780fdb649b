"""Video stores: exact round trip, per-video chunks, and refusing folders that are not video stores."""

from __future__ import annotations

import numpy as np
import pytest
import zarr

from embodia.core.errors import EmbodiaError
from embodia.perception.video import PRESETS, load_videos, render_videos, save_videos


@pytest.fixture(scope="module")
def batch():
    return render_videos(PRESETS["tiny"], count=3, seed=7)


def _same(a, b) -> bool:
    return (
        all(np.array_equal(getattr(a, n), getattr(b, n)) for n in ("rgb", "depth", "masks"))
        and a.config == b.config
        and a.seed == b.seed
    )


def test_round_trip_is_exact_and_chunked_per_video(batch, tmp_path):
    path = save_videos(tmp_path / "videos", batch)
    loaded = load_videos(path)
    assert _same(loaded, batch)
    assert loaded.depth.dtype == np.float32 and loaded.masks.dtype == np.uint8
    assert isinstance(loaded.config.shapes, tuple)
    root = zarr.open_group(str(path), mode="r")
    assert root["rgb"].chunks == (1, *batch.rgb.shape[1:])
    assert root.attrs["embodia_video"] == 1 and root.attrs["seed"] == 7


def test_saving_again_replaces_only_what_it_wrote(batch, tmp_path):
    path = save_videos(tmp_path / "videos", batch)
    (path / "NOTES.txt").write_text("mine")
    smaller = render_videos("tiny", count=1, seed=8)
    save_videos(path, smaller)
    assert _same(load_videos(path), smaller)
    assert (path / "NOTES.txt").read_text() == "mine"


def test_empty_batch_round_trips(tmp_path):
    empty = render_videos("tiny", count=0, seed=0)
    assert _same(load_videos(save_videos(tmp_path / "empty", empty)), empty)


def test_refuses_folders_that_are_not_video_stores(batch, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "data.csv").write_text("a,b\n")
    for action in (lambda: load_videos(other), lambda: save_videos(other, batch)):
        with pytest.raises(EmbodiaError) as error:
            action()
        message = str(error.value)
        assert str(other) in message and "\n" not in message
    assert sorted(p.name for p in other.iterdir()) == ["data.csv"]
    with pytest.raises(EmbodiaError, match="does not exist"):
        load_videos(tmp_path / "missing")
    trajectories = tmp_path / "zarr_group"
    zarr.open_group(str(trajectories), mode="w").attrs["something"] = 1
    with pytest.raises(EmbodiaError, match="not a video store"):
        load_videos(trajectories)
