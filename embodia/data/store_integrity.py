"""What a trajectory store may be opened on, and the checks that tell a sound store from a corrupt one.

Detected (each as :class:`~embodia.core.errors.StoreCorruptError` naming the array, rows and episode):

- root metadata (``zarr.json``) missing or unreadable, a group or array missing;
- ``meta/episode_ends`` not increasing with further ends after the break (two writers, or a foreign write);
- a data array whose row shape / dtype differs from the schema, or with fewer rows than the episodes need;
- an episode-table column missing or shorter than the committed episodes;
- an episode whose ``meta/episodes/length`` differs from what ``meta/episode_ends`` says;
- on read, a chunk whose CRC32C checksum does not match its bytes, or that cannot be decompressed
  (stores written by embodia >= 0.1 carry a checksum per chunk); :meth:`TrajectoryStore.verify` reads every
  chunk once.

Not detected: a bit flip in a chunk written without a checksum (stores from before checksums), and a
consistent rewrite of a whole episode by another program.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from embodia.core.errors import StoreCorruptError, StoreError
from embodia.data.writer_lock import LOCK_NAME

#: what a store directory holds; ``mode="w"`` removes all but the lock and refuses if anything else is there
STORE_ENTRIES = {"zarr.json", "data", "meta", "video", LOCK_NAME}
TABLE_COLUMNS = ("env_id", "env_kwargs", "seed", "length", "success", "return")

#: why a path cannot be opened as a store, by what :func:`classify_path` found there
PATH_PROBLEMS = {
    "file": "is a file, not a trajectory store (a store is a directory); choose another path",
    "under-file": "cannot be a trajectory store: a parent of it is a file; choose another path",
    "foreign": "is a directory that holds files but no trajectory store; embodia never writes into or deletes "
    "what it did not write: choose a new path or an empty directory",
    "rootless": "looks like a trajectory store whose root metadata (zarr.json) is missing: it is corrupt, and "
    "embodia will not write over it; restore zarr.json or choose another path",
    "not-embodia": "is a zarr store but not an embodia trajectory store (no 'embodia_format' attribute); "
    "choose another path",
}


def classify_path(path: Path) -> str:
    """What is at ``path``: missing, empty, store, or one of :data:`PATH_PROBLEMS`."""
    for parent in path.parents:
        if parent.exists() and not parent.is_dir():
            return "under-file"
    if not path.exists():
        return "missing"
    if not path.is_dir():
        return "file"
    entries = {p.name for p in path.iterdir()}
    if not entries or entries == {LOCK_NAME}:
        return "empty"
    if "zarr.json" not in entries:
        return "rootless" if entries & {"data", "meta"} else "foreign"
    try:
        attributes = json.loads((path / "zarr.json").read_text()).get("attributes", {})
    except (OSError, ValueError, AttributeError):
        return "store"  # unreadable root metadata: opening reports it as corrupt
    return "store" if "embodia_format" in attributes else "not-embodia"


def empty_store(path: Path) -> None:
    """Remove an embodia store's own entries (``mode="w"``); anything else inside is refused, not deleted.

    Raises:
        StoreError: the folder holds entries embodia did not write.
    """
    foreign = sorted(p.name for p in path.iterdir() if p.name not in STORE_ENTRIES)
    if foreign:
        raise StoreError(
            f"will not overwrite {str(path)!r}: besides the store it holds {foreign[:5]}, which embodia "
            "did not write; move them out or choose another path"
        )
    for name in sorted(STORE_ENTRIES - {LOCK_NAME}):
        entry = path / name
        if entry.is_dir():
            shutil.rmtree(entry)
        elif entry.exists():
            entry.unlink()


def committed_ends(ends: np.ndarray, path: Path) -> np.ndarray:
    """The committed prefix of ``meta/episode_ends``: strictly increasing and positive; the rest must be 0.

    A commit writes its ends in one go, so only unused capacity (zeros) may follow the committed ends.
    """
    ends = np.asarray(ends, dtype=np.int64)
    valid = len(ends)
    if valid:
        previous = np.concatenate([[0], ends[:-1]])
        bad = np.flatnonzero(ends <= previous)
        if len(bad):
            valid = int(bad[0])
    stray = np.flatnonzero(ends[valid:])
    if len(stray):
        at = valid + int(stray[0])
        raise StoreCorruptError(
            f"trajectory store {str(path)!r} is corrupt: meta/episode_ends is not increasing at episode {valid} "
            f"({int(ends[valid])} after {int(ends[valid - 1]) if valid else 0}) and holds more ends after it "
            f"(episode {at}: {int(ends[at])}); were two processes writing it at once?"
        )
    return ends[:valid]


def check_consistency(
    path: Path,
    ends: np.ndarray,
    schema: Mapping[str, Mapping[str, Any]],
    arrays: Mapping[str, Any],
    columns: Mapping[str, Any],
    read: Callable[[Any, slice, str], np.ndarray],
) -> None:
    """The committed episodes, the episode table and the data arrays agree (metadata plus one column).

    Raises:
        StoreCorruptError: naming the first disagreement.
    """
    where = f"trajectory store {str(path)!r} is corrupt"
    n, steps = len(ends), int(ends[-1]) if len(ends) else 0
    missing = sorted(set(schema) - set(arrays))
    if missing:
        raise StoreCorruptError(f"{where}: data/{missing[0]} is listed in its schema but missing")
    for key, spec in schema.items():
        array = arrays[key]
        row = tuple(array.shape[1:])
        if row != tuple(spec["shape"]) or str(array.dtype) != spec["dtype"]:
            raise StoreCorruptError(
                f"{where}: data/{key} is {array.dtype}{row}, its schema says {spec['dtype']}{tuple(spec['shape'])}"
            )
        if array.shape[0] < steps:
            raise StoreCorruptError(
                f"{where}: data/{key} has {array.shape[0]} rows, the {n} committed episodes need {steps}"
            )
    for name in TABLE_COLUMNS:
        column = columns.get(name)
        if column is None:
            raise StoreCorruptError(f"{where}: the episode table has no column meta/episodes/{name}")
        if column.shape[0] < n:
            raise StoreCorruptError(
                f"{where}: meta/episodes/{name} has {column.shape[0]} rows for {n} episodes"
            )
    if n:
        lengths = read(columns["length"], slice(0, n), "meta/episodes/length")
        expected = np.diff(np.concatenate([[0], ends]))
        wrong = np.flatnonzero(lengths != expected)
        if len(wrong):
            i = int(wrong[0])
            raise StoreCorruptError(
                f"{where}: episode {i} has length {int(lengths[i])} in meta/episodes/length but "
                f"{int(expected[i])} by meta/episode_ends ({len(wrong)} episodes disagree)"
            )


def read_every_chunk(
    ends: np.ndarray,
    schema: Mapping[str, Any],
    arrays: Mapping[str, Any],
    columns: Mapping[str, Any],
    read: Callable[[Any, slice, str], np.ndarray],
) -> dict[str, int]:
    """Read the committed rows of every data array (chunk by chunk) and episode-table column."""
    n, steps = len(ends), int(ends[-1]) if len(ends) else 0
    chunks = 0
    for key in schema:
        rows = int(arrays[key].chunks[0])
        for start in range(0, steps, rows):
            read(arrays[key], slice(start, min(start + rows, steps)), f"data/{key}")
            chunks += 1
    for name, column in columns.items():
        read(column, slice(0, n), f"meta/episodes/{name}")
        chunks += 1
    return {"episodes": n, "steps": steps, "chunks_read": chunks}


def schema_difference(old: dict, new: dict, path: Path) -> str:
    missing = sorted(set(old) - set(new))
    extra = sorted(set(new) - set(old))
    changed = sorted(k for k in set(old) & set(new) if old[k] != new[k])
    parts = []
    if missing:
        parts.append(f"missing keys {missing}")
    if extra:
        parts.append(f"new keys {extra}")
    for key in changed:
        parts.append(
            f"{key!r} is {new[key]['dtype']}{tuple(new[key]['shape'])}, store has {old[key]['dtype']}{tuple(old[key]['shape'])}"
        )
    return (
        f"episode does not match store {str(path)!r}: {'; '.join(parts)}. "
        "Record episodes of a different environment into a separate store."
    )
