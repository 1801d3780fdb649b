"""`embodia bench offline-rl --quick` and `embodia eval`: the comparison pipeline end to end at toy size."""

from __future__ import annotations

import json

import numpy as np
import pytest

from embodia.core.results import RESULTS_DIR, layout_differences, read_results

COMMITTED = ("cube_single", "scene", "puzzle3x3")  # results/offline_rl/<env>.json, one per environment


def test_quick_comparison_runs_and_reports(cli, tmp_path):
    out = tmp_path / "bench"
    results = tmp_path / "results" / "{env}.json"
    result = cli("bench", "offline-rl", "--quick", "--out", str(out), "--results", str(results), check=True)
    assert "| CubeSingle (1, 2, 3, 4, 5) | deas |" in result.stdout

    # the results file: the layout of the committed ones (so a full run renders the same pages), its numbers
    # those of results.json, the play data's coverage counted per task
    written = read_results(tmp_path / "results" / "cube_single.json")
    assert written["name"] == "offline_rl/cube_single" and written["seeds"] == [0]
    assert written["command"].startswith("embodia bench offline-rl --quick")
    for name in COMMITTED:
        assert layout_differences(written, read_results(RESULTS_DIR / "offline_rl" / f"{name}.json")) == []
    methods = written["tables"]["methods"]["rows"]
    assert [r["method"] for r in methods][0] == "DEAS (H=4, FQL extraction, alpha 300) — the paper's settings"
    coverage = written["tables"]["coverage"]["rows"]
    assert [r["task"] for r in coverage] == [1, 2, 3, 4, 5]
    for row in coverage:
        assert row["episodes"] == 2 and row["steps"] == 400
        assert 0 <= row["episodes_with_goal"] <= row["episodes"] and 0 <= row["goal_steps"] <= row["steps"]
        assert (row["goal_steps"] > 0) == (row["episodes_with_goal"] > 0)
    runs = written["data"]["methods"]["deas"]["runs"]
    assert sorted(r["task_id"] for r in runs) == [1, 2, 3, 4, 5] and all(
        r["eval_episodes"] == 1 for r in runs
    )
    summary = json.loads((out / "results.json").read_text())
    rows = {r["method"]: r for r in summary["rows"]}
    assert set(rows) == {"deas", "qc_fql", "fql", "iql", "bc"}
    assert rows["deas"]["settings"]["extraction"] == "fql" and rows["qc_fql"]["settings"]["horizon"] == 5
    for method_row, row in zip(methods, rows.values(), strict=True):
        assert method_row["success"] == {
            "value": row["success"],
            "low": row["interval"][0],
            "high": row["interval"][1],
        }
        assert method_row["per_task"] == list(row["per_task"].values())
        low, high = row["interval"]
        # the five-task protocol at toy size: five tasks, each its own dataset, one seed, one episode each
        assert 0.0 <= low <= row["success"] <= high <= 1.0 and row["episodes"] == 5
        assert set(row["per_task"]) == {"1", "2", "3", "4", "5"}
        assert all(0 <= v <= 1 for v in row["per_task"].values())
        assert row["success"] == pytest.approx(sum(row["per_task"].values()) / 5)  # the average over tasks
        assert np.isfinite(row["steps_per_second"]) and row["steps_per_second"] > 0
        for drop in row["loss_drop"]:
            assert np.isfinite(drop["first"]) and np.isfinite(drop["last"])
            assert drop["last"] < drop["first"], drop  # learning happens even at this size
    assert (out / "results.png").stat().st_size > 1000 and (out / "results.md").read_text().startswith(
        "Data:"
    )

    # evaluate one of the trained runs through the CLI, executing whole chunks and re-planning every step
    assert {p.name for p in (out / "data").iterdir()} == {
        f"CubeSingle-task{t}-play-dense.zarr" for t in range(1, 6)
    }
    run = out / "runs" / "CubeSingle-task1-qc_fql-seed0"
    cube = "embodia/CubeSingle-SingleTask-v0"
    for extra, episodes in (((), 1), (("--execute-steps", "1"), 1)):
        command = ("eval", str(run), "--env", cube, "--episodes", str(episodes), *extra, "--json")
        report = json.loads(cli(*command, check=True).stdout)
        assert report["episodes"] == episodes and 0.0 <= report["interval"][0] <= report["interval"][1] <= 1.0

    # a single-action policy refuses --execute-steps with one clear error
    refused = cli(
        "eval", str(out / "runs" / "CubeSingle-task1-bc-seed0"), "--env", cube, "--execute-steps", "1"
    )
    assert refused.returncode != 0 and "action chunks" in refused.stderr and "Traceback" not in refused.stderr

    # bfloat16 matrix products: float32 runs in the same folder are trained again, not reused as finished
    bc_config = out / "runs" / "CubeSingle-task1-bc-seed0" / "train_config.json"
    first = bc_config.stat().st_mtime_ns
    cli(
        "bench",
        "offline-rl",
        "--quick",
        "--out",
        str(out),
        "--results",
        str(tmp_path / "bf16.json"),
        "--methods",
        "bc",
        "--matmul-precision",
        "bfloat16",
        check=True,
    )
    trained = json.loads(bc_config.read_text())
    assert (
        trained["method_config"]["matmul_precision"] == "bfloat16" and bc_config.stat().st_mtime_ns != first
    )
    assert "bfloat16 matrix products" in (out / "results.md").read_text()
    assert [r["method"] for r in read_results(tmp_path / "bf16.json")["tables"]["methods"]["rows"]] == ["BC"]


def test_unknown_environment_is_one_clear_error(cli, tmp_path):
    result = cli("bench", "offline-rl", "--env", "CubeSingle", "Kitchen", "--out", str(tmp_path / "b"))
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert (
        "--env Kitchen: not in the comparison; choose from CubeSingle, CubeDouble, Scene, Puzzle3x3"
        in result.stderr
    )
    assert not (tmp_path / "b").exists()  # nothing started


def test_one_results_path_for_several_environments_is_refused(cli, tmp_path):
    command = ("bench", "offline-rl", "--env", "CubeSingle", "Scene", "--out", str(tmp_path / "b"))
    result = cli(*command, "--results", str(tmp_path / "r.json"))
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "2 environments need {env} in the path" in result.stderr
    assert not (tmp_path / "b").exists()  # nothing started


def test_a_part_that_cannot_join_its_results_file_is_refused_before_it_runs(cli, tmp_path):
    from embodia.policies.comparison import quick_config
    from embodia.policies.comparison_results import method_row, write_comparison_results

    run = {"task_id": 1, "seed": 0, "success": 1.0, "eval_episodes": 1, "steps_per_second": 9.0}
    tasks = (1, 2, 3, 4, 5)
    coverage = [
        {"task": t, "episodes_with_goal": 1, "episodes": 2, "goal_steps": 3, "steps": 400} for t in tasks
    ]
    summary = {
        "rows": [method_row("CubeSingle", tasks, "bc", [run], (0,))],
        "coverage": {"CubeSingle": coverage},
    }
    results = tmp_path / "{env}.json"
    write_comparison_results(summary, quick_config(str(tmp_path / "a")), results, command="the quick part")
    result = cli(
        "bench", "offline-rl", "--quick", "--methods", "bc", "--steps", "7", "--merge",
        "--out", str(tmp_path / "b"), "--results", str(results),
    )  # fmt: skip
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "another budget (steps 120 there, 7 here)" in result.stderr
    assert not (tmp_path / "b").exists()  # nothing started
