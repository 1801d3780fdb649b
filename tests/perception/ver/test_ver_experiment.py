"""``scripts/ver_experiment.py --quick``: teachers, distillation and every downstream arm run end to end."""

from __future__ import annotations

import json

from embodia.core.results import layout_differences, read_results
from tests.conftest import ROOT
from tests.perception.conftest import run_script


def test_quick_run_trains_every_arm(tmp_path):
    results = tmp_path / "ver.json"
    teachers = str(tmp_path / "none")
    argv = ["--quick", "--out", str(tmp_path), "--teachers", teachers, "--results", str(results)]
    assert run_script("ver_experiment", *argv) == 0
    # the committed results file (docs/guides/perception.md) has the layout this script writes
    committed = read_results(ROOT / "results" / "perception" / "ver.json")
    assert layout_differences(read_results(results), committed) == []
    summary = json.loads((tmp_path / "results.json").read_text())
    arms = [row["arm"] for row in summary["rows"]]
    assert arms == [
        "cnn",
        "teacher-geometry",
        "teacher-contrastive",
        "teacher-state",
        "ver-anneal",
        "ver-fixed-k",
        "ver-anneal-noisy",
        "ver-library-state-router",
    ]
    rows = {row["arm"]: row for row in summary["rows"]}
    # only the router and the head train on top of VER's frozen library; the CNN trains everything
    assert rows["ver-anneal"]["trainable_parameters"] < rows["ver-anneal"]["encoder_parameters"]
    assert rows["cnn"]["trainable_parameters"] > rows["cnn"]["encoder_parameters"]
    assert all(len(trace) > 0 for trace in rows["ver-anneal"]["usage_entropy"])
    assert all(0.0 <= row["heldout_mse"] < 4.0 and row["ms_per_image"] > 0 for row in summary["rows"])
    assert summary["distillation"]["last"]["loss"] < summary["distillation"]["first"]["loss"]
    policy = tmp_path / "comparison" / "runs" / "ver-anneal-seed0" / "policy" / "config.json"
    assert json.loads(policy.read_text())["encoder"]["encoder"] == "ver"
