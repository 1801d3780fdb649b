"""`scripts/kitchen_policies.py --quick`: demonstrations -> every arm (BC with chunks, DEAS, QC-FQL) -> evaluation,
end to end, in the layout of the committed results file."""

from __future__ import annotations

import subprocess
import sys

from embodia.core.results import RESULTS_DIR, layout_differences, read_results
from tests.conftest import ROOT

ARMS = [
    "bc (chunks)",
    "deas",
    "deas (awr)",
    "deas (fql)",
    "deas (fql, normalized q)",
    "deas (best-of-32)",
    "qc-fql",
]


def test_quick_kitchen_policies(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "scripts/kitchen_policies.py",
            "--quick",
            "--out",
            str(tmp_path / "runs"),
            "--results",
            str(tmp_path / "policies.json"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    produced = read_results(tmp_path / "policies.json")
    assert layout_differences(produced, read_results(RESULTS_DIR / "kitchen" / "policies.json")) == []
    assert [r["method"] for r in produced["data"]["rows"]] == ARMS
    for row in produced["tables"]["policies"]["rows"]:
        assert row["task"] == "OpenDrawer"
        success = row["success"]
        assert 0.0 <= success["low"] <= success["value"] <= success["high"] <= 1.0
    (demos,) = produced["tables"]["demonstrations"]["rows"]
    assert demos["episodes"] == 2 and demos["steps"] > 0 and 0 <= demos["successes"] <= 2


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
