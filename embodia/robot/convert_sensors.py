"""Converters for the sensor and transform messages a robot bag typically holds (registered by type).

==========================  =================================================================
Imu                         ``[qx qy qz qw  wx wy wz  ax ay az]``: orientation, angular velocity,
                            linear acceleration (float64; covariances left out)
LaserScan                   ``ranges`` (float32, one value per beam; inf / NaN kept: REP 117
                            out-of-range readings); ``fields`` may add ``intensities``
CompressedImage             jpeg or png -> RGB ``(H, W, 3)`` uint8 (gray expanded, alpha dropped);
                            ``compressedDepth`` and 16-bit images are rejected
CameraInfo                  ``[height width d... k(9) r(9) p(12) binning_x binning_y
                            roi.x_offset roi.y_offset roi.height roi.width roi.do_rectify]``
                            (float64) and the text part ``distortion_model``
TFMessage                   ``(N, 7)`` float64 ``[x y z qx qy qz qw]`` per transform, in message
                            order, and the text part ``frames``: JSON ``[[parent, child], ...]``;
                            imported only when named (``/tf`` mixes broadcasters whose messages
                            hold different numbers of transforms, which one store key cannot)
==========================  =================================================================

Like every reading function they only read attributes (rclpy and ``rosbags`` messages alike) and raise
:class:`~embodia.robot.errors.MessageError` for a message that cannot be read.
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from embodia.robot.convert import _finite
from embodia.robot.converters import register_converter
from embodia.robot.errors import MessageError, RobotConfigError
from embodia.robot.flatten import flatten_message

IMU_FIELDS = ("qx", "qy", "qz", "qw", "wx", "wy", "wz", "ax", "ay", "az")
#: the first bytes of a compressed image -> its Pillow codec
_MAGIC = {b"\x89PNG\r\n\x1a\n": "PNG", b"\xff\xd8\xff": "JPEG"}


def _vector(v: Any) -> list[float]:
    return [float(v.x), float(v.y), float(v.z)]


@register_converter("sensor_msgs/msg/Imu")
def imu_to_array(msg: Any) -> np.ndarray:
    """Orientation (quaternion), angular velocity and linear acceleration of an Imu (see ``IMU_FIELDS``)."""
    q = msg.orientation
    values = [float(q.x), float(q.y), float(q.z), float(q.w)]
    values += _vector(msg.angular_velocity) + _vector(msg.linear_acceleration)
    return _finite(np.array(values), "Imu")


@register_converter("sensor_msgs/msg/LaserScan", options=("fields",))
def laser_scan_to_array(msg: Any, fields: Sequence[str] = ("ranges",)) -> np.ndarray:
    """The ranges (and intensities, when asked) of a LaserScan, float32, concatenated in ``fields`` order.

    Raises:
        MessageError: intensities asked for but missing, or of another length than the ranges.
    """
    ranges = np.asarray(msg.ranges, dtype=np.float32)
    parts = []
    for field in fields:
        if field not in ("ranges", "intensities"):
            raise RobotConfigError(f"LaserScan fields are ranges and intensities, got {field!r}")
        values = np.asarray(getattr(msg, field), dtype=np.float32)
        if len(values) != len(ranges):
            raise MessageError(f"LaserScan has {len(values)} {field} for {len(ranges)} ranges")
        parts.append(values)
    return np.concatenate(parts) if len(parts) > 1 else parts[0]


@register_converter("sensor_msgs/msg/CompressedImage", heavy=True)
def compressed_image_to_array(msg: Any) -> np.ndarray:
    """A jpeg or png CompressedImage decoded to RGB ``(H, W, 3)`` uint8 (Pillow, which imageio brings).

    The codec is taken from the data (its magic bytes), so ``format`` strings of any image_transport
    version work; ``compressedDepth`` (a depth header before the png) is rejected. Pillow decodes the
    compressed bytes (copied once into its reader: a few kilobytes) and its pixels become the array the
    policy gets (read-only; RGB images are not copied again, gray, palette and CMYK ones are converted once).

    Raises:
        MessageError: not jpeg / png, a depth image, not 8 bits per channel, or data that does not decode.
    """
    try:  # a view of the message's bytes (rclpy: array.array; rosbags: ndarray; or bytes)
        data = np.frombuffer(msg.data, dtype=np.uint8)
    except (TypeError, ValueError):  # a list of ints, a strided array
        data = np.ascontiguousarray(np.asarray(msg.data, dtype=np.uint8))
    fmt = str(msg.format)
    head = bytes(data[:8])
    codec = next((name for magic, name in _MAGIC.items() if head.startswith(magic)), None)
    if "compressedDepth" in fmt or codec is None:
        raise MessageError(f"CompressedImage format {fmt!r} is not supported (jpeg and png images are)")
    from PIL import Image

    try:
        with Image.open(io.BytesIO(data), formats=[codec]) as decoded:
            if decoded.mode == "P":  # a palette: its colours (and transparency, dropped below)
                decoded = decoded.convert("RGBA" if "transparency" in decoded.info else "RGB")
            elif decoded.mode == "CMYK":
                decoded = decoded.convert("RGB")
            image = np.asarray(decoded)
    except Exception as error:  # Pillow raises several types for damaged data
        raise MessageError(f"CompressedImage ({fmt}) does not decode: {type(error).__name__}") from None
    if image.dtype != np.uint8:
        raise MessageError(
            f"CompressedImage ({fmt}) has {image.dtype} pixels; only 8-bit images are supported"
        )
    if image.ndim == 2:
        image = image[..., None]
    if image.ndim != 3 or image.shape[2] not in (1, 2, 3, 4):
        raise MessageError(f"CompressedImage ({fmt}) decodes to an array of shape {image.shape}")
    if image.shape[2] in (1, 2):  # gray (+ alpha)
        image = np.repeat(image[..., :1], 3, axis=2)
    return np.ascontiguousarray(image[..., :3])  # no copy for RGB; alpha dropped in one


@register_converter("sensor_msgs/msg/CameraInfo")
def camera_info_to_array(msg: Any) -> dict[str, Any]:
    """Calibration of a CameraInfo: its numbers in field order (header left out) and ``distortion_model``."""
    parts = flatten_message(msg, skip=("header", "distortion_model"))
    return {"": _finite(parts[""], "CameraInfo"), "distortion_model": str(msg.distortion_model)}


@register_converter("tf2_msgs/msg/TFMessage", auto=False)
def tf_message_to_array(msg: Any) -> dict[str, Any]:
    """The transforms of a TFMessage as ``(N, 7)`` ``[x y z qx qy qz qw]`` and their frames as JSON text.

    Raises:
        MessageError: the message holds no transform, or a non-finite value.
    """
    transforms = list(msg.transforms)
    if not transforms:
        raise MessageError("TFMessage holds no transforms")
    rows = []
    frames = []
    for stamped in transforms:
        t, q = stamped.transform.translation, stamped.transform.rotation
        rows.append([*_vector(t), float(q.x), float(q.y), float(q.z), float(q.w)])
        frames.append([str(stamped.header.frame_id), str(stamped.child_frame_id)])
    return {
        "": _finite(np.array(rows), "TFMessage"),
        "frames": json.dumps(frames, ensure_ascii=False, separators=(",", ":")),
    }
