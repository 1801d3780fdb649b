"""Save and load a :class:`~.render.VideoBatch` as a zarr v3 group.

Layout: arrays ``rgb`` (N, T, H, W, 3) uint8, ``depth`` (N, T, H, W) float32 and ``masks`` (N, T, H, W)
uint8, each chunked one video per chunk (zstd); the group's attributes hold ``embodia_video`` (the
format version), ``config`` (the :class:`~.render.VideoConfig` fields) and ``seed``. Loading returns the
arrays exactly. Saving over an existing video store replaces only what a save writes (``zarr.json``,
``rgb``, ``depth``, ``masks``); a path that holds anything else is refused, never deleted.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from embodia.core.errors import EmbodiaError
from embodia.perception.array_groups import corrupt, read_group, write_group
from embodia.perception.video.render import VideoBatch, VideoConfig

FORMAT_VERSION = 1
MARKER = "embodia_video"
_ARRAYS = ("rgb", "depth", "masks")


class VideoStoreError(EmbodiaError):
    """A video store path that is missing, not a video store, or of another format version."""


def save_videos(path: str | Path, batch: VideoBatch) -> Path:
    """Write ``batch`` to the zarr group at ``path`` (created; an earlier video store there is replaced)."""
    config = asdict(batch.config)
    config["shapes"] = list(config["shapes"])
    return write_group(
        path,
        {name: getattr(batch, name) for name in _ARRAYS},
        marker=MARKER,
        version=FORMAT_VERSION,
        attrs={"config": config, "seed": int(batch.seed)},
        what="video store",
        error=VideoStoreError,
        chunk_rows=1,
    )


def load_videos(path: str | Path) -> VideoBatch:
    """Read the video store at ``path`` back into a :class:`~.render.VideoBatch`."""
    arrays, attrs = read_group(
        path,
        _ARRAYS,
        marker=MARKER,
        version=FORMAT_VERSION,
        what="video store",
        writer="save_videos",
        error=VideoStoreError,
    )
    try:
        config = dict(attrs["config"])
        config["shapes"] = tuple(config["shapes"])
        return VideoBatch(**arrays, config=VideoConfig(**config), seed=int(attrs["seed"]))
    except (KeyError, TypeError, ValueError) as cause:
        raise corrupt(VideoStoreError, "video store", Path(path), cause) from None
