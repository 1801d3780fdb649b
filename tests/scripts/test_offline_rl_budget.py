"""scripts/offline_rl_budget.py: its quick run trains with evaluations along the way and writes the curve, the
dataset's coverage and the settings into a results file; a bad method label is one line and exit status 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from embodia.core.results import read_results
from tests.conftest import load_script


def test_quick_run_writes_the_success_curve(tmp_path: Path) -> None:
    results = tmp_path / "budget.json"
    script = load_script("offline_rl_budget")
    assert (
        script.main(["--quick", "--method", "qc_fql", "--out", str(tmp_path), "--results", str(results)]) == 0
    )
    written = read_results(results)
    rows = written["tables"]["curve"]["rows"]
    # evaluations at step 20 and at the end (40), each with an interval around its rate
    assert [row["step"] for row in rows] == [20, 40]
    for row in rows:
        low, high = row["interval"]
        assert 0.0 <= low <= row["success"] <= high <= 1.0 and row["episodes"] == 1
    data = written["data"]
    assert data["env"] == "CubeSingle" and data["method"] == "qc_fql" and data["steps"] == 40
    assert data["coverage"]["episodes"] == 2 and data["coverage"]["task"] == 1
    assert data["settings"]["horizon"] == 5 and written["seeds"] == [0]
    # a data set of another size than the comparison's is a file of its own
    assert written["name"] == "offline_rl/cube_single_budget_2_episodes"
    # a bad method label, and a dataset larger than --episodes asks for, are each one line and exit status 2
    with pytest.raises(SystemExit) as exit_info:
        script.main(["--quick", "--method", "no_such_method", "--out", str(tmp_path)])
    assert exit_info.value.code == 2
    assert script.main(["--quick", "--episodes", "1", "--out", str(tmp_path)]) == 2
