"""The live recorder keeps camera topics as video when asked (``embodia robot record --video-codec h264``).

A publisher sends an rgb8 Image whose pixels are a function of a counter, next to a command carrying the
counter; the recorder (real rclpy, a separate process in an isolated network namespace) writes a store whose
camera key is an h264 video column. Every decoded frame is compared with the image its row's command names.
Run as ``python -m tests.robot.test_record_video WORKDIR`` it is the publishing side.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

SIZE = (48, 64)


def frame(i: int) -> np.ndarray:
    """A smooth picture that moves with ``i`` (video codecs keep smooth pictures well)."""
    y, x = np.mgrid[0 : SIZE[0], 0 : SIZE[1]]
    red = 128 + 100 * np.sin((x + 2 * i) / 9.0)
    green = 128 + 100 * np.cos((y - i) / 7.0)
    blue = np.full(SIZE, (40 + 3 * i) % 256)
    return np.stack([red, green, blue], axis=-1).astype(np.uint8)


def _publish(workdir: Path) -> dict[str, object]:
    import rclpy
    from rclpy.node import Node
    from sensor_msgs.msg import Image
    from std_msgs.msg import Float64MultiArray

    rclpy.init()
    node = Node("publisher")
    camera = node.create_publisher(Image, "/camera", 50)
    command = node.create_publisher(Float64MultiArray, "/cmd", 50)
    log = workdir / "recorder.log"
    with open(log, "w") as stream:
        recorder = subprocess.Popen(
            [sys.executable, "-m", "embodia.cli", "robot", "record", "/camera=camera", "--action", "/cmd"]
            + ["--episode-topic", "", "--duration", "5", "--video-codec", "h264"]
            + ["--out", str(workdir / "live.zarr")],
            stdout=stream,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        i = 0
        deadline = time.monotonic() + 60
        while recorder.poll() is None and time.monotonic() < deadline:
            image = Image(height=SIZE[0], width=SIZE[1], encoding="rgb8", step=SIZE[1] * 3)
            image.data = frame(i).tobytes()
            camera.publish(image)
            command.publish(Float64MultiArray(data=[float(i)]))
            rclpy.spin_once(node, timeout_sec=0.02)
            i += 1
        if recorder.poll() is None:
            recorder.kill()
        code = recorder.wait()
    node.destroy_node()
    rclpy.shutdown()
    return {"exit_code": code, "log": log.read_text(), "published": i}


def test_camera_topics_are_recorded_as_video_within_the_codec_error(tmp_path, monkeypatch):
    import embodia
    from embodia.data.video import psnr
    from embodia.robot.netns import check_isolation, run_isolated
    from tests.conftest import ROOT

    check_isolation()
    monkeypatch.setenv("ROS_LOG_DIR", str(tmp_path / "ros_log"))
    result = run_isolated(
        [sys.executable, "-m", "tests.robot.test_record_video", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert seen["exit_code"] == 0, seen["log"][-3000:]
    store = embodia.TrajectoryStore(tmp_path / "live.zarr")
    assert store.video_codec == "h264" and store.video_keys == ["camera"]
    ep = store.episode(0)
    n = len(ep["action"])
    assert n > 10 and ep["camera"].shape == (n, *SIZE, 3) and ep["camera"].dtype == np.uint8
    expected = np.stack([frame(int(i)) for i in ep["action"][:, 0]])
    assert psnr(ep["camera"], expected) > 30.0


if __name__ == "__main__":
    print(json.dumps(_publish(Path(sys.argv[1]))))
