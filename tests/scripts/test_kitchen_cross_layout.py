"""`scripts/kitchen_cross_layout.py --quick`: demonstrations in one layout -> BC -> evaluation in that layout and
in another, in the layout of the committed results file."""

from __future__ import annotations

import subprocess
import sys

from embodia.core.results import RESULTS_DIR, layout_differences, read_results
from embodia.data.store import TrajectoryStore
from tests.conftest import ROOT


def test_quick_cross_layout_trains_in_one_layout_and_evaluates_in_two(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "scripts/kitchen_cross_layout.py",
            "--quick",
            "--train-layout",
            "2",
            "--out",
            str(tmp_path / "runs"),
            "--results",
            str(tmp_path / "cross.json"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    produced = read_results(tmp_path / "cross.json")
    assert layout_differences(produced, read_results(RESULTS_DIR / "kitchen" / "cross_layout.json")) == []
    rows = produced["data"]["rows"]
    assert [(r["layout"], r["seen"]) for r in rows] == [(2, True), (0, False)]
    assert all(r["episodes"] == 1 and r["demonstrations"] == 2 for r in rows)
    # the demonstrations were recorded in layout 2: the store's environment arguments say so
    store = TrajectoryStore(tmp_path / "runs" / "OpenSingleDoor-layout2-demos.zarr")
    assert [store.episode_meta(i).env_kwargs["layout"] for i in range(2)] == [2, 2]


def test_a_layout_that_does_not_exist_is_one_line(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "scripts/kitchen_cross_layout.py",
            "--train-layout",
            "99",
            "--out",
            str(tmp_path / "x"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "layout 99 does not exist; layout ids are 0.." in result.stderr
    assert not (tmp_path / "x").exists()
