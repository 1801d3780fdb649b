"""scripts/under_load.py: runs a pytest selection beside busy processes and reports every run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from embodia.core.results import read_results

ROOT = Path(__file__).resolve().parents[2]


def test_quick_run_reports_a_green_run_with_its_counts(tmp_path):
    out = subprocess.run(
        [sys.executable, "scripts/under_load.py", "--quick", "--results", str(tmp_path / "load.json")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    payload = read_results(tmp_path / "load.json")
    (row,) = payload["tables"]["runs"]["rows"]
    assert row["passed"] > 0 and row["failed"] == 0
    assert payload["data"]["green"] and payload["data"]["hogs"] == 1


def test_a_failing_selection_fails_the_command(tmp_path):
    failing = tmp_path / "test_fails.py"
    failing.write_text("def test_fails():\n    assert False\n")
    out = subprocess.run(
        [
            sys.executable,
            "scripts/under_load.py",
            "--quick",
            "--results",
            str(tmp_path / "load.json"),
            "--",
            str(failing),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 1
    (row,) = read_results(tmp_path / "load.json")["tables"]["runs"]["rows"]
    assert row["failed"] == 1
