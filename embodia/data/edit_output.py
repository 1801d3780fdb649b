"""Writing the stores that dataset edits produce: all of them appear, complete, or none does.

Each new store is written through :class:`~embodia.data.store.TrajectoryStore`'s writer into a hidden
folder next to its destination (``.<name>.embodia-edit-<pid>-<random>``, same file system, so the final
move is one ``rename(2)``), holding the store's writer lock from creation to the move. Only when every
store of the edit is complete are they renamed into place; if anything fails before or during the moves
(an error, a full disk, Ctrl-C), the stores already moved are moved back and every temporary folder and
every folder the edit created is removed. A destination must be a path that does not exist or an empty
folder (which the rename replaces), outside every trajectory store.

A process killed outright (SIGKILL, power loss) leaves its hidden folder behind; the next edit to the same
destination removes it after checking that it is an embodia store or empty and that its writer is gone
(its writer lock is free).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import errno
import os
import secrets
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import zarr

from embodia.core.errors import StoreError, StoreLockedError
from embodia.data.store import TrajectoryStore
from embodia.data.store_integrity import PATH_PROBLEMS, STORE_ENTRIES, classify_path
from embodia.data.writer_lock import WriterLock

TEMP_MARK = ".embodia-edit-"
"""what the hidden folder of an edit in progress has in its name, after ``.<destination name>``"""
COPY_BATCH_BYTES = 64 << 20
"""episodes are committed in batches of about this many bytes (one zarr write per array per batch)"""
PROVENANCE_ATTR = "derived_from"
"""the root attribute of an edited store that says where its episodes came from"""


def format_index_list(indices: Sequence[int] | np.ndarray) -> str:
    """``[0, 1, 2, 5]`` -> ``"0-2,5"`` (sorted; the inverse of :func:`parse_index_list`)."""
    values = sorted({int(i) for i in indices})
    parts: list[str] = []
    start = previous = None
    for value in [*values, None]:
        if start is not None and value is not None and value == previous + 1:
            previous = value
            continue
        if start is not None:
            parts.append(str(start) if start == previous else f"{start}-{previous}")
        start = previous = value
    return ",".join(parts)


@dataclass(frozen=True)
class EditResult:
    """One store an edit wrote."""

    path: Path
    """where the new store is"""
    episodes: int
    """episodes it holds"""
    steps: int
    """steps it holds"""
    sources: list[tuple[str, list[int]]] = field(default_factory=list)
    """each source store's path and the indices of the episodes taken from it, in order"""

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "episodes": self.episodes,
            "steps": self.steps,
            "sources": [{"path": p, "episodes": format_index_list(i)} for p, i in self.sources],
        }


@dataclass
class Output:
    """One store an edit writes."""

    destination: Path
    """where the store appears once complete (missing, or an empty folder)"""
    plan: Sequence[tuple[TrajectoryStore, np.ndarray]]
    """the source stores and the indices of the episodes taken from each, in the order they are written"""
    operation: str
    """the edit's name, as recorded in ``derived_from`` (filter, drop, split, merge)"""
    criteria: Mapping[str, Any]
    """the edit's arguments, as recorded in ``derived_from`` (JSON values)"""


def check_destination(path: Path) -> None:
    """Refuse a destination that exists with content, or lies inside a trajectory store.

    Raises:
        StoreError: one line naming the path and what to do.
    """
    kind = classify_path(path)
    if kind == "store":
        raise StoreError(
            f"{str(path)!r} already holds a trajectory store; an edit writes a new store and never writes over "
            "one: choose a new path"
        )
    if kind not in ("missing", "empty"):
        raise StoreError(f"{str(path)!r} {PATH_PROBLEMS[kind]}")
    for parent in path.absolute().parents:
        if (parent / "zarr.json").is_file() and classify_path(parent) == "store":
            raise StoreError(
                f"{str(path)!r} lies inside trajectory store {str(parent)!r}; write the new store outside it"
            )


def write_outputs(outputs: Sequence[Output]) -> list[EditResult]:
    """Write every output's store and move them all into place (see the module docstring).

    Raises:
        StoreError: a destination that is not fresh, two outputs with one destination, or a failed write
            or move (nothing is left at any destination then).
    """
    destinations = [o.destination.absolute() for o in outputs]
    if len(set(destinations)) != len(destinations):
        raise StoreError(f"the new stores need different paths, got {[str(o.destination) for o in outputs]}")
    for output in outputs:
        check_destination(output.destination)
    created: list[Path] = []  # folders this edit made (parents of destinations), deepest last
    staged: list[tuple[Path, TrajectoryStore, Output]] = []
    moved: list[tuple[Path, Output, bool]] = []  # (temporary path, output, destination was an empty folder)
    try:
        for output in outputs:
            created += _make_parents(output.destination.parent)
            _remove_abandoned(output.destination)
            temporary = output.destination.parent / (
                f".{output.destination.name}{TEMP_MARK}{os.getpid()}-{secrets.token_hex(4)}"
            )
            store = _create_like(temporary, output.plan[0][0])
            staged.append((temporary, store, output))
            _copy_episodes(store, output.plan)
            _record_provenance(temporary, store, output)
        for temporary, _store, output in staged:
            was_empty = output.destination.is_dir()
            try:
                os.rename(temporary, output.destination)
            except OSError as error:
                raise StoreError(
                    f"cannot move the new store into place at {str(output.destination)!r}: "
                    f"{_os_reason(error)}; nothing was written there"
                ) from None
            moved.append((temporary, output, was_empty))
    except BaseException:
        for temporary, output, was_empty in reversed(moved):
            with contextlib.suppress(OSError):
                os.rename(output.destination, temporary)
                if was_empty:
                    output.destination.mkdir()
        for temporary, store, _output in staged:
            store.close()
            shutil.rmtree(temporary, ignore_errors=True)
        for folder in reversed(created):
            with contextlib.suppress(OSError):
                folder.rmdir()  # only if still empty
        raise
    finally:
        for _temporary, store, _output in staged:
            store.close()
    results = []
    for output in outputs:
        written = TrajectoryStore(output.destination, mode="r")
        sources = [(str(s.path.absolute()), [int(i) for i in idx]) for s, idx in output.plan if len(idx)]
        results.append(EditResult(written.path, written.num_episodes, written.num_steps, sources))
    return results


def _os_reason(error: OSError) -> str:
    if error.errno in (errno.ENOTEMPTY, errno.EEXIST):
        return "something else was written there meanwhile"
    return error.strerror or type(error).__name__


def _make_parents(folder: Path) -> list[Path]:
    """Create ``folder`` and its missing parents; returns the ones created, outermost first."""
    missing = [p for p in (folder, *folder.parents) if not p.exists()]
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise StoreError(f"cannot create folder {str(folder)!r}: {_os_reason(error)}") from None
    return list(reversed(missing))


def _remove_abandoned(destination: Path) -> None:
    """Remove hidden folders of earlier edits to ``destination`` whose writer died (its lock is free)."""
    prefix = f".{destination.name}{TEMP_MARK}"
    for candidate in destination.parent.iterdir():
        if not candidate.name.startswith(prefix) or candidate.is_symlink() or not candidate.is_dir():
            continue
        if classify_path(candidate) not in ("store", "empty"):
            continue
        if any(entry.name not in STORE_ENTRIES for entry in candidate.iterdir()):
            continue
        lock = WriterLock(candidate)
        try:
            lock.acquire()
        except (StoreLockedError, OSError):
            continue  # another edit is writing it now
        try:
            shutil.rmtree(candidate, ignore_errors=True)
        finally:
            lock.release()


def _create_like(path: Path, source: TrajectoryStore) -> TrajectoryStore:
    """A new store at ``path`` with the frame rate and video codec of ``source``."""
    return TrajectoryStore(path, mode="a", fps=source.fps, video_codec=source.video_codec)


def _copy_episodes(store: TrajectoryStore, plan: Sequence[tuple[TrajectoryStore, np.ndarray]]) -> None:
    for source, indices in plan:
        roles = {key: spec["role"] for key, spec in source.schema.items()}
        batch: list[tuple[dict[str, np.ndarray], dict[str, Any]]] = []
        size = 0
        for index in indices:
            data = source.episode(int(index))
            meta = source.episode_meta(int(index))
            info = {
                "env_id": meta.env_id,
                "env_kwargs": meta.env_kwargs,
                "seed": meta.seed,
                "success": meta.success,
                "initial_state": meta.initial_state,
                "final_state": meta.final_state,
            }
            batch.append((data, info))
            size += sum(value.nbytes for value in data.values())
            if size >= COPY_BATCH_BYTES:
                store.add_episodes(batch, roles=roles)
                batch, size = [], 0
        if batch:
            store.add_episodes(batch, roles=roles)


def _record_provenance(path: Path, store: TrajectoryStore, output: Output) -> None:
    """Carry the sources' own root attributes over and add ``derived_from``.

    Attributes the new store already has (format, version, dates, schema, frame rate, codec) are its own;
    of the others, a merge keeps those on which all its sources agree.
    """
    from embodia.core.version import __version__

    own = set(store.attrs) | {PROVENANCE_ATTR}
    sources = [source for source, _ in output.plan]
    carried = {k: v for k, v in sources[0].attrs.items() if k not in own}
    for source in sources[1:]:
        attrs = source.attrs
        carried = {k: v for k, v in carried.items() if k in attrs and attrs[k] == v}
    derived = {
        "operation": output.operation,
        "criteria": dict(output.criteria),
        "sources": [
            {
                "path": str(source.path.absolute()),
                "episodes": format_index_list(indices),
                **(
                    {PROVENANCE_ATTR: source.attrs[PROVENANCE_ATTR]}
                    if PROVENANCE_ATTR in source.attrs
                    else {}
                ),
            }
            for source, indices in output.plan
        ],
        "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "embodia_version": __version__,
    }
    # The store has no public setter for attributes of its own; it is ours, new, and locked by `store`.
    zarr.open_group(str(path), mode="r+").attrs.update({**carried, PROVENANCE_ATTR: derived})
