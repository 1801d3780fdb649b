"""KAlgebra (algebra domain): calgebra's REPL as the api interface; the checker reads variables and values."""

from __future__ import annotations

import pytest

from embodia.agents.scienceboard.env import ScienceBoardEnv
from embodia.agents.scienceboard.programs.base import QueryError
from embodia.agents.scienceboard.tasks import load_tasks
from tests.agents.scienceboard.conftest import make_task, play

SAMPLE = ["kalgebra-circle-area", "kalgebra-piecewise-absolute", "kalgebra-recursive-fibonacci"]


@pytest.mark.parametrize("task_id", SAMPLE)
def test_the_oracle_solves_and_the_wrong_sequence_fails(task_id):
    (task,) = load_tasks(ids=[task_id])
    assert play(task, task.oracle)[0] == 1.0
    reward, info, _ = play(task, task.wrong)
    assert reward == 0.0 and not info["success"] and any("-> False" in c for c in info["checks"])


def test_the_checker_reads_the_real_session_state():
    with ScienceBoardEnv("api") as env:
        env.reset(make_task(setup=[{"type": "command", "text": "y:=2"}]))
        program = env.program
        assert program.query("variable", {"name": "y"}) == 2.0
        assert program.query("variable", {"name": "undefined_name"}) is None
        assert env.evaluate()[0] is False  # x is not defined yet
        env.step({"type": "command", "text": "f:=t->t^2+y"})
        assert program.query("evaluate", {"expression": "f(3)"}) == 11.0
        observation, *_ = env.step({"type": "command", "text": "x:=6*7"})
        assert observation["output"] == "42"
        assert env.evaluate()[0] is True
        with pytest.raises(QueryError, match="not a variable name"):
            program.query("variable", {"name": "1+1"})
        with pytest.raises(QueryError, match="unknown query"):
            program.query("colour", {})


def test_errors_of_the_program_are_observations_not_crashes():
    actions = [
        {"type": "command", "text": "x:=[1, 2]"},
        {"type": "command", "text": "x:=(("},
        {"type": "done"},
    ]
    reward, info, observations = play(make_task(), actions)
    assert observations[1]["output"].startswith("Error") and "Unexpected token" in observations[1]["output"]
    assert observations[2]["output"].startswith("refused: unbalanced") and info["refused"] is False
    assert reward == 0.0 and not info["success"]


def test_typing_into_the_real_kalgebra_window_changes_screen_and_state():
    """The gui interface: xdotool types into KAlgebra on Xvfb; the checker reads the Variables panel (AT-SPI)."""
    import numpy as np

    (task,) = load_tasks(ids=["kalgebra-define-variable"])
    with ScienceBoardEnv("gui", "both") as env:
        first = env.reset(task)
        assert "[page tab] Calculator" in first["a11y_tree"] and first["screenshot"].size == (1280, 800)
        assert env.program.query("variable", {"name": "radius"}) is None
        env.step({"type": "type", "text": "radius:=15/2"})
        observation, reward, terminated, truncated, info = env.step({"type": "key", "text": "Return"})
        before, after = np.asarray(first["screenshot"]), np.asarray(observation["screenshot"])
        assert (np.abs(before.astype(int) - after.astype(int)).sum(axis=2) > 30).sum() > 500
        assert env.program.query("variable", {"name": "radius"}) == 7.5
        assert "radius" in env.program.query("variables", {})
        assert "radius" in observation["a11y_tree"]
        observation, reward, terminated, truncated, info = env.step({"type": "done"})
        assert terminated and reward == 1.0 and info["success"]
