"""`scripts/kitchen_policies.py --quick`: demonstrations -> BC-with-chunks and DEAS -> evaluation, end to end."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import ROOT


def test_quick_kitchen_policies(tmp_path):
    result = subprocess.run(
        [sys.executable, "scripts/kitchen_policies.py", "--quick", "--out", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    rows = json.loads((tmp_path / "results.json").read_text())
    assert [r["method"] for r in rows] == ["bc (chunks)", "deas", "deas (fql)", "qc-fql"]
    for row in rows:
        assert row["demos"] == 2 and row["demo_steps"] > 0 and row["episodes"] == 1
        assert 0.0 <= row["interval"][0] <= row["success"] <= row["interval"][1] <= 1.0
    assert (tmp_path / "results.md").read_text().count("| OpenDrawer |") == 4


def test_an_unknown_arm_is_refused_with_one_line(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "scripts/kitchen_policies.py",
            "--methods",
            "deas (dpo)",
            "--out",
            str(tmp_path / "k"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert (
        "--methods ['deas (dpo)']: not an arm; choose from" in result.stderr
        and "deas (best-of-32)" in result.stderr
    )
    assert not (tmp_path / "k").exists()  # nothing started
