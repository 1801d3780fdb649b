"""scripts/measure_ogbench_experts.py: its quick run measures the experts and writes a results file laid out as
the committed one (results/envs/ogbench_experts.json)."""

from __future__ import annotations

from pathlib import Path

from embodia.core.results import default_results_path, layout_differences, read_results
from tests.conftest import load_script


def test_quick_run_writes_the_committed_layout(tmp_path: Path) -> None:
    out = tmp_path / "ogbench_experts.json"
    assert (
        load_script("measure_ogbench_experts").main(
            ["--quick", "--envs", "PointMaze-Medium", "--results", str(out)]
        )
        == 0
    )
    written = read_results(out)
    assert layout_differences(written, read_results(default_results_path("envs/ogbench_experts"))) == []
    (row,) = written["tables"]["experts"]["rows"]
    assert row["environment"] == "PointMaze-Medium" and row["episodes"] == 5 and row["success"] == 1.0
    assert len(row["lengths"]) == 5 and written["seeds"] == [0]
