"""Save and load a :class:`~.render.VideoBatch` as a zarr v3 group.

Layout: arrays ``rgb`` (N, T, H, W, 3) uint8, ``depth`` (N, T, H, W) float32 and ``masks`` (N, T, H, W)
uint8, each chunked one video per chunk (zstd); the group's attributes hold ``embodia_video`` (the
format version), ``config`` (the :class:`~.render.VideoConfig` fields) and ``seed``. Loading returns the
arrays exactly. Saving over an existing video store replaces only what a save writes (``zarr.json``,
``rgb``, ``depth``, ``masks``); a path that holds anything else is refused, never deleted.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict
from pathlib import Path

import numpy as np
import zarr

from embodia.core.errors import EmbodiaError
from embodia.perception.video.render import VideoBatch, VideoConfig

FORMAT_VERSION = 1
_ARRAYS = ("rgb", "depth", "masks")


class VideoStoreError(EmbodiaError):
    """A video store path that is missing, not a video store, or of another format version."""


def _video_attrs(path: Path) -> dict | None:
    """The root attributes if ``path`` is a video store written by :func:`save_videos`, else None."""
    try:
        meta = json.loads((path / "zarr.json").read_text())
    except (OSError, ValueError):
        return None
    attrs = meta.get("attributes", {}) if isinstance(meta, dict) else {}
    return attrs if isinstance(attrs, dict) and "embodia_video" in attrs else None


def save_videos(path: str | Path, batch: VideoBatch) -> Path:
    """Write ``batch`` to the zarr group at ``path`` (created; an earlier video store there is replaced)."""
    path = Path(path)
    if path.exists():
        if not path.is_dir():
            raise VideoStoreError(f"cannot save videos to {str(path)!r}: it is a file, not a folder")
        if _video_attrs(path) is None and any(path.iterdir()):
            raise VideoStoreError(
                f"cannot save videos to {str(path)!r}: the folder holds something that is not a video store; "
                "choose an empty or new path"
            )
        for name in _ARRAYS:
            if (path / name).is_dir():
                shutil.rmtree(path / name)
        (path / "zarr.json").unlink(missing_ok=True)
    config = asdict(batch.config)
    config["shapes"] = list(config["shapes"])
    root = zarr.open_group(str(path), mode="a", zarr_format=3)
    root.attrs.update({"embodia_video": FORMAT_VERSION, "config": config, "seed": int(batch.seed)})
    for name in _ARRAYS:
        data = np.ascontiguousarray(getattr(batch, name))
        chunks = (1, *data.shape[1:]) if data.shape[0] else tuple(max(1, d) for d in data.shape)
        array = root.create_array(name, shape=data.shape, dtype=data.dtype, chunks=chunks)
        if data.size:
            array[...] = data
    return path


def load_videos(path: str | Path) -> VideoBatch:
    """Read the video store at ``path`` back into a :class:`~.render.VideoBatch`."""
    path = Path(path)
    if not path.is_dir():
        raise VideoStoreError(f"no video store at {str(path)!r}: the path does not exist or is not a folder")
    attrs = _video_attrs(path)
    if attrs is None:
        raise VideoStoreError(
            f"{str(path)!r} is not a video store (no zarr.json with embodia_video attributes); "
            "write one with save_videos"
        )
    if attrs["embodia_video"] != FORMAT_VERSION:
        raise VideoStoreError(
            f"video store {str(path)!r} has format version {attrs['embodia_video']}; this embodia reads "
            f"version {FORMAT_VERSION}"
        )
    root = zarr.open_group(str(path), mode="r", zarr_format=3)
    try:
        arrays = {name: root[name][...] for name in _ARRAYS}
    except (KeyError, OSError, ValueError) as error:
        raise VideoStoreError(f"video store {str(path)!r} is corrupt: {error}") from None
    config = dict(attrs["config"])
    config["shapes"] = tuple(config["shapes"])
    return VideoBatch(**arrays, config=VideoConfig(**config), seed=int(attrs["seed"]))
