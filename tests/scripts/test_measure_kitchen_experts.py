"""`scripts/measure_kitchen_experts.py --quick`: the experts' success table, in the committed layout."""

from __future__ import annotations

import subprocess
import sys

from embodia.core.results import RESULTS_DIR, layout_differences, read_results
from tests.conftest import ROOT


def test_quick_run_writes_the_committed_layout(tmp_path):
    out = tmp_path / "experts.json"
    result = subprocess.run(
        [sys.executable, "scripts/measure_kitchen_experts.py", "--quick", "--results", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    produced = read_results(out)
    assert produced["name"] == "kitchen/experts"
    rows = produced["tables"]["experts"]["rows"]
    assert [r["task"] for r in rows] == ["OpenDrawer", "CloseDrawer"]
    assert all(r["success"] == 1.0 and r["failed_seeds"] == "none" for r in rows)
    for name in ("experts", "experts_ur5e", "experts_noise0.2"):  # other arms and noisy experts: same layout
        assert layout_differences(produced, read_results(RESULTS_DIR / "kitchen" / f"{name}.json")) == []
