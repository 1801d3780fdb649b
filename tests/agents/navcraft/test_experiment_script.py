"""scripts/navcraft_experiment.py --quick: every table's numbers in the JSON, the picture written."""

from __future__ import annotations

import json

import numpy as np
from PIL import Image

from tests.agents.conftest import run_script


def test_quick_experiment_writes_the_tables_and_the_picture(tmp_path):
    out, image = tmp_path / "navcraft.json", tmp_path / "pictures" / "episode.png"
    code = run_script(
        "navcraft_experiment", "--quick", "--quiet", "--out", str(out), "--image", str(image), "--lm", "none"
    )
    assert code == 0
    data = json.loads(out.read_text())
    assert {"config", "generation", "comparison", "disturbance", "lm", "picture", "seconds"} <= set(data)
    generation = data["generation"]
    assert generation["episodes"] == 6 == sum(generation["by_taxonomy"].values())
    assert {"room_hops", "mission_length_m", "robots", "items", "rejected", "episodes_per_second"} <= set(
        generation
    )
    executed = {row["taxonomy"]: row for row in data["comparison"]["executed"]}
    assert executed["all"]["episodes"] == 6
    assert sum(row["episodes"] for name, row in executed.items() if name != "all") == 6
    for key in (
        "solo_makespan",
        "collab_makespan",
        "makespan_reduction_pct",
        "success_solo",
        "success_collab",
        "step_success_solo",
        "step_success_collab",
        "handoff_errors",
        "interference",
        "spl_solo",
        "spl_collab",
    ):
        assert key in executed["all"], key
    reduction = executed["all"]["makespan_reduction_pct"]
    solo, collab = executed["all"]["solo_makespan"], executed["all"]["collab_makespan"]
    assert abs(reduction - 100 * (solo - collab) / solo) < 1e-9
    planned = {row["taxonomy"]: row for row in data["comparison"]["planned"]}
    assert planned.keys() == executed.keys()
    assert planned["all"]["planned_collab_makespan"] <= planned["all"]["planned_solo_makespan"]
    disturbance = data["disturbance"]
    assert [row["run"] for row in disturbance["table"]] == ["re-planning", "no re-planning"]
    assert 0 <= disturbance["saved"] <= disturbance["failed_without_replan"] <= 6
    assert data["lm"]["episodes"] == 0 and data["lm"]["table"] == []  # --lm none
    assert len(data["rows"]["planner"]) == len(data["rows"]["disturbed_no_replan"]) == 6
    picture = data["picture"]
    assert picture["taxonomy"] in ("relay", "rendezvous_swap")
    pixels = np.asarray(Image.open(image))
    assert pixels.ndim == 3 and pixels.shape[2] == 3 and min(pixels.shape[:2]) > 100
