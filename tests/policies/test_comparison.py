"""`embodia bench offline-rl --quick` and `embodia eval`: the comparison pipeline end to end at toy size."""

from __future__ import annotations

import json

import numpy as np


def test_quick_comparison_runs_and_reports(cli, tmp_path):
    out = tmp_path / "bench"
    result = cli("bench", "offline-rl", "--quick", "--out", str(out), check=True)
    assert "| CubeSingle | deas |" in result.stdout
    summary = json.loads((out / "results.json").read_text())
    rows = {r["method"]: r for r in summary["rows"]}
    assert set(rows) == {"deas", "iql", "bc"}
    for row in rows.values():
        low, high = row["interval"]
        assert 0.0 <= low <= row["success"] <= high <= 1.0 and row["episodes"] == 2
        assert np.isfinite(row["steps_per_second"]) and row["steps_per_second"] > 0
        for drop in row["loss_drop"]:
            assert np.isfinite(drop["first"]) and np.isfinite(drop["last"])
            assert drop["last"] < drop["first"], drop  # learning happens even at this size
    assert (out / "results.png").stat().st_size > 1000 and (out / "results.md").read_text().startswith(
        "Data:"
    )

    # evaluate one of the trained runs through the CLI, executing whole chunks and re-planning every step
    run = out / "runs" / "CubeSingle-deas-seed0"
    cube = "embodia/CubeSingle-SingleTask-v0"
    for extra, episodes in (((), 2), (("--execute-steps", "1"), 1)):
        command = ("eval", str(run), "--env", cube, "--episodes", str(episodes), *extra, "--json")
        report = json.loads(cli(*command, check=True).stdout)
        assert report["episodes"] == episodes and 0.0 <= report["interval"][0] <= report["interval"][1] <= 1.0

    # a single-action policy refuses --execute-steps with one clear error
    refused = cli("eval", str(out / "runs" / "CubeSingle-bc-seed0"), "--env", cube, "--execute-steps", "1")
    assert refused.returncode != 0 and "action chunks" in refused.stderr and "Traceback" not in refused.stderr


def test_unknown_environment_is_one_clear_error(cli, tmp_path):
    result = cli("bench", "offline-rl", "--env", "CubeSingle", "Kitchen", "--out", str(tmp_path / "b"))
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "--env Kitchen: not in the comparison; choose from CubeSingle, Puzzle3x3, Scene" in result.stderr
    assert not (tmp_path / "b").exists()  # nothing started
