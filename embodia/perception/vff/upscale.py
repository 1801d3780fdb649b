"""Upscale a video file in space and time with a Video Fourier Field (arXiv:2509.26325), chunk by chunk.

Frames are read with imageio (ffmpeg); the input is processed in windows of ``chunk`` frames plus ``context``
frames on each side (the encoder sees them; outputs are kept only for the window), so memory stays bounded for
long videos. Output frame ``i`` is the field at ``t = i / f`` input frames, ``i = 0 .. floor((T - 1) f)``
(both ends kept); its size is ``round(H s) x round(W s)``; its frame rate the input's times ``f``.
Without a model the same grid is filled by trilinear interpolation (no learning), and the result says so.

The mp4 is written with libx264 and carries :data:`MARKER` in its metadata, so that a later run may replace a
video it wrote (``overwrite=True``) but nothing else.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from embodia.perception.vff.model import VFFError, VideoFourierField, load_field
from embodia.perception.vff.train import output_size, output_times, upscale_clip

MARKER = b"written by embodia vsr upscale"
"""Bytes in the metadata of every video this module writes."""


def read_video(path: str | Path) -> tuple[np.ndarray, float]:
    """uint8 frames ``(T, H, W, 3)`` and the frame rate; :class:`VFFError` for a missing or unreadable file."""
    import imageio.v2 as imageio

    path = Path(path)
    if not path.is_file():
        raise VFFError(f"input video {str(path)!r} does not exist")
    try:
        reader = imageio.get_reader(str(path), format="FFMPEG")
        fps = float(reader.get_meta_data().get("fps") or 25.0)
        frames = np.stack([np.asarray(f)[..., :3] for f in reader])
        reader.close()
    except (OSError, RuntimeError, ValueError, IndexError) as error:
        first = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise VFFError(f"cannot read {str(path)!r} as a video: {first}") from None
    if frames.ndim != 4 or len(frames) < 2:
        raise VFFError(f"{str(path)!r} has {len(frames)} frame(s); space-time upscaling needs at least 2")
    return frames, fps


def written_by_us(path: str | Path) -> bool:
    """Whether ``path`` is a file whose bytes hold :data:`MARKER`."""
    path = Path(path)
    if path.is_symlink() or not path.is_file():
        return False
    with path.open("rb") as handle:
        tail = b""
        while block := handle.read(1 << 20):
            if MARKER in tail + block:
                return True
            tail = block[-len(MARKER) :]
    return False


def check_output(path: str | Path, overwrite: bool) -> Path:
    """Refuse an existing ``path`` unless ``overwrite`` and it is a video this module wrote."""
    path = Path(path)
    if path.exists() or path.is_symlink():
        if not overwrite:
            raise VFFError(f"output {str(path)!r} exists; pass --overwrite to replace it")
        if not written_by_us(path):
            raise VFFError(
                f"output {str(path)!r} exists and is not a video embodia vsr wrote; it will not be overwritten"
            )
    return path


def write_video(path: str | Path, frames: np.ndarray, fps: float) -> Path:
    """uint8 ``(T, H, W, 3)`` -> mp4 (libx264; yuv420p when the size is even, else yuv444p)."""
    import imageio.v2 as imageio

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    even = frames.shape[1] % 2 == 0 and frames.shape[2] % 2 == 0
    writer = imageio.get_writer(
        str(path),
        format="FFMPEG",
        fps=fps,
        codec="libx264",
        quality=9,
        pixelformat="yuv420p" if even else "yuv444p",
        macro_block_size=1,
        output_params=["-metadata", f"comment={MARKER.decode()}"],
    )
    try:
        for frame in frames:
            writer.append_data(frame)
    finally:
        writer.close()
    return path


def upscale_frames(
    frames: np.ndarray,
    space: float,
    time_factor: float,
    model: VideoFourierField | None = None,
    chunk: int = 8,
    context: int = 2,
    progress: Callable[[int, int], None] | None = None,
) -> np.ndarray:
    """uint8 ``(T, H, W, 3)`` -> uint8 ``(floor((T-1) f) + 1, round(H s), round(W s), 3)``."""
    count, height, width = frames.shape[:3]
    size = output_size(height, width, space)
    times = output_times(count, time_factor)
    out = np.zeros((len(times), *size, 3), dtype=np.uint8)
    starts = list(range(0, max(count - 1, 1), chunk))
    for n, start in enumerate(starts):
        stop = min(start + chunk, count - 1)
        last = n == len(starts) - 1
        mask = (times >= start) & ((times <= stop) if last else (times < stop))
        lo, hi = max(0, start - context), min(count, stop + 1 + context)
        clip = torch.from_numpy(frames[lo:hi]).float().div(255.0).permute(3, 0, 1, 2)
        method = "vff" if model is not None else "trilinear"
        with torch.no_grad():
            result = upscale_clip(method, clip, size, times[mask] - lo, model)
        out[mask.numpy()] = (result.permute(0, 2, 3, 1).numpy() * 255.0 + 0.5).clip(0, 255).astype(np.uint8)
        if progress is not None:
            progress(n + 1, len(starts))
    return out


def upscale_file(
    source: str | Path,
    out: str | Path,
    space: float,
    time_factor: float,
    model_folder: str | Path | None = None,
    overwrite: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> dict:
    """Read ``source``, upscale, write ``out``; returns what was done (sizes, frames, method, seconds)."""
    import time

    if not (0 < space <= 16 and 1 <= time_factor <= 16):
        raise VFFError(
            f"space factor must be in (0, 16] and time factor in [1, 16], got {space:g} and {time_factor:g}"
        )
    source, out = Path(source), Path(out)
    if out.resolve() == source.resolve():
        raise VFFError("the output must not be the input video")
    check_output(out, overwrite)
    frames, fps = read_video(source)
    model = load_field(str(model_folder)) if model_folder is not None else None
    start = time.perf_counter()
    result = upscale_frames(frames, space, time_factor, model, progress=progress)
    seconds = time.perf_counter() - start
    write_video(out, result, fps * time_factor)
    return {
        "out": str(out),
        "method": "vff" if model is not None else "trilinear (no --model given: not VFF)",
        "input": {
            "frames": int(frames.shape[0]),
            "height": int(frames.shape[1]),
            "width": int(frames.shape[2]),
        },
        "output": {
            "frames": int(result.shape[0]),
            "height": int(result.shape[1]),
            "width": int(result.shape[2]),
        },
        "fps": fps * time_factor,
        "seconds": seconds,
    }
