"""The task format: the shipped set is valid and complete; broken task files are refused in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from embodia.agents.scienceboard.tasks import (
    DIFFICULTIES,
    DOMAINS,
    GUI_DOMAINS,
    TaskError,
    load_tasks,
    read_task_file,
    task_counts,
    validate_task_file,
)
from embodia.cli import main
from tests.agents.scienceboard.conftest import make_task


def _shipped(task_id: str) -> dict:
    (task,) = load_tasks(ids=[task_id])
    return json.loads(Path(task.source).read_text())


def test_every_domain_ships_at_least_twenty_valid_tasks_of_every_difficulty():
    tasks = load_tasks()
    counts = task_counts(tasks)
    assert set(counts) == set(DOMAINS)
    assert len(tasks) >= 120  # the paper has 169 over its six domains
    for domain, row in counts.items():
        assert row["total"] >= 20, domain
        assert all(row[level] >= 3 for level in DIFFICULTIES), (domain, row)
    for domain in GUI_DOMAINS:  # every Qt program has tasks solvable through its GUI
        assert sum("gui" in t.interfaces for t in tasks if t.domain == domain) >= 3, domain
    assert len({task.id for task in tasks}) == len(tasks)
    for task in tasks:
        assert task.id.startswith(task.domain + "-") and Path(task.source).name == f"{task.id}.json"
        assert task.oracle[-1].type == "done" and task.wrong[-1].type == "done"


def test_broken_task_files_are_refused_with_what_and_where(tmp_path):
    good = _shipped("kalgebra-factorial")
    cases = {
        "not_json.json": "{ not json",
        "unknown_field.json": json.dumps({**good, "id": "kalgebra-x1", "reward": 5}),
        "bad_domain.json": json.dumps({**good, "id": "kalgebra-x2", "domain": "excel"}),
        "gui_without_oracle.json": json.dumps({**good, "id": "kalgebra-x3", "oracle_gui": None}),
        "escaping_file.json": json.dumps({**good, "id": "kalgebra-x4", "files": {"../../etc/x": "a"}}),
        "no_rules.json": json.dumps({**good, "id": "kalgebra-x5", "evaluate": []}),
        "unknown_interface.json": json.dumps({**good, "id": "kalgebra-x6", "interfaces": ["api", "vr"]}),
    }
    for name, text in cases.items():
        (tmp_path / name).write_text(text)
        problems = validate_task_file(tmp_path / name)
        assert len(problems) == 1 and str(tmp_path / name) in problems[0], name
        assert "\n" not in problems[0]
    assert "rewards" not in validate_task_file(tmp_path / "unknown_field.json")[0]
    assert "reward" in validate_task_file(tmp_path / "unknown_field.json")[0]
    assert "excel" in validate_task_file(tmp_path / "bad_domain.json")[0]
    assert "oracle_gui" in validate_task_file(tmp_path / "gui_without_oracle.json")[0]
    with pytest.raises(TaskError, match="no such task file"):
        read_task_file(tmp_path / "missing.json")


def test_duplicate_ids_and_empty_selections_are_errors(tmp_path):
    task = _shipped("kalgebra-factorial")
    (tmp_path / "a.json").write_text(json.dumps(task))
    (tmp_path / "b.json").write_text(json.dumps(task))
    with pytest.raises(TaskError, match="also used by"):
        load_tasks(tmp_path)
    with pytest.raises(TaskError, match="no task"):
        load_tasks(ids=["no-such-*"])
    with pytest.raises(TaskError, match="unknown domain"):
        load_tasks(domains=["excel"])


def test_the_validate_and_tasks_commands(tmp_path, capsys):
    (tmp_path / "bad.json").write_text("[]")
    assert main(["scienceboard", "validate", str(tmp_path)]) == 2
    out = capsys.readouterr().out
    assert "must be a JSON object" in out and "0 of 1 task files valid" in out
    assert main(["scienceboard", "tasks", "--domain", "kalgebra", "--difficulty", "hard"]) == 0
    out = capsys.readouterr().out
    assert "kalgebra-recursive-fibonacci" in out and "kalgebra-define-variable" not in out
    assert main(["scienceboard", "tasks", "--id", "nothing-*"]) == 2


def test_inline_tasks_get_defaults():
    task = make_task()
    assert task.max_steps == 15 and task.interfaces == ["api"] and not task.allow_shell
