"""Camera observation -> command latency of ONNX pixel policy nodes at 30 Hz, against a bare rclpy echo node.

Everything runs in a fresh loopback-only network namespace (the script re-executes itself inside one), as
``bench_ros_latency`` does. A driver publishes camera frames at 30 Hz, one topic per input:

- ``Image`` rgb8 at 64x64 and at 224x224 (12 KB and 147 KB of pixels);
- ``CompressedImage`` jpeg (quality 90) of the same frames.

Two nodes answer every input:

- echo: one bare rclpy node that subscribes every input with its message type and, on receipt, publishes a
  Float64MultiArray of 7 values (the floor: DDS, serialisation and rclpy, nothing else);
- onnx: ``embodia robot policy`` (observation trigger, full safety path: conversion, watchdog, clipping)
  with a pixel policy folder exported by ``embodia export --onnx`` (the small CNN of ``pixel_bc``,
  ``make_image_encoder("cnn")``, at the frame's size, and an MLP 2x256 head, 7 actions) run by ONNX Runtime
  on one thread; its folder holds only config.json + model.onnx, so the node never imports torch.

The driver stamps and publishes a frame every 1/30 s and takes the first command that arrives before the
next frame as its answer (a frame not answered by then counts as missed). Paths take turns in blocks (the
echo and the policy node of one input back to back), so machine drift hits all of them. Reported: p50 and
p99 of observation -> command in ms with distribution-free 95 % intervals (binomial order statistics), and
the p50's ratio to the echo's for the same message with a bootstrap interval. Before the nodes start, the
parts alone, in this process: converting one message (``image_to_array``, a view of the message's buffer;
``compressed_image_to_array``, a jpeg decode), one copy of the frame (what the view saves), and one
``act`` of the ONNX policy, back to back and once per 1/30 s (idle between calls, as in the node: caches
and the CPU's clock have cooled, which is most of what the node adds to the floor at 224x224).

Writes ``results/benchmarks/ros_camera_latency.json`` (tables ``latency`` and ``stages``; in ``data`` the
other numbers, the latencies summarised per path and block); ``--quick`` writes under
``runs/quick-results/`` instead, ``--results PATH`` anywhere.

    python -m benchmarks.bench_ros_camera_latency [--quick] [--results PATH]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.bench_ros_latency import ROOT, _spawn, _stop
from embodia.core.results import Column, Table

#: the frame rate of the driver's camera
RATE_HZ = 30.0
ACTION_DIM = 7
#: inputs: name -> (message type, frame size)
INPUTS = {
    "raw64": ("Image", 64),
    "raw224": ("Image", 224),
    "jpeg64": ("CompressedImage", 64),
    "jpeg224": ("CompressedImage", 224),
}
#: the nodes that answer every input (topic prefix: <node>_<input>)
NODES = ("echo", "onnx")
JPEG_QUALITY = 90


def camera_frame(size: int, seed: int = 0) -> np.ndarray:
    """A synthetic RGB frame: colour gradients, a few flat boxes and sensor noise (it compresses like a camera
    image, neither like pure noise nor like a flat colour)."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:size, 0:size] / size
    frame = np.stack([x, y, 1.0 - (x + y) / 2], axis=-1) * 200.0
    for _ in range(6):
        top, left = rng.integers(0, size * 3 // 4, 2)
        height, width = rng.integers(size // 8, size // 3, 2)
        frame[top : top + height, left : left + width] = rng.uniform(0, 255, 3)
    frame += rng.normal(0.0, 4.0, frame.shape)
    return np.clip(frame, 0, 255).astype(np.uint8)


def messages() -> dict[str, object]:
    """One message per input, built once (the driver only restamps it)."""
    import imageio.v3 as iio
    from sensor_msgs.msg import CompressedImage

    from embodia.robot.convert import make_image

    out: dict[str, object] = {}
    for name, (kind, size) in INPUTS.items():
        frame = camera_frame(size)
        if kind == "Image":
            out[name] = make_image(frame, "rgb8", frame_id="camera")
        else:
            msg = CompressedImage(format="rgb8; jpeg compressed bgr8")
            msg.header.frame_id = "camera"
            msg.data = iio.imwrite("<bytes>", frame, extension=".jpg", quality=JPEG_QUALITY)
            out[name] = msg
    return out


def echo_node() -> None:
    """A bare rclpy node: every input in (its message type), Float64MultiArray of 7 values out, nothing else."""
    import rclpy
    from rclpy.node import Node
    from sensor_msgs.msg import CompressedImage, Image
    from std_msgs.msg import Float64MultiArray

    rclpy.init()
    node = Node("echo")
    for name, (kind, _) in INPUTS.items():
        pub = node.create_publisher(Float64MultiArray, f"echo_{name}/cmd", 10)
        command = Float64MultiArray(data=[0.0] * ACTION_DIM)
        node.create_subscription(
            Image if kind == "Image" else CompressedImage,
            f"echo_{name}/image",
            lambda _msg, pub=pub, command=command: pub.publish(command),
            10,
        )
    with contextlib.suppress(KeyboardInterrupt, rclpy.executors.ExternalShutdownException):
        rclpy.spin(node)


def _write_policies(work: Path) -> dict[int, float]:
    """Per frame size: a pixel policy folder (torch), exported to ONNX, deployed as ``pixel<size>_onnx``
    (config.json + model.onnx only); returns the export check's largest |onnx - torch| per size."""
    from types import SimpleNamespace

    import torch

    from embodia.core.policy import load_policy
    from embodia.perception.pixel_observations import PixelObservationEncoder, make_image_encoder
    from embodia.policies.networks import Actor
    from embodia.policies.onnx_export import export_onnx
    from embodia.policies.pixel_bc import PixelActor
    from embodia.policies.pixel_policy import save_pixel_policy

    diffs = {}
    for size in sorted({size for _, size in INPUTS.values()}):
        torch.manual_seed(0)
        observations = PixelObservationEncoder(
            make_image_encoder("cnn", image_size=size), ["rgb"], torch.zeros(0), torch.ones(0)
        )
        actor = PixelActor(observations, Actor(observations.dim, ACTION_DIM, 1, (256, 256)))
        folder = work / f"pixel{size}"
        save_pixel_policy(folder, actor, SimpleNamespace(hidden=(256, 256)), state_sizes=[])
        model = export_onnx(folder)
        deployed = work / f"pixel{size}_onnx"
        deployed.mkdir()
        for path in (folder / "config.json", model):
            shutil.copy(path, deployed / path.name)
        loaded = type(load_policy(deployed)).__name__  # what the node will load (runtime "auto")
        assert loaded == "OnnxPixelPolicy", f"{deployed} loads as {loaded}, not through ONNX Runtime"
        diffs[size] = json.loads((folder / "config.json").read_text())["onnx"]["max_abs_diff"]
    return diffs


def _median_us(fn, calls: int, pause: float = 0.0) -> float:  # noqa: ANN001  (any callable)
    """Median microseconds per call of ``fn``, back to back or each after ``pause`` seconds idle."""
    for _ in range(min(calls, 20)):  # warm up
        fn()
    times = []
    for _ in range(calls):
        if pause:
            time.sleep(pause)
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times) * 1e6)


def stages(work: Path, msgs: dict[str, object], calls: int, paced_calls: int) -> dict[str, dict]:
    """The parts alone, one thread: converting the message, one copy of the frame, one ONNX ``act`` back to
    back (caches warm) and once per frame at :data:`RATE_HZ` (idle in between, as in the node)."""
    from embodia.core.policy import load_policy
    from embodia.robot.convert import to_array

    sizes = {size for _, size in INPUTS.values()}
    policies = {size: load_policy(work / f"pixel{size}_onnx", runtime="onnx") for size in sizes}
    out = {}
    for name, (kind, size) in INPUTS.items():
        msg = msgs[name]
        options = {"encoding": "rgb8", "height": size, "width": size} if kind == "Image" else {}
        frame = to_array(msg, kind, **options)
        assert frame.shape == (size, size, 3) and frame.dtype == np.uint8
        policy = policies[size]
        out[name] = {
            "bytes": len(msg.data),
            "convert_us": _median_us(lambda msg=msg, kind=kind, o=options: to_array(msg, kind, **o), calls),
            "copy_us": _median_us(lambda frame=frame: np.array(frame), calls),
            "act_us": _median_us(lambda frame=frame, p=policy: p.act({"rgb": frame}), calls),
            "act_paced_us": _median_us(
                lambda frame=frame, p=policy: p.act({"rgb": frame}), paced_calls, pause=1.0 / RATE_HZ
            ),
        }
    return out


def _node_config(path: Path, name: str) -> None:
    import yaml

    kind, size = INPUTS[name]
    topic = {"topic": f"onnx_{name}/image", "type": kind, "key": "rgb", "height": size, "width": size}
    if kind == "Image":
        topic["encoding"] = "rgb8"
    path.write_text(
        yaml.safe_dump(
            {
                "rate_hz": RATE_HZ,
                "trigger": "observation",
                # the node of one input idles while the others take their turn: no safe command meanwhile
                "watchdog_timeout": 3600.0,
                "status_period": 10.0,
                "observations": [topic],
                "command": {
                    "topic": f"onnx_{name}/cmd",
                    "type": "Float64MultiArray",
                    "low": [-1] * ACTION_DIM,
                    "high": [1] * ACTION_DIM,
                },
            }
        )
    )


class CameraDriver:
    """Publishes the frames of every path and times the commands that answer them."""

    def __init__(self, msgs: dict[str, object]) -> None:
        import rclpy
        from rclpy.node import Node
        from std_msgs.msg import Float64MultiArray

        rclpy.init()
        self.rclpy = rclpy
        self.node = Node("camera_driver")
        self.msgs = msgs
        self.paths = [f"{node}_{name}" for name in INPUTS for node in NODES]
        self.pubs = {
            path: self.node.create_publisher(type(msgs[path.split("_", 1)[1]]), f"{path}/image", 10)
            for path in self.paths
        }
        self.replies: dict[str, list[float]] = {path: [] for path in self.paths}
        for path in self.paths:
            self.node.create_subscription(
                Float64MultiArray,
                f"{path}/cmd",
                lambda _m, p=path: self.replies[p].append(time.perf_counter()),
                10,
            )

    def wait_connected(self, path: str, timeout: float = 120.0) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.node.count_subscribers(f"{path}/image") and self.node.count_publishers(f"{path}/cmd"):
                return
            self.rclpy.spin_once(self.node, timeout_sec=0.1)
        raise RuntimeError(f"{path} did not come up")

    def frames(self, path: str, count: int) -> tuple[list[float], int]:
        """``count`` frames at :data:`RATE_HZ`; the latencies (ms) of the answered ones and how many were not
        answered before the next frame."""
        msg, period = self.msgs[path.split("_", 1)[1]], 1.0 / RATE_HZ
        latencies, missed = [], 0
        next_send = time.perf_counter()
        for _ in range(count):
            while (wait := next_send - time.perf_counter()) > 0:
                self.rclpy.spin_once(self.node, timeout_sec=wait)
            before = len(self.replies[path])
            msg.header.stamp = self.node.get_clock().now().to_msg()
            sent = time.perf_counter()
            self.pubs[path].publish(msg)
            next_send += period
            while len(self.replies[path]) == before and time.perf_counter() < next_send:
                self.rclpy.spin_once(self.node, timeout_sec=max(0.0, next_send - time.perf_counter()))
            if len(self.replies[path]) > before:
                latencies.append((self.replies[path][before] - sent) * 1e3)
            else:
                missed += 1
        return latencies, missed


def inside(quick: bool) -> dict:
    work = Path(tempfile.mkdtemp(prefix="bench_ros_camera_"))
    os.environ.setdefault("ROS_LOG_DIR", str(work / "log"))
    load_before = os.getloadavg()  # what else the machine ran: kept beside the numbers
    max_abs_diff = _write_policies(work)
    msgs = messages()
    parts = stages(work, msgs, 200 if quick else 2000, 15 if quick else 150)
    echo = _spawn(["-m", "benchmarks.bench_ros_camera_latency", "--echo"])
    nodes = []
    for name, (_, size) in INPUTS.items():
        _node_config(work / f"{name}.yaml", name)
        args = ["-m", "embodia.cli", "robot", "policy", "--policy", str(work / f"pixel{size}_onnx")]
        nodes.append(_spawn([*args, "--config", str(work / f"{name}.yaml")]))
    driver = CameraDriver(msgs)
    blocks, per_block = (2, 30) if quick else (10, 100)
    samples: dict[str, list[float]] = {path: [] for path in driver.paths}
    missed = dict.fromkeys(driver.paths, 0)
    block_p50: dict[str, list[float]] = {path: [] for path in driver.paths}
    try:
        for path in driver.paths:
            driver.wait_connected(path)
        for path in driver.paths:
            driver.frames(path, 15)  # warm up every path
        for _ in range(blocks):
            for path in driver.paths:
                got, lost = driver.frames(path, per_block)
                samples[path] += got
                missed[path] += lost
                block_p50[path].append(float(np.median(got)) if got else None)
    finally:
        for node in [*nodes, echo]:
            _stop(node)
        driver.node.destroy_node()
        driver.rclpy.shutdown()
        shutil.rmtree(work, ignore_errors=True)  # the policy folders and the nodes' logs
    return {
        "rate_hz": RATE_HZ,
        "frames_per_block": per_block,
        "samples_ms": samples,
        "block_p50_ms": block_p50,
        "missed": missed,
        "stages": parts,
        "max_abs_diff": {str(k): v for k, v in max_abs_diff.items()},
        "quick": quick,
        "load_average": {"before": list(load_before), "after": list(os.getloadavg())},
    }


def _input_label(name: str, size_bytes: int) -> str:
    kind, size = INPUTS[name]
    encoding = "rgb8" if kind == "Image" else f"jpeg q{JPEG_QUALITY}"
    return f"{kind} {encoding} {size}x{size} ({size_bytes / 1024:.0f} KB)"


NODE_LABELS = {
    "echo": "bare rclpy echo node (floor)",
    "onnx": "embodia policy node, CNN + MLP 2x256, ONNX Runtime",
}


def tables(data: dict) -> dict[str, Table]:
    """The two tables of the results file: latency at 30 Hz against the echo, and the parts alone."""
    from benchmarks._common import quantile_interval, ratio_interval

    latency = Table(
        [
            Column("input", "camera input"),
            Column("path", "path (-> Float64MultiArray command)"),
            Column("p50_ms", "p50 ms [95 % interval]", ".2f"),
            Column("p99_ms", "p99 ms [95 % interval]", ".2f"),
            Column("samples", "answered"),
            Column("missed", "missed"),
            Column("ratio_p50", "p50 / floor p50", ".2f"),
        ]
    )
    stage_table = Table(
        [
            Column("input", "camera input"),
            Column("convert_us", "µs to convert the message, median", ".1f"),
            Column("copy_us", "µs per copy of the frame (what a view saves)", ".1f"),
            Column("act_us", "µs per ONNX act, median (one thread, back to back)", ".0f"),
            Column("act_paced_us", "µs per ONNX act at 30 Hz (idle between frames)", ".0f"),
            Column("max_abs_diff", "largest difference from torch", ".0e"),
        ]
    )
    samples = data["samples_ms"]
    for name, (_, size) in INPUTS.items():
        parts = data["stages"][name]
        label = _input_label(name, parts["bytes"])
        floor = samples[f"echo_{name}"]
        for node in NODES:
            values = samples[f"{node}_{name}"]
            latency.add(
                input=label,
                path=NODE_LABELS[node],
                p50_ms=quantile_interval(values, 0.5),
                p99_ms=quantile_interval(values, 0.99),
                samples=len(values),
                missed=data["missed"][f"{node}_{name}"],
                ratio_p50=None if node == "echo" else ratio_interval(values, floor),
            )
        stage_table.add(
            input=label,
            convert_us=parts["convert_us"],
            copy_us=parts["copy_us"],
            act_us=parts["act_us"],
            act_paced_us=parts["act_paced_us"],
            max_abs_diff=data["max_abs_diff"][str(size)],
        )
    return {"latency": latency, "stages": stage_table}


def kept_data(data: dict) -> dict:
    """What the results file keeps of a run besides its tables: every number but the raw latencies, which are
    summarised per path (percentiles, and the p50 of each block: how much the machine drifted)."""
    summary = {
        path: {
            **{f"p{q}_ms": float(np.percentile(values, q)) for q in (10, 50, 90, 99)},
            "max_ms": float(np.max(values)),
            "block_p50_ms": data["block_p50_ms"][path],
        }
        for path, values in data["samples_ms"].items()
    }
    kept = {k: v for k, v in data.items() if k not in ("samples_ms", "block_p50_ms")}
    return {**kept, "latency_ms": summary}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--results", default=None, help="results file (default: results/benchmarks/ros_camera_latency.json)"
    )
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--echo", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.echo:
        echo_node()
        return
    if args.inside:
        print(json.dumps(inside(args.quick)))
        return
    from benchmarks._common import save_results
    from embodia.robot.netns import run_isolated

    inner = [sys.executable, "-m", "benchmarks.bench_ros_camera_latency", "--inside"]
    result = run_isolated(
        inner + (["--quick"] if args.quick else []), cwd=ROOT, capture_output=True, text=True, timeout=1200
    )
    if result.returncode != 0:
        raise SystemExit(f"benchmark failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    data = json.loads(result.stdout.strip().splitlines()[-1])
    results = tables(data)
    for table in results.values():
        print(table.markdown(), end="\n\n")
    save_results(
        "ros_camera_latency",
        results,
        quick=args.quick,
        path=args.results,
        data=kept_data(data),
        seeds=[0],
        title="ROS 2 camera policy nodes (ONNX Runtime): observation -> command latency at 30 Hz against the "
        "echo floor, and the parts alone",
    )


if __name__ == "__main__":
    main()
