"""benchmarks/bench_vector.py: its quick run writes a results file laid out as the committed one
(results/benchmarks/vector.json), so a full run renders the same page."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from embodia.core.results import default_results_path, layout_differences, read_results

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_quick_run_writes_the_committed_layout(tmp_path: Path) -> None:
    out = tmp_path / "vector.json"
    run = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_vector", "--quick", "--results", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    committed = read_results(default_results_path("benchmarks/vector"))
    assert layout_differences(read_results(out), committed) == []
