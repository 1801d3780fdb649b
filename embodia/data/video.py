"""Write RGB frames to an mp4 (H.264 through imageio-ffmpeg, which ships its own ffmpeg binary)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np

from embodia.core.paths import output_file


def write_video(path: str | Path, frames: Iterable[np.ndarray], fps: int = 20) -> Path:
    """Encode ``frames`` (H, W, 3 uint8, all the same size) as an H.264 mp4 at ``path``."""
    import imageio.v2 as imageio

    path = output_file(path, "video")
    path.parent.mkdir(parents=True, exist_ok=True)
    writer = imageio.get_writer(
        str(path),
        fps=fps,
        codec="libx264",
        quality=7,
        macro_block_size=8,
        ffmpeg_params=["-pix_fmt", "yuv420p"],
        ffmpeg_log_level="error",
    )
    count = 0
    try:
        for frame in frames:
            writer.append_data(np.asarray(frame, dtype=np.uint8))
            count += 1
    finally:
        writer.close()
    if count == 0:
        path.unlink(missing_ok=True)
        raise ValueError(f"no frames to write to {path}")
    return path


def read_video(path: str | Path) -> np.ndarray:
    """Decode an mp4 into a (T, H, W, 3) uint8 array (for tests and checks)."""
    import imageio.v2 as imageio

    reader = imageio.get_reader(str(path))
    try:
        return np.stack([np.asarray(frame) for frame in reader])
    finally:
        reader.close()
