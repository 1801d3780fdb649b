"""`scripts/measure_nav_experts.py --quick`: the navigation expert's Habitat metrics, in the committed layout."""

from __future__ import annotations

import subprocess
import sys

from embodia.core.results import RESULTS_DIR, layout_differences, read_results
from tests.conftest import ROOT


def test_quick_run_writes_the_committed_layout(tmp_path):
    out = tmp_path / "experts.json"
    result = subprocess.run(
        [sys.executable, "scripts/measure_nav_experts.py", "--quick", "--results", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    produced = read_results(out)
    assert layout_differences(produced, read_results(RESULTS_DIR / "nav" / "experts.json")) == []
    rows = produced["tables"]["experts"]["rows"]
    assert len(rows) == 5
    assert all(r["success"] == 1.0 and 0.0 < r["spl"] <= 1.0 for r in rows)
