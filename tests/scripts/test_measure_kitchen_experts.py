"""`scripts/measure_kitchen_experts.py --quick`: the experts' success table, in the committed layout."""

from __future__ import annotations

import json
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


def _script(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "scripts/measure_kitchen_experts.py", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_parts_measured_in_separate_processes_merge_into_one_table(tmp_path):
    first, second, merged = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "experts.json"
    assert _script("--quick", "--tasks", "TurnOnStove", "--results", str(second)).returncode == 0
    assert _script("--quick", "--tasks", "CloseDrawer", "--results", str(first)).returncode == 0
    result = _script("--merge-from", str(second), str(first), "--results", str(merged))
    assert result.returncode == 0, result.stderr[-2000:]
    produced = read_results(merged)
    # the registry's order, whatever the parts' order; the measured rows themselves, unchanged
    assert [r["task"] for r in produced["tables"]["experts"]["rows"]] == ["CloseDrawer", "TurnOnStove"]
    parts = [read_results(path) for path in (first, second)]
    assert produced["data"]["rows"] == [{**p["data"]["rows"][0], "commit": p["commit"]} for p in parts]
    assert produced["command"].count("--quick") == 2 and len(produced["data"]["parts"]) == 2
    assert layout_differences(produced, read_results(RESULTS_DIR / "kitchen" / "experts.json")) == []
    twice = _script("--merge-from", str(first), str(first), "--results", str(tmp_path / "x.json"))
    assert twice.returncode == 2 and "measured some tasks twice (CloseDrawer)" in twice.stderr
    assert "Traceback" not in twice.stderr
    assert not (tmp_path / "x.json").exists()
    # a task measured again after a fix: with --replace the later file's row wins, the others stay
    again = tmp_path / "again.json"
    remeasured = json.loads(first.read_text())
    remeasured["data"]["rows"][0]["mean_length"] = 123.0
    again.write_text(json.dumps(remeasured))
    replaced = _script(
        "--merge-from", str(merged), str(again), "--replace", "--results", str(tmp_path / "r.json")
    )
    assert replaced.returncode == 0, replaced.stderr[-2000:]
    rows = read_results(tmp_path / "r.json")["data"]["rows"]
    assert [(r["task"], r["mean_length"]) for r in rows] == [
        ("CloseDrawer", 123.0),
        ("TurnOnStove", read_results(second)["data"]["rows"][0]["mean_length"]),
    ]


def test_a_task_measured_again_in_one_layout_replaces_that_row_of_the_per_layout_table(tmp_path):
    table, again, merged = tmp_path / "layouts.json", tmp_path / "again.json", tmp_path / "merged.json"
    measured = _script("--quick", "--tasks", "CloseDrawer", "--layouts", "0", "1", "--results", str(table))
    assert measured.returncode == 0, measured.stderr[-2000:]
    remeasured = json.loads(table.read_text())
    remeasured["data"]["rows"] = [{**remeasured["data"]["rows"][1], "success_rate": 0.5, "failed_seeds": [1]}]
    again.write_text(json.dumps(remeasured))
    result = _script("--merge-from", str(table), str(again), "--replace", "--results", str(merged))
    assert result.returncode == 0, result.stderr[-2000:]
    produced = read_results(merged)
    first = read_results(table)["data"]["rows"][0]
    assert [(r["layout"], r["success_rate"]) for r in produced["data"]["rows"]] == [
        (0, first["success_rate"]),
        (1, 0.5),
    ]
    (row,) = produced["tables"]["experts"]["rows"]
    assert row["layout1"] == 0.5 and row["success"] == (first["success_rate"] + 0.5) / 2
    assert row["failed"].endswith("1: [1]")
