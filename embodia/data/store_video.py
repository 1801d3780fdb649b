"""Camera keys kept as video inside a trajectory store (opt-in per store: ``--video-codec h264|av1``).

Layout, for each image key chosen when the first episode is written (uint8 (H, W, 1|3) observations,
:func:`~embodia.data.store_arrays.image_keys`)::

    video/<key>/bytes   uint8: every episode's mp4 file (:func:`~embodia.data.video.encode_frames`) one
                        after the other; chunks of 256 KiB with the store's codecs (zstd, which only
                        shrinks the unused tail of the last chunk, and a CRC32C checksum)
    video/<key>/ends    int64: cumulative byte end of each episode's file
    attrs["video"]      codec, crf, gop, preset (:class:`~embodia.data.video.VideoEncoding`) and keys

Such a key has no ``data/<key>`` array; its schema entry (shape, dtype, role) is the same as in a raw
store, and reading (``episode``, ``load``, ``array(key)[rows]``) decodes the frames, so a reader cannot tell
the two apart except by the pixels (within the codec's error: PSNR in the store guide). Every other key
(state, action, rewards, flags, ``sim_state``) stays in ``data/`` losslessly, so replay verification holds.

Commit protocol: an episode's file goes into ``bytes`` and its end into ``ends`` together with its rows of
the ``data/`` arrays, all before ``meta/episode_ends`` commits it; both arrays grow by doubling, what lies
past the committed episodes is never read and the next writer overwrites it, as for the ``data/`` arrays.
A file whose frame count differs from its episode's length (a truncated or foreign rewrite that kept its
checksums) is a corrupt store, named by key and episode.

Stores with video columns carry format version 2 (:data:`VIDEO_FORMAT_VERSION`): an embodia that reads only
version 1 would take the missing ``data/<key>`` for corruption, so it is told to upgrade instead.
"""

from __future__ import annotations

import contextlib
import math
import shutil
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import zarr

from embodia.core.errors import StoreCorruptError, StoreError, StoreSchemaError
from embodia.data.store_arrays import chunk_codecs, chunk_rows, ensure_capacity, image_keys
from embodia.data.store_failures import check_same_folder, write_failure
from embodia.data.video import (
    VIDEO_CHANNELS,
    VIDEO_ENCODERS,
    VideoDecodeError,
    VideoEncoding,
    decode_frames,
    encode_frames,
)

VIDEO_FORMAT_VERSION = 2
"""format version of a store with video columns"""
VIDEO_GROUP = "video"
BYTES_CHUNK = 1 << 18
"""bytes per chunk of ``video/<key>/bytes`` (an append rewrites the last, partly filled one)"""
CODEC_NAMES = ("none", *VIDEO_ENCODERS)
"""what ``--video-codec`` accepts"""

Read = Callable[[Any, slice, str], np.ndarray]


def codec_name(codec: str | None) -> str | None:
    """``"h264"``, ``"av1"``, ``"none"`` (images raw) or None (not given: whatever the store has).

    Raises:
        StoreError: an unknown codec name.
    """
    if codec is None:
        return None
    name = str(codec).lower()
    if name not in CODEC_NAMES:
        raise StoreError(f"unknown video codec {codec!r}: choose one of {', '.join(CODEC_NAMES)}")
    return name


def video_attrs(codec: str | None) -> dict[str, Any] | None:
    """The ``video`` attribute of a new store recorded with ``codec`` (None: images raw)."""
    if codec in (None, "none"):
        return None
    return {**VideoEncoding.default(codec).as_dict(), "keys": []}


def choose_video_keys(schema: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The keys a video store encodes: its image keys of 1 or 3 channels (RGBA stays raw)."""
    return [key for key in image_keys(schema) if int(schema[key]["shape"][2]) in VIDEO_CHANNELS]


class VideoColumn:
    """One image key stored as video; reads like a (steps, H, W, C) uint8 array of decoded frames.

    ``column[a:b]`` decodes the episodes that rows ``a..b`` fall in (the last decoded episode is kept), so
    code that reads ``store.array(key)`` (window streaming, viewers) works on video stores unchanged.
    """

    def __init__(self, store: Any, key: str, group: zarr.Group, spec: Mapping[str, Any]) -> None:
        self.store = store
        self.key = key
        self.row_shape = tuple(int(n) for n in spec["shape"])
        self.dtype = np.dtype(np.uint8)
        self.bytes: zarr.Array = group["bytes"]
        self.ends: zarr.Array = group["ends"]
        self.byte_ends = np.zeros(0, dtype=np.int64)
        self._cached: tuple[int, np.ndarray] | None = None

    @staticmethod
    def create(store: Any, key: str, parent: zarr.Group, spec: Mapping[str, Any]) -> VideoColumn:
        group = parent.create_group(key)
        group.create_array(
            "bytes", shape=(0,), dtype="uint8", chunks=(BYTES_CHUNK,), compressors=chunk_codecs()
        )
        group.create_array(
            "ends", shape=(0,), dtype="int64", chunks=(1024,), fill_value=0, compressors=chunk_codecs()
        )
        return VideoColumn(store, key, group, spec)

    # ------------------------------------------------------------------ array-like reading
    @property
    def shape(self) -> tuple[int, ...]:
        return (self.store.num_steps, *self.row_shape)

    @property
    def chunks(self) -> tuple[int, ...]:
        """A block size for readers that align to chunks (the video itself is cut by episodes)."""
        return (chunk_rows(self.row_shape, self.dtype), *self.row_shape)

    def __getitem__(self, where: slice) -> np.ndarray:
        if not isinstance(where, slice) or where.step not in (None, 1):
            raise TypeError(f"video column {self.key!r} is read by row ranges (column[a:b])")
        start, stop, _ = where.indices(self.store.num_steps)
        stop = max(start, stop)
        ends = self.store._ends
        first = int(np.searchsorted(ends, start, side="right"))
        last = int(np.searchsorted(ends, stop - 1, side="right")) if stop > start else first - 1
        parts = []
        for episode in range(first, last + 1):
            begin = int(ends[episode - 1]) if episode else 0
            frames = self.episode_frames(episode)
            parts.append(frames[max(start, begin) - begin : min(stop, int(ends[episode])) - begin])
        if not parts:
            return np.zeros((0, *self.row_shape), dtype=self.dtype)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def episode_bytes(self, episode: int) -> bytes:
        """The mp4 file of one committed episode, checked against its chunks' checksums."""
        begin = int(self.byte_ends[episode - 1]) if episode else 0
        where = slice(begin, int(self.byte_ends[episode]))
        return self.store._read(self.bytes, where, f"video/{self.key}/bytes (episode {episode})").tobytes()

    def episode_frames(self, episode: int) -> np.ndarray:
        """One committed episode's decoded frames, (length, H, W, C) uint8.

        Raises:
            StoreCorruptError: the file does not decode, or holds another number of frames than the episode
                has steps.
        """
        cached = self._cached
        if cached is not None and cached[0] == episode:
            return cached[1]
        length = int(self.store.episode_lengths[episode])
        where = f"trajectory store {str(self.store.path)!r} is corrupt: video/{self.key} of episode {episode}"
        try:
            frames = decode_frames(self.episode_bytes(episode), self.row_shape)
        except VideoDecodeError as error:
            raise StoreCorruptError(f"{where} is {error}") from None
        if len(frames) != length:
            raise StoreCorruptError(
                f"{where} has {len(frames)} frames, the episode has {length} steps; "
                "the video is truncated or was rewritten by another program"
            )
        self._cached = (episode, frames)
        return frames

    # ------------------------------------------------------------------ checks
    def check(self, episodes: int, read: Read) -> None:
        """On open: the byte ends of the committed episodes increase and the bytes they name exist."""
        where = f"trajectory store {str(self.store.path)!r} is corrupt"
        if self.ends.shape[0] < episodes:
            raise StoreCorruptError(
                f"{where}: video/{self.key}/ends has {self.ends.shape[0]} rows for {episodes} episodes"
            )
        ends = read(self.ends, slice(0, episodes), f"video/{self.key}/ends")
        previous = np.concatenate([[0], ends[:-1]])
        bad = np.flatnonzero(ends <= previous)
        if len(bad):
            raise StoreCorruptError(
                f"{where}: video/{self.key}/ends gives episode {int(bad[0])} no bytes "
                f"({int(ends[bad[0]])} after {int(previous[bad[0]])})"
            )
        if episodes and self.bytes.shape[0] < int(ends[-1]):
            raise StoreCorruptError(
                f"{where}: video/{self.key}/bytes has {self.bytes.shape[0]} bytes, "
                f"the {episodes} committed episodes need {int(ends[-1])}"
            )
        self.byte_ends = ends.astype(np.int64)

    def verify(self) -> int:
        """Decode every committed episode (checksums and frame counts); returns how many."""
        for episode in range(len(self.byte_ends)):
            self._cached = None
            self.episode_frames(episode)
        self._cached = None
        return len(self.byte_ends)

    # ------------------------------------------------------------------ writing
    def append_writes(
        self, episodes: Sequence[np.ndarray], committed: int, encoding: VideoEncoding, fps: float | None
    ) -> tuple[list[tuple[zarr.Array, slice, np.ndarray]], np.ndarray]:
        """Encode ``episodes`` (each (T, H, W, C)) as the episodes after the ``committed`` ones.

        Returns the writes (bytes and ends, past the committed ones) and the new byte ends, which
        :meth:`committed_through` takes once ``meta/episode_ends`` has committed them.
        """
        files = [np.frombuffer(encode_frames(frames, encoding, fps), dtype=np.uint8) for frames in episodes]
        start = int(self.byte_ends[committed - 1]) if committed else 0
        ends = start + np.cumsum([len(f) for f in files], dtype=np.int64)
        ensure_capacity(self.bytes, int(ends[-1]))
        ensure_capacity(self.ends, committed + len(files))
        writes = [
            (self.bytes, slice(start, int(ends[-1])), np.concatenate(files)),
            (self.ends, slice(committed, committed + len(files)), ends),
        ]
        return writes, ends

    def committed_through(self, ends: np.ndarray) -> None:
        self.byte_ends = np.concatenate([self.byte_ends, ends])

    def remove_uncommitted(self, root: Path, episodes: int) -> None:
        """Delete chunk files wholly past the committed episodes (after a refused write); best effort."""
        committed_bytes = int(self.byte_ends[episodes - 1]) if episodes else 0
        for name, rows, size in (("bytes", committed_bytes, BYTES_CHUNK), ("ends", episodes, 1024)):
            chunk_dir = root / VIDEO_GROUP / self.key / name / "c"
            if not chunk_dir.is_dir():
                continue
            for entry in list(chunk_dir.iterdir()):
                if entry.name.isdigit() and int(entry.name) >= math.ceil(rows / size):
                    with contextlib.suppress(OSError):
                        shutil.rmtree(entry) if entry.is_dir() else entry.unlink()


class VideoAndFps:
    """The part of :class:`~embodia.data.store.TrajectoryStore` that keeps its frame rate and video columns
    (attributes ``fps`` and ``video``), kept apart so that the store module reads as its commit protocol."""

    path: Path
    mode: str
    _root: zarr.Group
    _video: dict[str, VideoColumn]
    _folder: tuple[int, int]
    num_episodes: int
    close: Any  # the store's: releases the writer lock

    def _check_settings(self, codec: str | None, fps: float | None) -> None:
        """The codec and fps asked for agree with the store's (a writer records an fps the store lacks)."""
        has = self.video_codec or "none"
        if codec is not None and codec != has:
            self.close()
            raise StoreError(
                f"trajectory store {str(self.path)!r} keeps its images {'raw' if has == 'none' else 'as ' + has}"
                f", not {'raw' if codec == 'none' else 'as ' + codec}: record with --video-codec {has}, or "
                "into a new store"
            )
        if fps is not None and self.mode != "r" and (self.fps is None or not self.num_episodes):
            self.set_fps(fps)
        elif fps is not None and self.fps is not None and not math.isclose(fps, self.fps, rel_tol=1e-9):
            self.close()
            raise StoreError(
                f"trajectory store {str(self.path)!r} was recorded at {self.fps:g} steps per second, not {fps:g}: "
                "record episodes of another control frequency into a new store"
            )

    @property
    def fps(self) -> float | None:
        """The recorded environment's control frequency in steps per second (None: not recorded)."""
        fps = self._root.attrs.get("fps")
        return None if fps is None else float(fps)

    def set_fps(self, fps: float) -> None:
        """Record the control frequency (writers; a store that has one keeps it unless it has no episodes).

        Raises:
            StoreSchemaError: the store has episodes recorded at another frequency.
        """
        fps = checked_fps(fps)
        if self.mode == "r":
            raise StoreError(
                f"store {str(self.path)!r} is open read-only; open it with mode='a' to set its fps"
            )
        if self.fps is not None and self.num_episodes and not math.isclose(fps, self.fps, rel_tol=1e-9):
            raise StoreSchemaError(
                f"episodes at {fps:g} steps per second do not match store {str(self.path)!r}, recorded at "
                f"{self.fps:g}: record them into a separate store"
            )
        if fps != self.fps:
            try:
                check_same_folder(self.path, self._folder)
                self._root.attrs["fps"] = fps
            except OSError as error:
                raise write_failure(self.path, error, self.num_episodes) from None

    @property
    def video_codec(self) -> str | None:
        """``"h264"`` or ``"av1"`` for a store whose camera keys are video, else None (images raw)."""
        video = self._root.attrs.get("video")
        return str(video["codec"]) if video else None

    @property
    def video_keys(self) -> list[str]:
        """The image keys stored as video (decoded on read); empty for a raw store."""
        return list(self._video)

    def _create_video_columns(self, schema: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
        """With the first episode: a video column for each image key, if the store records video; returns
        the root attributes to write with the schema (the video keys and format version 2)."""
        video = dict(self._root.attrs.get("video") or {})
        keys = choose_video_keys(schema) if video else []
        if not keys:
            return {}
        group = self._root.require_group(VIDEO_GROUP)
        self._video = {key: VideoColumn.create(self, key, group, schema[key]) for key in keys}
        return {"video": {**video, "keys": keys}, "embodia_format": VIDEO_FORMAT_VERSION}

    def _video_writes(
        self, key: str, episodes: Sequence[np.ndarray], committed: int, writes: list
    ) -> np.ndarray:
        """Encode a batch's frames of ``key``; adds the writes to ``writes``, returns the new byte ends."""
        settings = {name: value for name, value in self._root.attrs["video"].items() if name != "keys"}
        more, ends = self._video[key].append_writes(episodes, committed, VideoEncoding(**settings), self.fps)
        writes.extend(more)
        return ends


def checked_fps(fps: float | None) -> float | None:
    if fps is None:
        return None
    if isinstance(fps, bool) or not isinstance(fps, (int, float, np.number)) or not 0 < float(fps) < math.inf:
        raise ValueError(f"fps must be a positive, finite number of steps per second, got {fps!r}")
    return float(fps)


def open_video_columns(store: Any, root: zarr.Group, keys: Sequence[str]) -> dict[str, VideoColumn]:
    """The video columns of an existing store (``keys`` from its ``video`` attribute).

    Raises:
        StoreCorruptError: a key listed as video whose group is missing or not in the schema.
    """
    columns = {}
    for key in keys:
        if key not in store._schema:
            raise StoreCorruptError(
                f"trajectory store {str(store.path)!r} is corrupt: video key {key!r} is not in its schema"
            )
        try:
            columns[key] = VideoColumn(store, key, root[f"{VIDEO_GROUP}/{key}"], store._schema[key])
        except (KeyError, FileNotFoundError):
            raise StoreCorruptError(
                f"trajectory store {str(store.path)!r} is corrupt: {VIDEO_GROUP}/{key} is listed in its "
                "attributes but missing"
            ) from None
    return columns
