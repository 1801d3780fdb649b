"""``scripts/scienceboard_sweep.py --quick``: oracle and counterexamples on one task per domain, with tables
(the results file has the committed file's layout)."""

from __future__ import annotations

import json
import subprocess
import sys

from embodia.core.results import RESULTS_DIR, layout_differences, read_results
from tests.conftest import ROOT


def test_quick_sweep(tmp_path):
    results = tmp_path / "results" / "sweep.json"
    result = subprocess.run(
        [
            sys.executable,
            "scripts/scienceboard_sweep.py",
            "--quick",
            "--out",
            str(tmp_path / "out"),
            "--results",
            str(results),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    records = json.loads((tmp_path / "out" / "results.json").read_text())
    assert {r["arm"] for r in records} == {"oracle", "wrong"}
    assert all(r["success"] == (r["arm"] == "oracle") for r in records)
    assert len({r["domain"] for r in records}) == 4
    table = (tmp_path / "out" / "results.md").read_text()
    assert "### oracle" in table and "### wrong" in table and "| all | 4/4 (100 %)" in table

    produced = read_results(results)
    committed = read_results(RESULTS_DIR / "scienceboard" / "sweep.json")
    assert layout_differences(produced, committed) == []
    tables = {name: table["rows"] for name, table in produced["tables"].items()}
    assert [(row["arm"], row["episodes"], row["solved"]) for row in tables["arms"]] == [
        ("oracle", 4, 4),
        ("wrong", 4, 0),
    ]
    oracle_all = next(row for row in tables["oracle"] if row["domain"] == "all")
    assert oracle_all["tasks"] == [4, 0, 0] and oracle_all["easy"] == oracle_all["total"] == 1.0
    assert oracle_all["medium"] is None
    assert next(row for row in tables["wrong"] if row["domain"] == "all")["total"] == 0.0
    assert tables["oracle_gui"] == tables["lm"] == tables["lm_actions"] == []  # not run by --quick


def load_sweep():
    import importlib.util

    spec = importlib.util.spec_from_file_location("_sweep", ROOT / "scripts" / "scienceboard_sweep.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_lm_tables_count_episodes_per_arm_and_actions_from_the_step_logs(tmp_path):
    sweep = load_sweep()

    def record(arm, task, domain, interface, success):
        return {"arm": arm, "task": task, "domain": domain, "difficulty": "easy", "interface": interface,
                "success": success}  # fmt: skip

    records = [
        record("oracle", "k1", "kalgebra", "api", True),
        record("lm-api", "k1", "kalgebra", "api", True),
        record("lm-api", "c1", "coq", "api", False),
        record("lm-gui-both", "k1", "kalgebra", "gui", False),
    ]
    steps = {
        ("lm-api", "k1"): [{"type": "command"}, {"type": "command", "refused": True}, {"type": "done"}],
        ("lm-gui-both", "k1"): [{"type": "click"}, {"type": "click"}, {"type": "type"}],
    }
    for (arm, task), actions in steps.items():
        folder = tmp_path / arm / task
        folder.mkdir(parents=True)
        lines = [{"step": 0, "action": None, "info": {}}]
        lines += [
            {"step": i + 1, "action": {"type": a["type"]}, "info": {"refused": a.get("refused", False)}}
            for i, a in enumerate(actions)
        ]
        (folder / "steps.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))

    lm = {row["domain"]: row for row in sweep.lm_table(records).rows}
    assert list(lm) == ["kalgebra", "coq", "all"]
    assert lm["kalgebra"]["api"] == 1.0 and lm["kalgebra"]["gui_both"] == 0.0
    assert lm["kalgebra"]["gui_screenshot"] is None and lm["coq"]["gui_both"] is None
    assert lm["all"]["api"] == 0.5 and lm["all"]["episodes"] == [2, None, None, 1, None, None, None]

    actions = {row["interface"]: row for row in sweep.lm_actions_table(records, tmp_path).rows}
    assert actions["api"] == {"interface": "api", "actions": 3, "refused": 1, "clicks": 0, "typed": 0}
    assert actions["gui"] == {"interface": "gui", "actions": 3, "refused": 0, "clicks": 2, "typed": 1}
