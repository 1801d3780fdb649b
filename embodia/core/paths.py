"""Checks on the files a command is asked to write, done before any work starts."""

from __future__ import annotations

from pathlib import Path

from embodia.core.errors import OutputPathError


def output_file(path: str | Path, what: str = "output") -> Path:
    """``path`` as a :class:`~pathlib.Path` that a file can be written to (missing folders are created later).

    Raises:
        OutputPathError: ``path`` is an existing folder, or one of its parents is a file.
    """
    path = Path(path)
    if path.is_dir():
        raise OutputPathError(f"{what} {str(path)!r} is a folder; name a file (e.g. {path / 'out'}...)")
    for parent in path.parents:
        if parent.exists() and not parent.is_dir():
            raise OutputPathError(
                f"{what} {str(path)!r} cannot be written: {str(parent)!r} is a file, not a folder"
            )
    return path
