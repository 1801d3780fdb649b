"""benchmarks/bench_parallel.py: its quick run writes a results file laid out as the committed one
(results/benchmarks/parallel.json), so a full run renders the same page, and stops its own Ray cluster and no
other Ray on the machine."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from embodia.core.results import default_results_path, layout_differences, read_results
from embodia.runner.ray_reaper import processes_naming, terminate

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_quick_run_writes_the_committed_layout(tmp_path: Path) -> None:
    out = tmp_path / "parallel.json"
    # someone else's Ray worker, as `ray stop` recognises one (its arguments name default_worker.py): the
    # benchmark's teardown once ran `ray stop --force`, which took down a training queue's Ray
    clusters_before = set(Path(tempfile.gettempdir()).glob("embodia-ray-*"))
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(900)", "default_worker.py"])
    try:
        try:
            run = subprocess.run(
                [sys.executable, "-m", "benchmarks.bench_parallel", "--quick", "--results", str(out)],
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=600,
            )
        except subprocess.TimeoutExpired as timeout:  # the stages it reached, and Ray's last words
            # a killed benchmark cannot stop its cluster: stop the nodes that name its session folder
            for folder in set(Path(tempfile.gettempdir()).glob("embodia-ray-*")) - clusters_before:
                terminate(processes_naming(str(folder)), kill_after=10.0)
                shutil.rmtree(folder, ignore_errors=True)
            pytest.fail(
                f"the quick benchmark ran past 600 s; its stderr ends:\n{_text(timeout.stderr)[-3000:]}"
            )
        assert bystander.poll() is None, "the benchmark stopped a process of another Ray instance"
    finally:
        bystander.kill()
        bystander.wait()
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    committed = read_results(default_results_path("benchmarks/parallel"))
    assert layout_differences(read_results(out), committed) == []


def _text(output: bytes | str | None) -> str:
    return output.decode(errors="replace") if isinstance(output, bytes) else (output or "")
