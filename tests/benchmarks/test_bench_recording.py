"""benchmarks/bench_recording.py: its quick run writes a results file laid out as the committed one
(results/benchmarks/recording.json), so a full run renders the same page."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from embodia.core.results import default_results_path, layout_differences, read_results

ROOT = Path(__file__).resolve().parents[2]


def test_quick_run_writes_the_committed_layout(tmp_path: Path) -> None:
    out = tmp_path / "recording.json"
    run = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_recording", "--quick", "--results", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    committed = read_results(default_results_path("benchmarks/recording"))
    assert layout_differences(read_results(out), committed) == []
