"""Multi-object videos rendered in MuJoCo (MOVi-style), with metric depth and instance masks, stored as zarr.

After Kubric's MOVi datasets (Greff et al., "Kubric: A Scalable Dataset Generator", CVPR 2022,
arXiv:2203.03570): K rigid objects of random shape, colour, size, position and velocity are thrown onto
a floor, collide, slide and stop, seen by a fixed or slowly orbiting camera.

- :mod:`.scene`: what is sampled per video, and its MJCF.
- :mod:`.render`: :class:`VideoConfig`, :data:`PRESETS`, :func:`render_videos` -> :class:`VideoBatch`.
- :mod:`.store`: :func:`save_videos` / :func:`load_videos` (a zarr v3 group).
"""

from embodia.perception.video.render import (
    PRESETS,
    VideoBatch,
    VideoConfig,
    VideoConfigError,
    render_videos,
)
from embodia.perception.video.store import VideoStoreError, load_videos, save_videos

__all__ = [
    "PRESETS",
    "VideoBatch",
    "VideoConfig",
    "VideoConfigError",
    "VideoStoreError",
    "load_videos",
    "render_videos",
    "save_videos",
]
