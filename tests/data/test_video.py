"""Video encoding of camera frames through PyAV (``embodia/data/video.py``)."""

from __future__ import annotations

import io

import av
import numpy as np
import pytest

from embodia.data.video import VideoDecodeError, VideoEncoding, decode_frames, encode_frames, psnr


def moving_gradient(length: int, height: int, width: int) -> np.ndarray:
    """Brightness waves drifting over time under a slowly changing tint (camera-like content: detail in
    brightness, little in colour, which 4:2:0 video keeps at half resolution)."""
    y, x = np.mgrid[0:height, 0:width]
    t = np.arange(length)[:, None, None]
    light = 120 + 80 * np.sin(x / 5 + t / 3) * np.cos(y / 4 - t / 5)
    tint = [20 * np.sin((x + y) / 30 + 0 * t + phase) for phase in (0.0, 2.0, 4.0)]
    return np.stack([light + c for c in tint], axis=-1).clip(0, 255).astype(np.uint8)


@pytest.mark.parametrize("codec", ["h264", "av1"])
def test_frames_round_trip_as_mp4_at_the_given_rate(codec):
    frames = moving_gradient(10, 32, 48)
    data = encode_frames(frames, VideoEncoding.default(codec), fps=12.5)
    with av.open(io.BytesIO(data)) as container:
        stream = container.streams.video[0]
        assert container.format.name.startswith("mov,mp4")
        assert stream.codec_context.name in ({"h264"} if codec == "h264" else {"libdav1d", "av1"})
        assert stream.average_rate == 12.5 and stream.codec_context.pix_fmt == "yuv420p"
    decoded = decode_frames(data, frames.shape[1:])
    assert decoded.shape == frames.shape and decoded.dtype == np.uint8
    assert psnr(frames, decoded) > 30.0
    assert len(data) < frames.nbytes / 3


def test_odd_sizes_are_padded_and_cropped_and_grey_keeps_one_channel():
    frames = moving_gradient(4, 7, 9)
    decoded = decode_frames(encode_frames(frames, VideoEncoding(), 10), (7, 9, 3))
    assert decoded.shape == (4, 7, 9, 3) and psnr(frames, decoded) > 25.0
    grey = frames[..., :1].copy()
    decoded = decode_frames(encode_frames(grey, VideoEncoding(), 10), (7, 9, 1))
    assert decoded.shape == (4, 7, 9, 1) and psnr(grey, decoded) > 30.0


def test_bad_input_and_bad_bytes():
    with pytest.raises(ValueError, match=r"uint8 \(T, H, W, 1\|3\)"):
        encode_frames(np.zeros((3, 8, 8, 4), dtype=np.uint8), VideoEncoding(), 10)
    with pytest.raises(ValueError, match="unknown video codec 'vp9'"):
        VideoEncoding.default("vp9")
    with pytest.raises(VideoDecodeError, match="not a readable video"):
        decode_frames(b"not a video at all", (8, 8, 3))
    data = encode_frames(moving_gradient(3, 8, 8), VideoEncoding(), 10)
    with pytest.raises(VideoDecodeError, match="frames are 8x8, the key's are 16x16"):
        decode_frames(data, (16, 16, 3))


def test_psnr():
    a = moving_gradient(2, 8, 8)
    assert psnr(a, a) == float("inf")
    b = a.astype(np.int16)
    b[0, 0, 0, 0] += 1 if b[0, 0, 0, 0] < 255 else -1
    expected = 10 * np.log10(255**2 / (1 / a.size))
    assert psnr(a, b.astype(np.uint8)) == pytest.approx(expected)


def test_encoding_leaves_the_callers_cpu_scheduling_as_it_was(tmp_path):
    """SVT-AV1 run as root switches the feeding thread to SCHED_FIFO 99; everything it starts afterwards would
    inherit a real-time policy (this once starved a whole test run). The encoders give the policy back."""
    import os
    import threading

    from embodia.data.lerobot_video import VideoFileEncoder

    def in_store():
        encode_frames(moving_gradient(4, 16, 16), VideoEncoding.default("av1"), fps=10)

    def in_lerobot_file():
        encoder = VideoFileEncoder(tmp_path / "cam.mp4", "av1", 10, 16, 16)
        encoder.add("cam", moving_gradient(4, 16, 16))
        encoder.close()

    def policy_after(encode) -> list:
        seen = []

        def run():
            os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))  # a fresh, ordinary thread
            encode()
            seen.append(os.sched_getscheduler(0))

        worker = threading.Thread(target=run)
        worker.start()
        worker.join()
        return seen

    assert policy_after(in_store) == [os.SCHED_OTHER]
    assert policy_after(in_lerobot_file) == [os.SCHED_OTHER]
