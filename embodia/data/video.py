"""Video files: rollout videos (mp4 files through imageio-ffmpeg) and the video codec of the trajectory store.

:func:`write_video` / :func:`read_video` write and read the mp4 of a rollout (``embodia run --video``).

:func:`encode_frames` / :func:`decode_frames` turn an episode's camera frames into an mp4 file in memory and
back, through PyAV (FFmpeg's libraries): what the trajectory store keeps for an image key recorded with
``--video-codec h264|av1`` (:mod:`embodia.data.store_video`). The choices follow common practice for robot
datasets (LeRobot's ``encode_video_frames``): 8-bit YUV 4:2:0 (``yuv420p``), constant frame rate (the
store's fps), a constant-quality rate factor (CRF) rather than a bit rate; H.264 (ITU-T H.264 / ISO/IEC
14496-10) through libx264, AV1 (AOMedia Video 1) through SVT-AV1, decoded by dav1d. One difference: LeRobot
places a key frame every 2 frames so that its data loader can seek to any frame; the store decodes whole
episodes, so a longer group of pictures saves bytes and costs no access time.
"""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np

from embodia.core.paths import output_file

#: the store's codec names and the FFmpeg encoders that write them
VIDEO_ENCODERS = {"h264": "libx264", "av1": "libsvtav1"}
#: channels a video column can hold: grey (encoded as the luma plane) and RGB; RGBA stays raw (no alpha in yuv420p)
VIDEO_CHANNELS = (1, 3)


@dataclass(frozen=True)
class VideoEncoding:
    """How the frames of one image key are compressed (kept in the store's attributes)."""

    codec: str = "h264"
    """``"h264"`` (libx264) or ``"av1"`` (SVT-AV1)."""
    crf: int = 23
    """Constant rate factor: lower keeps more detail and takes more bytes (libx264's default is 23;
    LeRobot uses 30 with AV1, whose scale differs)."""
    gop: int = 30
    """Frames from one key frame to the next (the group of pictures)."""
    preset: str = "veryfast"
    """Encoder speed preset: libx264's names (``ultrafast`` .. ``veryslow``) or SVT-AV1's numbers (0-13)."""

    @staticmethod
    def default(codec: str) -> VideoEncoding:
        """The settings a store recorded with ``--video-codec CODEC`` uses."""
        if codec == "av1":
            return VideoEncoding(codec="av1", crf=30, gop=30, preset="10")
        if codec == "h264":
            return VideoEncoding()
        raise ValueError(f"unknown video codec {codec!r}: choose one of {', '.join(VIDEO_ENCODERS)}")

    def as_dict(self) -> dict[str, object]:
        return {"codec": self.codec, "crf": self.crf, "gop": self.gop, "preset": self.preset}


class VideoDecodeError(ValueError):
    """Bytes that do not decode as one video stream."""


def _frame_rate(fps: float | None) -> Fraction:
    """The stream's constant frame rate as a fraction (NTSC-style rates such as 29.97 stay exact)."""
    return Fraction(fps if fps else 30.0).limit_denominator(1001)


@contextlib.contextmanager
def caller_scheduling_kept() -> Iterator[None]:
    """Run an encoder and give the calling thread back its CPU scheduling policy afterwards.

    SVT-AV1 (the ``av1`` encoder), run as root, switches the thread that feeds it frames to real-time
    scheduling (SCHED_FIFO, priority 99) and leaves it there. Every thread and process that thread starts
    later inherits the policy, and one busy child (a browser, a server) then holds a core that nothing else
    can have: a test run once stalled for half an hour that way. Restored here for every encode.
    """
    if not hasattr(os, "sched_getscheduler"):
        yield
        return
    policy, param = os.sched_getscheduler(0), os.sched_getparam(0)
    try:
        yield
    finally:
        if (os.sched_getscheduler(0), os.sched_getparam(0)) != (policy, param):
            with contextlib.suppress(OSError):
                os.sched_setscheduler(0, policy, param)


def encode_frames(frames: np.ndarray, encoding: VideoEncoding, fps: float | None) -> bytes:
    """An mp4 file (in memory) holding ``frames`` (T, H, W, C) uint8 with C in 1 or 3, one video frame each.

    Odd widths and heights are padded by repeating the last row / column (4:2:0 subsampling needs even
    ones); :func:`decode_frames` crops them again.
    """
    import av

    frames = np.asarray(frames)
    if frames.dtype != np.uint8 or frames.ndim != 4 or frames.shape[-1] not in VIDEO_CHANNELS:
        raise ValueError(f"video frames are uint8 (T, H, W, 1|3), got {frames.dtype}{frames.shape}")
    height, width, channels = frames.shape[1:]
    pad = ((0, 0), (0, height % 2), (0, width % 2), (0, 0))
    if height % 2 or width % 2:
        frames = np.pad(frames, pad, mode="edge")
    layout = "gray" if channels == 1 else "rgb24"
    os.environ.setdefault("SVT_LOG", "1")  # SVT-AV1 prints its configuration to stderr otherwise
    buffer = io.BytesIO()
    with caller_scheduling_kept(), av.open(buffer, "w", format="mp4") as container:
        stream = container.add_stream(VIDEO_ENCODERS[encoding.codec], rate=_frame_rate(fps))
        stream.width, stream.height = frames.shape[2], frames.shape[1]
        stream.pix_fmt = "yuv420p"
        stream.options = {"crf": str(encoding.crf), "g": str(encoding.gop), "preset": str(encoding.preset)}
        for frame in frames:
            image = frame[..., 0] if channels == 1 else frame
            for packet in stream.encode(
                av.VideoFrame.from_ndarray(np.ascontiguousarray(image), format=layout)
            ):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return buffer.getvalue()


def decode_frames(data: bytes, row_shape: tuple[int, ...]) -> np.ndarray:
    """The frames of an mp4 written by :func:`encode_frames`, as (T, H, W, C) uint8 (``row_shape`` = H, W, C).

    Raises:
        VideoDecodeError: the bytes are not a video, or its frames are not of ``row_shape``.
    """
    import av

    height, width, channels = row_shape
    layout = "gray" if channels == 1 else "rgb24"
    frames = []
    try:
        with av.open(io.BytesIO(data), "r") as container:
            stream = container.streams.video[0]
            stream.thread_type = "AUTO"
            for frame in container.decode(stream):
                frames.append(frame.to_ndarray(format=layout))
    except (av.FFmpegError, IndexError, ValueError) as error:
        raise VideoDecodeError(f"not a readable video ({type(error).__name__}: {error})") from None
    if not frames:
        return np.zeros((0, height, width, channels), dtype=np.uint8)
    video = np.stack(frames)
    if video.shape[1] < height or video.shape[2] < width:
        raise VideoDecodeError(
            f"its frames are {video.shape[2]}x{video.shape[1]}, the key's are {width}x{height}"
        )
    video = video[:, :height, :width]
    return video[..., None] if channels == 1 else video


def psnr(reference: np.ndarray, decoded: np.ndarray) -> float:
    """Peak signal-to-noise ratio of 8-bit images in dB (10 log10(255^2 / MSE); infinite when identical)."""
    error = np.mean((np.asarray(reference, dtype=np.float64) - np.asarray(decoded, dtype=np.float64)) ** 2)
    return float("inf") if error == 0 else float(10.0 * np.log10(255.0**2 / error))


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
