"""Camera frames in and out of LeRobot's mp4 files, through PyAV.

A LeRobot v3.0 video file holds one camera's frames of consecutive episodes, frame ``n`` of the file at
``n / fps`` seconds; an episode is the span ``[from_timestamp, to_timestamp)`` that ``meta/episodes`` gives it
(v2.x: one file per episode, from 0). Encoding follows LeRobot's defaults (``src/lerobot/configs/video.py``,
``datasets/video_utils.py`` in huggingface/lerobot): pixel format ``yuv420p``, a keyframe every 2 frames,
CRF 30; h264 through libx264, AV1 through SVT-AV1 (preset 12). The ``info`` block of a video feature in
``info.json`` is what LeRobot's ``get_video_info`` records: the stream's size, codec, pixel format, fps and
channels, no audio, and the encoder's settings as ``video.<field>``.
"""

from __future__ import annotations

import os
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from embodia.data.lerobot_format import LeRobotFormatError
from embodia.data.video import caller_scheduling_kept

#: --video-codec name -> (PyAV encoder, its options besides GOP and CRF)
CODECS: dict[str, tuple[str, dict[str, str]]] = {
    "h264": ("libx264", {}),
    "av1": ("libsvtav1", {"preset": "12"}),
}
PIXEL_FORMAT = "yuv420p"


def check_frame_size(key: str, height: int, width: int, channels: int) -> None:
    """Refuse what a ``yuv420p`` RGB video cannot hold: other than 3 channels, odd sizes.

    Raises:
        LeRobotFormatError: naming the camera and its shape.
    """
    if channels != 3:
        raise LeRobotFormatError(
            f"camera key {key!r} has {channels} channel(s); LeRobot videos hold RGB images (3 channels): "
            "drop the key or convert it before exporting"
        )
    if height % 2 or width % 2:
        raise LeRobotFormatError(
            f"camera key {key!r} is {height}x{width} pixels; yuv420p video needs even sizes: record the camera "
            "at an even height and width"
        )


class VideoFileEncoder:
    """One mp4 file of one camera: frames appended episode after episode, frame ``n`` at ``n / fps`` s."""

    def __init__(
        self, path: Path, codec: str, fps: int, height: int, width: int, *, crf: int = 30, gop: int = 2
    ) -> None:
        import av

        os.environ.setdefault("SVT_LOG", "1")  # SVT-AV1 prints its banner to stderr unless told otherwise
        av.logging.set_level(av.logging.ERROR)
        encoder, extra = CODECS[codec]
        self.path = path
        self.shape = (height, width, 3)
        self.frames = 0
        path.parent.mkdir(parents=True, exist_ok=True)
        self._container = av.open(str(path), mode="w")
        options = {"g": str(gop), "crf": str(crf), **extra}
        self._stream = self._container.add_stream(encoder, rate=Fraction(fps), options=options)
        self._stream.width, self._stream.height = width, height
        self._stream.pix_fmt = PIXEL_FORMAT

    def add(self, key: str, frames: np.ndarray) -> None:
        """Encode ``frames`` (uint8 ``(T, H, W, 3)``) after those already in the file."""
        import av

        if frames.shape[1:] != self.shape or frames.dtype != np.uint8:
            raise LeRobotFormatError(
                f"camera key {key!r}: frames of shape {frames.shape[1:]} ({frames.dtype}) after frames of "
                f"{self.shape} (uint8): a LeRobot video has one image size; export images of one shape per camera"
            )
        with caller_scheduling_kept():  # SVT-AV1 as root would leave this thread real-time
            for frame in frames:
                picture = av.VideoFrame.from_ndarray(np.ascontiguousarray(frame), format="rgb24")
                picture.pts = self.frames
                self.frames += 1
                for packet in self._stream.encode(picture):
                    self._container.mux(packet)

    @property
    def bytes_written(self) -> int:
        return self.path.stat().st_size if self.path.exists() else 0

    def close(self) -> None:
        with caller_scheduling_kept():
            for packet in self._stream.encode():
                self._container.mux(packet)
            self._container.close()


def video_info(path: Path, codec: str, *, crf: int, gop: int) -> dict[str, Any]:
    """The ``info`` block of a video feature: what the stream says, then the encoder's settings."""
    import av

    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        info: dict[str, Any] = {
            "video.height": stream.height,
            "video.width": stream.width,
            "video.codec": stream.codec_context.codec.canonical_name,
            "video.pix_fmt": stream.pix_fmt,
            "video.fps": int(stream.base_rate),
            "video.channels": 3,
            "has_audio": len(container.streams.audio) > 0,
        }
    extra = CODECS[codec][1]
    info.update(
        {
            "video.g": gop,
            "video.crf": crf,
            "video.preset": int(extra["preset"]) if "preset" in extra else None,
            "video.fast_decode": 0,
            "video.video_backend": "pyav",
            "video.extra_options": {},
            "is_depth_map": False,
        }
    )
    return info


class VideoFileReader:
    """Decodes one mp4 file front to back, handing out the frames of consecutive time spans."""

    def __init__(self, path: Path) -> None:
        import av

        av.logging.set_level(av.logging.ERROR)
        self.path = path
        try:
            self._container = av.open(str(path))
            stream = self._container.streams.video[0]
        except (av.error.FFmpegError, IndexError) as error:
            raise LeRobotFormatError(
                f"video {path} cannot be read ({type(error).__name__}: {error})"
            ) from None
        self._frames = self._container.decode(stream)
        self._pending: tuple[float, np.ndarray] | None = None
        self.position = 0.0

    def _next(self) -> tuple[float, np.ndarray] | None:
        import av

        if self._pending is not None:
            item, self._pending = self._pending, None
            return item
        try:
            while True:
                frame = next(self._frames)
                if frame.pts is not None:
                    return float(frame.pts * frame.time_base), frame.to_ndarray(format="rgb24")
        except StopIteration:
            return None
        except av.error.FFmpegError as error:
            raise LeRobotFormatError(f"video {self.path} is damaged ({error})") from None

    def frames(self, start: float, count: int, fps: float) -> list[np.ndarray | None]:
        """The frames at ``start + i / fps`` (i < count), each the one nearest that time within half a frame;
        None where the video has none (it ends too early)."""
        half = 0.5 / fps
        found: list[np.ndarray | None] = [None] * count
        while True:
            item = self._next()
            if item is None:
                break
            time, image = item
            if time < start - half:
                continue
            slot = int(round((time - start) * fps))
            if slot >= count:
                self._pending = item  # the next episode's first frame
                break
            if abs(time - (start + slot / fps)) <= half:
                found[slot] = image
        self.position = start + count / fps
        return found

    def close(self) -> None:
        self._container.close()
