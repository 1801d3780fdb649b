"""``embodia scienceboard run``: per-task logs and a results table; the oracle scores 1 and `wrong` 0."""

from __future__ import annotations

import json

from embodia.cli import main


def test_run_writes_logs_and_a_results_table_per_domain(tmp_path, capsys):
    out = tmp_path / "oracle"
    assert (
        main(
            [
                "scienceboard",
                "run",
                "--agent",
                "oracle",
                "--domain",
                "kalgebra",
                "--domain",
                "pymol",
                "--difficulty",
                "easy",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    records = json.loads((out / "results.json").read_text())
    assert len(records) >= 8 and all(r["success"] for r in records)
    assert {r["domain"] for r in records} == {"kalgebra", "pymol"}
    table = (out / "results.md").read_text()
    assert "| kalgebra | 4/4 (100 %) |" in table and "| all |" in table
    steps = [
        json.loads(line)
        for line in (out / "kalgebra-define-variable" / "steps.jsonl").read_text().splitlines()
    ]
    assert steps[1]["action"]["text"] == "radius:=7.5" and steps[1]["output"] == "7.5"
    assert steps[-1]["info"]["success"] is True
    capsys.readouterr()
    assert (
        main(
            [
                "scienceboard",
                "run",
                "--agent",
                "wrong",
                "--domain",
                "kalgebra",
                "--difficulty",
                "easy",
                "--out",
                str(tmp_path / "wrong"),
            ]
        )
        == 0
    )
    records = json.loads((tmp_path / "wrong" / "results.json").read_text())
    assert not any(r["success"] for r in records)
    assert "FAIL kalgebra-define-variable" in capsys.readouterr().out


def test_a_bad_agent_or_selection_is_one_line_and_status_2(tmp_path, capsys):
    assert (
        main(
            [
                "scienceboard",
                "run",
                "--agent",
                "no-such-model",
                "--domain",
                "kalgebra",
                "--out",
                str(tmp_path / "x"),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "no local language model" in err and "Traceback" not in err
    assert (
        main(
            [
                "scienceboard",
                "run",
                "--agent",
                "oracle",
                "--domain",
                "coq",
                "--interface",
                "gui",
                "--out",
                str(tmp_path / "y"),
            ]
        )
        == 2
    )
