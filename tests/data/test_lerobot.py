"""LeRobot datasets (embodia/data/lerobot_export.py, lerobot_import.py): a kitchen recording with two cameras
exported as v3.0 and imported back; the exported folder read by an independent reader written here from
LeRobot's format definition (pyarrow + PyAV only); a v2.1 dataset built here imported; bad input refused in
one error, nothing left behind."""

from __future__ import annotations

import json
import math
from pathlib import Path

import av
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import embodia
from embodia.data.lerobot_export import export_lerobot
from embodia.data.lerobot_format import (
    INSTRUCTION_KEY,
    LeRobotFormatError,
    aggregate_stats,
    decode_text,
    feature_stats,
)
from embodia.data.lerobot_import import import_lerobot
from embodia.data.lerobot_video import VideoFileEncoder
from embodia.data.store import TrajectoryStore
from embodia.runner.replay import replay

KITCHEN = "embodia/Kitchen-OpenDrawer-v0"
CAMERAS = ("agentview_rgb", "eye_in_hand_rgb")
PSNR_BOUNDS_DB = {("h264", 30): 24.0, ("h264", 18): 30.0, ("av1", 30): 30.0}
"""What images keep through a video codec (dB, on 64x48 kitchen frames, every episode and camera): chroma
subsampling (yuv420p) of small, sharp-edged renders caps PSNR near 33 dB whatever the quality; at LeRobot's
CRF 30, h264 keeps > 24 dB and AV1 > 30 dB; h264 at CRF 18 > 30 dB."""


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return math.inf if mse == 0 else 10 * math.log10(255**2 / mse)


@pytest.fixture(scope="module")
def kitchen(tmp_path_factory) -> Path:
    """Two 10-step kitchen episodes with two 64x48 cameras and simulator states."""
    path = tmp_path_factory.mktemp("lerobot") / "kitchen.zarr"
    embodia.rollout(
        KITCHEN,
        "random",
        episodes=2,
        seed=0,
        max_steps=10,
        record=path,
        record_sim_state=True,
        env_kwargs={"cameras": ("agentview", "eye_in_hand"), "camera_width": 64, "camera_height": 48},
    )
    return path


@pytest.fixture(scope="module")
def exported(kitchen, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("lerobot") / "kitchen_lerobot"
    export_lerobot(kitchen, out)
    return out


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".partial-" in p.name or ".replaced-" in p.name)


# ---------------------------------------------------------------------------------------------- round trip
@pytest.mark.parametrize(("codec", "crf"), list(PSNR_BOUNDS_DB))
def test_round_trip_keeps_every_step_exact_and_images_within_the_codec_error(kitchen, tmp_path, codec, crf):
    folder = tmp_path / f"{codec}_lerobot"
    result = export_lerobot(kitchen, folder, {"video_codec": codec, "crf": crf})
    instructions = {
        decode_text(row) for row in TrajectoryStore(kitchen).load([INSTRUCTION_KEY])[INSTRUCTION_KEY]
    }
    assert len(instructions) in (1, 2)  # each seed draws a layout, and with it which side the drawer opens
    assert result["episodes"] == 2 and result["frames"] == 20 and result["tasks"] == len(instructions)
    back = import_lerobot(folder, tmp_path / "back.zarr")
    original, imported = TrajectoryStore(kitchen), TrajectoryStore(back["path"])
    assert imported.fps == original.fps == 20.0
    assert imported.schema == original.schema
    assert list(imported.episode_ends) == list(original.episode_ends)
    bound = PSNR_BOUNDS_DB[codec, crf]
    for index in range(2):
        before, after = original.episode(index), imported.episode(index)
        for key, values in before.items():
            if key in CAMERAS:
                assert after[key].shape == values.shape and psnr(after[key], values) > bound, key
            else:
                assert after[key].dtype == values.dtype and np.array_equal(after[key], values), key
        meta, meta_back = original.episode_meta(index), imported.episode_meta(index)
        assert (meta_back.env_id, meta_back.env_kwargs, meta_back.seed) == (
            meta.env_id,
            meta.env_kwargs,
            meta.seed,
        )
        np.testing.assert_array_equal(meta_back.initial_state, meta.initial_state)
        np.testing.assert_array_equal(meta_back.final_state, meta.final_state)
    if (codec, crf) == ("h264", 30):  # the states came back, so the imported store re-simulates exactly
        assert max(r.max_deviation for r in replay(imported, verify=True, tolerance=1e-9)) <= 1e-9


def test_export_writes_lerobot_statistics(exported, kitchen):
    store = TrajectoryStore(kitchen)
    stats = json.loads((exported / "meta" / "stats.json").read_text())
    actions = store.load(["action"])["action"]
    np.testing.assert_allclose(stats["action"]["mean"], actions.mean(axis=0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(stats["action"]["std"], actions.std(axis=0), rtol=1e-4, atol=1e-6)
    assert stats["action"]["count"] == [20] and stats["next.reward"]["count"] == [20]
    assert set(stats["action"]) == {"min", "max", "mean", "std", "count", "q01", "q10", "q50", "q90", "q99"}
    camera = stats["observation.images.agentview_rgb"]
    assert np.asarray(camera["mean"]).shape == (3, 1, 1) and camera["count"] == [20]
    pixels = store.load(["agentview_rgb"])["agentview_rgb"].reshape(-1, 3) / 255.0
    np.testing.assert_allclose(np.ravel(camera["mean"]), pixels.mean(axis=0), rtol=1e-5)
    low, high = np.ravel(camera["q01"]), np.ravel(camera["q99"])
    assert (
        np.all(np.ravel(camera["min"]) <= low)
        and np.all(low <= high)
        and np.all(high <= np.ravel(camera["max"]))
    )


def test_aggregated_statistics_equal_those_of_all_frames_at_once():
    rng = np.random.default_rng(0)
    parts = [rng.normal(i, 1 + i, size=(n, 3)).astype(np.float32) for i, n in enumerate((7, 30, 12))]
    merged = aggregate_stats([{"x": feature_stats(p)} for p in parts])["x"]
    everything = np.concatenate(parts)
    np.testing.assert_allclose(merged["mean"], everything.mean(axis=0), rtol=1e-5)
    np.testing.assert_allclose(merged["std"], everything.std(axis=0), rtol=1e-4)
    np.testing.assert_array_equal(merged["min"], everything.min(axis=0))
    assert merged["count"].tolist() == [49]


# ---------------------------------------------------------------------------------------------- independent reader
def read_dataset(root: Path) -> dict:
    """A LeRobot v3.0 reader written from the format definition alone: checks every file ``info.json`` and
    ``meta/episodes`` name exists, that each data file's columns are the non-video features with their Arrow
    types, and that rows and video frames add up to the episodes' lengths."""
    info = json.loads((root / "meta" / "info.json").read_text())
    assert info["codebase_version"] == "v3.0" and isinstance(info["fps"], int)
    fps, features = info["fps"], info["features"]
    for name in ("timestamp", "frame_index", "episode_index", "index", "task_index"):
        assert features[name]["shape"] == [1]
    videos = [k for k, f in features.items() if f["dtype"] == "video"]
    columns = [k for k, f in features.items() if f["dtype"] != "video"]
    episodes = pa.concat_tables(
        [pq.read_table(p) for p in sorted((root / "meta" / "episodes").glob("chunk-*/file-*.parquet"))]
    ).to_pylist()
    assert [e["episode_index"] for e in episodes] == list(range(info["total_episodes"]))
    assert sum(e["length"] for e in episodes) == info["total_frames"]
    assert info["splits"] == {"train": f"0:{info['total_episodes']}"}
    tasks = pq.read_table(root / "meta" / "tasks.parquet")
    assert json.loads(tasks.schema.metadata[b"pandas"])["index_columns"] == ["task"]
    task_texts = dict(zip(tasks.column("task_index").to_pylist(), tasks.column("task").to_pylist()))
    assert len(task_texts) == info["total_tasks"]
    rows_per_file: dict[str, pa.Table] = {}
    frames_per_video: dict[str, int] = {}
    for episode in episodes:
        data = root / info["data_path"].format(
            chunk_index=episode["data/chunk_index"], file_index=episode["data/file_index"]
        )
        assert data.is_file(), data
        if str(data) not in rows_per_file:
            table = pq.read_table(data)
            assert table.column_names == columns
            for name in columns:
                dtype, shape = features[name]["dtype"], features[name]["shape"]
                value = pa.from_numpy_dtype(np.dtype(dtype))
                expected = value if shape == [1] else pa.list_(value, shape[0]) if len(shape) == 1 else None
                assert expected is None or table.schema.field(name).type == expected, name
            rows_per_file[str(data)] = table
        table = rows_per_file[str(data)]
        mask = np.asarray(table.column("episode_index").to_numpy()) == episode["episode_index"]
        assert mask.sum() == episode["length"]
        index = np.asarray(table.column("index").to_numpy())[mask]
        assert index.tolist() == list(range(episode["dataset_from_index"], episode["dataset_to_index"]))
        frame_index = np.asarray(table.column("frame_index").to_numpy())[mask]
        np.testing.assert_allclose(
            np.asarray(table.column("timestamp").to_numpy())[mask], frame_index / fps, atol=1e-6
        )
        for task_index in set(np.asarray(table.column("task_index").to_numpy())[mask].tolist()):
            assert task_texts[task_index] in episode["tasks"]
        for key in videos:
            path = root / info["video_path"].format(
                video_key=key,
                chunk_index=episode[f"videos/{key}/chunk_index"],
                file_index=episode[f"videos/{key}/file_index"],
            )
            assert path.is_file(), path
            start, end = episode[f"videos/{key}/from_timestamp"], episode[f"videos/{key}/to_timestamp"]
            assert math.isclose(end - start, episode["length"] / fps)
            frames_per_video[str(path)] = frames_per_video.get(str(path), 0) + episode["length"]
    for path, count in frames_per_video.items():
        with av.open(path) as container:
            stream = container.streams.video[0]
            times = [float(frame.pts * stream.time_base) for frame in container.decode(stream)]
        assert len(times) == count and np.allclose(times, np.arange(count) / fps), path
    return {"info": info, "episodes": episodes, "files": sorted(rows_per_file) + sorted(frames_per_video)}


def test_an_independent_reader_finds_every_file_schema_and_frame(exported):
    dataset = read_dataset(exported)
    info = dataset["info"]
    assert info["total_episodes"] == 2 and info["total_frames"] == 20 and info["fps"] == 20
    assert set(info["features"]) >= {
        "observation.state",
        "observation.images.agentview_rgb",
        "observation.images.eye_in_hand_rgb",
        "action",
        "next.reward",
        "next.done",
        "next.success",
    }
    camera = info["features"]["observation.images.agentview_rgb"]
    assert camera["shape"] == [48, 64, 3] and camera["names"] == ["height", "width", "channels"]
    assert camera["info"]["video.codec"] == "h264" and camera["info"]["video.pix_fmt"] == "yuv420p"
    assert len(dataset["files"]) == 3  # one data file, one video per camera


def test_files_rotate_at_the_size_limits_and_chunks_fill_up(kitchen, tmp_path):
    folder = tmp_path / "rotated"
    config = {"chunks_size": 1, "data_files_size_in_mb": 1e-6, "video_files_size_in_mb": 1e-6}
    export_lerobot(kitchen, folder, config)
    dataset = read_dataset(folder)
    assert [(e["data/chunk_index"], e["data/file_index"]) for e in dataset["episodes"]] == [(0, 0), (1, 0)]
    assert len(dataset["files"]) == 6
    back = TrajectoryStore(import_lerobot(folder, tmp_path / "back.zarr")["path"])
    np.testing.assert_array_equal(
        back.load(["action"])["action"], TrajectoryStore(kitchen).load(["action"])["action"]
    )


# ---------------------------------------------------------------------------------------------- v2.1 and foreign data
def png_column(images: np.ndarray) -> pa.Array:
    """A Hugging Face ``Image`` column: ``{bytes, path}`` structs of PNG files."""
    import io

    from PIL import Image

    encoded = []
    for image in images:
        buffer = io.BytesIO()
        Image.fromarray(image).save(buffer, format="PNG")
        encoded.append({"bytes": buffer.getvalue(), "path": None})
    return pa.array(encoded, type=pa.struct([("bytes", pa.binary()), ("path", pa.string())]))


def write_v21(root: Path, *, lengths=(6, 4), fps=10, short_video: int = 0) -> dict[str, np.ndarray]:
    """A LeRobot v2.1 dataset as LeRobot 0.3 wrote them: one parquet file and one mp4 per episode, JSON Lines
    metadata, a camera as video and one as PNG images in the parquet files. Returns the states, actions and
    PNG images it holds."""
    rng = np.random.default_rng(1)
    total = sum(lengths)
    state = rng.normal(size=(total, 3)).astype(np.float32)
    action = rng.normal(size=(total, 2)).astype(np.float32)
    wrist = rng.integers(0, 256, size=(total, 8, 10, 3), dtype=np.uint8)
    features = {
        "observation.images.wrist": {
            "dtype": "image",
            "shape": [8, 10, 3],
            "names": ["height", "width", "channel"],
        },
        "observation.state": {"dtype": "float32", "shape": [3], "names": ["x", "y", "z"]},
        "observation.images.top": {
            "dtype": "video",
            "shape": [16, 16, 3],
            "names": ["height", "width", "channel"],
            "info": {"video.fps": fps, "video.codec": "h264", "video.pix_fmt": "yuv420p", "has_audio": False},
        },
        "action": {"dtype": "float32", "shape": [2], "names": ["a", "b"]},
        "next.reward": {"dtype": "float32", "shape": [1], "names": None},
        "next.done": {"dtype": "bool", "shape": [1], "names": None},
        "timestamp": {"dtype": "float32", "shape": [1], "names": None},
        "frame_index": {"dtype": "int64", "shape": [1], "names": None},
        "episode_index": {"dtype": "int64", "shape": [1], "names": None},
        "index": {"dtype": "int64", "shape": [1], "names": None},
        "task_index": {"dtype": "int64", "shape": [1], "names": None},
    }
    info = {
        "codebase_version": "v2.1",
        "robot_type": "koch",
        "total_episodes": len(lengths),
        "total_frames": total,
        "total_tasks": 2,
        "total_videos": len(lengths),
        "total_chunks": 1,
        "chunks_size": 1000,
        "fps": fps,
        "splits": {"train": f"0:{len(lengths)}"},
        "data_path": "data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet",
        "video_path": "videos/chunk-{episode_chunk:03d}/{video_key}/episode_{episode_index:06d}.mp4",
        "features": features,
    }
    (root / "meta").mkdir(parents=True)
    (root / "meta" / "info.json").write_text(json.dumps(info, indent=4))
    tasks = ["pick the cube", "push the cube"]
    (root / "meta" / "tasks.jsonl").write_text(
        "".join(json.dumps({"task_index": i, "task": t}) + "\n" for i, t in enumerate(tasks))
    )
    (root / "meta" / "episodes.jsonl").write_text(
        "".join(
            json.dumps({"episode_index": i, "tasks": [tasks[i % 2]], "length": n}) + "\n"
            for i, n in enumerate(lengths)
        )
    )
    start = 0
    for episode, length in enumerate(lengths):
        rows = slice(start, start + length)
        table = pa.table(
            {
                "observation.images.wrist": png_column(wrist[rows]),
                "observation.state": pa.FixedSizeListArray.from_arrays(pa.array(state[rows].ravel()), 3),
                "action": pa.FixedSizeListArray.from_arrays(pa.array(action[rows].ravel()), 2),
                "next.reward": pa.array(np.zeros(length, np.float32)),
                "next.done": pa.array(np.arange(length) == length - 1),
                "timestamp": pa.array((np.arange(length) / fps).astype(np.float32)),
                "frame_index": pa.array(np.arange(length, dtype=np.int64)),
                "episode_index": pa.array(np.full(length, episode, dtype=np.int64)),
                "index": pa.array(np.arange(start, start + length, dtype=np.int64)),
                "task_index": pa.array(np.full(length, episode % 2, dtype=np.int64)),
            }
        )
        (root / "data" / "chunk-000").mkdir(parents=True, exist_ok=True)
        pq.write_table(table, root / "data" / "chunk-000" / f"episode_{episode:06d}.parquet")
        video = root / "videos" / "chunk-000" / "observation.images.top" / f"episode_{episode:06d}.mp4"
        encoder = VideoFileEncoder(video, "h264", fps, 16, 16, crf=18)
        frames = np.full((length - (short_video if episode == 1 else 0), 16, 16, 3), 40 * episode, np.uint8)
        encoder.add("top", frames)
        encoder.close()
        start += length
    return {"state": state, "action": action, "wrist": wrist}


def test_a_v21_dataset_is_imported_with_its_fps_tasks_and_boundaries(tmp_path):
    arrays = write_v21(tmp_path / "koch_pick")
    result = import_lerobot(tmp_path / "koch_pick", tmp_path / "koch.zarr")
    assert result["version"] == "v2.1" and result["episodes"] == 2 and result["steps"] == 10
    store = TrajectoryStore(tmp_path / "koch.zarr")
    assert store.fps == 10.0 and store.episode_lengths.tolist() == [6, 4]
    np.testing.assert_array_equal(store.load(["state"])["state"], arrays["state"])
    np.testing.assert_array_equal(store.load(["action"])["action"], arrays["action"])
    np.testing.assert_array_equal(store.load(["wrist"])["wrist"], arrays["wrist"])  # PNG: lossless
    episode = store.episode(1)
    assert bytes(episode["instruction"][0]).rstrip(b"\0").decode() == "push the cube"
    assert episode["top"].shape == (4, 16, 16, 3) and abs(int(episode["top"].mean()) - 40) <= 2
    assert episode["terminated"].tolist() == [False, False, False, True] and not episode["truncated"].any()
    assert store.episode_meta(0).env_id == "lerobot:koch_pick" and store.episode_meta(0).initial_state is None


def test_an_imported_foreign_store_can_be_trained_on_and_exported_again(tmp_path):
    write_v21(tmp_path / "koch", lengths=(12, 12))
    import_lerobot(tmp_path / "koch", tmp_path / "koch.zarr")
    from embodia.policies.train import TrainConfig, train

    result = train(
        TrainConfig(
            method="bc",
            dataset=str(tmp_path / "koch.zarr"),
            out=str(tmp_path / "policy"),
            steps=3,
            batch_size=8,
            eval_every=0,
        )
    )
    assert (tmp_path / "policy" / "policy" / "config.json").is_file() and result["step"] == 3
    again = export_lerobot(tmp_path / "koch.zarr", tmp_path / "again")
    assert again["tasks"] == 2 and read_dataset(tmp_path / "again")["info"]["total_frames"] == 24


# ---------------------------------------------------------------------------------------------- bad input
def corrupt(exported: Path, tmp_path: Path, change) -> Path:
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(exported, copy)
    change(copy)
    return copy


def set_info(field, value):
    def change(root: Path) -> None:
        info = json.loads((root / "meta" / "info.json").read_text())
        if isinstance(field, tuple):
            info["features"][field[0]][field[1]] = value
        else:
            info[field] = value
        (root / "meta" / "info.json").write_text(json.dumps(info))

    return change


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda root: (root / "meta" / "info.json").unlink(), "is not a LeRobot dataset"),
        (set_info("codebase_version", "v1.6"), "codebase_version 'v1.6'"),
        (set_info(("action", "shape"), [6]), "disagrees with meta/info.json: column 'action'"),
        (
            set_info(("next.reward", "dtype"), "float64"),
            "disagrees with meta/info.json: column 'next.reward'",
        ),
        (
            lambda root: next((root / "videos").rglob("*.mp4")).unlink(),
            "missing video file of observation.images.agentview_rgb videos/",
        ),
        (
            set_info(("observation.images.agentview_rgb", "info"), {"is_depth_map": True}),
            "'observation.images.agentview_rgb' is a depth video",
        ),
    ],
    ids=["not-a-dataset", "unknown-version", "schema-shape", "schema-dtype", "missing-video", "depth-video"],
)
def test_bad_datasets_are_refused_in_one_line_and_nothing_is_written(exported, tmp_path, change, message):
    folder = corrupt(exported, tmp_path, change)
    (tmp_path / "out").mkdir()
    with pytest.raises(LeRobotFormatError, match=message) as error:
        import_lerobot(folder, tmp_path / "out" / "store.zarr")
    assert "\n" not in str(error.value)
    assert not (tmp_path / "out" / "store.zarr").exists() and leftovers(tmp_path / "out") == []


def test_a_video_shorter_than_its_episode_is_refused(tmp_path):
    write_v21(tmp_path / "short", short_video=2)
    with pytest.raises(
        LeRobotFormatError, match="has 2 of the episode's 4 frames .* shorter than its episode"
    ):
        import_lerobot(tmp_path / "short", tmp_path / "short.zarr")
    assert not (tmp_path / "short.zarr").exists() and leftovers(tmp_path) == []


def test_exports_that_cannot_be_written_are_refused_before_anything_is_written(kitchen, exported, tmp_path):
    with pytest.raises(LeRobotFormatError, match="already exists and is not empty"):
        export_lerobot(kitchen, exported)
    odd = tmp_path / "odd.zarr"
    embodia.rollout(
        KITCHEN, "random", episodes=1, seed=0, max_steps=2, record=odd,
        env_kwargs={"cameras": ("agentview",), "camera_width": 32, "camera_height": 25},
    )  # fmt: skip
    with pytest.raises(
        LeRobotFormatError, match="'agentview_rgb' is 25x32 pixels; yuv420p video needs even sizes"
    ):
        export_lerobot(odd, tmp_path / "odd_lerobot")
    encoder = VideoFileEncoder(tmp_path / "v.mp4", "h264", 20, 16, 16)
    encoder.add("cam", np.zeros((2, 16, 16, 3), np.uint8))
    with pytest.raises(LeRobotFormatError, match="one image size"):
        encoder.add("cam", np.zeros((2, 32, 16, 3), np.uint8))
    encoder.close()
    assert leftovers(tmp_path) == [] and not (tmp_path / "odd_lerobot").exists()
