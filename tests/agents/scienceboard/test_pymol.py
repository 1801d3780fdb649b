"""ScienceBoard's PyMOL domain on the real PyMOL 2.5 (Debian's pymol + python3-pymol)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from embodia.agents.scienceboard.checkers import evaluate
from embodia.agents.scienceboard.env import ScienceBoardEnv
from embodia.agents.scienceboard.programs.base import QueryError
from embodia.agents.scienceboard.programs.pymol import PyMOL
from embodia.agents.scienceboard.sandbox import Sandbox
from embodia.agents.scienceboard.tasks import Rule, load_tasks, parse_task
from tests.agents.scienceboard.conftest import play

HPV = "/usr/share/pymol/data/tut/1hpv.pdb"


SAMPLE = ["pymol-remove-waters", "pymol-binding-site", "pymol-docking-prep"]


def _task(**extra: object) -> object:
    data = {
        "id": "pymol-unit",
        "domain": "pymol",
        "difficulty": "easy",
        "instruction": "A unit-test task on 1hpv.",
        "evaluate": [{"query": "object_names", "op": "true"}],
        "oracle": [{"type": "done"}],
        "wrong": [{"type": "done"}],
        **extra,
    }
    return parse_task(data, "test")


@pytest.fixture(scope="module")
def pymol() -> Iterator[PyMOL]:
    with Sandbox() as sandbox:
        program = PyMOL(sandbox, _task(), "api")
        program.start()
        program.command(f"load {HPV}")
        yield program
        program.close()


def _rule(query: str, op: str, value: object = None, **args: object) -> Rule:
    return Rule(query=query, op=op, args=args, value=value)  # type: ignore[arg-type]


def test_commands_return_pymol_feedback(pymol: PyMOL) -> None:
    assert "80 atoms" in pymol.command("count_atoms 1hpv and resn HOH")
    assert "Invalid selection" in pymol.command("select nothing_here, no_such_object")
    assert pymol.query("object_names", {}) == ["1hpv"]
    assert pymol.status() == "objects: 1hpv"


def test_checker_passes_and_fails_on_real_state(pymol: PyMOL) -> None:
    passing = [
        _rule("count_atoms", "equals", 1631, selection="1hpv"),
        _rule("chains", "equals", ["", "A", "B"], object="1hpv"),
        _rule("sequence", "regex", "^PQITLWQRP", selection="1hpv and chain A"),
        _rule("distance", "approx", 6.539, sel1="/1hpv//A/25/CA", sel2="/1hpv//B/25/CA"),
    ]
    ok, checks = evaluate(passing, pymol.query)
    assert ok, [check.message for check in checks]
    failing = [
        _rule("count_atoms", "equals", 1630, selection="1hpv"),
        _rule("chains", "equals", ["A"], object="1hpv"),
        _rule("sequence", "regex", "^AAAA", selection="1hpv and chain A"),
        _rule("distance", "approx", 5.0, sel1="/1hpv//A/25/CA", sel2="/1hpv//B/25/CA"),
        _rule("count_atoms", "equals", 0, selection="no_such_object"),  # a missing selection answers None
    ]
    _, checks = evaluate(failing, pymol.query)
    assert [check.passed for check in checks] == [False] * len(failing)
    assert pymol.query("count_atoms", {"selection": "no_such_object"}) is None
    with pytest.raises(QueryError):
        pymol.query("no_such_query", {})


def test_refuse_escapes_and_outside_files(pymol: PyMOL) -> None:
    refused = [
        "python",
        "/import os",
        "print(1)",
        "run x.py",
        "@x.pml",
        "system ls",
        "fetch 1abc",
        "alias x, system ls",
        "cd /tmp",
        "load /etc/passwd",
        "save ../x.pdb, all",
        "load x.pml",
        "load x.pdb, format=pml",
        "color red; system ls",
        "alter all, b=__import__('os').getpid()",
        "alter all, resn=open('x').read()",
        "alter all, resn=f'{open(1)}'",
        "label all, ().real",
        "cmd.load('x.pdb')",
    ]
    for text in refused:
        reason = pymol.refuse(text)
        assert reason and reason.startswith("refused:"), text
    allowed = [
        "load chainA.pdb",
        "save out.pdb, 1hpv and chain A",
        "alter 1hpv and resn 478, resn='LIG'",
        "distance d, /1hpv//A/25/CG, /1hpv//B/25/CG",
        "util.cbc 1hpv",
    ]
    for text in allowed:
        assert pymol.refuse(text) is None, text


@pytest.fixture(scope="module")
def sample() -> list:
    return load_tasks(domains=["pymol"], ids=SAMPLE)


def _play(task: object, actions: list) -> tuple[float, dict]:
    with ScienceBoardEnv("api") as env:
        env.reset(task)  # type: ignore[arg-type]
        reward, info = 0.0, {}
        for action in actions:
            _, reward, terminated, truncated, info = env.step(action)
            assert not info["refused"], action
            if terminated or truncated:
                break
        return reward, info


def test_shipped_tasks_cover_the_difficulties() -> None:
    tasks = load_tasks(domains=["pymol"])
    counts = {level: sum(task.difficulty == level for task in tasks) for level in ("easy", "medium", "hard")}
    assert counts["easy"] >= 4 and counts["medium"] >= 4 and counts["hard"] >= 2
    assert {task.id for task in tasks} >= set(SAMPLE)


def test_oracles_solve_and_wrong_sequences_fail(sample: list) -> None:
    assert len(sample) == 3
    for task in sample:
        reward, info = _play(task, task.oracle)
        assert reward == 1.0 and info["success"], (task.id, info.get("checks"))
        reward, info = _play(task, task.wrong)
        assert reward == 0.0 and not info["success"], (task.id, info.get("checks"))


def test_a_copy_of_the_reference_is_not_an_alignment() -> None:
    """The known loophole: replacing ``moved`` by a copy of ``ref`` put its C-alpha atoms on ref's as well
    as aligning did. ``moved`` now differs from ``ref`` in one side chain, which only the real object keeps."""
    (task,) = load_tasks(ids=["pymol-align-copies"])
    for attack in (["delete moved", "create moved, ref"], ["create moved, ref"]):
        actions = [{"type": "command", "text": text} for text in attack] + [{"type": "done"}]
        reward, info = _play(task, actions)
        assert reward == 0.0 and not info["success"], (attack, info.get("checks"))
    reward, info = _play(task, task.oracle)
    assert reward == 1.0, info.get("checks")


def test_the_gui_program_takes_typed_commands_and_the_checker_reads_its_state() -> None:
    """PyMOL's Qt program on the sandbox's display: the command line is in the accessibility tree, a
    command typed there changes the state the checker reads, and doing nothing scores 0."""
    (task,) = load_tasks(ids=["pymol-build-peptide"])
    assert "gui" in task.interfaces and task.oracle_gui
    reward, info, observations = play(task, task.oracle_gui, interface="gui")
    assert reward == 1.0 and info["success"], info.get("checks")
    assert "[label] PyMOL>" in observations[0]["a11y_tree"]
    assert observations[0]["screenshot"].size == (1280, 800)
    reward, info, _ = play(task, [{"type": "done"}], interface="gui")
    assert reward == 0.0 and not info["success"]


def test_refused_command_keeps_the_episode_going(sample: list) -> None:
    task = sample[0]
    with ScienceBoardEnv("api") as env:
        env.reset(task)
        for text in ("system rm -rf .", "load /etc/passwd", "python"):
            observation, reward, terminated, truncated, info = env.step({"type": "command", "text": text})
            assert info["refused"] and observation["output"].startswith("refused:")
            assert not (terminated or truncated) and reward == 0.0
        for action in task.oracle:
            observation, reward, terminated, truncated, info = env.step(action)
        assert terminated and reward == 1.0 and info["success"]
