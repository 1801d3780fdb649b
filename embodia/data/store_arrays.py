"""How the trajectory store lays out its arrays: the episode schema and table rows, chunk codecs, chunk sizes,
growth, concurrent writes.

Helpers of :mod:`embodia.data.store` (which owns the layout and the commit protocol); kept apart so that the
store module reads as its protocol.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import zarr
from zarr.core.sync import sync as zarr_sync

from embodia.core.errors import StoreSchemaError

META_CHUNK = 1024
"""rows per chunk of the episode table and of ``meta/episode_ends``"""
TARGET_CHUNK_BYTES = 1 << 17  # ~128 KiB per chunk: appends rewrite at most a few small chunks
INITIAL_CAPACITY = 1024
RESERVED = {"action", "reward", "terminated", "truncated", "success", "sim_state"}
"""Keys with a fixed meaning; those without a role of their own are flags."""
IMAGE_CHANNELS = (1, 3, 4)
"""Channels of a camera image: grey, RGB, RGBA."""


def is_image(row_shape: tuple[int, ...] | list[int], dtype: np.dtype | str) -> bool:
    """Whether rows of this shape and dtype are camera images: uint8 (H, W, C), C in 1, 3, 4, H and W > 1.

    The one test of "is this key an image" (an episode's array is then (T, H, W, C)); video columns,
    exports and re-rendering all ask it.
    """
    shape = tuple(int(n) for n in row_shape)
    return (
        np.dtype(dtype) == np.uint8 and len(shape) == 3 and shape[2] in IMAGE_CHANNELS and min(shape[:2]) > 1
    )


def image_keys(schema: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The observation keys of a store schema (:attr:`TrajectoryStore.schema`) that hold camera images."""
    return [
        key
        for key, spec in schema.items()
        if spec.get("role") == "obs" and is_image(spec["shape"], spec["dtype"])
    ]


def chunk_codecs() -> tuple[Any, ...]:
    """Compression plus a CRC32C checksum of every chunk, so that damaged chunks are detected on read."""
    from zarr.codecs import Crc32cCodec, ZstdCodec

    return (ZstdCodec(level=0), Crc32cCodec())


def create_layout(path: Path, attrs: Mapping[str, Any]) -> None:
    """A new, empty store at ``path``: root attributes, ``data/``, ``meta/episode_ends`` and the episode table."""
    root = zarr.open_group(str(path), mode="a", zarr_format=3)  # only the writer's lock file is there
    root.attrs.update(dict(attrs))
    root.create_group("data")
    meta = root.create_group("meta")
    meta.create_array(
        "episode_ends",
        shape=(0,),
        dtype="int64",
        chunks=(META_CHUNK,),
        fill_value=0,
        compressors=chunk_codecs(),
    )
    episodes = meta.create_group("episodes")
    for name, dtype in (
        ("env_id", str),
        ("env_kwargs", str),
        ("seed", "int64"),
        ("length", "int64"),
        ("success", "bool"),
        ("return", "float64"),
    ):
        episodes.create_array(name, shape=(0,), dtype=dtype, chunks=(META_CHUNK,), compressors=chunk_codecs())


def create_data_arrays(
    data: zarr.Group,
    episodes: zarr.Group,
    schema: Mapping[str, Mapping[str, Any]],
    initial_state: np.ndarray | None,
    final_state: np.ndarray | None,
    arrays: dict[str, Any],
    columns: dict[str, Any],
) -> None:
    """The first episode's arrays: ``data/<key>`` for each key of ``schema`` (into ``arrays``) and, when it
    has a simulator state, the ``initial_state`` / ``final_state`` columns of the episode table (into
    ``columns``)."""
    for key, spec in schema.items():
        shape = tuple(spec["shape"])
        rows = chunk_rows(shape, np.dtype(spec["dtype"]))
        arrays[key] = data.create_array(
            key, shape=(0, *shape), dtype=spec["dtype"], chunks=(rows, *shape), compressors=chunk_codecs()
        )
    state = initial_state if initial_state is not None else final_state
    if state is not None:
        width = int(np.asarray(state).size)
        for name in ("initial_state", "final_state"):
            columns[name] = episodes.create_array(
                name,
                shape=(0, width),
                dtype="float64",
                chunks=(64, width),
                fill_value=np.nan,
                compressors=chunk_codecs(),
            )


def chunk_rows(row_shape: tuple[int, ...], dtype: np.dtype) -> int:
    row_bytes = max(1, int(np.prod(row_shape, dtype=np.int64)) * np.dtype(dtype).itemsize)
    rows = TARGET_CHUNK_BYTES // row_bytes
    return int(min(1 << 14, max(16, 1 << max(0, int(rows).bit_length() - 1))))


def ensure_capacity(array: zarr.Array, rows: int) -> None:
    """Grow ``array`` (by doubling) so that it has at least ``rows`` rows."""
    capacity = array.shape[0]
    if capacity < rows:
        while capacity < rows:
            capacity = max(capacity * 2, INITIAL_CAPACITY)
        array.resize((capacity, *array.shape[1:]))


def write_concurrently(writes: list[tuple[zarr.Array, slice, np.ndarray]]) -> None:
    """Run several array writes on zarr's event loop at once (~40 % less time than one by one).

    Every write finishes (or fails) before this returns, so a failed one cannot leave others still writing
    behind the caller's clean-up; the first failure is then raised.
    """

    async def write_all() -> None:
        outcomes = await asyncio.gather(
            *(array.async_array.setitem(where, value) for array, where, value in writes),
            return_exceptions=True,
        )
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome

    zarr_sync(write_all())


def checked_episode(
    data: Mapping[str, np.ndarray], roles: Mapping[str, str]
) -> tuple[dict[str, np.ndarray], dict[str, dict[str, Any]]]:
    """An episode's arrays and their schema (:func:`episode_schema`).

    Raises:
        StoreSchemaError: arrays of different lengths, or none, or of 0 steps.
    """
    arrays = {key: np.asarray(value) for key, value in data.items()}
    lengths = {key: len(value) for key, value in arrays.items()}
    if not arrays or len(set(lengths.values())) != 1:
        raise StoreSchemaError(f"episode arrays must share their length on axis 0, got {lengths}")
    if next(iter(lengths.values())) == 0:
        raise StoreSchemaError("cannot store an empty episode (0 steps)")
    return arrays, episode_schema(arrays, roles)


def episode_schema(arrays: Mapping[str, np.ndarray], roles: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    """Each key's shape, dtype and role (obs, action, reward, flag, state), in role order.

    Raises:
        StoreSchemaError: a key that is empty or contains '/'.
    """
    fixed = {"action": "action", "reward": "reward", "sim_state": "state"}
    schema = {}
    for key, value in arrays.items():
        if "/" in key or not key:
            raise StoreSchemaError(f"invalid data key {key!r}: keys are non-empty and contain no '/'")
        role = roles.get(key) or fixed.get(key) or ("flag" if key in RESERVED else "obs")
        schema[key] = {"shape": list(value.shape[1:]), "dtype": str(value.dtype), "role": role}
    order = {"obs": 0, "action": 1, "reward": 2, "flag": 3, "state": 4}
    return dict(sorted(schema.items(), key=lambda kv: order.get(kv[1]["role"], 5)))


def table_row(
    arrays: Mapping[str, np.ndarray], info: Mapping[str, Any], length: int, columns: Mapping[str, Any]
) -> dict[str, np.ndarray]:
    """One episode's row of the episode table (``meta/episodes``): id, arguments, seed, length, success,
    return, and the simulator states where the store has those columns.

    Raises:
        StoreSchemaError: no ``env_id``, or a state of another width than the store's.
    """
    if "env_id" not in info:
        raise StoreSchemaError("every episode needs an env_id (the id it can be re-created from)")
    success = info.get("success")
    if success is None:
        success = bool(arrays["success"].any()) if "success" in arrays else False
    reward = arrays.get("reward")
    row: dict[str, np.ndarray] = {
        "env_id": np.array([str(info["env_id"])]),
        "env_kwargs": np.array([json.dumps(dict(info.get("env_kwargs") or {}), sort_keys=True)]),
        "seed": np.array([int(info.get("seed", -1))], dtype=np.int64),
        "length": np.array([length], dtype=np.int64),
        "success": np.array([bool(success)]),
        "return": np.array([float(reward.sum()) if reward is not None else 0.0]),
    }
    for name in ("initial_state", "final_state"):
        if name in columns:
            width = columns[name].shape[1]
            value = info.get(name)
            state = np.full(width, np.nan) if value is None else np.asarray(value, dtype=np.float64)
            if state.shape != (width,):
                raise StoreSchemaError(
                    f"{name} has shape {state.shape}, the store holds states of shape ({width},)"
                )
            row[name] = state[None]
    return row
