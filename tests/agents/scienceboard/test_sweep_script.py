"""``scripts/scienceboard_sweep.py --quick``: oracle and counterexamples on one task per domain, with tables."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import ROOT


def test_quick_sweep(tmp_path):
    result = subprocess.run(
        [sys.executable, "scripts/scienceboard_sweep.py", "--quick", "--out", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    records = json.loads((tmp_path / "results.json").read_text())
    assert {r["arm"] for r in records} == {"oracle", "wrong"}
    assert all(r["success"] == (r["arm"] == "oracle") for r in records)
    assert len({r["domain"] for r in records}) == 4
    table = (tmp_path / "results.md").read_text()
    assert "### oracle" in table and "### wrong" in table and "| all | 4/4 (100 %)" in table
