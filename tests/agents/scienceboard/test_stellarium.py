"""ScienceBoard's Stellarium domain on the real Stellarium 0.22 (Debian's stellarium) under Xvfb."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from PIL import ImageChops

from embodia.agents.scienceboard.checkers import evaluate
from embodia.agents.scienceboard.env import ScienceBoardEnv
from embodia.agents.scienceboard.programs.base import QueryError
from embodia.agents.scienceboard.programs.stellarium import Stellarium
from embodia.agents.scienceboard.sandbox import Sandbox
from embodia.agents.scienceboard.tasks import Rule, Task, load_tasks, parse_task

SAMPLE = ["stellarium-select-jupiter", "stellarium-eclipse-dallas", "stellarium-highest-planet-sydney"]


def _task(**extra: object) -> Task:
    data = {
        "id": "stellarium-unit",
        "domain": "stellarium",
        "difficulty": "easy",
        "instruction": "A unit-test task on the sky.",
        "evaluate": [{"query": "fov", "op": "true"}],
        "oracle": [{"type": "done"}],
        "wrong": [{"type": "done"}],
        **extra,
    }
    return parse_task(data, "test")


def _rule(query: str, op: str, value: object = None, tolerance: float = 1e-6, **args: object) -> Rule:
    return Rule(query=query, op=op, args=args, value=value, tolerance=tolerance)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def sky() -> Iterator[Stellarium]:
    with Sandbox(display=True) as sandbox:
        program = Stellarium(sandbox, _task(), "api")
        program.start()
        yield program
        program.close()


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return {task.id: task for task in load_tasks(domains=["stellarium"])}


def test_task_set_is_complete(tasks: dict[str, Task]) -> None:
    levels = [task.difficulty for task in tasks.values()]
    assert len(tasks) >= 10 and levels.count("easy") >= 4 and levels.count("medium") >= 4
    assert levels.count("hard") >= 2
    assert sum("gui" in task.interfaces and bool(task.oracle_gui) for task in tasks.values()) >= 3


def test_commands_and_checker_on_real_state(sky: Stellarium) -> None:
    assert sky.query("timerate", {}) == 0  # the clock is frozen at start
    assert sky.query("time_jd", {}) == pytest.approx(2451545.0, abs=1e-3)
    script = 'core.setObserverLocation(-0.1275, 51.5072, 11, 0, "London", "Earth"); core.setDate("2024-03-20T12:00:00", "utc")'
    assert sky.command(script) == "ok"
    assert sky.command('core.selectObjectByName("Mars", true); StelMovementMgr.zoomTo(10, 0)') == "ok"
    assert "ReferenceError" in sky.command("no_such_manager.doIt()")
    assert "London" in sky.status() and "Mars" in sky.status()
    passing = [
        _rule("selected_object", "equals", "Mars"),
        _rule("location", "approx", 51.5072, 0.01, key="latitude"),
        _rule("time_jd", "approx", 2460390.0, 1e-3),
        _rule("fov", "approx", 10, 0.5),
        _rule("property", "false", id="ConstellationMgr.linesDisplayed"),
    ]
    ok, checks = evaluate(passing, sky.query)
    assert ok, [check.message for check in checks]
    failing = [
        _rule("selected_object", "equals", "Jupiter"),
        _rule("location", "approx", 48.85, 0.01, key="latitude"),
        _rule("time_jd", "approx", 2451545.0, 1e-3),
        _rule("fov", "approx", 60, 0.5),
        _rule("property", "true", id="ConstellationMgr.linesDisplayed"),
        _rule("object_altitude", "gte", 0, name="No Such Star"),  # an unknown object fails the rule
    ]
    _, checks = evaluate(failing, sky.query)
    assert [check.passed for check in checks] == [False] * len(failing)
    assert sky.command("ConstellationMgr.setFlagLines(true)") == "ok"
    assert sky.query("property", {"id": "ConstellationMgr.linesDisplayed"}) is True
    # a star whose heading lists other designations on further lines is named by its first line
    assert sky.command('core.selectObjectByName("Acrux", true)') == "ok"
    assert sky.query("selected_object", {}) == "Acrux"
    with pytest.raises(QueryError):
        sky.query("property", {"id": "NoSuchMgr.flag"})
    with pytest.raises(QueryError):
        sky.query("horoscope", {})


def test_refuse_files_and_programs(sky: Stellarium) -> None:
    for text in (
        'core.screenshot("shot")',
        'core.loadSkyImage("x", "/etc/passwd", 0, 0, 1, 1, 1, 1)',
        'core.runScript("other.ssc")',
        'include("/etc/passwd")',
        "core.output('x')",
        "core.quitStellarium()",
    ):
        assert (sky.refuse(text) or "").startswith("refused:"), text
    assert sky.refuse('core.selectObjectByName("Vega", true)') is None


@pytest.mark.parametrize("task_id", SAMPLE)
def test_oracle_solves_and_wrong_fails(tasks: dict[str, Task], task_id: str) -> None:
    task = tasks[task_id]
    for sequence, reward in ((task.oracle, 1.0), (task.wrong, 0.0)):
        with ScienceBoardEnv("api") as env:
            env.reset(task)
            for action in sequence:
                _, got, terminated, truncated, info = env.step(action)
                if terminated or truncated:
                    break
            assert (got, info["success"]) == (reward, reward == 1.0), info.get("checks")


def test_refused_command_keeps_the_episode_going(tasks: dict[str, Task]) -> None:
    with ScienceBoardEnv("api") as env:
        env.reset(tasks["stellarium-select-jupiter"])
        obs, reward, terminated, truncated, info = env.step(
            {"type": "command", "text": 'core.saveScreenshot("a")'}
        )
        assert info["refused"] and obs["output"].startswith("refused:") and not (terminated or truncated)
        obs, _, _, _, info = env.step({"type": "command", "text": 'include("/home/secret.ssc")'})
        assert info["refused"]
        obs, _, _, _, info = env.step({"type": "command", "text": 'core.selectObjectByName("Jupiter", true)'})
        assert obs["output"] == "ok" and "Jupiter" in obs["status"]
        _, reward, terminated, _, info = env.step({"type": "done"})
        assert terminated and reward == 1.0 and info["success"]


def test_gui_keys_change_screen_and_state(tasks: dict[str, Task]) -> None:
    with ScienceBoardEnv("gui", observation="screenshot") as env:
        before = env.reset(tasks["stellarium-select-jupiter"])["screenshot"]
        program = env.program
        assert program is not None and program.query("selected_object", {}) is None
        assert program.query("property", {"id": "ConstellationMgr.linesDisplayed"}) is False
        env.step({"type": "key", "text": "c"})
        assert program.query("property", {"id": "ConstellationMgr.linesDisplayed"}) is True
        env.step({"type": "key", "text": "F3"})
        env.step({"type": "wait", "seconds": 1.0})
        env.step({"type": "type", "text": "Jupiter"})
        env.step({"type": "wait", "seconds": 1.0})
        obs, *_ = env.step({"type": "key", "text": "Return"})
        env.step({"type": "wait", "seconds": 1.0})
        after = env.sandbox.screenshot() if env.sandbox else obs["screenshot"]
        changed = sum(
            1 for pixel in ImageChops.difference(before, after).convert("L").getdata() if pixel > 30
        )
        assert changed > 5000, changed
        assert program.query("selected_object", {}) == "Jupiter"
        _, reward, terminated, _, info = env.step({"type": "done"})
        assert terminated and reward == 1.0 and info["success"], info.get("checks")


def test_a_script_cannot_write_a_screenshot_outside_the_workspace(sky: Stellarium, tmp_path) -> None:
    # straight to Stellarium, past the text rules that refuse "screenshot"; then one where it may write:
    # screenshots are taken in order, so once the second exists the first would have been written
    sky.command(f'core.screenshot("pwned", false, "{tmp_path}/", true)')
    sky.command('core.screenshot("kept", false, "", true)')
    deadline = time.monotonic() + 120.0
    while not list(sky.sandbox.workspace.rglob("kept*.png")) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert list(sky.sandbox.workspace.rglob("kept*.png"))
    assert list(tmp_path.iterdir()) == []
