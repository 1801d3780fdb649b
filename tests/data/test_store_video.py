"""Camera keys stored as video in the trajectory store (``embodia/data/store_video.py``): what comes back,
what stays exact, the codec and frame-rate attributes, and corruption of the video bytes."""

from __future__ import annotations

import numpy as np
import pytest
import zarr

import embodia
from embodia.core.errors import StoreCorruptError, StoreError, StoreSchemaError
from embodia.data.sampling import WindowSampler
from embodia.data.store import FORMAT_VERSION, TrajectoryStore
from embodia.data.store_video import VIDEO_FORMAT_VERSION
from embodia.data.video import VideoEncoding, encode_frames, psnr
from embodia.runner.replay import replay

KITCHEN = "embodia/Kitchen-OpenDrawer-v0"
CAMERAS = {"cameras": ("agentview", "eye_in_hand"), "camera_width": 48, "camera_height": 48}
CAMERA_KEYS = ["agentview_rgb", "eye_in_hand_rgb"]
#: lowest PSNR (dB) of the store's default settings on the kitchen's 48x48 camera frames
#: (h264 at CRF 23 measures about 30 dB there, AV1 at CRF 30 about 32 dB)
KITCHEN_PSNR = 28.0


def synthetic_episode(length: int, seed: int, size: tuple[int, int] = (24, 32)) -> dict[str, np.ndarray]:
    """Smooth moving gradients (what cameras see, unlike noise) plus exact state, action and reward."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0 : size[0], 0 : size[1]]
    t = np.arange(length)[:, None, None]
    red = (x * 5 + t * 4 + seed * 9) % 256
    green = (y * 7 + t * 2) % 256
    rgb = np.stack([red, green, np.full_like(red, 90 + seed)], axis=-1).astype(np.uint8)
    return {
        "rgb": rgb,
        "state": rng.normal(size=(length, 3)).astype(np.float32),
        "action": rng.uniform(-1, 1, size=(length, 2)).astype(np.float32),
        "reward": rng.normal(size=length).astype(np.float32),
        "success": np.arange(length) == length - 1,
    }


@pytest.fixture(scope="module")
def kitchen_stores(tmp_path_factory):
    """The same two kitchen episodes with two cameras, recorded raw and with h264 video columns."""
    folder = tmp_path_factory.mktemp("kitchen")
    raw, video = folder / "raw.zarr", folder / "h264.zarr"
    common = {"episodes": 2, "seed": 5, "max_steps": 12, "record_sim_state": True, "env_kwargs": CAMERAS}
    embodia.rollout(KITCHEN, "expert", record=raw, **common)
    with TrajectoryStore(video, mode="a", video_codec="h264") as store:
        embodia.rollout(KITCHEN, "expert", record=store, **common)
    return TrajectoryStore(raw), TrajectoryStore(video)


def test_kitchen_cameras_come_back_within_the_codec_error_and_everything_else_exactly(kitchen_stores):
    raw, video = kitchen_stores
    assert video.video_codec == "h264" and video.video_keys == CAMERA_KEYS
    assert raw.video_codec is None and raw.video_keys == []
    assert video.schema == raw.schema  # a reader sees the same keys, shapes and dtypes
    assert video.fps == raw.fps == 20.0  # robosuite's control_freq of the kitchens
    assert (
        video.attrs["embodia_format"] == VIDEO_FORMAT_VERSION
        and raw.attrs["embodia_format"] == FORMAT_VERSION
    )
    assert not (video.path / "data" / "agentview_rgb").exists()
    for i in range(2):
        exact, decoded = raw.episode(i), video.episode(i)
        for key in exact:
            if key in CAMERA_KEYS:
                assert decoded[key].shape == exact[key].shape and decoded[key].dtype == np.uint8
                assert psnr(exact[key], decoded[key]) > KITCHEN_PSNR, key
                assert not np.array_equal(decoded[key], exact[key])  # it is lossy: the test compares pixels
            else:
                np.testing.assert_array_equal(decoded[key], exact[key], err_msg=key)
        np.testing.assert_array_equal(video.episode_meta(i).initial_state, raw.episode_meta(i).initial_state)
    assert video.verify()["videos_decoded"] == 4


def test_replay_verification_holds_on_a_video_store(kitchen_stores):
    _, video = kitchen_stores
    results = replay(video, verify=True, tolerance=0.0)
    assert [r.max_deviation for r in results] == [0.0, 0.0]


def test_av1_columns_round_trip(kitchen_stores, tmp_path):
    raw, _ = kitchen_stores
    episode = raw.episode(1)
    with TrajectoryStore(tmp_path / "av1.zarr", mode="a", video_codec="av1", fps=20) as store:
        store.add_episode(episode, env_id=KITCHEN)
    store = TrajectoryStore(tmp_path / "av1.zarr")
    assert store.video_codec == "av1" and store.attrs["video"]["crf"] == VideoEncoding.default("av1").crf
    decoded = store.episode(0)
    for key in CAMERA_KEYS:
        assert psnr(episode[key], decoded[key]) > KITCHEN_PSNR
    np.testing.assert_array_equal(decoded["sim_state"], episode["sim_state"])


def test_codec_none_keeps_images_raw_and_bit_exact(tmp_path):
    episode = synthetic_episode(9, 0)
    with TrajectoryStore(tmp_path / "raw.zarr", mode="a", video_codec="none", fps=15) as store:
        store.add_episode(episode, env_id="e")
    store = TrajectoryStore(tmp_path / "raw.zarr")
    assert store.video_codec is None and store.video_keys == [] and store.fps == 15.0
    assert store.attrs["embodia_format"] == FORMAT_VERSION and not (store.path / "video").exists()
    np.testing.assert_array_equal(store.episode(0)["rgb"], episode["rgb"])


def test_rows_read_across_episodes_and_windows_sampled_from_video(tmp_path):
    episodes = [synthetic_episode(n, i) for i, n in enumerate((7, 11, 5))]
    with TrajectoryStore(tmp_path / "v.zarr", mode="a", video_codec="h264", fps=10) as store:
        store.add_episodes([(e, {"env_id": "e", "seed": i}) for i, e in enumerate(episodes[:2])])
        store.add_episode(episodes[2], env_id="e", seed=2)  # a second commit appends to the same arrays
    store = TrajectoryStore(tmp_path / "v.zarr")
    everything = store.load(["rgb"])["rgb"]
    assert everything.shape == (23, 24, 32, 3)
    np.testing.assert_array_equal(store.array("rgb")[5:20], everything[5:20])  # spans all three episodes
    np.testing.assert_array_equal(everything[7:18], store.episode(1)["rgb"])
    assert psnr(np.concatenate([e["rgb"] for e in episodes]), everything) > 30.0
    batch = WindowSampler(store, horizon=3, seed=0).sample(16)
    assert batch["obs"]["rgb"].shape[0] == 16 and batch["obs"]["rgb"].dtype == np.uint8


def test_odd_sizes_grey_cameras_and_rgba(tmp_path):
    length = 6
    rng = np.random.default_rng(1)
    grey = np.repeat(np.linspace(0, 255, 15, dtype=np.uint8)[None, None, :, None], 9, axis=1)
    data = {
        "grey": np.repeat(grey, length, axis=0),  # (T, 9, 15, 1): odd height and width
        "rgba": rng.integers(0, 255, size=(length, 6, 6, 4), dtype=np.uint8),
        "action": np.zeros((length, 1), dtype=np.float32),
    }
    with TrajectoryStore(tmp_path / "v.zarr", mode="a", video_codec="h264") as store:
        store.add_episode(data, env_id="e")
    store = TrajectoryStore(tmp_path / "v.zarr")
    assert store.video_keys == ["grey"]  # yuv420p has no alpha: RGBA stays raw and exact
    decoded = store.episode(0)
    assert decoded["grey"].shape == (length, 9, 15, 1) and psnr(data["grey"], decoded["grey"]) > 35.0
    np.testing.assert_array_equal(decoded["rgba"], data["rgba"])


def test_codec_and_fps_must_match_an_existing_store(tmp_path):
    path = tmp_path / "v.zarr"
    with TrajectoryStore(path, mode="a", video_codec="h264", fps=10) as store:
        store.add_episode(synthetic_episode(4, 0), env_id="e")
    with pytest.raises(StoreError, match="keeps its images as h264, not raw: record with --video-codec h264"):
        TrajectoryStore(path, mode="a", video_codec="none")
    with pytest.raises(StoreError, match="recorded at 10 steps per second, not 30"):
        TrajectoryStore(path, mode="a", fps=30)
    with pytest.raises(StoreError, match="unknown video codec 'vp9'"):
        TrajectoryStore(tmp_path / "new.zarr", mode="a", video_codec="vp9")
    with pytest.raises(ValueError, match="fps must be a positive"):
        TrajectoryStore(tmp_path / "new.zarr", mode="a", fps=0)
    with TrajectoryStore(path, mode="a", video_codec="h264", fps=10) as store:  # the same: accepted
        with pytest.raises(StoreSchemaError, match="at 25 steps per second do not match"):
            store.add_episodes([(synthetic_episode(4, 1), {"env_id": "e", "fps": 25})])
        store.add_episodes([(synthetic_episode(4, 1), {"env_id": "e", "fps": 10.0})])
    assert TrajectoryStore(path).num_episodes == 2
    with pytest.raises(StoreError, match="read-only"):
        TrajectoryStore(path).set_fps(10)


def test_a_store_from_before_fps_and_video_opens_and_takes_an_fps(tmp_path):
    path = tmp_path / "old.zarr"
    with TrajectoryStore(path, mode="a") as store:
        store.add_episode(synthetic_episode(4, 0), env_id="e")
    root = zarr.open_group(str(path), mode="r+")
    root.attrs.put({k: v for k, v in root.attrs.items() if k != "fps"})  # as written before this change
    store = TrajectoryStore(path)
    assert store.fps is None and store.video_codec is None and store.summary()["fps"] is None
    with TrajectoryStore(path, mode="a", fps=12.5) as writer:  # a writer records the frequency it lacks
        assert writer.fps == 12.5
    assert TrajectoryStore(path).fps == 12.5


def test_a_video_shorter_than_its_episode_is_corruption_named_by_key_and_episode(tmp_path):
    path = tmp_path / "v.zarr"
    episodes = [synthetic_episode(8, 0), synthetic_episode(8, 1)]
    with TrajectoryStore(path, mode="a", video_codec="h264") as store:
        store.add_episodes([(e, {"env_id": "e"}) for e in episodes])
    # Rewrite episode 1's video with 5 of its 8 frames, checksums and byte ends consistent (another program).
    group = zarr.open_group(str(path / "video" / "rgb"), mode="r+")
    ends = group["ends"][:2]
    short = np.frombuffer(encode_frames(episodes[1]["rgb"][:5], VideoEncoding(), 10), dtype=np.uint8)
    group["bytes"][int(ends[0]) : int(ends[0]) + len(short)] = short
    group["ends"][1] = int(ends[0]) + len(short)
    store = TrajectoryStore(path)
    np.testing.assert_array_equal(store.episode(0)["state"], episodes[0]["state"])  # episode 0 is fine
    message = "video/rgb of episode 1 has 5 frames, the episode has 8 steps"
    with pytest.raises(StoreCorruptError, match=message):
        store.episode(1)
    with pytest.raises(StoreCorruptError, match=message):
        TrajectoryStore(path).verify()


def test_changed_video_bytes_fail_their_checksum(tmp_path):
    path = tmp_path / "v.zarr"
    with TrajectoryStore(path, mode="a", video_codec="h264") as store:
        store.add_episode(synthetic_episode(8, 0), env_id="e")
    chunk = path / "video" / "rgb" / "bytes" / "c" / "0"
    damaged = bytearray(chunk.read_bytes())
    damaged[len(damaged) // 2] ^= 0xFF
    chunk.write_bytes(bytes(damaged))
    store = TrajectoryStore(path)  # opening reads only the byte ends
    with pytest.raises(StoreCorruptError, match=r"video/rgb/bytes \(episode 0\).*CRC32C"):
        store.episode(0)


def test_missing_video_group_is_corruption(tmp_path):
    path = tmp_path / "v.zarr"
    with TrajectoryStore(path, mode="a", video_codec="h264") as store:
        store.add_episode(synthetic_episode(4, 0), env_id="e")
    import shutil

    shutil.rmtree(path / "video" / "rgb")
    with pytest.raises(StoreCorruptError, match="video/rgb is listed in its attributes but missing"):
        TrajectoryStore(path)


def test_overwrite_replaces_a_video_store_with_a_raw_one(tmp_path):
    path = tmp_path / "v.zarr"
    with TrajectoryStore(path, mode="a", video_codec="h264") as store:
        store.add_episode(synthetic_episode(4, 0), env_id="e")
    with TrajectoryStore(path, mode="w") as store:
        assert store.video_codec is None and store.num_episodes == 0
        store.add_episode(synthetic_episode(4, 0), env_id="e")
    assert not (path / "video").exists() and TrajectoryStore(path).attrs["embodia_format"] == FORMAT_VERSION
