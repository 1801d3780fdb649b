"""Re-rendering: state-only recordings become pixel stores identical to rendering (or recording) live."""

from __future__ import annotations

import numpy as np
import pytest
import zarr

import embodia
from embodia.core.errors import EmbodiaError, ReplayMismatchError, StoreError
from embodia.data.store import TrajectoryStore
from embodia.runner import rollout
from embodia.runner.replay import replay_episode
from embodia.runner.rerender import available_cameras, plan_cameras, rerender

POINTMAZE = "embodia/PointMaze-Medium-v0"
KITCHEN = "embodia/Kitchen-OpenDrawer-v0"


@pytest.fixture(scope="module")
def maze_states(tmp_path_factory):
    """Two short expert PointMaze episodes recorded with a simulator state at every step, no pixels."""
    path = tmp_path_factory.mktemp("maze") / "states.zarr"
    rollout(POINTMAZE, "expert", episodes=2, seed=3, record=path, record_sim_state=True, max_steps=12)
    return path


def _assert_same_episodes(a: TrajectoryStore, b: TrajectoryStore, keys: list[str]) -> None:
    assert a.num_episodes == b.num_episodes and list(a.episode_lengths) == list(b.episode_lengths)
    for i in range(a.num_episodes):
        left, right = a.episode(i, keys), b.episode(i, keys)
        for key in keys:
            assert left[key].dtype == right[key].dtype, key
            np.testing.assert_array_equal(left[key], right[key], err_msg=f"episode {i}, key {key}")


def test_state_only_pointmaze_becomes_pixels_identical_to_rendering_the_states_live(maze_states, tmp_path):
    out = tmp_path / "pixels.zarr"
    result = rerender(maze_states, out, ["render"], (32, 48))
    source, new = TrajectoryStore(maze_states), TrajectoryStore(out)
    assert (
        result.episodes == 2
        and result.restored_states == 2
        and result.image_keys == {"render_rgb": (32, 48, 3)}
    )
    assert new.keys == [*source.obs_keys, "render_rgb", *source.keys[len(source.obs_keys) :]]
    assert new.schema["render_rgb"] == {"shape": [32, 48, 3], "dtype": "uint8", "role": "obs"}
    _assert_same_episodes(source, new, source.keys)  # every original key bit for bit
    assert new.fps == source.fps
    # live: a fresh environment restores each recorded state and renders it
    env = embodia.make(POINTMAZE, render_mode="rgb_array", width=48, height=32)
    try:
        for i in range(source.num_episodes):
            meta, new_meta = source.episode_meta(i), new.episode_meta(i)
            assert (new_meta.env_id, new_meta.seed, new_meta.success) == (
                meta.env_id,
                meta.seed,
                meta.success,
            )
            assert new_meta.env_kwargs == {**meta.env_kwargs, "width": 48, "height": 32}
            np.testing.assert_array_equal(new_meta.initial_state, meta.initial_state)
            np.testing.assert_array_equal(new_meta.final_state, meta.final_state)
            env.reset(seed=meta.seed)
            live = []
            for state in source.episode(i, ["sim_state"])["sim_state"]:
                env.unwrapped.set_state(state)
                live.append(env.render())
            frames = new.episode(i, ["render_rgb"])["render_rgb"]
            np.testing.assert_array_equal(frames, np.stack(live))
            assert not np.array_equal(frames[0], frames[-1])  # the point moved: real renderings, not blanks
    finally:
        env.close()


def test_initial_state_alone_is_resimulated_and_matches_replay_frames(tmp_path):
    source_path = tmp_path / "initial.zarr"
    rollout(POINTMAZE, "expert", episodes=1, seed=5, record=source_path, max_steps=10)
    source = TrajectoryStore(source_path)
    assert "sim_state" not in source.keys  # initial and final states only
    result = rerender(source, tmp_path / "pixels.zarr", ["render"], 40)
    assert result.restored_states == 0
    frames = TrajectoryStore(tmp_path / "pixels.zarr").episode(0, ["render_rgb"])["render_rgb"]
    replayed = replay_episode(source, 0, render=True, width=40, height=40)  # renders live while re-simulating
    np.testing.assert_array_equal(frames, np.stack(replayed.frames[:-1]))  # the last is after the last action


@pytest.mark.parametrize("per_step_states", [True, False], ids=["states", "initial-state"])
def test_kitchen_rerender_equals_a_live_recording_with_the_cameras_on(tmp_path, per_step_states):
    cameras = {"cameras": ["agentview", "eye_in_hand"], "camera_height": 32, "camera_width": 40}
    state_only, live = tmp_path / "states.zarr", tmp_path / "live.zarr"
    common = {"episodes": 1, "seed": 2, "record_sim_state": per_step_states, "max_steps": 6}
    rollout(KITCHEN, "expert", record=state_only, **common)
    rollout(KITCHEN, "expert", record=live, env_kwargs=cameras, **common)
    rerender(state_only, tmp_path / "rendered.zarr", ["agentview", "eye_in_hand"], (32, 40))
    rendered, recorded = TrajectoryStore(tmp_path / "rendered.zarr"), TrajectoryStore(live)
    assert rendered.schema == recorded.schema and rendered.keys == recorded.keys
    _assert_same_episodes(rendered, recorded, recorded.keys)  # pixels included, bit for bit
    assert rendered.episode_meta(0).env_kwargs == recorded.episode_meta(0).env_kwargs == cameras
    images = rendered.episode(0, ["agentview_rgb"])["agentview_rgb"]
    assert images.std() > 5  # an image, not a blank buffer


def test_the_new_store_keeps_the_source_video_codec_unless_told_otherwise(tmp_path):
    source = tmp_path / "video.zarr"
    with TrajectoryStore(source, mode="a", video_codec="h264") as store:
        rollout(POINTMAZE, "expert", episodes=1, seed=0, record=store, record_sim_state=True, max_steps=8)
    rerender(source, tmp_path / "same.zarr", ["render"], 32)
    rerender(source, tmp_path / "raw.zarr", ["render"], 32, video_codec="none")
    same, raw = TrajectoryStore(tmp_path / "same.zarr"), TrajectoryStore(tmp_path / "raw.zarr")
    assert (same.video_codec, same.video_keys) == ("h264", ["render_rgb"])
    assert raw.video_codec in (None, "none") and raw.video_keys == []
    assert same.fps == raw.fps == TrajectoryStore(source).fps
    assert same.episode(0)["render_rgb"].shape == raw.episode(0)["render_rgb"].shape == (8, 32, 32, 3)


def test_cameras_the_environment_has(maze_states):
    assert available_cameras(POINTMAZE) == ("render",)
    assert available_cameras(KITCHEN) == ("agentview", "eye_in_hand", "overview", "render")


def test_cameras_recorded_live_are_rendered_again_only_with_other_observation_cameras():
    recorded = {"task": "x", "cameras": ["agentview"], "camera_height": 24, "camera_width": 24}
    plan = plan_cameras(KITCHEN, recorded, ["eye_in_hand"], (32, 40))
    assert plan.observation_cameras == ("agentview", "eye_in_hand") and not plan.render
    assert plan.image_keys == ("agentview_rgb", "eye_in_hand_rgb")
    assert plan.env_kwargs == {
        **recorded,
        "cameras": ["agentview", "eye_in_hand"],
        "camera_height": 32,
        "camera_width": 40,
    }
    plan = plan_cameras(KITCHEN, recorded, ["render"], (32, 40))
    assert plan.image_keys == ("render_rgb",)
    assert plan.env_kwargs == {**recorded, "height": 32, "width": 40}  # the recorded cameras as they were


def test_refusals_leave_nothing_behind(maze_states, tmp_path):
    out = tmp_path / "nested" / "new.zarr"
    with pytest.raises(
        EmbodiaError, match=r"unknown camera 'wrist' for embodia/PointMaze-Medium-v0; its cameras: render$"
    ):
        rerender(maze_states, out, ["render", "wrist"], 32)
    stateless = tmp_path / "stateless.zarr"
    with TrajectoryStore(stateless, mode="a") as store:
        store.add_episode(
            {"state": np.zeros((3, 4), np.float32), "action": np.zeros((3, 2), np.float32)}, env_id=POINTMAZE
        )
    with pytest.raises(StoreError, match="has no simulator state.*--record-sim-state"):
        rerender(stateless, out, ["render"], 32)
    with pytest.raises(EmbodiaError, match="image size"):
        rerender(maze_states, out, ["render"], (0, 32))
    assert not (tmp_path / "nested").exists()
    # an existing store is never written into
    with pytest.raises(StoreError, match="already holds a trajectory store"):
        rerender(maze_states, stateless, ["render"], 32)
    assert TrajectoryStore(stateless).keys == ["state", "action"]


def test_a_failure_midway_leaves_no_destination(tmp_path):
    source = tmp_path / "initial.zarr"
    rollout(POINTMAZE, "random", episodes=2, seed=0, record=source, max_steps=8)
    actions = zarr.open_group(str(source), mode="r+")["data/action"]
    actions[12] = -np.asarray(actions[12])  # episode 1 no longer re-simulates to its recorded observations
    out = tmp_path / "out" / "pixels.zarr"
    with pytest.raises(ReplayMismatchError, match="cannot rerender episode 1 .* nothing was written"):
        rerender(source, out, ["render"], 16)
    assert not (tmp_path / "out").exists()  # no destination, no hidden partial store, no created folder
    assert sorted(p.name for p in tmp_path.iterdir()) == ["initial.zarr"]
