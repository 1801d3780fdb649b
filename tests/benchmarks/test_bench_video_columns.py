"""benchmarks/bench_video_columns.py: its quick run writes a results file laid out as the committed one
(results/benchmarks/video_columns.json), with video columns smaller than raw ones and a stated quality."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from embodia.core.results import default_results_path, layout_differences, read_results

ROOT = Path(__file__).resolve().parents[2]


def test_quick_run_writes_the_committed_layout(tmp_path: Path) -> None:
    out = tmp_path / "video_columns.json"
    run = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_video_columns", "--quick", "--results", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    produced = read_results(out)
    committed = read_results(default_results_path("benchmarks/video_columns"))
    assert layout_differences(produced, committed) == []
    rows = {row["codec"]: row for row in produced["data"]["rows"]}
    assert set(rows) == {"raw (zstd)", "h264", "av1"} and rows["raw (zstd)"]["psnr"] is None
    for codec in ("h264", "av1"):
        assert rows[codec]["size_ratio"] < 0.5 and rows[codec]["psnr"] > 28.0
