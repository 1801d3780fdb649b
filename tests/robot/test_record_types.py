"""The live recorder (``embodia robot record``, real rclpy) converts with the registry the bag import uses.

A publisher sends a String, an Imu and a Temperature (a type only the generic fallback reads) next to a
command; the recorder, a separate process in an isolated network namespace, stores text as fixed-width
UTF-8 columns and the generic type as its numbers plus its text fields, as the bag import does.
Run as ``python -m tests.robot.test_record_types WORKDIR`` it is the publishing side.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

TEXTS = ("open the drawer ✓", "close it")


def _publish(workdir: Path) -> dict[str, object]:
    """Publish until the recorder (started here) stops; returns its exit code and log."""
    import rclpy
    from rclpy.node import Node
    from sensor_msgs.msg import Imu, Temperature
    from std_msgs.msg import Float64MultiArray, String

    rclpy.init()
    node = Node("publisher")
    pubs = {
        "/instruction": node.create_publisher(String, "/instruction", 50),
        "/temperature": node.create_publisher(Temperature, "/temperature", 50),
        "/imu": node.create_publisher(Imu, "/imu", 50),
        "/cmd": node.create_publisher(Float64MultiArray, "/cmd", 50),
    }
    log = workdir / "recorder.log"
    with open(log, "w") as stream:
        recorder = subprocess.Popen(
            [sys.executable, "-m", "embodia.cli", "robot", "record", "/instruction=instruction"]
            + ["/temperature=temperature", "/imu=imu", "--action", "/cmd", "--episode-topic", ""]
            + ["--duration", "6", "--out", str(workdir / "live.zarr")],
            stdout=stream,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        i = 0
        deadline = time.monotonic() + 60
        while recorder.poll() is None and time.monotonic() < deadline:
            temperature = Temperature(temperature=float(i), variance=0.5)
            temperature.header.frame_id = "thermo"
            imu = Imu()
            imu.angular_velocity.z = float(i)
            pubs["/instruction"].publish(String(data=TEXTS[i % 2]))
            pubs["/temperature"].publish(temperature)
            pubs["/imu"].publish(imu)
            pubs["/cmd"].publish(Float64MultiArray(data=[float(i)]))
            rclpy.spin_once(node, timeout_sec=0.02)
            i += 1
        if recorder.poll() is None:
            recorder.kill()
        code = recorder.wait()
    node.destroy_node()
    rclpy.shutdown()
    return {"exit_code": code, "log": log.read_text(), "published": i}


def test_recorder_stores_text_and_generic_types_like_the_bag_import(tmp_path, monkeypatch):
    import embodia
    from embodia.robot.converters import TEXT_BYTES, decode_text
    from embodia.robot.netns import check_isolation, run_isolated
    from tests.conftest import ROOT

    check_isolation()
    monkeypatch.setenv("ROS_LOG_DIR", str(tmp_path / "ros_log"))
    result = run_isolated(
        [sys.executable, "-m", "tests.robot.test_record_types", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert seen["exit_code"] == 0, seen["log"][-3000:]
    store = embodia.TrajectoryStore(tmp_path / "live.zarr")
    ep = store.episode(0)
    n = len(ep["action"])
    assert n > 10
    assert ep["instruction"].dtype == np.uint8 and ep["instruction"].shape == (n, TEXT_BYTES)
    assert set(decode_text(ep["instruction"])) <= set(TEXTS) and len(set(decode_text(ep["instruction"]))) == 2
    assert ep["temperature"].shape == (n, 4)  # header.stamp.sec, header.stamp.nanosec, temperature, variance
    np.testing.assert_array_equal(ep["temperature"][:, 3], 0.5)
    assert {json.loads(t)["header.frame_id"] for t in decode_text(ep["temperature.text"])} == {"thermo"}
    assert ep["imu"].shape == (n, 10)
    assert store.schema["action"]["role"] == "action" and ep["action"].shape == (n, 1)


if __name__ == "__main__":
    print(json.dumps(_publish(Path(sys.argv[1]))))
