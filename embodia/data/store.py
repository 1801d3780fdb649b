"""The trajectory store: episodes in a zarr v3 directory, committed atomically one at a time.

Layout::

    store.zarr/
      data/<key>          one array per observation / action / reward / flag key; episodes are
                          concatenated on axis 0, chunked along time, zstd-compressed, CRC32C per chunk
      meta/episode_ends   int64, cumulative end index of each committed episode
      meta/episodes/<col> per-episode table: env_id, env_kwargs (JSON), seed, success, length,
                          return, initial_state, final_state
      video/<key>/...     image keys recorded as video (opt-in, :mod:`embodia.data.store_video`)
      attrs               embodia_format, embodia_version, created, updated, schema, fps, video

Commit protocol. Arrays grow by doubling their capacity, so rows past the last committed episode are
unused capacity (or leftovers of an interrupted write) and are never read: ``meta/episode_ends`` says
which rows exist. An episode is written in three steps: its rows go into every ``data/`` array, then
its row into every ``meta/episodes`` column, and last its end index into ``meta/episode_ends``, which
commits it. zarr writes each chunk file atomically (temporary file + rename), so a process killed at
any point leaves every earlier episode readable; readers take the longest strictly increasing prefix
of ``episode_ends`` (unused capacity reads as 0), and the next writer overwrites any leftovers.

One writer at a time, enforced by a lock that dies with its process (:mod:`embodia.data.writer_lock`);
any number of readers. Opening checks that metadata, episode table and arrays agree, and every chunk
read is checked against its checksum (:mod:`embodia.data.store_integrity`).
"""

from __future__ import annotations

import datetime as _dt
import json
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import zarr

from embodia.core.errors import (
    EpisodeIndexError,
    StoreCorruptError,
    StoreError,
    StoreFormatError,
    StoreNotFoundError,
    StoreSchemaError,
)
from embodia.data.episode_meta import EpisodeMeta
from embodia.data.store_arrays import (
    checked_episode,
    create_data_arrays,
    create_layout,
    ensure_capacity,
    table_row,
    write_concurrently,
)
from embodia.data.store_failures import (
    check_same_folder,
    folder_identity,
    moved_away,
    remove_created,
    remove_strays,
    remove_uncommitted_chunks,
    wait_for_pending_writes,
    write_failure,
)
from embodia.data.store_integrity import (
    PATH_PROBLEMS,
    STORE_ENTRIES,
    check_consistency,
    classify_path,
    committed_ends,
    empty_store,
    read_every_chunk,
    schema_difference,
)
from embodia.data.store_video import (
    VIDEO_FORMAT_VERSION,
    VideoAndFps,
    VideoColumn,
    checked_fps,
    codec_name,
    open_video_columns,
    video_attrs,
)
from embodia.data.writer_lock import WriterLock

FORMAT_VERSION = 1
"""format version of a store whose keys are all ``data/`` arrays (what every embodia reads)"""
READABLE_FORMATS = (FORMAT_VERSION, VIDEO_FORMAT_VERSION)
"""versions this embodia reads: 2 is a store with video columns (:mod:`embodia.data.store_video`)"""


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


class TrajectoryStore(VideoAndFps):
    """Episodes of (observation, action, reward, ...) arrays in a zarr v3 store.

    Args:
        path: the store directory (``*.zarr`` by convention).
        mode: ``"r"`` read an existing store; ``"a"`` read and append, creating the store if ``path``
            does not exist or is an empty directory; ``"w"`` like ``"a"``, but an existing embodia store
            at ``path`` is emptied first.
        video_codec: how a new store keeps its camera keys: ``"h264"`` or ``"av1"`` as video (lossy, see
            :mod:`embodia.data.store_video`), ``"none"`` raw; for an existing store it must be what the store
            has, or None.
        fps: the recorded environment's control frequency (steps per second) of a new store; for an existing
            store it must be what the store has, or None (a writer records it in a store that has none).

    Writers (``"a"``, ``"w"``) take the store's writer lock (:mod:`embodia.data.writer_lock`) until
    :meth:`close` (or the end of a ``with`` block, or the process). Nothing that embodia did not write is
    ever deleted or written into: a path holding anything but an embodia store is refused.

    Raises:
        StoreNotFoundError: ``mode="r"`` and no store is at ``path``.
        StoreError: ``path`` holds something that is not an embodia store.
        StoreCorruptError: the store's metadata, episode table and arrays disagree.
        StoreFormatError: the store was written by an incompatible format version.
        StoreLockedError: another writer has the store open.
    """

    def __init__(
        self, path: str | Path, mode: str = "r", *, video_codec: str | None = None, fps: float | None = None
    ) -> None:
        if mode not in ("r", "a", "w"):
            raise ValueError(f"mode must be 'r', 'a' or 'w', got {mode!r}")
        self.path = Path(path)
        self.mode = mode
        codec, fps = codec_name(video_codec), checked_fps(fps)
        self._lock: WriterLock | None = None
        kind = classify_path(self.path)
        where = str(self.path)
        if kind == "store":
            pass
        elif kind == "missing" and mode == "r":
            raise StoreNotFoundError(
                f"trajectory store {where!r} does not exist; record one with "
                "`embodia run ENV --record STORE.zarr` or TrajectoryStore(path, mode='a')"
            )
        elif kind == "empty" and mode == "r":
            raise StoreNotFoundError(f"{where!r} is an empty directory, not a trajectory store")
        elif kind not in ("missing", "empty"):
            raise StoreError(f"{where!r} {PATH_PROBLEMS[kind]}")
        if mode != "r":
            try:
                self._take_lock(create=kind != "store")
                if kind != "store":
                    self._create(codec, fps)
                elif mode == "w":
                    empty_store(self.path)
                    self._create(codec, fps)
            except OSError as error:  # a read-only or full file system: one line, nothing half-made kept
                self.close()
                if kind in ("missing", "empty"):
                    remove_created(self.path, STORE_ENTRIES, remove_folder=kind == "missing")
                raise write_failure(self.path, error, None) from None
        self._open()
        self._check_settings(codec, fps)

    # ------------------------------------------------------------------ open / create
    def _take_lock(self, create: bool) -> None:
        if create:
            try:
                self.path.mkdir(parents=True, exist_ok=True)
            except (FileExistsError, NotADirectoryError) as error:
                raise StoreError(
                    f"cannot create trajectory store {str(self.path)!r}: a file is in the way ({error.filename})"
                ) from None
        self._lock = WriterLock(self.path)
        self._lock.acquire()

    def _create(self, codec: str | None, fps: float | None) -> None:
        attrs = {
            "embodia_format": FORMAT_VERSION,  # VIDEO_FORMAT_VERSION once video columns exist
            "embodia_version": _embodia_version(),
            "created": _now(),
            "updated": _now(),
            "schema": {},
            "fps": fps,
        }
        video = video_attrs(codec)
        create_layout(self.path, attrs if video is None else {**attrs, "video": video})

    def _open(self) -> None:
        try:
            self._root = zarr.open_group(str(self.path), mode="r" if self.mode == "r" else "r+")
            attrs = dict(self._root.attrs)
        except Exception as error:  # zarr raises several types for unreadable metadata
            raise StoreCorruptError(
                f"trajectory store {str(self.path)!r} is corrupt: its root metadata (zarr.json) cannot be read "
                f"({type(error).__name__}: {error})"
            ) from None
        version = attrs.get("embodia_format")
        if version is None:
            raise StoreError(
                f"{str(self.path)!r} is a zarr store but not an embodia trajectory store "
                "(no 'embodia_format' attribute)"
            )
        if version not in READABLE_FORMATS:
            raise StoreFormatError(
                f"trajectory store {str(self.path)!r} has format version {version}, this embodia "
                f"({_embodia_version()}) reads versions {', '.join(map(str, READABLE_FORMATS))}; "
                "use the embodia version that wrote it (a newer one, if the version is higher)"
            )
        try:
            self._data = self._root["data"]
            self._ends_array = self._root["meta/episode_ends"]
            self._episodes = self._root["meta/episodes"]
            # Array handles are opened once: every group lookup re-reads metadata from disk.
            self._arrays: dict[str, zarr.Array] = dict(self._data.arrays())
            self._columns: dict[str, zarr.Array] = dict(self._episodes.arrays())
        except Exception as error:  # a missing or unreadable group / array
            raise StoreCorruptError(
                f"trajectory store {str(self.path)!r} is corrupt: cannot open {error}; "
                "it cannot be repaired automatically"
            ) from None
        self._schema: dict[str, dict[str, Any]] = dict(attrs.get("schema", {}))
        self._refresh_ends()
        self._video = open_video_columns(self, self._root, (attrs.get("video") or {}).get("keys", []))
        for column in self._video.values():
            column.check(self.num_episodes, self._read)
        self._arrays.update(self._video)
        check_consistency(self.path, self._ends, self._schema, self._arrays, self._columns, self._read)
        self._folder = folder_identity(self.path)
        if self.mode != "r":
            self._remove_partial_files()

    def close(self) -> None:
        """Release the writer lock (a reader has none); the object must not write afterwards."""
        if self._lock is not None:
            self._lock.release()
            self._lock = None
            self.mode = "r"

    def __enter__(self) -> TrajectoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _refresh_ends(self) -> None:
        ends = self._read(self._ends_array, slice(None), "meta/episode_ends")
        self._ends = committed_ends(ends, self.path)

    def _read(self, array: zarr.Array, where: slice, name: str) -> np.ndarray:
        """``array[where]``; a chunk that fails its checksum or cannot be decoded is a corrupt store."""
        try:
            return np.asarray(array[where])
        except StoreError:  # a video column's own message (key and episode)
            raise
        except Exception as error:  # zarr / numcodecs raise ValueError, RuntimeError, ... for bad chunks
            rows = f"rows {where.start or 0}..{where.stop}" if where.stop is not None else "its rows"
            episodes = ""
            if name.startswith("data/") and where.stop is not None and len(getattr(self, "_ends", ())):
                first = int(np.searchsorted(self._ends, where.start or 0, side="right"))
                last = int(np.searchsorted(self._ends, where.stop - 1, side="right"))
                episodes = f" (episode {first})" if first == last else f" (episodes {first}-{last})"
            why = f"{type(error).__name__}: {error}"
            if "checksum" in str(error):
                why = "a chunk fails its CRC32C checksum (its file changed after embodia wrote it)"
            raise StoreCorruptError(
                f"trajectory store {str(self.path)!r} is corrupt: reading {name} {rows}{episodes} failed: {why}"
            ) from None

    def _remove_partial_files(self) -> None:
        for partial in self.path.rglob("*.partial"):
            partial.unlink(missing_ok=True)

    # ------------------------------------------------------------------ reading
    @property
    def num_episodes(self) -> int:
        return len(self._ends)

    def __len__(self) -> int:
        return self.num_episodes

    @property
    def num_steps(self) -> int:
        return int(self._ends[-1]) if len(self._ends) else 0

    @property
    def episode_ends(self) -> np.ndarray:
        """Cumulative end index of each committed episode (a copy)."""
        return self._ends.copy()

    @property
    def episode_lengths(self) -> np.ndarray:
        return np.diff(np.concatenate([[0], self._ends]))

    @property
    def keys(self) -> list[str]:
        """The data keys (observation keys first, then action, reward, flags, sim_state)."""
        return list(self._schema)

    @property
    def schema(self) -> dict[str, dict[str, Any]]:
        """key -> {"shape": row shape, "dtype": str, "role": "obs" | "action" | "reward" | "flag" | "state"}."""
        return {k: dict(v) for k, v in self._schema.items()}

    @property
    def obs_keys(self) -> list[str]:
        return [k for k, v in self._schema.items() if v["role"] == "obs"]

    @property
    def attrs(self) -> dict[str, Any]:
        return dict(self._root.attrs)

    def array(self, key: str) -> zarr.Array | VideoColumn:
        """The zarr array behind ``data/<key>``; only its first :attr:`num_steps` rows are episodes.

        A video key gives a :class:`~embodia.data.store_video.VideoColumn`, which reads rows like an array."""
        if key not in self._schema:
            raise KeyError(f"store {str(self.path)!r} has no key {key!r}; keys: {', '.join(self.keys)}")
        return self._arrays[key]

    def load(self, keys: list[str] | None = None) -> dict[str, np.ndarray]:
        """Read whole arrays (committed rows only) into memory."""
        n = self.num_steps
        return {key: self._read(self.array(key), slice(0, n), f"data/{key}") for key in (keys or self.keys)}

    def _bounds(self, index: int) -> tuple[int, int]:
        n = self.num_episodes
        if not -n <= index < n:
            raise EpisodeIndexError(
                f"episode {index} out of range: store {str(self.path)!r} has {n} episodes (0..{n - 1})"
            )
        index %= n
        start = int(self._ends[index - 1]) if index else 0
        return start, int(self._ends[index])

    def episode(self, index: int, keys: list[str] | None = None) -> dict[str, np.ndarray]:
        """All arrays of one episode, keyed like the store."""
        start, end = self._bounds(index)
        return {
            key: self._read(self.array(key), slice(start, end), f"data/{key}") for key in (keys or self.keys)
        }

    def episode_meta(self, index: int) -> EpisodeMeta:
        start, end = self._bounds(index)
        index %= self.num_episodes
        row = slice(index, index + 1)
        values = {
            name: self._read(column, row, f"meta/episodes/{name}")[0]
            for name, column in self._columns.items()
        }
        try:
            env_kwargs = json.loads(str(values["env_kwargs"]))
        except json.JSONDecodeError:
            raise StoreCorruptError(
                f"trajectory store {str(self.path)!r} is corrupt: meta/episodes/env_kwargs of episode {index} "
                "is not JSON"
            ) from None
        return EpisodeMeta(
            index=index,
            env_id=str(values["env_id"]),
            env_kwargs=env_kwargs,
            seed=int(values["seed"]),
            success=bool(values["success"]),
            length=end - start,
            return_=float(values["return"]),
            start=start,
            initial_state=values.get("initial_state"),
            final_state=values.get("final_state"),
        )

    def episodes_table(self) -> dict[str, np.ndarray]:
        """The scalar columns of ``meta/episodes`` for all committed episodes."""
        n = self.num_episodes
        table = {
            name: self._read(self._columns[name], slice(0, n), f"meta/episodes/{name}")
            for name in ("env_id", "seed", "length", "success", "return")
        }
        table["env_id"] = np.array([str(x) for x in table["env_id"]], dtype=object)
        return table

    def verify(self) -> dict[str, Any]:
        """Decode every committed chunk of every array and column, checksums included; returns a report.

        Opening a store already checks that its metadata, episode table and arrays agree; this also reads
        every chunk, so a damaged file is found before anything trains on it or replays it.

        Raises:
            StoreCorruptError: naming the first array, rows and episodes that cannot be read.
        """
        raw = {key: spec for key, spec in self._schema.items() if key not in self._video}
        report = read_every_chunk(self._ends, raw, self._arrays, self._columns, self._read)
        report["videos_decoded"] = sum(column.verify() for column in self._video.values())
        for i in range(self.num_episodes):
            self.episode_meta(i)  # env_kwargs must be JSON
        return {"path": str(self.path), **report, "ok": True}

    def __iter__(self) -> Iterator[dict[str, np.ndarray]]:
        for i in range(self.num_episodes):
            yield self.episode(i)

    def summary(self) -> dict[str, Any]:
        """What ``embodia info`` prints."""
        table = self.episodes_table()
        lengths = self.episode_lengths
        return {
            "path": str(self.path),
            "episodes": self.num_episodes,
            "steps": self.num_steps,
            "length_mean": float(lengths.mean()) if len(lengths) else 0.0,
            "length_min": int(lengths.min()) if len(lengths) else 0,
            "length_max": int(lengths.max()) if len(lengths) else 0,
            "success_rate": float(table["success"].mean()) if len(lengths) else 0.0,
            "return_mean": float(table["return"].mean()) if len(lengths) else 0.0,
            "env_ids": sorted(set(table["env_id"].tolist())),
            "keys": {
                k: {"shape": v["shape"], "dtype": v["dtype"], "role": v["role"]}
                for k, v in self._schema.items()
            },
            "fps": self.fps,
            "video_codec": self.video_codec,
            "video_keys": self.video_keys,
            "format": self._root.attrs.get("embodia_format"),
            "created": self._root.attrs.get("created"),
            "updated": self._root.attrs.get("updated"),
        }

    # ------------------------------------------------------------------ writing
    def add_episode(
        self,
        data: Mapping[str, np.ndarray],
        *,
        env_id: str,
        env_kwargs: Mapping[str, Any] | None = None,
        seed: int = -1,
        success: bool | None = None,
        initial_state: np.ndarray | None = None,
        final_state: np.ndarray | None = None,
        roles: Mapping[str, str] | None = None,
    ) -> int:
        """Append one episode and commit it; returns its index.

        Args:
            data: key -> array with the episode's T rows on axis 0 (every key the same T). The keys
                ``action``, ``reward``, ``terminated``, ``truncated``, ``success`` and ``sim_state`` have
                fixed roles; any other key is an observation.
            env_id: the environment that ran the episode (``make(env_id, **env_kwargs)``).
            env_kwargs: its constructor arguments.
            seed: the reset seed (``reset(seed=seed)``).
            success: episode success; defaults to ``data["success"].any()``.
            initial_state: the simulator state before the first step.
            final_state: the simulator state after the last step.
            roles: override the role of keys (e.g. ``{"joint_cmd": "action"}``).

        Raises:
            StoreSchemaError: keys, shapes or dtypes differ from the episodes already stored.
        """
        info = {
            "env_id": env_id,
            "env_kwargs": env_kwargs,
            "seed": seed,
            "success": success,
            "initial_state": initial_state,
            "final_state": final_state,
        }
        return self.add_episodes([(data, info)], roles=roles)[0]

    def add_episodes(
        self,
        episodes: Sequence[tuple[Mapping[str, np.ndarray], Mapping[str, Any]]],
        roles: Mapping[str, str] | None = None,
    ) -> list[int]:
        """Append several episodes and commit them together (one write per array, whatever their number).

        Args:
            episodes: ``(data, info)`` pairs; ``info`` holds the keyword arguments of :meth:`add_episode`
                (``env_id`` required; ``env_kwargs``, ``seed``, ``success``, ``initial_state``, ``final_state``).
            roles: see :meth:`add_episode`.

        Returns:
            The indices of the new episodes. Either all of them are committed or none is.
        """
        if self.mode == "r":
            raise StoreError(f"store {str(self.path)!r} is open read-only; open it with mode='a' to append")
        if not episodes:
            return []
        batch = [checked_episode(data, roles or {}) for data, _ in episodes]
        infos = [dict(info) for _, info in episodes]
        for fps in {info["fps"] for info in infos if info.get("fps") is not None}:
            self.set_fps(fps)  # the recording environment's frequency (a store without one takes it)
        if not self._schema:
            first = infos[0]
            try:
                self._create_data_arrays(batch[0][1], first.get("initial_state"), first.get("final_state"))
            except OSError as error:
                raise write_failure(self.path, error, 0) from None
        for _, schema in batch:
            if schema != self._schema:
                raise StoreSchemaError(schema_difference(self._schema, schema, self.path))

        n, start = self.num_episodes, self.num_steps
        began = time.time()
        try:
            check_same_folder(self.path, self._folder)
            indices = self._write_batch(batch, infos, n, start)
            check_same_folder(self.path, self._folder)  # unmounted during the write: it went elsewhere
            return indices
        except OSError as error:  # full, read-only or gone: the committed episodes stay as they were
            wait_for_pending_writes()  # chunk writes of the failed call may still be landing
            if moved_away(self.path, self._folder):
                remove_strays(self.path, since=began)
            else:
                remove_uncommitted_chunks(self.path, self._arrays, self._columns, start, n)
                for column in self._video.values():
                    column.remove_uncommitted(self.path, n)
            raise write_failure(self.path, error, n) from None

    def _write_batch(
        self,
        batch: list[tuple[dict[str, np.ndarray], dict[str, dict[str, Any]]]],
        infos: list[dict[str, Any]],
        n: int,
        start: int,
    ) -> list[int]:
        lengths = [len(next(iter(arrays.values()))) for arrays, _ in batch]
        ends = start + np.cumsum(lengths)
        total = int(ends[-1])
        writes: list[tuple[zarr.Array, slice, np.ndarray]] = []
        video_ends = {}
        # 1. rows of every data array and video column (overwriting leftovers of an interrupted write, if any)
        for key in self._schema:
            if key in self._video:
                video_ends[key] = self._video_writes(key, [arrays[key] for arrays, _ in batch], n, writes)
                continue
            array = self._arrays[key]
            ensure_capacity(array, total)
            values = [arrays[key] for arrays, _ in batch]
            writes.append(
                (array, slice(start, total), values[0] if len(values) == 1 else np.concatenate(values))
            )
        # 2. the per-episode table
        rows: dict[str, list[Any]] = {}
        for (arrays, _), info, length in zip(batch, infos, lengths):
            for name, value in table_row(arrays, info, length, self._columns).items():
                rows.setdefault(name, []).append(value)
        for name, values in rows.items():
            column = self._columns[name]
            ensure_capacity(column, n + len(batch))
            writes.append((column, slice(n, n + len(batch)), np.concatenate(values)))
        write_concurrently(writes)
        # 3. commit: one atomic chunk write (two if the batch straddles a chunk boundary)
        ensure_capacity(self._ends_array, n + len(batch))
        self._ends_array[n : n + len(batch)] = ends.astype(np.int64)
        self._ends = np.concatenate([self._ends, ends.astype(np.int64)])
        for key, byte_ends in video_ends.items():
            self._video[key].committed_through(byte_ends)
        return list(range(n, n + len(batch)))

    def touch(self) -> None:
        """Record the time of the last change in the store's attributes."""
        if self.mode != "r":
            try:
                check_same_folder(self.path, self._folder)
                self._root.attrs["updated"] = _now()
            except OSError as error:
                raise write_failure(self.path, error, self.num_episodes) from None

    def _create_data_arrays(
        self,
        schema: dict[str, dict[str, Any]],
        initial_state: np.ndarray | None,
        final_state: np.ndarray | None,
    ) -> None:
        video_attrs = self._create_video_columns(schema)
        raw = {key: spec for key, spec in schema.items() if key not in self._video}
        create_data_arrays(
            self._data, self._episodes, raw, initial_state, final_state, self._arrays, self._columns
        )
        self._schema = schema
        self._arrays.update(self._video)
        self._root.attrs.update({"schema": schema, **video_attrs})  # one metadata write

    # ------------------------------------------------------------------ misc
    def __repr__(self) -> str:
        return f"TrajectoryStore({str(self.path)!r}, episodes={self.num_episodes}, steps={self.num_steps})"


def _embodia_version() -> str:
    from embodia.core.version import __version__

    return __version__
