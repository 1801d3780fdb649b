"""Read a LeRobotDataset (v3.0, and v2.0 / v2.1) into a trajectory store (``embodia data import DIR --out STORE``).

v3.0 (``src/lerobot/datasets/utils.py`` and ``dataset_metadata.py`` in huggingface/lerobot): episodes from
``meta/episodes/chunk-XXX/file-XXX.parquet`` (length, tasks, the data file and, per camera, the video file
and the span ``[from_timestamp, to_timestamp)`` of its frames), tasks from ``meta/tasks.parquet``, steps
from ``data/chunk-XXX/file-XXX.parquet``. v2.x (``scripts/convert_dataset_v21_to_v30.py``): episodes and
tasks from ``meta/episodes.jsonl`` and ``meta/tasks.jsonl``, one data file and one video per episode under
``chunk-{episode_index // chunks_size}``, each video from 0 s.

Every check comes before the store is touched; a problem is one :class:`LeRobotFormatError` line naming
the file and what disagrees. The store is written in a hidden folder next to ``STORE`` and renamed into place
when every episode is in; on any error that folder is removed.

What the store gets (the inverse of :mod:`embodia.data.lerobot_format`'s mapping): each feature under its
store key, the steps' tasks as ``instruction`` (UTF-8 bytes, zero-padded to 96 bytes or the longest task),
the dataset's fps, one embodia episode per LeRobot episode, in order. ``next.done`` becomes ``terminated``;
without ``next.truncated``, the last step of an episode that did not terminate is ``truncated``. Episodes get
env id ``lerobot:<folder name>`` and no simulator state (``embodia replay`` says so), unless the dataset was
written by embodia, whose ``embodia/*`` episode columns give them back.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from embodia.data.lerobot_format import (
    EMBODIA_COLUMNS,
    FEATURE_TO_STORE,
    INDEX_FEATURES,
    INFO_PATH,
    INSTRUCTION_BYTES,
    INSTRUCTION_KEY,
    LEGACY_EPISODES_PATH,
    LEGACY_TASKS_PATH,
    READABLE_VERSIONS,
    TASKS_PATH,
    LeRobotFormatError,
    column_values,
    encode_text,
    read_jsonl,
    read_tasks,
    store_key,
)
from embodia.data.lerobot_video import VideoFileReader
from embodia.data.store import TrajectoryStore
from embodia.data.store_integrity import STORE_ENTRIES


@dataclass
class LeRobotEpisode:
    """Where one episode's steps and frames are."""

    index: int
    length: int
    tasks: list[str]
    data_file: Path
    videos: dict[str, tuple[Path, float]] = field(default_factory=dict)
    """camera feature -> (video file, time of the episode's first frame in it)"""
    extra: dict[str, Any] = field(default_factory=dict)
    """the ``embodia/*`` columns of a dataset embodia wrote"""


@dataclass
class LeRobotDataset:
    """A LeRobot dataset's metadata, checked: every file it names exists."""

    root: Path
    version: str
    fps: float
    features: dict[str, dict[str, Any]]
    tasks: dict[int, str]
    episodes: list[LeRobotEpisode]

    @property
    def camera_features(self) -> list[str]:
        return [name for name, spec in self.features.items() if spec.get("dtype") == "video"]


def _load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise LeRobotFormatError(f"{path} cannot be read as JSON ({type(error).__name__}: {error})") from None


def read_metadata(root: str | Path) -> LeRobotDataset:
    """The dataset at ``root``: info, tasks and episodes, with every data and video file it names present.

    Raises:
        LeRobotFormatError: not a LeRobot dataset, an unknown codebase version, missing metadata or files.
    """
    root = Path(root)
    if not (root / INFO_PATH).is_file():
        raise LeRobotFormatError(
            f"{str(root)!r} is not a LeRobot dataset (no {INFO_PATH}): give the dataset's root folder, the one "
            "holding meta/, data/ and videos/"
        )
    info = _load_json(root / INFO_PATH)
    version = str(info.get("codebase_version")) if isinstance(info, dict) else "none"
    if version not in READABLE_VERSIONS:
        raise LeRobotFormatError(
            f"{root / INFO_PATH} has codebase_version {version!r}; embodia reads LeRobot datasets of versions "
            f"{', '.join(READABLE_VERSIONS)}: convert it with LeRobot first"
        )
    missing = [name for name in ("fps", "features", "data_path") if name not in info]
    if missing or not isinstance(info["features"], dict):
        raise LeRobotFormatError(f"{root / INFO_PATH} lacks {', '.join(missing) or 'a features mapping'}")
    fps = float(info["fps"])
    features = {name: dict(spec) for name, spec in info["features"].items()}
    for name, spec in features.items():
        marks = {**(spec.get("video_info") or {}), **(spec.get("info") or {})}
        if spec.get("dtype") == "video" and (marks.get("is_depth_map") or marks.get("video.is_depth_map")):
            raise LeRobotFormatError(
                f"{root / INFO_PATH}: feature {name!r} is a depth video (12-bit quantised); embodia imports RGB "
                "cameras only: drop the feature from a copy of the dataset to import the rest"
            )
    if version == "v3.0":
        tasks, episodes = _v3_episodes(root, info, features)
    else:
        tasks, episodes = _v2_episodes(root, info, features)
    for episode in episodes:
        files = [(episode.data_file, "data file")] + [
            (path, f"video file of {name}") for name, (path, _) in episode.videos.items()
        ]
        for path, what in files:
            if not path.is_file():
                raise LeRobotFormatError(
                    f"missing {what} {path.relative_to(root)} (episode {episode.index}) in {str(root)!r}: "
                    "the dataset is incomplete; download or copy it again"
                )
    return LeRobotDataset(root, version, fps, features, tasks, episodes)


def _v3_episodes(
    root: Path, info: dict[str, Any], features: dict[str, dict[str, Any]]
) -> tuple[dict[int, str], list[LeRobotEpisode]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not (root / TASKS_PATH).is_file():
        raise LeRobotFormatError(f"{str(root)!r} lacks {TASKS_PATH}: the dataset is incomplete")
    tasks = read_tasks(root / TASKS_PATH)
    files = sorted((root / "meta" / "episodes").glob("*/*.parquet"))
    if not files:
        raise LeRobotFormatError(
            f"{str(root)!r} has no meta/episodes/chunk-*/file-*.parquet: the dataset is incomplete"
        )
    wanted = None
    tables = []
    for path in files:
        names = pq.read_schema(str(path)).names
        wanted = [n for n in names if not n.startswith("stats/")]
        tables.append(pq.read_table(str(path), columns=wanted))
    rows = pa.concat_tables(tables, promote_options="permissive").to_pylist()
    cameras = [name for name, spec in features.items() if spec.get("dtype") == "video"]
    episodes = []
    for row in sorted(rows, key=lambda r: int(r["episode_index"])):
        try:
            data_file = root / info["data_path"].format(
                chunk_index=int(row["data/chunk_index"]), file_index=int(row["data/file_index"])
            )
            videos = {
                name: (
                    root
                    / info["video_path"].format(
                        video_key=name,
                        chunk_index=int(row[f"videos/{name}/chunk_index"]),
                        file_index=int(row[f"videos/{name}/file_index"]),
                    ),
                    float(row[f"videos/{name}/from_timestamp"]),
                )
                for name in cameras
            }
            episode = LeRobotEpisode(
                int(row["episode_index"]), int(row["length"]), list(row.get("tasks") or []), data_file, videos
            )
        except (KeyError, TypeError, AttributeError) as error:
            raise LeRobotFormatError(
                f"{str(root)!r}: meta/episodes lacks {error} for episode {row.get('episode_index')}: the episode "
                "table disagrees with meta/info.json"
            ) from None
        episode.extra = {
            k[len(EMBODIA_COLUMNS) :]: v for k, v in row.items() if k.startswith(EMBODIA_COLUMNS)
        }
        episodes.append(episode)
    return tasks, episodes


def _v2_episodes(
    root: Path, info: dict[str, Any], features: dict[str, dict[str, Any]]
) -> tuple[dict[int, str], list[LeRobotEpisode]]:
    for name in (LEGACY_EPISODES_PATH, LEGACY_TASKS_PATH):
        if not (root / name).is_file():
            raise LeRobotFormatError(f"{str(root)!r} lacks {name}: the v2 dataset is incomplete")
    tasks = {int(r["task_index"]): str(r["task"]) for r in read_jsonl(root / LEGACY_TASKS_PATH)}
    chunks_size = int(info.get("chunks_size", 1000))
    cameras = [name for name, spec in features.items() if spec.get("dtype") == "video"]
    episodes = []
    for record in sorted(read_jsonl(root / LEGACY_EPISODES_PATH), key=lambda r: int(r["episode_index"])):
        index = int(record["episode_index"])
        chunk = index // chunks_size
        data_file = root / info["data_path"].format(episode_chunk=chunk, episode_index=index)
        videos = {
            name: (
                root / info["video_path"].format(episode_chunk=chunk, video_key=name, episode_index=index),
                0.0,
            )
            for name in cameras
        }
        episodes.append(
            LeRobotEpisode(index, int(record["length"]), list(record.get("tasks") or []), data_file, videos)
        )
    return tasks, episodes


# ---------------------------------------------------------------------------------------------- steps
def _leaf(arrow_type: Any) -> tuple[Any, int]:
    import pyarrow as pa

    depth = 0
    while (
        pa.types.is_list(arrow_type)
        or pa.types.is_large_list(arrow_type)
        or pa.types.is_fixed_size_list(arrow_type)
    ):
        arrow_type, depth = arrow_type.value_type, depth + 1
    return arrow_type, depth


def _check_schema(path: Path, schema: Any, features: dict[str, dict[str, Any]]) -> None:
    """Every non-video feature of ``info.json`` is a column of this data file, with its dtype and rank."""
    import pyarrow as pa

    declared = {name for name, spec in features.items() if spec.get("dtype") != "video"}
    for name in declared:
        spec = features[name]
        if name not in schema.names:
            raise LeRobotFormatError(
                f"parquet schema of {path} disagrees with meta/info.json: feature {name!r} is not a column of it"
            )
        if spec["dtype"] in ("image", "string", "language") or spec["dtype"].startswith("language"):
            continue
        leaf, depth = _leaf(schema.field(name).type)
        shape = list(spec.get("shape") or [1])
        rank = 0 if shape == [1] else len(shape)
        try:
            leaf_dtype = np.dtype(leaf.to_pandas_dtype()) if not pa.types.is_boolean(leaf) else np.dtype(bool)
        except (NotImplementedError, TypeError):
            leaf_dtype = None
        if depth != rank or leaf_dtype != np.dtype(spec["dtype"]):
            raise LeRobotFormatError(
                f"parquet schema of {path} disagrees with meta/info.json: column {name!r} is "
                f"{schema.field(name).type}, info.json declares {spec['dtype']} of shape {tuple(shape)}"
            )
    extra = [n for n in schema.names if n not in declared and n not in features]
    if extra:
        raise LeRobotFormatError(
            f"parquet schema of {path} disagrees with meta/info.json: columns {extra} are not features of it"
        )


def _images(column: Any) -> np.ndarray:
    """PNG / JPEG images of a Hugging Face ``Image`` column (``{bytes, path}`` structs) as uint8 RGB."""
    from PIL import Image

    frames = [np.asarray(Image.open(io.BytesIO(item["bytes"])).convert("RGB")) for item in column.to_pylist()]
    return np.stack(frames)


class _StepReader:
    """An episode's rows, reading each data file once (v3.0 files hold consecutive episodes)."""

    def __init__(self, dataset: LeRobotDataset) -> None:
        self.dataset = dataset
        self._path: Path | None = None
        self._table: Any = None
        self._episode_index: np.ndarray | None = None

    def rows(self, episode: LeRobotEpisode) -> dict[str, np.ndarray]:
        import pyarrow.parquet as pq

        if episode.data_file != self._path:
            try:
                table = pq.read_table(str(episode.data_file))
            except Exception as error:  # pyarrow raises several types for damaged files
                raise LeRobotFormatError(f"{episode.data_file} cannot be read as parquet ({error})") from None
            _check_schema(episode.data_file, table.schema, self.dataset.features)
            self._path, self._table = episode.data_file, table
            self._episode_index = np.asarray(table.column("episode_index").to_numpy(), dtype=np.int64)
        rows = np.flatnonzero(self._episode_index == episode.index)
        if len(rows) != episode.length:
            raise LeRobotFormatError(
                f"{episode.data_file} has {len(rows)} rows of episode {episode.index}, its metadata says "
                f"{episode.length}: the data file disagrees with the episode table"
            )
        table = self._table.take(rows)
        out = {}
        for name, spec in self.dataset.features.items():
            if spec.get("dtype") in ("video", "string") or str(spec.get("dtype")).startswith("language"):
                continue
            if spec["dtype"] == "image":
                out[name] = _images(table.column(name))
                continue
            try:
                out[name] = column_values(table.column(name), spec["dtype"], list(spec.get("shape") or [1]))
            except ValueError:
                raise LeRobotFormatError(
                    f"parquet schema of {episode.data_file} disagrees with meta/info.json: column {name!r} does "
                    f"not hold rows of shape {tuple(spec.get('shape') or [1])}"
                ) from None
        return out


class _FrameReader:
    """An episode's frames of every camera, decoding each video file once from front to back."""

    def __init__(self, dataset: LeRobotDataset) -> None:
        self.dataset = dataset
        self._readers: dict[str, VideoFileReader] = {}

    def frames(self, episode: LeRobotEpisode) -> dict[str, np.ndarray]:
        out = {}
        for name, (path, start) in episode.videos.items():
            reader = self._readers.get(name)
            if reader is None or reader.path != path or start < reader.position - 0.5 / self.dataset.fps:
                if reader is not None:
                    reader.close()
                reader = self._readers[name] = VideoFileReader(path)
            frames = reader.frames(start, episode.length, self.dataset.fps)
            have = [i for i, frame in enumerate(frames) if frame is not None]
            where = f"{path.relative_to(self.dataset.root)} ({name}, episode {episode.index})"
            if len(have) < episode.length:
                if not have or have[-1] < episode.length - 1 and len(have) == have[-1] + 1:
                    raise LeRobotFormatError(
                        f"video {where} has {len(have)} of the episode's {episode.length} frames from {start:g} s: "
                        "the video is shorter than its episode"
                    )
                gap = next(i for i, frame in enumerate(frames) if frame is None)
                raise LeRobotFormatError(
                    f"video {where} has no frame at {start + gap / self.dataset.fps:g} s (frame {gap} of the "
                    "episode): its timestamps disagree with the dataset's fps"
                )
            out[name] = np.stack(frames)
            expected = _frame_shape(self.dataset.features[name])
            if expected is not None and out[name].shape[1:] != expected:
                raise LeRobotFormatError(
                    f"video {where} has frames of {out[name].shape[1:]}, meta/info.json declares {expected}"
                )
        return out

    def close(self) -> None:
        for reader in self._readers.values():
            reader.close()


def _frame_shape(spec: dict[str, Any]) -> tuple[int, ...] | None:
    shape, names = list(spec.get("shape") or []), list(spec.get("names") or [])
    if len(shape) != 3:
        return None
    if names and names[0] in ("channel", "channels"):
        return (shape[1], shape[2], shape[0])
    return tuple(shape)


# ---------------------------------------------------------------------------------------------- store
def _episode_arrays(
    dataset: LeRobotDataset,
    episode: LeRobotEpisode,
    rows: dict[str, np.ndarray],
    frames: dict[str, np.ndarray],
) -> dict[str, np.ndarray]:
    data: dict[str, np.ndarray] = {}
    for name, spec in dataset.features.items():  # info.json's order: the store's keys in their order
        if name in INDEX_FEATURES or (name not in frames and name not in rows):
            continue
        values = frames[name] if name in frames else rows[name]
        key = store_key(name)
        if list(spec.get("shape") or [1]) == [1] and spec.get("names") and name not in FEATURE_TO_STORE:
            values = values.reshape(len(values), 1)  # a vector of one named element, not a scalar
        data[key] = values
    for key, dtype in (("reward", np.float32), ("terminated", bool), ("truncated", bool), ("success", bool)):
        if key in data:
            data[key] = data[key].reshape(len(data[key])).astype(dtype)
    length = episode.length
    if "terminated" not in data:
        data["terminated"] = np.zeros(length, dtype=bool)
    if "truncated" not in data:
        data["truncated"] = np.zeros(length, dtype=bool)
        data["truncated"][-1] = not data["terminated"][-1]
    width = int(episode.extra.get("instruction_bytes", -1) or 0)
    if dataset.tasks and "task_index" in rows and width != 0:
        texts = [dataset.tasks.get(int(i), "") for i in rows["task_index"]]
        longest = max(len(t.encode("utf-8")) for t in dataset.tasks.values())
        data[INSTRUCTION_KEY] = encode_text(texts, width if width > 0 else max(INSTRUCTION_BYTES, longest))
    return data


def _episode_info(dataset: LeRobotDataset, episode: LeRobotEpisode) -> dict[str, Any]:
    extra = episode.extra
    info: dict[str, Any] = {
        "env_id": extra.get("env_id") or f"lerobot:{dataset.root.resolve().name}",
        "env_kwargs": json.loads(extra["env_kwargs"]) if extra.get("env_kwargs") else {},
        "seed": int(extra["seed"]) if extra.get("seed") is not None else -1,
    }
    for name in ("initial_state", "final_state"):
        if extra.get(name) is not None:
            info[name] = np.asarray(extra[name], dtype=np.float64)
    return info


def import_lerobot(
    root: str | Path,
    out: str | Path,
    *,
    video_codec: str | None = None,
    overwrite: bool = False,
    progress: bool = False,
) -> dict[str, Any]:
    """Import the LeRobot dataset at ``root`` into a new trajectory store at ``out``.

    Args:
        root: the dataset's folder (``meta/info.json`` inside).
        out: the store to write; it must not exist (or be an empty folder), unless ``overwrite`` and it is an
            embodia store, which is then replaced once the new one is complete.
        video_codec: how the store keeps the cameras (``"h264"``, ``"av1"``; None: raw).
        overwrite: replace an existing embodia store at ``out``.

    Returns:
        ``path``, ``episodes``, ``steps``, ``fps``, ``version``, ``keys``, ``seconds``.

    Raises:
        LeRobotFormatError: see :func:`read_metadata` and the checks of the data and video files.
        StoreError: ``out`` holds something else than an embodia store (or one, without ``overwrite``).
    """
    began = time.perf_counter()
    dataset = read_metadata(root)
    out = Path(out)
    replacing = out.exists() and not (out.is_dir() and not any(out.iterdir()))
    if replacing:
        _check_replaceable(out, overwrite)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = out.parent / f".{out.name}.partial-{uuid.uuid4().hex[:8]}"
    try:
        store = TrajectoryStore(staging, "a", fps=dataset.fps, video_codec=video_codec)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    steps_reader, frames_reader = _StepReader(dataset), _FrameReader(dataset)
    episodes = dataset.episodes
    if progress:
        from rich.progress import track

        episodes = track(episodes, description="importing", transient=True)
    try:
        steps = 0
        for episode in episodes:
            rows = steps_reader.rows(episode)
            data = _episode_arrays(dataset, episode, rows, frames_reader.frames(episode))
            store.add_episode(data, **_episode_info(dataset, episode))
            steps += episode.length
        keys = store.keys
        store.close()
        if replacing:
            _replace(out, staging)
        else:
            os.replace(staging, out)
    except BaseException:
        store.close()
        shutil.rmtree(staging, ignore_errors=True)
        raise
    finally:
        frames_reader.close()
    return {
        "path": str(out),
        "episodes": len(dataset.episodes),
        "steps": steps,
        "fps": dataset.fps,
        "version": dataset.version,
        "keys": keys,
        "seconds": time.perf_counter() - began,
    }


def _check_replaceable(out: Path, overwrite: bool) -> None:
    """``out`` may be replaced: ``overwrite`` and an embodia store that holds nothing else and no writer."""
    from embodia.core.errors import StoreError

    if not overwrite:
        raise StoreError(
            f"{str(out)!r} already exists; import into a new path, or pass --overwrite to replace a store"
        )
    with TrajectoryStore(out, "a"):  # refuses what is not an embodia store, and a store being written
        foreign = sorted(p.name for p in out.iterdir() if p.name not in STORE_ENTRIES)
    if foreign:
        raise StoreError(
            f"will not overwrite {str(out)!r}: besides the store it holds {foreign[:5]}, which embodia did not "
            "write; move them out or choose another path"
        )


def _replace(out: Path, staging: Path) -> None:
    """Swap the finished store in: the old one is moved aside first, and removed only after the swap."""
    aside = out.parent / f".{out.name}.replaced-{uuid.uuid4().hex[:8]}"
    with TrajectoryStore(out, "a"):
        pass  # still an embodia store with no writer
    os.replace(out, aside)
    try:
        os.replace(staging, out)
    except BaseException:
        os.replace(aside, out)
        raise
    shutil.rmtree(aside)
