"""Tool ``video_upscale``: continuous space-time video super-resolution with a Video Fourier Field (VFF,
arXiv:2509.26325): a video file in, an mp4 upscaled by any factor in space and time out.

Without ``model`` the video is upscaled by trilinear interpolation (no learned model) and the result's
``method`` says so. An existing ``out`` is replaced only with ``overwrite`` and only if this tool (or
``embodia vsr upscale``) wrote it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from pydantic import Field

from embodia.agents.tools.registry import InputPath, OutputPath, Progress, no_progress, tool


@dataclass
class VideoUpscaleArgs:
    """Arguments of ``video_upscale``."""

    video: InputPath
    """The video to upscale (mp4 or anything ffmpeg reads); under `embodia mcp`, inside its workspace."""
    out: OutputPath
    """The mp4 to write; under `embodia mcp`, inside its workspace."""
    space: Annotated[float, Field(gt=0, le=16)] = 2.0
    """Spatial factor: the output is round(H * space) x round(W * space)."""
    time: Annotated[float, Field(ge=1, le=16)] = 1.0
    """Temporal factor: floor((T - 1) * time) + 1 output frames, at time times the input frame rate."""
    model: InputPath | None = None
    """A VFF model folder (config.json + model.safetensors, from scripts/vff_experiment.py --save); without it,
    trilinear interpolation."""
    overwrite: bool = False
    """Replace `out` if it exists and is a video this tool wrote."""


@tool("video_upscale")
def video_upscale(args: VideoUpscaleArgs, progress: Progress = no_progress) -> dict:
    """Upscale a video in space and time (continuous factors) with a Video Fourier Field, or trilinear
    interpolation when no model folder is given; writes an mp4 and returns its size, frame count and method."""
    from embodia.perception.vff import upscale_file

    return upscale_file(
        args.video,
        args.out,
        args.space,
        args.time,
        args.model,
        overwrite=args.overwrite,
        progress=lambda done, total: progress(done, total, "chunks"),
    )
