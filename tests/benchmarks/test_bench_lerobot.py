"""benchmarks/bench_lerobot.py: its quick run writes a results file laid out as the committed one
(results/benchmarks/lerobot.json), so a full run renders the same page."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from embodia.core.results import default_results_path, layout_differences, read_results

ROOT = Path(__file__).resolve().parents[2]


def test_quick_run_writes_the_committed_layout(tmp_path: Path) -> None:
    out = tmp_path / "lerobot.json"
    run = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_lerobot", "--quick", "--results", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    written = read_results(out)
    committed = read_results(default_results_path("benchmarks/lerobot"))
    assert layout_differences(written, committed) == []
    rows = written["tables"]["size"]["rows"]
    assert len(rows) == 3 and all(row["cameras"] > 0 and row["other"] > 0 for row in rows)
