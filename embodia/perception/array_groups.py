"""Named arrays in a zarr v3 group, marked as embodia's: the storage of videos, labelled frames, IQA databases.

A group's root attributes hold ``{marker: version}`` plus the caller's attributes (its config). Writing over
a group with the same marker replaces only what a write creates (``zarr.json`` and the named arrays); a path
that holds anything else is refused, never deleted. Reading checks the marker and the version and reports a
damaged group as corrupt, each as one line naming the path and what to do.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from embodia.core.errors import EmbodiaError


def group_attrs(path: Path, marker: str) -> dict | None:
    """The root attributes if ``path`` is a group written with ``marker``, else None."""
    try:
        meta = json.loads((path / "zarr.json").read_text())
    except (OSError, ValueError):
        return None
    attrs = meta.get("attributes", {}) if isinstance(meta, dict) else {}
    return attrs if isinstance(attrs, dict) and marker in attrs else None


def _a(what: str) -> str:
    return f"{'an' if what[:1].lower() in 'aeiou' else 'a'} {what}"


def write_group(
    path: str | Path,
    arrays: Mapping[str, np.ndarray],
    *,
    marker: str,
    version: int,
    attrs: Mapping[str, Any],
    what: str,
    error: type[EmbodiaError],
    chunk_rows: int | Mapping[str, int] = 256,
) -> Path:
    """Write ``arrays`` (chunked ``chunk_rows`` rows at a time, or per name) to the group at ``path``.

    Raises:
        error: ``path`` is a file, or a folder holding something that is not a ``what``.
    """
    import zarr

    path = Path(path)
    if path.exists():
        if not path.is_dir():
            raise error(f"cannot save the {what} to {str(path)!r}: it is a file, not a folder")
        if group_attrs(path, marker) is None and any(path.iterdir()):
            raise error(
                f"cannot save the {what} to {str(path)!r}: the folder holds something that is not {_a(what)}; "
                "choose an empty or new path"
            )
        for name in arrays:
            if (path / name).is_dir():
                shutil.rmtree(path / name)
        (path / "zarr.json").unlink(missing_ok=True)
    root = zarr.open_group(str(path), mode="a", zarr_format=3)
    root.attrs.update({marker: version, **attrs})
    for name, data in arrays.items():
        data = np.ascontiguousarray(data)
        rows = chunk_rows.get(name, 256) if isinstance(chunk_rows, Mapping) else chunk_rows
        chunks = tuple(max(1, d) for d in data.shape)
        if data.ndim and data.shape[0]:
            chunks = (min(rows, data.shape[0]), *chunks[1:])
        array = root.create_array(name, shape=data.shape, dtype=data.dtype, chunks=chunks)
        if data.size:
            array[...] = data
    return path


def read_group(
    path: str | Path,
    names: Sequence[str],
    *,
    marker: str,
    version: int,
    what: str,
    writer: str,
    error: type[EmbodiaError],
) -> tuple[dict[str, np.ndarray], dict]:
    """The arrays ``names`` and the root attributes of the group at ``path``.

    Raises:
        error: no group there, not a ``what`` (``writer`` names the function that writes one), another
            format version, or missing / damaged arrays.
    """
    import zarr

    path = Path(path)
    if not path.is_dir():
        raise error(f"no {what} at {str(path)!r}: the path does not exist or is not a folder")
    attrs = group_attrs(path, marker)
    if attrs is None:
        raise error(
            f"{str(path)!r} is not {_a(what)} (no zarr.json with {marker} attributes); write one with {writer}"
        )
    if attrs[marker] != version:
        raise error(
            f"{what} {str(path)!r} has format version {attrs[marker]}; this embodia reads version {version}"
        )
    try:
        root = zarr.open_group(str(path), mode="r", zarr_format=3)
        arrays = {name: root[name][...] for name in names}
    except Exception as cause:  # zarr raises many kinds of errors on damaged groups
        raise corrupt(error, what, path, cause) from None
    return arrays, attrs


def corrupt(error: type[EmbodiaError], what: str, path: Path, cause: BaseException | str) -> EmbodiaError:
    """``error("<what> '<path>' is corrupt: <first line of cause>; write it again")``."""
    text = str(cause).strip()
    first = text.splitlines()[0] if text else type(cause).__name__
    return error(f"{what} {str(path)!r} is corrupt: {first}; write it again")
