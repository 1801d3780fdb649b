"""The offline-RL comparison's results files: names, paths, and the play data's coverage counted per task."""

from __future__ import annotations

import numpy as np
import pytest

from embodia.core.errors import EmbodiaError
from embodia.data.store import TrajectoryStore
from embodia.policies.comparison_results import dataset_coverage, environment_slug, results_paths


def test_names_and_paths():
    assert [environment_slug(f) for f in ("CubeSingle", "Scene", "Puzzle3x3")] == [
        "cube_single",
        "scene",
        "puzzle3x3",
    ]
    paths = results_paths("out/{env}.json", ["CubeSingle", "Scene"])
    assert {k: str(v) for k, v in paths.items()} == {
        "CubeSingle": "out/cube_single.json",
        "Scene": "out/scene.json",
    }
    assert str(results_paths("one.json", ["Scene"])["Scene"]) == "one.json"  # one environment: any path
    with pytest.raises(EmbodiaError, match=r"2 environments need \{env\} in the path"):
        results_paths("one.json", ["CubeSingle", "Scene"])


def test_coverage_counts_episodes_that_reach_the_goal_and_goal_steps(tmp_path):
    flags = [[0, 0, 1, 1, 0], [0, 0, 0], [1, 0, 0, 0]]  # per step: the task's success flag
    with TrajectoryStore(tmp_path / "play.zarr", mode="w") as store:
        for success in flags:
            n = len(success)
            store.add_episode(
                {
                    "state": np.zeros((n, 2), np.float32),
                    "action": np.zeros((n, 1), np.float32),
                    "reward": np.zeros(n, np.float32),
                    "terminated": np.zeros(n, bool),
                    "truncated": np.zeros(n, bool),
                    "success": np.array(success, bool),
                },
                env_id="embodia/CubeSingle-Play-v0",
            )
    assert dataset_coverage(tmp_path / "play.zarr", 3) == {
        "task": 3,
        "episodes_with_goal": 2,
        "episodes": 3,
        "goal_steps": 3,
        "steps": 12,
    }


def _runs(tasks, seed, success, commit="c-new"):
    return [
        {
            "task_id": t,
            "seed": seed,
            "success": success,
            "eval_episodes": 10,
            "train_seconds": 1.0,
            "steps_per_second": 20.0,
            "commit": commit,
            "loss_drop": {"loss": "critic_loss", "first": 2.0, "last": 1.0},
        }
        for t in tasks
    ]


def _summary(rows):
    coverage = [
        {"task": t, "episodes_with_goal": 1, "episodes": 2, "goal_steps": 3, "steps": 10} for t in range(1, 6)
    ]
    return {"rows": rows, "coverage": {"CubeSingle": coverage}}


def test_a_comparison_run_in_parts_merges_into_one_results_file(tmp_path):
    from embodia.core.results import read_results
    from embodia.policies.comparison import Case, ComparisonConfig
    from embodia.policies.comparison_results import method_row, write_comparison_results

    tasks = (1, 2, 3, 4, 5)
    path = tmp_path / "{env}.json"
    first = ComparisonConfig(cases=[Case("CubeSingle")], methods=("deas",), seeds=(0,))
    rows = [method_row("CubeSingle", tasks, "deas", _runs(tasks, 0, 0.5, "c-old"), (0,))]
    write_comparison_results(_summary(rows), first, path, command="part one")
    # part two: DEAS seed 1, FQL seed 0, and DEAS task 1 seed 0 again (it replaces the first part's run)
    second = ComparisonConfig(cases=[Case("CubeSingle")], methods=("deas", "fql"), seeds=(0, 1))
    deas = _runs(tasks, 1, 0.3) + _runs([1], 0, 1.0)
    rows = [
        method_row("CubeSingle", tasks, "deas", deas, (0, 1)),
        method_row("CubeSingle", tasks, "fql", _runs(tasks, 0, 0.2), (0, 1)),
    ]
    write_comparison_results(_summary(rows), second, path, merge=True, command="part two")

    written = read_results(tmp_path / "cube_single.json")
    assert written["command"] == "part one ; part two" and written["seeds"] == [0, 1]
    entries = written["data"]["methods"]
    assert sorted(
        (r["task_id"], r["seed"], r["success"], r["commit"]) for r in entries["deas"]["runs"]
    ) == sorted(
        [(1, 0, 1.0, "c-new")]
        + [(t, 0, 0.5, "c-old") for t in (2, 3, 4, 5)]
        + [(t, 1, 0.3, "c-new") for t in tasks]
    )
    table = {r["method"]: r for r in written["tables"]["methods"]["rows"]}
    deas = table["DEAS (H=4, FQL extraction, alpha 300) — the paper's settings"]
    # pooled over 10 runs of 10 episodes: (10 + 4 * 5 + 5 * 3) / 100
    assert deas["success"]["value"] == pytest.approx(0.45)
    assert deas["per_task"] == pytest.approx([0.65, 0.4, 0.4, 0.4, 0.4])
    assert deas["per_seed"] == pytest.approx([0.6, 0.3])
    assert table["FQL"]["per_seed"] == [pytest.approx(0.2), None]  # FQL has no seed 1 yet


def test_a_part_at_another_budget_or_with_changed_settings_is_refused(tmp_path):
    from embodia.policies.comparison import Case, ComparisonConfig
    from embodia.policies.comparison_results import (
        check_mergeable,
        comparison_budget,
        write_comparison_results,
    )

    tasks = (1, 2, 3, 4, 5)
    config = ComparisonConfig(cases=[Case("CubeSingle")], methods=("deas",), seeds=(0,))
    from embodia.policies.comparison_results import method_row

    row = method_row("CubeSingle", tasks, "deas", _runs(tasks, 0, 0.5), (0,))
    write_comparison_results(_summary([row]), config, tmp_path / "r.json", command="one")
    check_mergeable(tmp_path / "r.json", comparison_budget(config), ["deas"], "CubeSingle")  # same: fine
    longer = ComparisonConfig(cases=[Case("CubeSingle")], steps=20_000)
    with pytest.raises(EmbodiaError, match="another budget \\(steps 10000 there, 20000 here\\)"):
        check_mergeable(tmp_path / "r.json", comparison_budget(longer), ["deas"], "CubeSingle")
    row = method_row(
        "CubeSingle",
        tasks,
        "deas",
        _runs(tasks, 0, 0.5),
        (0,),
        {"label": "x", "settings": {"alpha": 1}, "source": ""},
    )
    write_comparison_results(_summary([row]), config, tmp_path / "r.json", command="one")
    with pytest.raises(EmbodiaError, match="deas's settings on CubeSingle changed"):
        check_mergeable(tmp_path / "r.json", comparison_budget(config), ["deas"], "CubeSingle")
