"""Write a trajectory store as a LeRobotDataset v3.0 (``embodia data export STORE --lerobot DIR``).

The folder that comes out is what LeRobot's own recorder writes (``LeRobotDataset(repo_id, root=DIR)``
opens it): ``meta/info.json`` (features with dtypes and shapes, fps, counts, size limits, path templates),
``meta/stats.json``, ``meta/tasks.parquet``, ``meta/episodes/chunk-XXX/file-XXX.parquet`` (one row per
episode: tasks, length, where its rows and frames are, its statistics), ``data/chunk-XXX/file-XXX.parquet``
(one row per step, one row group per episode, snappy) and ``videos/<feature>/chunk-XXX/file-XXX.mp4``. A data
file takes episodes until it would pass ``data_files_size_in_mb``, a video file until it would pass
``video_files_size_in_mb``; a chunk folder holds ``chunks_size`` files. Format details and the key mapping:
:mod:`embodia.data.lerobot_format`; the sources in huggingface/lerobot are cited there.

Tasks: each step's ``instruction`` (UTF-8 bytes) where the store has that key, else the episode's env id;
``task`` replaces both. Besides LeRobot's columns, each ``meta/episodes`` row carries the episode's
``embodia/env_id``, ``embodia/env_kwargs`` (JSON), ``embodia/seed`` and simulator states, so that importing
the folder again gives back a store that replays (LeRobot ignores them).

Nothing is half-written: the dataset is built in a hidden folder next to ``DIR`` and renamed into place at
the end; on any error that folder is removed and ``DIR`` is untouched.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import numpy as np
from pydantic import Field

from embodia.core.validation import validate
from embodia.data.lerobot_format import (
    CHUNKS_SIZE,
    CODEBASE_VERSION,
    DATA_FILES_SIZE_IN_MB,
    DATA_PATH,
    EMBODIA_COLUMNS,
    EPISODES_PATH,
    INDEX_FEATURES,
    INFO_PATH,
    INSTRUCTION_KEY,
    STATS_PATH,
    TASKS_PATH,
    VIDEO_FILES_SIZE_IN_MB,
    VIDEO_PATH,
    LeRobotFormatError,
    aggregate_stats,
    arrow_type,
    column_array,
    decode_text,
    feature_name,
    feature_stats,
    hf_feature,
    stats_as_lists,
    write_json,
    write_tasks,
)
from embodia.data.lerobot_video import CODECS, VideoFileEncoder, check_frame_size, video_info
from embodia.data.store import TrajectoryStore
from embodia.data.store_arrays import image_keys

MB = 1024**2


@dataclass
class LeRobotExportConfig:
    """How a store becomes a LeRobot dataset."""

    video_codec: str = "h264"
    """camera videos: ``"h264"`` (libx264) or ``"av1"`` (SVT-AV1, LeRobot's own default)"""
    task: str | None = None
    """the task of every step (default: the step's instruction, else the episode's env id)"""
    fps: Annotated[float, Field(gt=0)] | None = None
    """frames per second, for a store that records none (a store's own fps wins otherwise)"""
    crf: Annotated[int, Field(ge=0, le=63)] = 30
    """video quality: lower is better and larger (LeRobot's default, 30)"""
    gop: Annotated[int, Field(ge=1)] = 2
    """a keyframe every this many frames (LeRobot's default, 2: fast random access)"""
    chunks_size: Annotated[int, Field(ge=1)] = CHUNKS_SIZE
    """files per chunk folder"""
    data_files_size_in_mb: Annotated[float, Field(gt=0)] = DATA_FILES_SIZE_IN_MB
    """a data (and episode metadata) parquet file takes episodes up to about this size"""
    video_files_size_in_mb: Annotated[float, Field(gt=0)] = VIDEO_FILES_SIZE_IN_MB
    """a video file takes episodes up to about this size"""
    robot_type: str | None = None
    """``robot_type`` in ``info.json`` (LeRobot's robot name, e.g. ``"so100"``)"""

    def __post_init__(self) -> None:
        if self.video_codec not in CODECS:
            raise ValueError(f"video_codec must be one of {sorted(CODECS)}, got {self.video_codec!r}")


@dataclass
class _Feature:
    """One LeRobot feature and the store key it comes from."""

    name: str
    key: str | None
    dtype: str
    shape: list[int]
    names: Any = None
    video: bool = False


def _next_file(chunk: int, file: int, chunks_size: int) -> tuple[int, int]:
    return (chunk + 1, 0) if file == chunks_size - 1 else (chunk, file + 1)


def _fps_of(store: TrajectoryStore, config: LeRobotExportConfig) -> int:
    fps = store.fps if store.fps is not None else config.fps
    if fps is None:
        raise LeRobotFormatError(
            f"store {str(store.path)!r} records no frame rate (it was recorded before embodia kept one): "
            "give it with --fps N"
        )
    if not math.isclose(fps, round(fps), rel_tol=0, abs_tol=1e-9):
        raise LeRobotFormatError(
            f"store {str(store.path)!r} runs at {fps:g} steps per second; LeRobot datasets have a whole number of "
            "frames per second: give one with --fps N (timestamps are frame_index / fps)"
        )
    return int(round(fps))


def _features(store: TrajectoryStore) -> list[_Feature]:
    schema = store.schema
    cameras = set(image_keys(schema))
    features: list[_Feature] = []
    for key, spec in schema.items():
        shape = [int(n) for n in spec["shape"]]
        if key in cameras:
            check_frame_size(key, *shape)
            names = ["height", "width", "channels"]
            features.append(_Feature(feature_name(key, image=True), key, "video", shape, names, video=True))
        elif key == INSTRUCTION_KEY and spec["dtype"] == "uint8" and len(shape) == 1:
            continue  # the tasks
        else:
            names = None if not shape else [f"{key}_{i}" for i in range(int(np.prod(shape)))]
            if len(shape) > 1:
                names = None
            features.append(_Feature(feature_name(key, image=False), key, spec["dtype"], shape or [1], names))
    for name, spec in INDEX_FEATURES.items():
        features.append(_Feature(name, None, spec["dtype"], list(spec["shape"])))
    return features


def _info_features(features: list[_Feature], fps: int, videos: dict[str, dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for feature in features:
        entry: dict[str, Any] = {"dtype": feature.dtype, "shape": feature.shape, "names": feature.names}
        if feature.video:
            entry["info"] = videos[feature.name]
        out[feature.name] = entry
    return out


class _DataFiles:
    """Parquet files of steps, one row group per episode, rotated at the size limit."""

    def __init__(self, root: Path, features: list[_Feature], config: LeRobotExportConfig) -> None:
        import pyarrow as pa

        self.root, self.config = root, config
        columns = [f for f in features if not f.video]
        hf = {f.name: hf_feature(f.dtype, f.shape) for f in columns}
        self.schema = pa.schema([(f.name, arrow_type(f.dtype, f.shape)) for f in columns]).with_metadata(
            {b"huggingface": json.dumps({"info": {"features": hf}}).encode()}
        )
        self.columns = columns
        self.chunk, self.file = 0, 0
        self._writer: Any = None
        self._frames = 0

    def _path(self) -> Path:
        return self.root / DATA_PATH.format(chunk_index=self.chunk, file_index=self.file)

    def add(self, values: dict[str, np.ndarray]) -> tuple[int, int]:
        import pyarrow as pa
        import pyarrow.parquet as pq

        count = len(next(iter(values.values())))
        if self._writer is not None:
            size = self._path().stat().st_size / MB
            if size + size / self._frames * count >= self.config.data_files_size_in_mb:
                self.close()
                self.chunk, self.file = _next_file(self.chunk, self.file, self.config.chunks_size)
        if self._writer is None:
            self._path().parent.mkdir(parents=True, exist_ok=True)
            self._writer = pq.ParquetWriter(
                str(self._path()), self.schema, compression="snappy", use_dictionary=True
            )
            self._frames = 0
        arrays = [column_array(values[f.name], f.dtype, f.shape) for f in self.columns]
        self._writer.write_table(pa.Table.from_arrays(arrays, schema=self.schema))
        self._frames += count
        return self.chunk, self.file

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None


class _VideoFiles:
    """One camera's mp4 files, rotated at the size limit; where each episode's frames are."""

    def __init__(self, root: Path, feature: _Feature, fps: int, config: LeRobotExportConfig) -> None:
        self.root, self.feature, self.fps, self.config = root, feature, fps, config
        self.chunk, self.file = 0, 0
        self.encoder: VideoFileEncoder | None = None
        self.first: Path | None = None

    def add(self, frames: np.ndarray) -> dict[str, Any]:
        config, name = self.config, self.feature.name
        if self.encoder is not None and self.encoder.frames:
            size = self.encoder.bytes_written / MB
            if size + size / self.encoder.frames * len(frames) >= config.video_files_size_in_mb:
                self.encoder.close()
                self.encoder = None
                self.chunk, self.file = _next_file(self.chunk, self.file, config.chunks_size)
        if self.encoder is None:
            path = self.root / VIDEO_PATH.format(video_key=name, chunk_index=self.chunk, file_index=self.file)
            height, width, _ = self.feature.shape
            self.encoder = VideoFileEncoder(
                path, config.video_codec, self.fps, height, width, crf=config.crf, gop=config.gop
            )
            self.first = self.first or path
        start = self.encoder.frames
        self.encoder.add(self.feature.key or name, frames)
        return {
            f"videos/{name}/chunk_index": self.chunk,
            f"videos/{name}/file_index": self.file,
            f"videos/{name}/from_timestamp": start / self.fps,
            f"videos/{name}/to_timestamp": (start + len(frames)) / self.fps,
        }

    def close(self) -> None:
        if self.encoder is not None:
            self.encoder.close()
            self.encoder = None


def _tasks_of(
    store: TrajectoryStore, index: int, data: dict[str, np.ndarray], config: LeRobotExportConfig
) -> list[str]:
    length = len(next(iter(data.values())))
    if config.task is not None:
        return [config.task] * length
    fallback = store.episode_meta(index).env_id
    if INSTRUCTION_KEY in data:
        texts = [decode_text(row) for row in data[INSTRUCTION_KEY]]
        return [text or fallback for text in texts]
    return [fallback] * length


def _embodia_columns(store: TrajectoryStore, index: int) -> dict[str, Any]:
    meta = store.episode_meta(index)
    schema = store.schema
    instruction = schema.get(INSTRUCTION_KEY, {}).get("shape", [0])
    row: dict[str, Any] = {
        f"{EMBODIA_COLUMNS}env_id": meta.env_id,
        f"{EMBODIA_COLUMNS}env_kwargs": json.dumps(meta.env_kwargs, sort_keys=True),
        f"{EMBODIA_COLUMNS}seed": int(meta.seed),
        f"{EMBODIA_COLUMNS}instruction_bytes": int(instruction[0]) if INSTRUCTION_KEY in schema else 0,
    }
    for name in ("initial_state", "final_state"):
        state = getattr(meta, name)
        row[f"{EMBODIA_COLUMNS}{name}"] = (
            None if state is None else np.asarray(state, dtype=np.float64).tolist()
        )
    return row


def _episode_columns(
    features: list[_Feature],
    data: dict[str, np.ndarray],
    episode: int,
    start: int,
    task_indices: np.ndarray,
    fps: int,
) -> dict[str, np.ndarray]:
    length = len(task_indices)
    frame_index = np.arange(length, dtype=np.int64)
    values: dict[str, np.ndarray] = {
        "timestamp": (frame_index / fps).astype(np.float32),
        "frame_index": frame_index,
        "episode_index": np.full(length, episode, dtype=np.int64),
        "index": np.arange(start, start + length, dtype=np.int64),
        "task_index": task_indices.astype(np.int64),
    }
    for feature in features:
        if feature.key is not None:
            values[feature.name] = data[feature.key]
    return values


def _write_episode_table(root: Path, rows: list[dict[str, Any]], config: LeRobotExportConfig) -> None:
    """``meta/episodes`` files: rows in episode order, a new file when one would pass the data size limit."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    chunk, file, size, groups = 0, 0, 0.0, [[]]
    for row in rows:
        row_size = pa.Table.from_pylist([row]).nbytes / MB
        if groups[-1] and size + row_size >= config.data_files_size_in_mb:
            chunk, file = _next_file(chunk, file, config.chunks_size)
            groups.append([])
            size = 0.0
        row["meta/episodes/chunk_index"], row["meta/episodes/file_index"] = chunk, file
        groups[-1].append(row)
        size += row_size
    for group in groups:
        first = group[0]
        path = root / EPISODES_PATH.format(
            chunk_index=first["meta/episodes/chunk_index"], file_index=first["meta/episodes/file_index"]
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(group), str(path), compression="snappy")


def export_lerobot(
    store: str | Path | TrajectoryStore,
    out: str | Path,
    config: LeRobotExportConfig | dict[str, Any] | None = None,
    *,
    progress: bool = False,
) -> dict[str, Any]:
    """Write ``store`` as a LeRobotDataset v3.0 folder at ``out`` (see the module docstring).

    Returns:
        ``path``, ``episodes``, ``frames``, ``tasks``, ``videos`` (camera features), ``bytes`` (on disk),
        ``seconds`` (wall time).

    Raises:
        LeRobotFormatError: ``out`` is not empty, the store records no fps (and none is given), a camera that
            a yuv420p RGB video cannot hold.
        StoreError: the store cannot be read.
    """
    config = validate(LeRobotExportConfig, config or {}, where="lerobot export", error=LeRobotFormatError)
    began = time.perf_counter()
    out = Path(out)
    if out.is_file() or (out.is_dir() and any(out.iterdir())):
        raise LeRobotFormatError(
            f"{str(out)!r} already exists and is not empty; export into a new folder (nothing was written)"
        )
    if not isinstance(store, TrajectoryStore):
        store = TrajectoryStore(store, mode="r")
    fps = _fps_of(store, config)
    features = _features(store)
    if store.num_episodes == 0:
        raise LeRobotFormatError(f"store {str(store.path)!r} has no episodes: nothing to export")
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = out.parent / f".{out.name}.partial-{uuid.uuid4().hex[:8]}"
    staging.mkdir()
    try:
        result = _write(store, staging, features, fps, config, progress)
        os.replace(staging, out) if out.exists() else staging.rename(out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    return {"path": str(out), **result, "bytes": size, "seconds": time.perf_counter() - began}


def _write(
    store: TrajectoryStore,
    root: Path,
    features: list[_Feature],
    fps: int,
    config: LeRobotExportConfig,
    progress: bool,
) -> dict[str, Any]:
    data_files = _DataFiles(root, features, config)
    videos = {f.name: _VideoFiles(root, f, fps, config) for f in features if f.video}
    keys = [f.key for f in features if f.key is not None]
    if INSTRUCTION_KEY in store.schema and INSTRUCTION_KEY not in keys:
        keys.append(INSTRUCTION_KEY)
    tasks: dict[str, int] = {}
    rows: list[dict[str, Any]] = []
    all_stats: list[dict[str, dict[str, np.ndarray]]] = []
    frames = 0
    episodes = range(store.num_episodes)
    if progress:
        from rich.progress import track

        episodes = track(episodes, description="exporting", transient=True)
    try:
        for episode in episodes:
            data = store.episode(episode, keys=keys)
            step_tasks = _tasks_of(store, episode, data, config)
            for task in step_tasks:
                tasks.setdefault(task, len(tasks))
            task_indices = np.array([tasks[t] for t in step_tasks], dtype=np.int64)
            values = _episode_columns(features, data, episode, frames, task_indices, fps)
            chunk, file = data_files.add({f.name: values[f.name] for f in features if not f.video})
            row: dict[str, Any] = {
                "episode_index": episode,
                "tasks": list(dict.fromkeys(step_tasks)),
                "length": len(task_indices),
                "data/chunk_index": chunk,
                "data/file_index": file,
                "dataset_from_index": frames,
                "dataset_to_index": frames + len(task_indices),
            }
            for name, files in videos.items():
                row.update(files.add(values[name]))
            stats = {f.name: feature_stats(values[f.name], image=f.video) for f in features}
            all_stats.append(stats)
            for name, per_stat in stats_as_lists(stats).items():
                for stat, value in per_stat.items():
                    row[f"stats/{name}/{stat}"] = value
            row.update(_embodia_columns(store, episode))
            rows.append(row)
            frames += len(task_indices)
    finally:
        data_files.close()
        for files in videos.values():
            files.close()
    _write_episode_table(root, rows, config)
    write_tasks(root / TASKS_PATH, list(tasks))
    write_json(root / STATS_PATH, stats_as_lists(aggregate_stats(all_stats)))
    video_infos = {
        name: video_info(files.first, config.video_codec, crf=config.crf, gop=config.gop)
        for name, files in videos.items()
        if files.first is not None
    }
    info = {
        "codebase_version": CODEBASE_VERSION,
        "fps": fps,
        "features": _info_features(features, fps, video_infos),
        "total_episodes": store.num_episodes,
        "total_frames": frames,
        "total_tasks": len(tasks),
        "chunks_size": config.chunks_size,
        "data_files_size_in_mb": config.data_files_size_in_mb,
        "video_files_size_in_mb": config.video_files_size_in_mb,
        "data_path": DATA_PATH,
        "video_path": VIDEO_PATH if videos else None,
        "robot_type": config.robot_type,
        "splits": {"train": f"0:{store.num_episodes}"},
    }
    write_json(root / INFO_PATH, info)
    return {"episodes": store.num_episodes, "frames": frames, "tasks": len(tasks), "videos": sorted(videos)}
