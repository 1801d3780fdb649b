"""benchmarks/bench_parallel.py: its quick run writes a results file laid out as the committed one
(results/benchmarks/parallel.json), so a full run renders the same page, and stops its own Ray cluster and no
other Ray on the machine."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from embodia.core.results import default_results_path, layout_differences, read_results

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_quick_run_writes_the_committed_layout(tmp_path: Path) -> None:
    out = tmp_path / "parallel.json"
    # someone else's Ray worker, as `ray stop` recognises one (its arguments name default_worker.py): the
    # benchmark's teardown once ran `ray stop --force`, which took down a training queue's Ray
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(900)", "default_worker.py"])
    try:
        run = subprocess.run(
            [sys.executable, "-m", "benchmarks.bench_parallel", "--quick", "--results", str(out)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert bystander.poll() is None, "the benchmark stopped a process of another Ray instance"
    finally:
        bystander.kill()
        bystander.wait()
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    committed = read_results(default_results_path("benchmarks/parallel"))
    assert layout_differences(read_results(out), committed) == []
