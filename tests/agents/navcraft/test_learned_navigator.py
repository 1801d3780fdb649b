"""NavCraft's learned navigator on a hand-made two-room scene: the expert demonstrations reach their
targets when replayed, the instructions and observations are what the module says, the policy learns
to imitate the expert well enough to carry out its training episode in the executor, and the experiment
script's ``--quick`` run writes the committed results file's layout."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from embodia.agents.navcraft.learned_navigator import (
    EvaluationConfig,
    ExpertNavigator,
    LearnedNavigator,
    NavigatorConfig,
    run_with_navigator,
    train_navigator,
)
from embodia.agents.navcraft.mission import (
    Item,
    Mission,
    NavCraftEpisode,
    Place,
    RobotStart,
    Schedule,
    Step,
    Subgoal,
)
from embodia.agents.navcraft.navigator_data import (
    FORWARD,
    LEFT,
    RIGHT,
    STOP,
    DemonstrationConfig,
    ObservationConfig,
    Vocabulary,
    canonical_point,
    collect,
    move_instruction,
    observe,
    velocity_command,
)
from embodia.agents.navcraft.timing import retime, travel_for_scene
from embodia.agents.navcraft.travel import Travel
from embodia.core.results import RESULTS_DIR, layout_differences, read_results
from embodia.envs.habitat.episodes import NavEpisode
from embodia.envs.habitat.scene import Door, Room, Scene, SceneObject
from tests.agents.conftest import run_script


@pytest.fixture(scope="module")
def scene_ref(tmp_path_factory) -> str:
    """A kitchen (0..4 m) and a bedroom (4..8 m), 3 m deep, joined by a 1 m door; a cup in the kitchen."""
    scene = Scene(
        "two_rooms",
        rooms=[Room("kitchen_0", "kitchen", (0.0, 0.0, 4.0, 3.0)), Room("bedroom_0", "bedroom", (4.0, 0.0, 8.0, 3.0))],
        doors=[Door("door_0", ("kitchen_0", "bedroom_0"), (4.0, 1.5), "y", 1.0)],
        objects=[SceneObject("cup_0", "cup", "kitchen_0", (1.0, 1.0, 0.0), (0.1, 0.1, 0.1))],
    )  # fmt: skip
    return str(scene.save(tmp_path_factory.mktemp("scene") / "two_rooms.json"))


def _episode(scene_ref: str) -> NavCraftEpisode:
    """Start in the bedroom, fetch the cup, bring it to the bedroom's anchor-free point, end there."""
    travel = Travel.for_scene(scene_ref)
    cup = Place("kitchen_0", canonical_point(travel, "cup_0"), "cup_0")
    start = Place("bedroom_0", tuple(float(v) for v in travel.pathfinder.snap_point([7.0, 1.0, 0.0])))
    end = Place("bedroom_0", tuple(float(v) for v in travel.pathfinder.snap_point([6.0, 2.2, 0.0])))
    item = Item("cup_0", "cup", cup, end)
    subgoals = [
        Subgoal("pick:cup_0", "pick", cup, "cup_0"),
        Subgoal("deliver:cup_0", "deliver", end, "cup_0"),
        Subgoal("arrive", "arrive", end),
    ]
    mission = Mission("tiny", scene_ref, "bring the cup", start, math.pi, [item], end, [], subgoals)
    plan = [
        Step("move", cup),
        Step("pick", cup, "cup_0"),
        Step("move", end),
        Step("drop", end, "cup_0"),
    ]
    schedule = retime(Schedule("solo", [RobotStart(start, math.pi)], [plan]), travel_for_scene(scene_ref))
    return NavCraftEpisode("tiny#0", mission, schedule, schedule, {"taxonomy": "solo"})


def test_velocity_commands_do_the_discrete_actions():
    class Env:  # the executor's environment settings: 0.5 m/s, 60 deg/s, 0.5 s, 0.25 m, 30 deg
        class config:  # noqa: N801 (stands for NavConfig)
            control_period, max_linear_speed, max_angular_speed, forward_step, turn_angle = (
                0.5,
                0.5,
                60.0,
                0.25,
                30.0,
            )

    assert velocity_command(Env, FORWARD).tolist() == [1.0, 0.0, -1.0]
    assert velocity_command(Env, LEFT).tolist() == [-1.0, 1.0, -1.0]
    assert velocity_command(Env, RIGHT).tolist() == [-1.0, -1.0, -1.0]
    assert velocity_command(Env, STOP).tolist() == [-1.0, 0.0, -1.0]  # the executor's no-op, never STOP


def test_vocabulary_encodes_words_with_unknown_and_padding():
    vocabulary = Vocabulary.build(["go to the kitchen", "go to the cup"])
    assert sorted(vocabulary.ids) == ["cup", "go", "kitchen", "the", "to"] and len(vocabulary) == 7
    assert vocabulary.encode("Go to the BATHROOM", 6).tolist() == [3, 6, 5, 1, 0, 0]


def test_instructions_name_room_object_and_door(scene_ref):
    travel = Travel.for_scene(scene_ref)
    cup = Place("kitchen_0", (1.0, 1.5, 0.0), "cup_0")
    assert move_instruction(travel.scene, "s", Step("move", cup)) == "scene s go to the cup in the kitchen"
    side = Place("kitchen_0", (3.5, 1.5, 0.0))
    assert move_instruction(travel.scene, "s", Step("move", side)) == "scene s go to the kitchen"
    assert (
        move_instruction(travel.scene, "s", Step("move", side), Step("open_door", side, door="door_0"))
        == "scene s go to the door to the bedroom in the kitchen"
    )


def test_observation_sees_the_wall_ahead(scene_ref):
    from embodia.envs.habitat.env import NavEnv

    env = NavEnv(task="pointnav", sensors="none", action_mode="velocity", scenes=(scene_ref,))
    start = np.array([7.0, 1.0, 0.0])
    env.reset(
        options={"episode": NavEpisode("e", scene_ref, "pointnav", [start], [0.0], [start[None]], [0.0])}
    )
    config = ObservationConfig(patch_cells=9, patch_spacing=0.25)
    obs = observe(env, 0, LEFT, config)
    env.close()
    assert obs.shape == (config.size,) == (4 + 20 + 81 + 4,)
    np.testing.assert_allclose(obs[:4], [(7.0 - 4.0) / 4.0, (1.0 - 1.5) / 4.0, 1.0, 0.0], atol=1e-6)
    patch = obs[24:105].reshape(9, 9)  # rows: ahead (-1 m .. +1 m), columns: to the left
    assert patch[4, 4] == 1.0  # where it stands
    assert patch[8, 4] == 0.0 and patch[0, 4] == 1.0  # the wall at x = 8 m is 1 m ahead, 6 m is free
    assert obs[-4:].tolist() == [0.0, 0.0, 1.0, 0.0]  # previous action: left


def test_expert_demonstrations_replayed_reach_every_target(scene_ref):
    episode = _episode(scene_ref)
    demos = collect([episode], DemonstrationConfig(noise=0.0), schedules=("schedule",))
    assert demos.reached == [True, True]
    texts = list(dict.fromkeys(demos.texts))
    assert texts == [
        f"scene {scene_ref} go to the cup in the kitchen",
        f"scene {scene_ref} go to the bedroom",
    ]
    assert (demos.actions == STOP).sum() == 2  # each move ends with the expert's stop

    from embodia.envs.habitat.env import NavEnv

    env = NavEnv(task="pointnav", sensors="none", action_mode="velocity", scenes=(scene_ref,))
    start = np.asarray(episode.mission.start.position)
    env.reset(
        options={"episode": NavEpisode("r", scene_ref, "pointnav", [start], [math.pi], [start[None]], [0.0])}
    )
    targets = [np.asarray(s.place.position) for s in episode.schedule.plans[0] if s.kind == "move"]
    reached = []
    for action in demos.actions:  # replay: without noise, the recorded actions are the executed ones
        if action == STOP:
            reached.append(
                env.pathfinder.geodesic_distance(env.backend.get_pose(0)[0], targets[len(reached)][None])
            )
        else:
            env.step(velocity_command(env, int(action)))
    env.close()
    assert len(reached) == 2 and max(reached) <= 0.3


def test_policy_learns_to_carry_out_its_training_episode(scene_ref):
    episode = _episode(scene_ref)
    demos = collect([episode], DemonstrationConfig(noise=0.1, repeats=4), seed=0, schedules=("schedule",))
    config = NavigatorConfig(hidden=64, embedding=8, steps=200, batch_size=128, learning_rate=3e-3)
    trained = train_navigator(demos, config)
    assert trained.losses[-1] < 0.2 * trained.losses[0]
    assert trained.train_accuracy > 0.9

    def navigator(env):
        return LearnedNavigator(env, trained)

    evaluation = EvaluationConfig()
    learned = run_with_navigator(episode, "solo", navigator, evaluation)
    expert = run_with_navigator(episode, "solo", ExpertNavigator, evaluation)
    assert expert["success"] == 1.0 and expert["step_success"] == 1.0
    assert learned["step_success"] == 1.0 and learned["success"] == 1.0
    assert learned["aside_steps"] == 0 and learned["navigated_steps"] > 20


def test_quick_navigator_experiment_writes_its_tables(tmp_path):
    out, results = tmp_path / "rows.json", tmp_path / "results" / "navigator.json"
    code = run_script(
        "navcraft_navigator_experiment", "--quick", "--quiet", "--out", str(out), "--results", str(results)
    )
    assert code == 0
    produced = read_results(results)
    assert layout_differences(produced, read_results(RESULTS_DIR / "navcraft" / "navigator.json")) == []
    assert produced["seeds"] == [0]
    assert produced["command"].startswith("python scripts/navcraft_navigator_experiment.py --quick")
    tables = {name: table["rows"] for name, table in produced["tables"].items()}
    navigators = ("learned", "expert")  # --quick trains the first variant only
    modes = ("solo", "collab", "single-robot")
    assert [(r["agent"], r["mode"]) for r in tables["navigator"]] == [
        (a, m) for a in navigators for m in modes
    ]
    (data,) = tables["data"]
    assert data["test"] >= 1 and data["samples"] > 0 and data["reached"] == 1.0
    for row in tables["navigator"]:
        if row["agent"] == "expert" and row["episodes"]:
            assert row["step_success"] == row["success"] == 1.0
    assert [r["variant"] for r in tables["training"]] == ["learned"]
    for row in tables["training"]:
        assert row["last_loss"] < row["first_loss"]
    rows = json.loads(out.read_text())["rows"]
    assert set(rows) == {"expert", "learned/0"}
    for run in rows.values():
        assert len(run["solo"]) == len(run["collab"])
        assert len(run["solo"]) + len(run["single-robot"]) == data["test"]
