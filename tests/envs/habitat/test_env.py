"""The navigation environments: gymnasium's checker, Habitat's action and sensor conventions, state and replay."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import embodia
from embodia.core.errors import ActionError
from embodia.data.store import TrajectoryStore
from embodia.envs.habitat.env import MOVE_FORWARD, STOP, TURN_LEFT, TURN_RIGHT, NavEnv
from embodia.envs.habitat.episodes import NavEpisode, sample_episode, save_episodes
from embodia.envs.habitat.instructions import decode_instruction
from embodia.envs.habitat.scene import Room, Scene
from embodia.runner.replay import replay_episode

NAV_IDS = [
    "embodia/Nav-PointNav-v0",
    "embodia/Nav-ObjectNav-v0",
    "embodia/Nav-InstructionNav-v0",
    "embodia/Nav-MultiRobot-v0",
]


def _check(env) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", message=".*infinity.*")  # gps and distances are unbounded
        check_env(env.unwrapped, skip_render_check=False)


@pytest.mark.parametrize("env_id", NAV_IDS)
def test_check_env_on_every_nav_env(env_id):
    env = embodia.make(env_id, render_mode="rgb_array")
    try:
        _check(env)
        obs, info = env.reset(seed=0)
        assert env.observation_space.contains(obs)
        assert obs["rgb"].dtype == np.uint8 and obs["depth"].dtype == np.float32
        frame = env.render()
        assert frame.dtype == np.uint8 and frame.shape == (256, 512, 3)  # camera | top-down map, any scene
        obs, _, _, _, info = env.step(env.action_space.sample())
        assert isinstance(info["success"], bool)
    finally:
        env.close()


@pytest.mark.parametrize("kwargs", [{"action_mode": "velocity"}, {"sensors": "none"}])
def test_check_env_on_velocity_and_state_variants(kwargs):
    env = embodia.make("embodia/Nav-PointNav-v0", render_mode="rgb_array", **kwargs)
    try:
        _check(env)
    finally:
        env.close()


@pytest.fixture
def room_env(tmp_path):
    """One empty 6 x 4 m room: free space for exact motion checks."""
    path = Scene("room", rooms=[Room("r", "office", (0.0, 0.0, 6.0, 4.0))]).save(tmp_path / "room.json")
    env = NavEnv(scenes=(str(path),), sensors="depth", width=32, height=32)
    yield env, str(path)
    env.close()


def _episode(scene_id: str, start, yaw: float, goal) -> NavEpisode:
    return NavEpisode(
        "e",
        scene_id,
        "pointnav",
        [np.array([*start, 0.0])],
        [yaw],
        [np.array([[*goal, 0.0]])],
        [float("nan")],
    )


def test_discrete_actions_move_and_turn_exactly(room_env):
    env, scene_id = room_env
    env.reset(seed=0, options={"episode": _episode(scene_id, (2.0, 2.0), 0.0, (5.0, 2.0))})
    obs, reward, terminated, _, info = env.step(MOVE_FORWARD)
    position, yaw = env.backend.get_pose(0)
    np.testing.assert_allclose(position, [2.25, 2.0, 0.0], atol=1e-9)
    assert not info["collided"] and not terminated
    assert reward == pytest.approx(0.25 - 0.01)  # habitat's reward: progress minus slack
    np.testing.assert_allclose(obs["gps"], [0.25, 0.0], atol=1e-6)
    env.step(TURN_LEFT)
    assert env.backend.get_pose(0)[1] == pytest.approx(math.radians(30))
    obs, *_ = env.step(MOVE_FORWARD)
    np.testing.assert_allclose(
        env.backend.get_pose(0)[0][:2], [2.25 + 0.25 * math.cos(math.radians(30)), 2.0 + 0.125], atol=1e-9
    )
    # gps is [forward, right] in the start frame; compass is the heading change, left positive
    np.testing.assert_allclose(obs["gps"], [2.25 - 2 + 0.25 * math.cos(math.radians(30)), -0.125], atol=1e-6)
    assert obs["compass"][0] == pytest.approx(math.radians(30), abs=1e-6)
    env.step(TURN_RIGHT)
    env.step(TURN_RIGHT)
    assert env.backend.get_pose(0)[1] == pytest.approx(-math.radians(30))


def test_walls_cause_collisions_and_depth_sees_them(room_env):
    env, scene_id = room_env
    # facing the east wall (inner face at x = 5.95) from x = 5.6: the next step would end at 5.85
    obs, _ = env.reset(seed=0, options={"episode": _episode(scene_id, (5.6, 2.0), 0.0, (1.0, 2.0))})
    centre = obs["depth"][15:17, 15:17, 0].mean() * 10.0
    assert centre == pytest.approx(5.95 - 5.6, abs=0.02)
    obs, _, _, _, info = env.step(MOVE_FORWARD)
    position, _ = env.backend.get_pose(0)
    assert info["collided"] and info["collisions"] == 1
    assert position[0] == pytest.approx(5.95 - 0.18, abs=2e-3)  # stopped one radius from the wall


def test_stop_ends_the_episode_with_habitat_success(room_env):
    env, scene_id = room_env
    env.reset(seed=0, options={"episode": _episode(scene_id, (2.0, 2.0), 0.0, (3.1, 2.0))})
    for _ in range(4):
        _, _, terminated, _, info = env.step(MOVE_FORWARD)
    assert not info["success"] and not terminated  # success needs STOP
    assert info["distance_to_goal"] == pytest.approx(0.1, abs=1e-9)
    _, reward, terminated, _, info = env.step(STOP)
    assert terminated and info["success"] and info["spl"] == pytest.approx(1.0)
    assert reward == pytest.approx(2.5 - 0.01)
    # stopping 0.35 m short fails
    env.reset(seed=0, options={"episode": _episode(scene_id, (2.0, 2.0), 0.0, (2.6, 2.0))})
    env.step(MOVE_FORWARD)
    _, _, terminated, _, info = env.step(STOP)
    assert terminated and not info["success"] and info["spl"] == 0.0
    assert info["soft_spl"] == pytest.approx((1 - 0.35 / 0.6) * 1.0)


def test_bad_actions_fail_clearly(room_env):
    env, _ = room_env
    env.reset(seed=0)
    with pytest.raises(ActionError, match="discrete action"):
        env.step(7)


def test_seeds_state_and_replay(tmp_path):
    make = lambda: embodia.make("embodia/Nav-PointNav-v0", sensors="depth", width=32, height=32)  # noqa: E731
    env, twin = make(), make()
    try:
        first, _ = env.reset(seed=5)
        again, _ = twin.reset(seed=5)
        for key in first:
            np.testing.assert_array_equal(first[key], again[key])
        other, _ = twin.reset(seed=6)
        assert not np.array_equal(first["goal"], other["goal"])
        actions = np.random.default_rng(0).integers(1, 4, size=30)
        for action in actions[:10]:
            env.step(int(action))
        saved = env.unwrapped.get_state()
        trace = [env.step(int(a)) for a in actions[10:]]
        env.unwrapped.set_state(saved)
        np.testing.assert_array_equal(env.unwrapped.get_state(), saved)
        for (obs, reward, _, _, info), action in zip(trace, actions[10:]):
            obs2, reward2, _, _, info2 = env.step(int(action))
            np.testing.assert_array_equal(obs["depth"], obs2["depth"])
            assert reward == reward2 and info == info2
    finally:
        env.close()
        twin.close()
    # recorded with the expert, replayed from the store: identical observations and simulator states
    store = TrajectoryStore(tmp_path / "nav.zarr", mode="a")
    result = embodia.rollout(
        "embodia/Nav-PointNav-v0", "expert", episodes=2, seed=3, record=store, env_kwargs={"sensors": "none"}
    )
    assert result.success_rate == 1.0
    for index in range(2):
        replayed = replay_episode(TrajectoryStore(tmp_path / "nav.zarr"), index)
        assert replayed.max_deviation == 0.0 and replayed.success


def test_multi_robot_robots_keep_apart():
    env = embodia.make("embodia/Nav-MultiRobot-v0", sensors="none")
    try:
        obs, _ = env.reset(seed=2)
        assert obs["state"].shape == (3, 3) and obs["goal"].shape == (3, 2)
        rng = np.random.default_rng(0)
        for _ in range(60):
            obs, _, terminated, _, info = env.step(rng.integers(1, 4, size=3))
            poses = [env.unwrapped.backend.get_pose(i)[0][:2] for i in range(3)]
            gaps = [np.linalg.norm(poses[i] - poses[j]) for i in range(3) for j in range(i + 1, 3)]
            assert min(gaps) >= 2 * 0.18 - 1e-9
            assert len(info["robots"]) == 3 and isinstance(info["success"], bool)
        _, _, terminated, _, _ = env.step(np.array([STOP, STOP, MOVE_FORWARD]))
        assert not terminated  # the episode ends when every robot has stopped
        _, _, terminated, _, _ = env.step(np.array([MOVE_FORWARD, MOVE_FORWARD, STOP]))
        assert terminated
    finally:
        env.close()


def test_instruction_and_object_goal_observations():
    env = embodia.make("embodia/Nav-InstructionNav-v0", sensors="none")
    try:
        obs, info = env.reset(seed=1)
        assert decode_instruction(obs["instruction"]) == info["instruction"]
        assert "stop" in info["instruction"].lower() or "wait" in info["instruction"].lower()
    finally:
        env.close()
    env = embodia.make("embodia/Nav-ObjectNav-v0", sensors="none")
    try:
        obs, info = env.reset(seed=1)
        from embodia.envs.habitat.episodes import OBJECTNAV_CATEGORIES

        assert OBJECTNAV_CATEGORIES[int(obs["goal"][0])] == info["object_category"]
        assert len(env.unwrapped.goals()) > 5  # every view point of every instance is a goal
    finally:
        env.close()


def test_episodes_from_a_habitat_lab_file(tmp_path):
    env = NavEnv(sensors="none")
    try:
        rng = np.random.default_rng(0)
        episodes = [
            sample_episode("pointnav", env.pathfinder, env.scene, "apartment_0", rng, 1, str(i))
            for i in range(3)
        ]
        path = save_episodes(episodes, tmp_path / "val.json.gz")
    finally:
        env.close()
    env = NavEnv(sensors="none", dataset=str(path))
    try:
        for index, episode in enumerate(episodes):
            _, info = env.reset(seed=0, options={"episode_index": index})
            assert info["episode_id"] == str(index)
            np.testing.assert_allclose(env.backend.get_pose(0)[0], episode.start_positions[0], atol=1e-5)
            assert info["distance_to_goal"] == pytest.approx(episode.geodesic_distances[0], abs=1e-4)
    finally:
        env.close()


def test_set_goals_replaces_a_robots_goal_mid_episode():
    env = NavEnv(
        task="multirobot", num_robots=2, sensors="none", action_mode="velocity", scenes=("apartment_0",)
    )
    try:
        starts = [np.array([4.425, 1.525, 0.0]), np.array([5.325, 3.775, 0.0])]
        episode = NavEpisode(
            "g", "apartment_0", "multirobot", starts, [0.0, 0.0], [s[None] for s in starts], [0.0, 0.0]
        )
        env.reset(options={"episode": episode})
        new_goal = np.array([8.175, 1.525, 0.0])  # living room anchor, through door_0
        env.set_goals(0, new_goal)
        np.testing.assert_array_equal(env.goals(0), new_goal[None])
        geodesic = env.pathfinder.geodesic_distance(starts[0], new_goal[None])
        assert env.metrics[0].distance_to_goal == pytest.approx(geodesic) and geodesic > 3.7
        # the no-op velocity action (zero speed, no turn, no stop) leaves both robots where they are
        obs, _, _, _, info = env.step(np.array([[-1.0, 0.0, -1.0], [-1.0, 0.0, -1.0]]))
        np.testing.assert_allclose(env.backend.get_pose(0)[0], starts[0], atol=1e-9)
        assert obs["goal"][0, 0] == pytest.approx(np.linalg.norm(new_goal[:2] - starts[0][:2]), abs=1e-5)
        assert info["robots"][0]["path_length"] == 0.0 and info["distance_to_goal"][0] == pytest.approx(
            geodesic
        )
        # the follower now drives robot 0 toward the new goal, robot 1 (goal = its start) stays
        follower = env.make_expert()
        for _ in range(20):
            action = follower.act(obs)
            action[:, 2] = -1.0  # never STOP
            obs, _, _, _, info = env.step(action)
        assert info["distance_to_goal"][0] < geodesic - 2.0
        with pytest.raises(Exception, match="robot 5 does not exist"):
            env.set_goals(5, new_goal)
    finally:
        env.close()
