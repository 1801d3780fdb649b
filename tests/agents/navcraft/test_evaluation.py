"""Evaluation of NavCraft episodes: solo schedules with every robot present, reproducible disturbances a
mission can recover from, per-taxonomy summaries, and Ray runs that equal serial ones."""

from __future__ import annotations

import math

import pytest

from embodia.agents.navcraft.benchmark import generate
from embodia.agents.navcraft.evaluation import (
    RunConfig,
    random_disturbances,
    run_episode,
    run_episodes,
    solo_of,
    summary_rows,
)
from embodia.agents.navcraft.executor import CloseDoor, Delay
from embodia.agents.navcraft.travel import Travel


@pytest.fixture(scope="module")
def episodes():
    return generate(["apartment_0", "office_0"], 3, seed=2).episodes


def test_solo_keeps_every_robot_and_only_the_primary_works(episodes):
    for episode in episodes:
        solo = solo_of(episode)
        assert len(solo.robots) == len(solo.plans) == episode.num_robots
        assert solo.plans[0] and not any(solo.plans[1:])
        assert solo.closed_doors == episode.solo.closed_doors


def test_disturbances_are_reproducible_and_recoverable(episodes):
    for episode in episodes:
        first, second = random_disturbances(episode, 3), random_disturbances(episode, 3)
        assert first == second
        delay = first[0]
        assert isinstance(delay, Delay) and 20.0 <= delay.seconds <= 60.0
        assert episode.schedule.plans[delay.robot]  # a robot that has work to do
        assert 0.0 <= delay.at_time <= 0.5 * max(episode.schedule.makespan, 10.0)
        for door in (d for d in first[1:] if isinstance(d, CloseDoor)):
            shut = Travel.for_scene(episode.mission.scene_id, [*episode.schedule.closed_doors, door.door])
            m = episode.mission
            for item in m.items:  # the scene has another way round
                assert shut.reachable(m.start.position, item.pickup.position)
                assert shut.reachable(item.pickup.position, item.destination.position)
    assert random_disturbances(episodes[0], 3) != random_disturbances(episodes[0], 4)


def test_summary_rows_are_means_per_taxonomy():
    rows = [
        {"taxonomy": "relay", "success": 1.0, "step_success": 1.0, "makespan": 40.0, "planned_makespan": 30.0,
         "handoff_errors": 0, "interference": 1, "replans": 0, "spl_mean": 0.8},
        {"taxonomy": "relay", "success": 0.0, "step_success": 0.5, "makespan": 100.0, "planned_makespan": 30.0,
         "handoff_errors": 1, "interference": 0, "replans": 2, "spl_mean": math.nan},
        {"taxonomy": "escort", "success": 1.0, "step_success": 1.0, "makespan": 60.0, "planned_makespan": 50.0,
         "handoff_errors": 0, "interference": 0, "replans": 0, "spl_mean": 0.6},
    ]  # fmt: skip
    table = {row["taxonomy"]: row for row in summary_rows(rows)}
    assert table["all"]["episodes"] == 3 and table["all"]["success"] == pytest.approx(2 / 3)
    assert table["relay"]["step_success"] == 0.75 and table["relay"]["makespan"] == 70.0
    assert table["relay"]["makespan_successful"] == 40.0 and table["relay"]["spl"] == 0.8
    assert table["escort"]["handoff_errors"] == 0.0 and table["all"]["replans"] == pytest.approx(2 / 3)


def test_collaboration_beats_solo_on_the_same_missions(episodes):
    collaborative = [run_episode(e, RunConfig("planner")) for e in episodes]
    solo = [run_episode(e, RunConfig("solo")) for e in episodes]
    assert all(r["success"] == 1.0 for r in collaborative + solo)
    assert sum(r["makespan"] for r in collaborative) < sum(r["makespan"] for r in solo)


def test_ray_workers_give_the_serial_rows(episodes):
    config = RunConfig("planner", disturb=True)
    serial = run_episodes(episodes[:2], config)
    parallel = run_episodes(episodes[:2], config, workers=2)
    drop = ("wall_seconds",)
    assert [{k: v for k, v in r.items() if k not in drop} for r in parallel] == [
        {k: v for k, v in r.items() if k not in drop} for r in serial
    ]


def test_generation_on_ray_equals_serial_generation():
    from embodia.agents.navcraft.mission import to_plain

    serial = generate(["apartment_1", "office_0"], 2, seed=7)
    parallel = generate(["apartment_1", "office_0"], 2, seed=7, workers=2)
    assert [to_plain(e) for e in parallel.episodes] == [to_plain(e) for e in serial.episodes]
    assert parallel.stats["rejected"] == serial.stats["rejected"]
