"""LeRobotDataset's on-disk format (codebase versions v3.0, and v2.x for reading): paths, features, statistics.

What embodia writes and reads is matched to LeRobot's own definition of the format in the
huggingface/lerobot repository, ``src/lerobot/``: ``datasets/utils.py`` (paths, size limits, ``info.json``
fields), ``datasets/feature_utils.py`` (features as Hugging Face ``datasets`` types: a ``(1,)`` feature is a
scalar column, a ``(N,)`` one a fixed-length list), ``utils/constants.py`` (the index features
``timestamp``, ``frame_index``, ``episode_index``, ``index``, ``task_index``; ``next.reward``, ``next.done``,
``next.truncated``, ``next.success``), ``datasets/compute_stats.py`` (statistics), ``datasets/io_utils.py``
and ``datasets/dataset_metadata.py`` (``meta/tasks.parquet`` as a pandas frame indexed by task,
``meta/episodes`` rows, ``stats.json``), ``datasets/dataset_writer.py`` (file rotation),
``scripts/convert_dataset_v21_to_v30.py`` (the v2.1 layout). Nothing here imports LeRobot, pandas or
``datasets``: pyarrow writes the files, with the schema metadata those libraries read back.

Statistics follow ``compute_stats.py``: per feature ``min``, ``max``, ``mean``, ``std`` (population),
``count`` (frames) and the quantiles ``q01 q10 q50 q90 q99`` estimated from a 5000-bin histogram per
dimension; camera frames are reduced per channel, scaled to [0, 1] and shaped ``(C, 1, 1)``; episodes are
aggregated with count-weighted means, the parallel-variance formula, and the envelope of the quantiles.

How embodia keys map to features (and back, on import):

=========================  ==========================================  =========================
store key                  LeRobot feature                             note
=========================  ==========================================  =========================
``state``                  ``observation.state``
camera ``<key>``           ``observation.images.<key>`` (video)        uint8 RGB ``(H, W, 3)``
other observation ``<k>``  ``observation.<k>``
``action``                 ``action``
``reward``                 ``next.reward``
``terminated``             ``next.done``                               a terminal state
``truncated``              ``next.truncated``
``success``                ``next.success``
``sim_state``              ``sim_state``                               embodia's; LeRobot ignores it
``instruction``            ``task_index`` (``meta/tasks.parquet``)     UTF-8 bytes, zero-padded
=========================  ==========================================  =========================
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from embodia.core.errors import EmbodiaError

CODEBASE_VERSION = "v3.0"
READABLE_VERSIONS = ("v2.0", "v2.1", "v3.0")
CHUNKS_SIZE = 1000
"""files per ``chunk-XXX`` folder"""
DATA_FILES_SIZE_IN_MB = 100
VIDEO_FILES_SIZE_IN_MB = 200
INFO_PATH = "meta/info.json"
STATS_PATH = "meta/stats.json"
TASKS_PATH = "meta/tasks.parquet"
EPISODES_PATH = "meta/episodes/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
DATA_PATH = "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
VIDEO_PATH = "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4"
LEGACY_EPISODES_PATH = "meta/episodes.jsonl"
LEGACY_TASKS_PATH = "meta/tasks.jsonl"
LEGACY_EPISODES_STATS_PATH = "meta/episodes_stats.jsonl"

INDEX_FEATURES: dict[str, dict[str, Any]] = {
    "timestamp": {"dtype": "float32", "shape": [1], "names": None},
    "frame_index": {"dtype": "int64", "shape": [1], "names": None},
    "episode_index": {"dtype": "int64", "shape": [1], "names": None},
    "index": {"dtype": "int64", "shape": [1], "names": None},
    "task_index": {"dtype": "int64", "shape": [1], "names": None},
}
"""The features every LeRobot dataset has, last in ``info.json`` (LeRobot's ``DEFAULT_FEATURES``)."""

IMAGE_PREFIX = "observation.images."
STORE_TO_FEATURE = {
    "state": "observation.state",
    "action": "action",
    "reward": "next.reward",
    "terminated": "next.done",
    "truncated": "next.truncated",
    "success": "next.success",
    "sim_state": "sim_state",
}
FEATURE_TO_STORE = {feature: key for key, feature in STORE_TO_FEATURE.items()}
INSTRUCTION_KEY = "instruction"
INSTRUCTION_BYTES = 96
"""width of the ``instruction`` key an import writes (wider if a task needs it); the kitchens' width"""
EMBODIA_COLUMNS = "embodia/"
"""prefix of the per-episode columns embodia adds to ``meta/episodes`` (LeRobot reads and ignores them)"""

QUANTILES = (0.01, 0.10, 0.50, 0.90, 0.99)
QUANTILE_BINS = 5000


class LeRobotFormatError(EmbodiaError, ValueError):
    """A LeRobot dataset that cannot be read, or a store that cannot be written as one."""


# ---------------------------------------------------------------------------------------------- names
def feature_name(key: str, *, image: bool) -> str:
    """The LeRobot feature of a store key (see the module's table)."""
    if image:
        return IMAGE_PREFIX + key
    if key in STORE_TO_FEATURE:
        return STORE_TO_FEATURE[key]
    return f"observation.{key}"


def store_key(feature: str) -> str:
    """The store key of a LeRobot feature (the inverse of :func:`feature_name`; other names are kept)."""
    if feature in FEATURE_TO_STORE:
        return FEATURE_TO_STORE[feature]
    for prefix in (IMAGE_PREFIX, "observation."):
        if feature.startswith(prefix) and len(feature) > len(prefix):
            return feature[len(prefix) :]
    return feature.replace("/", ".")


def encode_text(texts: Sequence[str], width: int) -> np.ndarray:
    """UTF-8 bytes of each text, zero-padded to ``width`` (uint8 ``(len(texts), width)``)."""
    out = np.zeros((len(texts), width), dtype=np.uint8)
    for row, text in enumerate(texts):
        raw = text.encode("utf-8")
        out[row, : len(raw)] = np.frombuffer(raw, dtype=np.uint8)
    return out


def decode_text(row: np.ndarray) -> str:
    """The inverse of :func:`encode_text` for one row (trailing zero bytes dropped)."""
    return bytes(np.asarray(row, dtype=np.uint8).tolist()).rstrip(b"\0").decode("utf-8", errors="replace")


# ---------------------------------------------------------------------------------------------- columns
def arrow_type(dtype: str, shape: Sequence[int]) -> Any:
    """The Arrow type of a numeric feature, as Hugging Face ``datasets`` stores it.

    ``(1,)``: the scalar; ``(N,)``: a fixed-size list of N; more dimensions: nested lists (the storage of
    ``datasets.Array2D`` .. ``Array5D``).
    """
    import pyarrow as pa

    value = pa.from_numpy_dtype(np.dtype(dtype))
    shape = list(shape)
    if shape == [1]:
        return value
    if len(shape) == 1:
        return pa.list_(value, int(shape[0]))
    for _ in shape:
        value = pa.list_(value)
    return value


def hf_feature(dtype: str, shape: Sequence[int]) -> dict[str, Any]:
    """The ``datasets`` feature description of a numeric feature (the schema metadata of data files)."""
    shape = list(shape)
    value = {"dtype": dtype, "_type": "Value"}
    if shape == [1]:
        return value
    if len(shape) == 1:
        return {"feature": value, "length": int(shape[0]), "_type": "List"}
    return {"shape": shape, "dtype": dtype, "_type": f"Array{len(shape)}D"}


def column_array(values: np.ndarray, dtype: str, shape: Sequence[int]) -> Any:
    """An Arrow array of ``values`` (``(T, *shape)``) typed as :func:`arrow_type`."""
    import pyarrow as pa

    values = np.ascontiguousarray(values, dtype=np.dtype(dtype))
    shape = list(shape)
    count = len(values)
    if shape == [1]:
        return pa.array(values.reshape(count))
    flat = pa.array(values.reshape(-1))
    if len(shape) == 1:
        return pa.FixedSizeListArray.from_arrays(flat, int(shape[0]))
    array = flat
    for size in reversed(shape):
        groups = len(array) // size
        offsets = pa.array(np.arange(groups + 1, dtype=np.int32) * size)
        array = pa.ListArray.from_arrays(offsets, array)
    return array


def column_values(column: Any, dtype: str, shape: Sequence[int]) -> np.ndarray:
    """The inverse of :func:`column_array`: a ``(T, *shape)`` NumPy array (``(T,)`` for a ``(1,)`` feature)."""
    import pyarrow as pa

    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    count = len(column)
    array = column
    while (
        pa.types.is_list(array.type)
        or pa.types.is_fixed_size_list(array.type)
        or pa.types.is_large_list(array.type)
    ):
        array = array.flatten()
    values = array.to_numpy(zero_copy_only=False).astype(np.dtype(dtype), copy=False)
    shape = list(shape)
    if shape == [1]:
        return values.reshape(count)
    return values.reshape(count, *shape)


# ---------------------------------------------------------------------------------------------- statistics
def _histogram_quantiles(rows: np.ndarray, low: np.ndarray, high: np.ndarray) -> dict[str, np.ndarray]:
    """Quantiles of each column of ``rows`` read off a 5000-bin histogram between its min and max, linearly
    interpolated inside the bin (how LeRobot's ``RunningQuantileStats`` estimates them)."""
    count = len(rows)
    results = {f"q{int(round(q * 100)):02d}": np.empty(rows.shape[1]) for q in QUANTILES}
    for column in range(rows.shape[1]):
        edges = np.linspace(low[column] - 1e-10, high[column] + 1e-10, QUANTILE_BINS + 1)
        histogram, _ = np.histogram(rows[:, column], bins=edges)
        cumulative = np.cumsum(histogram)
        for q, name in zip(QUANTILES, results):
            target = q * count
            index = int(np.searchsorted(cumulative, target))
            if index == 0:
                value = edges[0]
            elif index >= len(cumulative):
                value = edges[-1]
            else:
                before = cumulative[index - 1]
                inside = cumulative[index] - before
                value = (
                    edges[index]
                    if inside == 0
                    else edges[index] + (target - before) / inside * (edges[index + 1] - edges[index])
                )
            results[name][column] = value
    return {name: values.astype(rows.dtype) for name, values in results.items()}


def _row_stats(rows: np.ndarray, count: int) -> dict[str, np.ndarray]:
    """min, max, mean, std, count and quantiles of each column of ``rows`` (2-D)."""
    rows = rows.astype(np.result_type(rows.dtype, np.float32), copy=False)
    low, high = rows.min(axis=0), rows.max(axis=0)
    mean = rows.mean(axis=0)
    stats = {"min": low, "max": high, "mean": mean}
    if len(rows) < 2:
        stats["std"] = rows.std(axis=0)
        quantiles = {f"q{int(round(q * 100)):02d}": mean.copy() for q in QUANTILES}
    else:
        stats["std"] = np.sqrt(np.maximum(0, (rows**2).mean(axis=0) - mean**2))
        quantiles = _histogram_quantiles(rows, low, high)
    return {**stats, "count": np.array([count]), **quantiles}


def _sampled_frames(frames: np.ndarray) -> np.ndarray:
    """The frames LeRobot's statistics look at: evenly spaced (all of a short episode, at most 10000),
    every k-th pixel of images of 300 pixels or more (to ~150)."""
    total = len(frames)
    samples = max(min(100, total), min(int(total**0.75), 10_000))
    picked = frames[np.round(np.linspace(0, total - 1, samples)).astype(int)]
    height, width = picked.shape[1:3]
    if max(height, width) >= 300:
        step = int(width / 150) if width > height else int(height / 150)
        picked = picked[:, ::step, ::step]
    return picked


def feature_stats(values: np.ndarray, *, image: bool = False) -> dict[str, np.ndarray]:
    """One episode's statistics of one feature, shaped as LeRobot stores them.

    ``values`` is ``(T,)`` for a scalar feature (stats of shape ``(1,)``), ``(T, ...)`` for an array
    (stats over its last axis), ``(T, H, W, C)`` uint8 for a camera (stats per channel, in [0, 1],
    shape ``(C, 1, 1)``).
    """
    if image:
        frames = _sampled_frames(values)
        stats = _row_stats(frames.reshape(-1, frames.shape[-1]), len(frames))
        return {
            name: value if name == "count" else (value / 255.0).reshape(-1, 1, 1)
            for name, value in stats.items()
        }
    values = np.asarray(values)
    rows = values.reshape(-1, 1) if values.ndim == 1 else values.reshape(-1, values.shape[-1])
    return _row_stats(rows, len(values))


def aggregate_stats(episodes: Sequence[Mapping[str, Mapping[str, np.ndarray]]]) -> dict[str, dict[str, Any]]:
    """The dataset's statistics from its episodes': count-weighted mean, pooled variance (parallel
    algorithm), min of minima, max of maxima, and for quantiles the lowest (q <= 50) or highest estimate."""
    names = list(dict.fromkeys(name for stats in episodes for name in stats))
    result: dict[str, dict[str, Any]] = {}
    for name in names:
        parts = [stats[name] for stats in episodes if name in stats]
        counts = np.stack([np.asarray(p["count"], dtype=np.float64) for p in parts])
        means = np.stack([np.asarray(p["mean"], dtype=np.float64) for p in parts])
        variances = np.stack([np.asarray(p["std"], dtype=np.float64) ** 2 for p in parts])
        total = counts.sum(axis=0)
        weights = counts.reshape(counts.shape + (1,) * (means.ndim - counts.ndim))
        mean = (means * weights).sum(axis=0) / total.reshape(
            total.shape + (1,) * (means.ndim - 1 - total.ndim)
        )
        variance = ((variances + (means - mean) ** 2) * weights).sum(axis=0) / total.reshape(
            total.shape + (1,) * (means.ndim - 1 - total.ndim)
        )
        merged: dict[str, Any] = {
            "min": np.min(np.stack([p["min"] for p in parts]), axis=0),
            "max": np.max(np.stack([p["max"] for p in parts]), axis=0),
            "mean": mean,
            "std": np.sqrt(variance),
            "count": np.asarray(total, dtype=np.int64),
        }
        for key in parts[0]:
            if key.startswith("q") and key[1:].isdigit() and all(key in p for p in parts):
                stacked = np.stack([p[key] for p in parts])
                merged[key] = stacked.min(axis=0) if int(key[1:]) <= 50 else stacked.max(axis=0)
        result[name] = merged
    return result


def stats_as_lists(stats: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Statistics as JSON lists (``stats.json``, the ``stats/<feature>/<stat>`` episode columns)."""
    return {
        name: {key: np.asarray(value).tolist() for key, value in values.items()}
        for name, values in stats.items()
    }


# ---------------------------------------------------------------------------------------------- metadata files
def write_json(path: Path, data: Any) -> None:
    """JSON as LeRobot writes it (4-space indent, UTF-8 kept as is)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=4, ensure_ascii=False), encoding="utf-8")


def write_tasks(path: Path, tasks: Sequence[str]) -> None:
    """``meta/tasks.parquet``: column ``task_index`` indexed by ``task``, as pandas writes a frame with a named
    index (``pandas.read_parquet`` restores the index from the ``pandas`` schema metadata; LeRobot looks tasks
    up by it)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    pandas_metadata = {
        "index_columns": ["task"],
        "column_indexes": [
            {
                "name": None,
                "field_name": None,
                "pandas_type": "unicode",
                "numpy_type": "object",
                "metadata": {"encoding": "UTF-8"},
            }
        ],
        "columns": [
            {
                "name": "task_index",
                "field_name": "task_index",
                "pandas_type": "int64",
                "numpy_type": "int64",
                "metadata": None,
            },
            {
                "name": "task",
                "field_name": "task",
                "pandas_type": "unicode",
                "numpy_type": "object",
                "metadata": None,
            },
        ],
        "creator": {"library": "pyarrow", "version": pa.__version__},
        "pandas_version": "2.2.3",
    }
    schema = pa.schema([("task_index", pa.int64()), ("task", pa.string())]).with_metadata(
        {b"pandas": json.dumps(pandas_metadata).encode()}
    )
    table = pa.table(
        [pa.array(range(len(tasks)), pa.int64()), pa.array(list(tasks), pa.string())], schema=schema
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, str(path))


def read_tasks(path: Path) -> dict[int, str]:
    """task_index -> task of a ``meta/tasks.parquet`` (the task as a column or as the pandas index)."""
    import pyarrow.parquet as pq

    table = pq.read_table(str(path))
    names = table.column_names
    text_column = "task" if "task" in names else None
    if text_column is None:
        metadata = json.loads((table.schema.metadata or {}).get(b"pandas", b"{}") or b"{}")
        index = [c for c in metadata.get("index_columns", []) if isinstance(c, str) and c in names]
        text_column = index[0] if index else None
    if text_column is None or "task_index" not in names:
        raise LeRobotFormatError(
            f"{path} has columns {names}, not task_index and task: it is not a LeRobot tasks file"
        )
    indices = table.column("task_index").to_pylist()
    texts = table.column(text_column).to_pylist()
    return {int(i): str(t) for i, t in zip(indices, texts)}


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The records of a JSON Lines file (LeRobot v2.x metadata)."""
    records = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as error:
                raise LeRobotFormatError(f"{path} line {number} is not JSON ({error.msg})") from None
    return records
