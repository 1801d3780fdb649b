"""Kitchen environments: contract, success checks, experts, exact state and replay, cameras, CLI demos."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import imageio.v2 as imageio
import numpy as np
import pytest

import embodia
from benchmarks import bench_kitchen
from embodia.core.errors import ActionError, EmbodiaError
from embodia.core.results import RESULTS_DIR, layout_differences, read_results
from embodia.data.store import TrajectoryStore
from embodia.envs import env_ids
from embodia.envs.kitchen import TASKS, decode_instruction
from embodia.runner.replay import replay

KITCHEN_IDS = [i for i in env_ids() if i.startswith("embodia/Kitchen-")]
ZERO = np.zeros(7, dtype=np.float32)


def test_registry_lists_the_kitchen_tasks():
    assert len(KITCHEN_IDS) >= 5
    for task in (
        "PickPlaceCounterToSink",
        "OpenDrawer",
        "CloseCabinetDoor",
        "TurnOnFaucet",
        "PressMicrowaveButton",
    ):
        assert f"embodia/Kitchen-{task}-v0" in KITCHEN_IDS


@pytest.mark.parametrize("env_id", KITCHEN_IDS)
def test_observations_rewards_and_exact_state(env_id):
    # gymnasium's check_env and embodia's check_embodied_env run on every kitchen id in
    # tests/envs/test_registry.py::test_contract; here what a kitchen adds to that contract
    env = embodia.make(env_id, render_mode="rgb_array", width=64, height=48)
    try:
        obs, info = env.reset(seed=3)
        assert env.observation_space.contains(obs)
        assert set(obs) == {"state", "proprio", "instruction"}
        assert decode_instruction(obs["instruction"]) == info["instruction"] != ""
        obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
        assert isinstance(info["success"], bool) and reward == float(info["success"])
        assert env.render().shape == (48, 64, 3)
        state = env.unwrapped.get_state()
        assert state.dtype == np.float64 and state.ndim == 1
        env.unwrapped.set_state(state)
        np.testing.assert_array_equal(env.unwrapped.get_state(), state)
    finally:
        env.close()


def _set_success_state(task: str, env, succeed: bool) -> None:
    """Write a simulator state where ``task`` holds (``succeed``) or does not."""
    scene, layout = env.unwrapped.scene, env.unwrapped.layout
    if task == "PickPlaceCounterToSink":
        basin = scene.site("sink_basin")
        if succeed:
            half = -scene.object.bottom_offset[2]
            pos = np.array([basin[0], basin[1], basin[2] - layout.basin_depth + half + 0.003])
        else:  # on the countertop right next to the basin
            pos = np.array([basin[0], basin[1] + layout.basin_width / 2 + 0.06, basin[2] + 0.1])
        scene.set_object_pose(pos, np.array([1.0, 0.0, 0.0, 0.0]))
    elif task in ("OpenDrawer", "CloseDrawer"):
        open_ = succeed == (task == "OpenDrawer")
        scene.set_joint("drawer_slide", 0.8 * layout.drawer_travel if open_ else 0.0)
    elif task == "CloseCabinetDoor":
        scene.set_joint("cabinet_hinge", 0.0 if succeed else 1.0)
    elif task in ("TurnOnFaucet", "TurnOffFaucet"):
        on = succeed == (task == "TurnOnFaucet")
        scene.set_joint("sink_lever", 0.7 if on else 0.0)
    elif task == "PressMicrowaveButton":  # the latch "the microwave is on" is the last state entry
        state = env.unwrapped.get_state()
        state[-1] = float(succeed)
        env.unwrapped.set_state(state)
    elif task in ("TurnOnStove", "TurnOffStove"):  # the named burner's knob on (0.8 rad) or off
        on = succeed == (task == "TurnOnStove")
        scene.set_joint(f"stove_knob_{env.unwrapped.task.burner(layout)}", 0.8 if on else 0.0)
    elif task in ("PnPCounterToStove", "PnPStoveToCounter"):  # on the named burner or beside the stove
        on_stove = succeed == (task == "PnPCounterToStove")
        burner = scene.site(f"stove_burner_{env.unwrapped.task.burner(layout)}")
        x, y = burner[:2] if on_stove else env.unwrapped.task.counter_spot(layout)
        z = (burner[2] if on_stove else layout.counter_height) - scene.object.bottom_offset[2] + 0.002
        scene.set_object_pose(np.array([x, y, z]), np.array([1.0, 0.0, 0.0, 0.0]))
        for _ in range(10):  # let it land (the check wants it resting)
            env.step(ZERO)
    elif task in ("TurnOnMicrowave", "TurnOffMicrowave"):  # the on-latch (last state entry), arm swung away
        scene.mj_data.qpos[scene.arm_qpos[0]] += 0.8  # RoboCasa: the gripper far from the button
        state = env.unwrapped.get_state()
        state[-1] = float(succeed == (task == "TurnOnMicrowave"))
        env.unwrapped.set_state(state)
    elif task in ("OpenMicrowaveDoor", "CloseMicrowaveDoor"):
        open_ = succeed == (task == "OpenMicrowaveDoor")
        scene.set_joint("microwave_door", 1.5 if open_ else 0.0)
    elif task in ("OpenSingleDoor", "CloseSingleDoor", "OpenDoubleDoor", "CloseDoubleDoor"):
        from embodia.envs.kitchen.door_tasks import cabinet_doors

        open_ = succeed == task.startswith("Open")
        for door in cabinet_doors(layout):  # every door 95 % of a quarter turn open, or closed
            scene.set_joint(door.joint, 0.95 * np.pi / 2 if open_ else 0.0)
    elif task == "TurnSinkSpout":  # the spout 0.8 rad toward the instructed side, or the other way
        scene.set_joint("sink_spout", (0.8 if succeed else -0.8) * layout.spout_turn)
    elif task == "PnPSinkToCounter":  # at the back of the countertop beside the sink, or in the basin
        from embodia.envs.kitchen.sink_tasks import PnPSinkToCounter

        half = -scene.object.bottom_offset[2]
        basin = scene.site("sink_basin")
        if succeed:  # resting on it: the object's lowest collision point on the countertop
            import mujoco

            y = PnPSinkToCounter.counter_spot_y(layout)
            pos = np.array([layout.counter_depth - 0.1, y, layout.counter_height + 0.3])
            scene.set_object_pose(pos, np.array([1.0, 0.0, 0.0, 0.0]))
            mujoco.mj_forward(scene.mj_model, scene.mj_data)
            aabb = scene.mj_model.geom_aabb[scene.object_geoms]
            lowest = min(scene.mj_data.geom_xpos[scene.object_geoms, 2] + aabb[:, 2] - aabb[:, 5])
            pos[2] += layout.counter_height - lowest
        else:
            pos = np.array([basin[0], basin[1], basin[2] - layout.basin_depth + half + 0.003])
        scene.set_object_pose(pos, np.array([1.0, 0.0, 0.0, 0.0]))
    elif task in ("CoffeeSetupMug", "CoffeeServeMug", "CoffeePressButton"):
        from tests.envs.kitchen.test_coffee_tasks import set_coffee_success_state

        set_coffee_success_state(task, env, succeed)
    elif task in ("PnPCounterToMicrowave", "PnPMicrowaveToCounter"):  # on the plate or the counter, arm away
        in_microwave = succeed == (task == "PnPCounterToMicrowave")
        x, y, z = scene.site("microwave_plate")
        if not in_microwave:
            (x, y), z = env.unwrapped.task.counter_spot(scene), layout.counter_height
        scene.set_object_pose(
            np.array([x, y, z - scene.object.bottom_offset[2] + 0.002]), np.array([1.0, 0, 0, 0])
        )
        for _ in range(40):  # 0.08 s: the object settles on the surface
            scene.sim.step()
        scene.mj_data.qpos[scene.arm_qpos[0]] -= 0.8  # RoboCasa: the gripper 25 cm from the object
        env.unwrapped.set_state(env.unwrapped.get_state())
    else:
        raise AssertionError(f"no success state for {task}")


@pytest.mark.parametrize("task", list(TASKS))
def test_success_check_holds_and_fails(task):
    env = embodia.make(f"embodia/Kitchen-{task}-v0")
    try:
        env.reset(seed=1)
        start = env.unwrapped.get_state()
        results = {}
        for succeed in (True, False):
            env.unwrapped.set_state(start)
            _set_success_state(task, env, succeed)
            *_, info = env.step(ZERO)
            results[succeed] = info["success"]
        assert results == {True: True, False: False}
    finally:
        env.close()


def test_microwave_stays_on_after_the_button_springs_back():
    env = embodia.make("embodia/Kitchen-PressMicrowaveButton-v0", terminate_on_success=False)
    obs, _ = env.reset(seed=0)
    expert = env.unwrapped.make_expert()
    expert.reset(0)
    before = env.unwrapped.get_state()
    for _ in range(150):
        obs, _, _, _, info = env.step(expert.act(obs))
        if info["success"]:
            break
    assert info["success"] and env.unwrapped.scene.joint("microwave_button") >= 0.006
    for _ in range(40):  # the expert lets go; the spring pushes the button out; the microwave stays on
        obs, _, _, _, info = env.step(expert.act(obs))
    assert env.unwrapped.scene.joint("microwave_button") < 0.003 and info["success"]
    pressed = env.unwrapped.get_state()
    env.unwrapped.set_state(before)  # the latch is part of the saved state
    *_, info = env.step(ZERO)
    assert not info["success"]
    env.unwrapped.set_state(pressed)
    *_, info = env.step(ZERO)
    assert info["success"]
    env.close()


@pytest.mark.parametrize(
    ("task", "seed"),
    [
        ("PickPlaceCounterToSink", 100),
        ("OpenDrawer", 100),
        ("CloseDrawer", 100),
        ("CloseCabinetDoor", 100),
        ("TurnOnFaucet", 100),
        ("TurnOffFaucet", 100),
        ("PressMicrowaveButton", 100),
        ("OpenDrawer", 101),
        ("PickPlaceCounterToSink", 101),
    ],
)
def test_expert_succeeds(task, seed):
    result = embodia.rollout(f"embodia/Kitchen-{task}-v0", "expert", episodes=1, seed=seed)
    assert result.success_rate == 1.0, f"{task} seed {seed}: expert failed"
    assert result.episodes[0].terminated  # episodes end on success


def test_seeds_give_different_kitchens_and_leave_the_global_rng_alone():
    np.random.seed(7)
    before = np.random.get_state()[1].copy()
    env = embodia.make("embodia/Kitchen-OpenDrawer-v0")
    layouts, observations = [], []
    for seed in (5, 5, 6):
        obs, _ = env.reset(seed=seed)
        layouts.append(env.unwrapped.layout.to_vector())
        for _ in range(3):
            obs, *_ = env.step(np.full(7, 0.3, dtype=np.float32))
        observations.append(obs["state"])
    env.close()
    assert np.array_equal(np.random.get_state()[1], before), "the env touched NumPy's global generator"
    np.testing.assert_array_equal(layouts[0], layouts[1])
    np.testing.assert_array_equal(observations[0], observations[1])
    assert not np.array_equal(layouts[0], layouts[2])


def test_one_environment_id_records_one_state_size(tmp_path):
    # a store holds one state shape: kitchens drawn by different seeds must not add or drop joints (the wall
    # cabinet drew one or two doors once, and recording a pick-and-place task broke on the fourth episode)
    store = tmp_path / "pnp.zarr"
    result = embodia.rollout(
        "embodia/Kitchen-PickPlaceCounterToSink-v0", "random", episodes=6, seed=0, max_steps=2, record=store
    )
    assert len(result.episodes) == 6 and TrajectoryStore(store).num_episodes == 6


def _run(env, actions):
    states = []
    for action in actions:
        env.step(action)
        states.append(env.unwrapped.get_state())
    return np.array(states)


def test_set_state_reproduces_the_future_and_rebuilds_another_kitchen():
    env = embodia.make("embodia/Kitchen-CloseCabinetDoor-v0")
    actions = np.random.default_rng(0).uniform(-1, 1, size=(30, 7)).astype(np.float32)
    env.reset(seed=11)
    _run(env, actions[:10])
    saved = env.unwrapped.get_state()
    future = _run(env, actions[10:])
    env.reset(seed=12)  # another kitchen: set_state must rebuild the saved one
    assert not np.array_equal(
        env.unwrapped.layout.to_vector(), saved[: len(env.unwrapped.layout.to_vector())]
    )
    env.unwrapped.set_state(saved)
    np.testing.assert_array_equal(env.unwrapped.get_state(), saved)
    np.testing.assert_array_equal(_run(env, actions[10:]), future)
    with pytest.raises(ValueError, match="another environment or robot"):
        env.unwrapped.set_state(np.concatenate([saved, [0.0]]))
    env.close()


def test_recorded_expert_episode_replays_exactly(tmp_path):
    store_path = tmp_path / "faucet.zarr"
    result = embodia.rollout(
        "embodia/Kitchen-TurnOnFaucet-v0",
        "expert",
        episodes=1,
        seed=3,
        record=store_path,
        record_sim_state=True,
    )
    assert result.success_rate == 1.0
    store = TrajectoryStore(store_path)
    assert {"state", "proprio", "instruction", "action", "sim_state"} <= set(store.keys)
    episode = store.episode(0)
    assert decode_instruction(episode["instruction"][0]) == "turn on the sink faucet"
    (replayed,) = replay(store, verify=True, tolerance=1e-9)
    assert replayed.success and replayed.max_deviation <= 1e-9


def test_camera_observations_have_the_requested_shapes():
    env = embodia.make(
        "embodia/Kitchen-PressMicrowaveButton-v0",
        cameras=("agentview", "eye_in_hand"),
        camera_width=64,
        camera_height=48,
    )
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    for key in ("agentview_rgb", "eye_in_hand_rgb"):
        assert obs[key].shape == (48, 64, 3) and obs[key].dtype == np.uint8
        assert obs[key].std() > 5  # an image, not a blank buffer
    first = obs["eye_in_hand_rgb"]
    for _ in range(5):
        obs, *_ = env.step(np.array([0.5, 0, -0.5, 0, 0, 0, 1], dtype=np.float32))
    assert not np.array_equal(obs["eye_in_hand_rgb"], first)  # the wrist camera moved with the hand
    env.close()


def test_bad_input_raises_clear_errors():
    env = embodia.make("embodia/Kitchen-OpenDrawer-v0")
    env.reset(seed=0)
    with pytest.raises(ActionError, match=r"shape \(6,\).*expects \(7,\)"):
        env.step(np.zeros(6))
    with pytest.raises(ActionError, match="NaN"):
        env.step(np.array([0, 0, np.nan, 0, 0, 0, 0]))
    env.close()
    with pytest.raises(EmbodiaError, match="unknown camera"):
        embodia.make("embodia/Kitchen-OpenDrawer-v0", cameras=("frontview",))
    with pytest.raises(EmbodiaError, match="single-arm robosuite robots: Panda"):
        embodia.make("embodia/Kitchen-OpenDrawer-v0", robot="Baxter")


def test_other_robosuite_arms_are_selectable():
    env = embodia.make("embodia/Kitchen-TurnOnFaucet-v0", robot="UR5e")
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    assert "robot0_base" in {env.unwrapped.scene.sim.model.body_id2name(i) for i in range(4)}
    obs, *_ = env.step(env.action_space.sample())
    assert np.isfinite(obs["state"]).all()
    env.close()


def test_cli_records_a_clean_demonstration_store(cli, tmp_path):
    store_path = tmp_path / "demos.zarr"
    run = cli(
        "run",
        "embodia/Kitchen-OpenDrawer-v0",
        "--policy",
        "expert",
        "--episodes",
        "1",
        "--seed",
        "4",
        "--record",
        str(store_path),
        "--quiet",
    )
    assert run.returncode == 0, run.stderr
    store = TrajectoryStore(store_path)
    assert store.num_episodes == 1 and bool(store.episode_meta(0).success)
    episode = store.episode(0)
    assert episode["state"].dtype == np.float32 and episode["state"].shape[1] == 33
    assert episode["success"][-1] and not episode["success"][:-1].any()  # the episode ends at success
    check = cli("replay", str(store_path), "--verify")
    assert check.returncode == 0, check.stdout + check.stderr


def test_render_script_writes_the_figures(tmp_path):
    path = Path(__file__).resolve().parents[3] / "scripts" / "render_kitchen.py"
    spec = importlib.util.spec_from_file_location("render_kitchen", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--quick", "--tasks", "TurnOnFaucet", "--out", str(tmp_path)]) == 0
    frames = imageio.mimread(tmp_path / "TurnOnFaucet.gif")
    assert len(frames) > 5 and frames[0].shape[:2] == (120, 160)
    assert not np.array_equal(frames[0], frames[-1])  # the arm moved
    assert imageio.imread(tmp_path / "TurnOnFaucet.png").shape == (120, 160, 3)
    assert imageio.imread(tmp_path / "layouts.png").shape == (120, 320, 3)  # two kitchens side by side
    layouts = imageio.imread(tmp_path / "layouts.png")
    assert not np.array_equal(layouts[:, :160], layouts[:, 160:])  # layouts 0 and 1 differ
    stills = tmp_path / "stills"
    assert module.main(["--quick", "--stills", "--tasks", "TurnOnStove", "--out", str(stills)]) == 0
    # the overview (4:3), then the agent-view and wrist cameras (60 x 60 each)
    assert imageio.imread(stills / "TurnOnStove-cameras.png").shape == (60, 80 + 60 + 60, 3)
    assert not (stills / "TurnOnStove.gif").exists()


def test_benchmark_quick_writes_the_committed_layout(tmp_path):
    out = tmp_path / "kitchen.json"
    bench_kitchen.main(["--quick", "--results", str(out)])
    produced = read_results(out)
    assert layout_differences(produced, read_results(RESULTS_DIR / "benchmarks" / "kitchen.json")) == []
    rows = produced["tables"]["steps"]["rows"]
    assert len(rows) == 5 and all(r["steps_per_second"] > 0 for r in rows)


def test_the_overview_camera_is_an_observation_camera_too():
    env = embodia.make(
        "embodia/Kitchen-OpenDrawer-v0", cameras=("overview",), camera_width=32, camera_height=24
    )
    try:
        obs, _ = env.reset(seed=0)
        assert obs["overview_rgb"].shape == (24, 32, 3) and obs["overview_rgb"].std() > 0
        assert env.observation_space.contains(obs) and "overview" in env.unwrapped.camera_names
    finally:
        env.close()
