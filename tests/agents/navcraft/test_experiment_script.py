"""scripts/navcraft_experiment.py --quick: every table in the results file (the committed file's layout),
every episode's row in the JSON, the picture written."""

from __future__ import annotations

import json

import numpy as np
from PIL import Image

from embodia.core.results import RESULTS_DIR, layout_differences, read_results
from tests.agents.conftest import run_script


def test_quick_experiment_writes_the_tables_and_the_picture(tmp_path):
    out, image = tmp_path / "navcraft.json", tmp_path / "pictures" / "episode.png"
    results = tmp_path / "results" / "navcraft.json"
    code = run_script(
        "navcraft_experiment",
        "--quick",
        "--quiet",
        "--out",
        str(out),
        "--results",
        str(results),
        "--image",
        str(image),
        "--lm",
        "none",
        "--part",
        "benchmark",
    )
    assert code == 0
    produced = read_results(results)
    assert layout_differences(produced, read_results(RESULTS_DIR / "navcraft" / "experiment.json")) == []
    assert produced["seeds"] == [0] and produced["command"].startswith(
        "python scripts/navcraft_experiment.py"
    )
    tables = {name: table["rows"] for name, table in produced["tables"].items()}

    assert sum(row["episodes"] for row in tables["taxonomy"]) == 6 == tables["generation"][0]["episodes"]
    assert abs(sum(row["share"] for row in tables["taxonomy"]) - 1) < 1e-9
    assert [row["statistic"] for row in tables["statistics"]] == ["room hops per leg", "mission length, m"]
    for quantity in ("robots", "items"):
        assert sum(row["episodes"] for row in tables["composition"] if row["quantity"] == quantity) == 6

    executed = {row["taxonomy"]: row for row in tables["executed"]}
    assert executed["all"]["episodes"] == 6
    assert sum(row["episodes"] for name, row in executed.items() if name != "all") == 6
    solo, collab = executed["all"]["solo_makespan"], executed["all"]["collab_makespan"]
    assert abs(executed["all"]["reduction"] - (solo - collab) / solo) < 1e-9
    planned = {row["taxonomy"]: row for row in tables["planned"]}
    assert planned.keys() == executed.keys()
    assert planned["all"]["planned_collab"] <= planned["all"]["planned_solo"]

    assert [row["run"] for row in tables["disturbance"]] == ["re-planning", "no re-planning"]
    (effect,) = tables["replanning"]
    assert 0 <= effect["saved"] <= effect["failed_without"] <= 6
    assert tables["lm"] == []  # --lm none
    assert [row["stage"] for row in tables["timing"]][-1] == "total"

    data = json.loads(out.read_text())
    assert len(data["rows"]["planner"]) == len(data["rows"]["disturbed_no_replan"]) == 6
    assert data["rows"]["llm"] == []
    (picture,) = tables["picture"]
    assert picture["taxonomy"] in ("relay", "rendezvous_swap")
    assert produced["data"]["picture"]["path"] == str(image)
    pixels = np.asarray(Image.open(image))
    assert pixels.ndim == 3 and pixels.shape[2] == 3 and min(pixels.shape[:2]) > 100


def test_quick_generator_comparison_counts_single_robot_episodes_and_validates_them(tmp_path):
    # the agent's rows stay empty here (--agent-episodes 0: no language model in the test's time budget); the
    # agent loop is tested with a scripted model in test_agentic.py, and --quick runs the real SmolLM2
    results = tmp_path / "results" / "generators.json"
    code = run_script(
        "navcraft_experiment",
        *("--quick", "--quiet", "--part", "generators", "--scenes", "1", "--episodes", "4"),
        *("--agent-episodes", "0", "--generator-results", str(results)),
    )
    assert code == 0
    produced = read_results(results)
    assert layout_differences(produced, read_results(RESULTS_DIR / "navcraft" / "generators.json")) == []
    assert produced["seeds"] == [0] and produced["command"].startswith(
        "python scripts/navcraft_experiment.py"
    )
    rules, slots, agent = produced["tables"]["generators"]["rows"]
    assert rules["generator"] == "rules, all episodes" and rules["episodes"] == 4
    assert rules["valid_final"]["value"] == 1.0  # every final schedule passes validation
    assert rules["mission_by_agent"] is None and 0 <= rules["valid_as_proposed"]["value"] <= 1
    assert slots["episodes"] == agent["episodes"] == 0
    single = {
        r["reason"]: r["episodes"]
        for r in produced["tables"]["single_robot"]["rows"]
        if r["generator"] == rules["generator"]
    }
    assert sum(single.values()) == round(rules["single_robot"]["value"] * 4)
    patterns = {r["pattern"]: r["g0"] for r in produced["tables"]["patterns"]["rows"]}
    assert sum(n for name, n in patterns.items() if name.startswith("type: ")) == 4
    assert patterns["single robot"] == patterns["type: solo"]
