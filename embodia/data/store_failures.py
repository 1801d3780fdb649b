"""When a store's file system refuses a write: full, read-only, or gone (unmounted, a dead network share).

The commit protocol already keeps every committed episode readable whatever happens mid-write (an episode
exists once ``meta/episode_ends`` lists it, written last, atomically). What a failed write adds is the
user's side: one line that says which store, what the file system said and how much space is free (as
SQLite and zarr users get an error, not a traceback), and the space of the episode that was being
written handed back — its chunks lie past the committed rows, where nothing reads them, so they are
removed — so that ``embodia info --check`` is clean and the store can be appended to once there is room.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import math
import os
import shutil
from collections.abc import Mapping
from pathlib import Path

import zarr

from embodia.core.errors import StoreWriteError

FULL = {errno.ENOSPC, errno.EDQUOT}
READ_ONLY = {errno.EROFS, errno.EACCES, errno.EPERM}
GONE = {errno.ENOENT, errno.ENODEV, errno.ESTALE, errno.EIO, errno.ENOTCONN, errno.ENXIO}


def _size(n: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} bytes"  # unreachable


def free_space(path: Path) -> str:
    """Free space of the file system holding ``path`` (or its nearest existing parent), as text."""
    for candidate in (path, *path.parents):
        try:
            usage = shutil.disk_usage(candidate)
        except OSError:
            continue
        return f"{_size(usage.free)} free of {_size(usage.total)}"
    return "free space unknown"


def write_failure(path: Path, error: OSError, committed: int | None) -> StoreWriteError:
    """The one-line error for a write the file system refused (``committed``: episodes kept; None: new store)."""
    where = f"trajectory store {str(path)!r}"
    kept = (
        f"the {committed} episodes committed before are kept"
        if committed
        else "no episode had been committed"
        if committed == 0
        else "nothing was written"
    )
    reason = error.strerror or type(error).__name__
    if error.errno in FULL:
        return StoreWriteError(
            f"cannot write to {where}: its file system is full ({free_space(path)}); {kept}. "
            "Free some space or record to another disk, then run again (the store appends)"
        )
    if error.errno in READ_ONLY:
        return StoreWriteError(
            f"cannot write to {where}: {reason} (the folder or its file system is read-only); {kept}. "
            "Record to a writable folder"
        )
    if error.errno in GONE:
        return StoreWriteError(
            f"cannot write to {where}: its file system went away ({reason}); {kept} where it was. "
            "Check the mount, then run again"
        )
    return StoreWriteError(f"cannot write to {where}: {reason} (errno {error.errno}); {kept}")


def wait_for_pending_writes(timeout_s: float = 60.0) -> None:
    """Wait until zarr's I/O loop has no other task left (bounded by ``timeout_s``).

    zarr writes an array's chunks as concurrent tasks gathered on its I/O loop; when one chunk write fails
    (the file system went away under it), the error comes back at once while its sibling writes are still
    running, and a sibling finishing later would re-create a file after the clean-up removed it. The
    clean-up after a failed write therefore waits for them first.
    """
    from zarr.core.sync import _get_loop, sync

    async def others_done() -> None:
        me = asyncio.current_task()
        while others := [task for task in asyncio.all_tasks() if task is not me and not task.done()]:
            await asyncio.wait(others)

    with contextlib.suppress(Exception):  # a clean-up aid: the write's own error is what gets reported
        sync(others_done(), loop=_get_loop(), timeout=timeout_s)


def folder_identity(path: Path) -> tuple[int, int]:
    """The store folder's (device, inode): what it is, whatever path leads to it."""
    st = os.stat(path)
    return st.st_dev, st.st_ino


def check_same_folder(path: Path, identity: tuple[int, int]) -> None:
    """Raise (ESTALE) when ``path`` no longer leads to the folder the store was opened in.

    A file system unmounted under a running writer leaves the mount point, an empty folder of the file
    system below; zarr would re-create the store's subfolders there and write half a store into the wrong
    file system. One ``stat`` before every commit notices instead.
    """
    try:
        now = folder_identity(path)
    except FileNotFoundError:
        now = None
    if now != identity:
        raise OSError(errno.ESTALE, "the store's folder is no longer there (unmounted, moved or replaced)")


def moved_away(path: Path, identity: tuple[int, int]) -> bool:
    try:
        return folder_identity(path) != identity
    except OSError:
        return True


def remove_strays(path: Path, since: float) -> None:
    """Remove what a write that raced an unmount created at ``path`` in the file system below the mount.

    Only files modified at or after ``since`` (that write's start) go, and then the folders left empty: an
    older file there was not written by this writer and stays.
    """
    if not path.is_dir():
        return
    with contextlib.suppress(OSError):
        for file in [p for p in path.rglob("*") if p.is_file()]:
            if file.stat().st_mtime >= since - 1.0:  # file systems with coarse timestamps
                file.unlink()
        for folder in sorted((p for p in path.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
            if not any(folder.iterdir()):
                folder.rmdir()
        if not any(path.iterdir()):
            path.rmdir()


def remove_created(path: Path, entries: set[str], remove_folder: bool) -> None:
    """Undo a store creation that failed half-way: the store's own ``entries``, and the folder if made here."""
    for name in entries:
        entry = path / name
        with contextlib.suppress(OSError):
            shutil.rmtree(entry) if entry.is_dir() else entry.unlink(missing_ok=True)
    if remove_folder:
        with contextlib.suppress(OSError):
            path.rmdir()


def remove_uncommitted_chunks(
    root: Path, arrays: Mapping[str, zarr.Array], columns: Mapping[str, zarr.Array], steps: int, episodes: int
) -> None:
    """Delete the chunk files that lie wholly past the committed rows (an abandoned write), and partial files.

    Best effort: the file system may refuse this too (then the chunks stay where nothing reads them).
    """
    for group, rows, members in (("data", steps, arrays), ("meta/episodes", episodes, columns)):
        for name, array in members.items():
            first_unused = math.ceil(rows / array.chunks[0])
            chunk_dir = root / group / name / "c"
            if not chunk_dir.is_dir():
                continue
            for entry in list(chunk_dir.iterdir()):
                if entry.name.isdigit() and int(entry.name) >= first_unused:
                    with contextlib.suppress(OSError):
                        shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
    with contextlib.suppress(OSError):
        for partial in root.rglob("*.partial"):
            partial.unlink(missing_ok=True)
