"""GRASS GIS domain of ScienceBoard: the real GRASS 8.2 modules, its queries, checker, tasks and refusals."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from embodia.agents.scienceboard.checkers import evaluate
from embodia.agents.scienceboard.env import ScienceBoardEnv
from embodia.agents.scienceboard.programs.base import QueryError
from embodia.agents.scienceboard.programs.grass import Grass
from embodia.agents.scienceboard.sandbox import Sandbox
from embodia.agents.scienceboard.tasks import Rule, load_tasks, parse_task

SAMPLE = ("grass-elevation-feet", "grass-zonal-mean", "grass-least-cost-path")
DEM = 'r.mapcalc "dem = 100 + 5*sin(x()*3.6)*cos(y()*3.6) + 0.2*x() + 0.1*y()"'


@pytest.fixture(scope="module")
def grass() -> Iterator[Grass]:
    """One GRASS database in a sandbox, with the tasks' elevation model `dem`."""
    task = parse_task(
        {
            "id": "grass-test",
            "domain": "grass",
            "difficulty": "easy",
            "instruction": "a test episode of GRASS",
            "evaluate": [{"query": "region", "args": {"key": "n"}, "op": "true"}],
            "oracle": [{"type": "done"}],
            "wrong": [{"type": "done"}],
        },
        "test",
    )
    with Sandbox() as sandbox:
        program = Grass(sandbox, task, "api")
        program.start()
        program.command(DEM)
        yield program


def run(task_id: str, which: str) -> tuple[float, dict]:
    (task,) = load_tasks(domains=["grass"], ids=[task_id])
    with ScienceBoardEnv("api") as env:
        env.reset(task)
        reward, info = 0.0, {}
        for action in getattr(task, which):
            _, reward, terminated, truncated, info = env.step(action)
            if terminated or truncated:
                break
    return reward, info


def test_start_region_and_status(grass: Grass) -> None:
    assert grass.query("region", {"key": "rows"}) == 100
    assert grass.query("region", {"key": "nsres"}) == 1
    status = grass.status()
    assert "dem" in status and "n=100" in status


def test_checker_raster_univar_pass_and_fail(grass: Grass) -> None:
    grass.command('r.mapcalc "half = dem / 2"')
    good = Rule(
        query="raster_univar", args={"map": "half", "stat": "mean"}, op="approx", value=57.5, tolerance=1e-6
    )
    bad = Rule(query="raster_univar", args={"map": "half", "stat": "mean"}, op="approx", value=115.0)
    assert evaluate([good], grass.query)[0] is True
    assert evaluate([bad], grass.query)[0] is False
    missing = Rule(query="raster_univar", args={"map": "no_such_map", "stat": "mean"}, op="approx", value=0)
    assert evaluate([missing], grass.query)[0] is False
    assert grass.query("raster_exists", {"map": "no_such_map"}) is False


def test_checker_vector_and_categories_pass_and_fail(grass: Grass) -> None:
    grass.command("v.mkgrid map=cells grid=2,3")
    assert evaluate(
        [Rule(query="vector_count", args={"map": "cells", "type": "areas"}, op="equals", value=6)],
        grass.query,
    )[0]
    assert not evaluate(
        [Rule(query="vector_count", args={"map": "cells", "type": "areas"}, op="equals", value=4)],
        grass.query,
    )[0]
    assert "row" in grass.query("vector_columns", {"map": "cells"})
    assert grass.query("vector_attribute_stat", {"map": "cells", "column": "row", "stat": "max"}) == 2
    grass.command('r.mapcalc "klass = if(dem < 115, 1, 2)"')
    counts = [grass.query("raster_category_cells", {"map": "klass", "value": value}) for value in (1, 2)]
    assert sum(counts) == 10_000 and min(counts) > 0
    assert grass.query("raster_categories_count", {"map": "klass"}) == 2
    assert grass.query("raster_categories_count", {"map": "dem"}) is None  # not an integer map
    assert grass.query("raster_value_at", {"map": "dem", "x": 0.5, "y": 0.5}) == pytest.approx(
        100.307, abs=1e-3
    )
    with pytest.raises(QueryError):
        grass.query("raster_univar", {"map": "dem; rm", "stat": "mean"})
    with pytest.raises(QueryError):
        grass.query("no_such_query", {})


def test_command_output_and_errors(grass: Grass) -> None:
    assert "rows=100" in grass.command("g.region -g")
    assert "exit status" in grass.command("r.info map=no_such_map")
    assert "not a GRASS module" in grass.command("ls -l")
    assert grass.command('r.mapcalc "one = 1"').endswith("done (no output)")


def test_refuse(grass: Grass) -> None:
    assert grass.refuse("r.univar map=dem") is None
    for text in (
        "bash -c ls",
        "d.rast map=dem",
        "g.gui",
        "g.extension extension=r.hydrodem",
        "g.mapset mapset=other",
        "r.in.gdal input=/etc/passwd output=leak",
        "r.out.gdal input=dem output=../dem.tif",
        'r.mapcalc "a = 1',
        "r.info map=dem --ui",
    ):
        reason = grass.refuse(text)
        assert reason and reason.startswith("refused:"), text


@pytest.mark.parametrize("task_id", SAMPLE)
def test_oracle_solves_and_wrong_fails(task_id: str) -> None:
    reward, info = run(task_id, "oracle")
    assert reward == 1.0 and info["success"] is True, info.get("checks")
    reward, info = run(task_id, "wrong")
    assert reward == 0.0 and info["success"] is False


def test_refused_command_keeps_episode_going() -> None:
    (task,) = load_tasks(domains=["grass"], ids=["grass-slope-degrees"])
    with ScienceBoardEnv("api") as env:
        env.reset(task)
        for text in ("r.in.gdal input=/etc/passwd output=x", "sh -c 'cat /etc/passwd'"):
            observation, reward, terminated, truncated, info = env.step({"type": "command", "text": text})
            assert info["refused"] is True and not (terminated or truncated)
            assert observation["output"].startswith("refused:")
        for action in task.oracle:
            _, reward, terminated, truncated, info = env.step(action)
        assert terminated and reward == 1.0 and info["success"] is True


def test_task_set() -> None:
    tasks = load_tasks(domains=["grass"])
    levels = [task.difficulty for task in tasks]
    assert len(tasks) >= 10
    assert levels.count("easy") >= 4 and levels.count("medium") >= 4 and levels.count("hard") >= 2


def test_the_gui_console_runs_modules_on_the_checked_database() -> None:
    """GRASS's wxPython GUI on the task's database: a module run from its console makes the map the checker
    reads; doing nothing scores 0."""
    (task,) = load_tasks(ids=["grass-elevation-feet"])
    assert "gui" in task.interfaces and task.oracle_gui
    with ScienceBoardEnv("gui", observation="a11y_tree") as env:
        observation = env.reset(task)
        assert "project/PERMANENT - GRASS GIS" in observation["a11y_tree"]
        for action in task.oracle_gui[:-1]:
            env.step(action)
        deadline = time.monotonic() + 120  # the console runs the module in the background
        while not env.program.query("raster_exists", {"map": "elev_ft"}) and time.monotonic() < deadline:
            time.sleep(0.25)
        _, reward, terminated, _, info = env.step(task.oracle_gui[-1])
        assert terminated and reward == 1.0, info["checks"]
    with ScienceBoardEnv("gui", observation="a11y_tree") as env:
        env.reset(task)
        _, reward, _, _, _ = env.step({"type": "done"})
    assert reward == 0.0
