"""benchmarks/bench_ros_camera_latency.py: every camera path (Image and CompressedImage at 64 and 224 px, echo
and ONNX pixel policy node) answers in its quick run, whose results file has the layout of the committed
``results/benchmarks/ros_camera_latency.json`` the ROS 2 page renders (timings not asserted)."""

from __future__ import annotations

from pathlib import Path

from embodia.core.results import default_results_path, layout_differences, read_results
from embodia.robot.netns import check_isolation


def test_quick_run_writes_the_committed_layout(tmp_path: Path, monkeypatch) -> None:
    from benchmarks.bench_ros_camera_latency import INPUTS, NODES, main

    check_isolation()  # a clear error (not a skip) where network namespaces cannot be made
    monkeypatch.setenv("ROS_LOG_DIR", str(tmp_path / "ros_log"))
    out = tmp_path / "ros_camera_latency.json"
    main(["--quick", "--results", str(out)])
    produced = read_results(out)
    committed = read_results(default_results_path("benchmarks/ros_camera_latency"))
    assert layout_differences(produced, committed) == []
    rows = produced["tables"]["latency"]["rows"]
    assert len(rows) == len(INPUTS) * len(NODES) and all(row["samples"] > 0 for row in rows)
    for row in rows:
        for key in ("p50_ms", "p99_ms"):
            cell = row[key]
            assert 0 < cell["low"] <= cell["value"] <= cell["high"], (key, row)
        assert (row["ratio_p50"] is None) == ("echo" in row["path"])
    stages = produced["tables"]["stages"]["rows"]
    assert [row["input"].split(" (")[0] for row in stages] == [
        "Image rgb8 64x64",
        "Image rgb8 224x224",
        "CompressedImage jpeg q90 64x64",
        "CompressedImage jpeg q90 224x224",
    ]
    assert all(row["max_abs_diff"] <= 1e-5 for row in stages)  # the export's own check
