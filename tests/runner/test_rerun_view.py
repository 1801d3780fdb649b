"""Rerun export of trajectory stores and live rollouts (``embodia/runner/rerun_view.py``), read back with
Rerun's own ``.rrd`` reader."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from rerun.chunk import RrdReader

import embodia
from embodia.core.errors import EpisodeIndexError, OutputPathError, StoreNotFoundError
from embodia.data.store import TrajectoryStore
from embodia.envs.kitchen import decode_instruction
from embodia.runner.hooks import EpisodeHook
from embodia.runner.rerun_view import NavMap, RerunHook, default_blueprint, export_store

NAV = "embodia/Nav-PointNav-v0"
TIMELINES = {"step", "episode_step", "episode"}


def read_recording(path: str | Path) -> dict[str, pa.Table]:
    """entity path -> its timed rows (static rows left out), as one arrow table per entity."""
    batches: dict[str, list[pa.RecordBatch]] = {}
    for chunk in RrdReader(path).stream():
        batch = chunk.to_record_batch()
        if "step" in batch.schema.names:
            batches.setdefault(chunk.entity_path.lstrip("/"), []).append(batch)
    return {path: pa.Table.from_batches(parts).combine_chunks() for path, parts in batches.items()}


def column(table: pa.Table, suffix: str) -> list:
    """Per row, the value of the one column whose name ends with ``suffix`` (e.g. ``TextLog:text``)."""
    (name,) = [n for n in table.column_names if n.endswith(suffix)]
    return [v[0] if isinstance(v, list) and len(v) == 1 else v for v in table.column(name).to_pylist()]


class Poses(EpisodeHook):
    """Positions of robot 0 after every step of a navigation episode (ground truth for the drawn path)."""

    def __init__(self) -> None:
        self.episodes: list[np.ndarray] = []

    def begin(self, env, seed, obs, info) -> None:
        self.episodes.append([env.unwrapped.backend.get_pose(0)[0][:2].copy()])

    def step(self, env, step) -> None:
        self.episodes[-1].append(env.unwrapped.backend.get_pose(0)[0][:2].copy())


@pytest.fixture(scope="module")
def nav_store(tmp_path_factory) -> tuple[Path, Poses]:
    path = tmp_path_factory.mktemp("nav") / "nav.zarr"
    poses = Poses()
    embodia.rollout(NAV, "expert", episodes=3, seed=4, max_steps=20, record=path, hooks=[poses])
    return path, poses


def test_a_store_exports_every_key_on_three_timelines_with_one_row_per_step(nav_store, tmp_path):
    store_path, _ = nav_store
    lengths = TrajectoryStore(store_path).episode_lengths
    summary = export_store(store_path, tmp_path / "nav.rrd")
    assert summary["episodes"] == [0, 1, 2] and summary["steps"] == lengths.sum()
    entities = read_recording(tmp_path / "nav.rrd")
    per_step = ["obs/rgb", "obs/depth", "obs/gps", "obs/compass", "obs/goal", "action", "reward", "success"]
    for path in [*per_step, "flags/terminated", "flags/truncated", "map/agent"]:
        assert entities[path].num_rows == lengths.sum(), path
        assert set(entities[path].column_names) >= TIMELINES, path
    assert "Image:buffer" in entities["obs/rgb"].column_names
    assert "DepthImage:buffer" in entities["obs/depth"].column_names
    reward = entities["reward"]
    assert reward.column("step").to_pylist() == list(range(lengths.sum()))
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    assert reward.column("episode_step").to_pylist() == [
        i for n in lengths for i in range(n)
    ] and reward.column("episode").to_pylist() == [e for e, n in enumerate(lengths) for _ in range(n)]
    assert [len(v) for v in column(entities["obs/gps"], "Scalars:scalars")] == [2] * lengths.sum()
    notes = column(entities["episodes"], "TextLog:text")
    assert (
        len(notes) == 3 and notes[1].startswith("episode 1, seed 5, ") and f"length {lengths[1]}" in notes[1]
    )
    assert entities["episodes"].column("step").to_pylist() == starts.tolist()
    assert len(RrdReader(tmp_path / "nav.rrd").blueprints()) == 1  # the default layout travels with it


def test_the_default_layout_has_a_view_for_every_kind_of_entity():
    import rerun.blueprint as rrb

    kinds = {
        "obs/rgb": "image",
        "obs/depth": "depth",
        "map": "map",
        "obs/state": "scalars",
        "action": "scalars",
    }
    kinds |= {"reward": "scalars", "success": "scalars", "instruction": "text", "episodes": "log"}
    layout = default_blueprint(kinds).root_container
    pictures, series, text = layout.contents
    assert [v.origin for v in pictures.contents] == ["obs/rgb", "obs/depth", "map"]
    assert [v.origin for v in series.contents] == ["action", "obs/state", "/"]  # reward and success together
    assert [type(v) for v in text.contents] == [rrb.TextDocumentView, rrb.TextLogView]
    assert len(default_blueprint({"obs/state": "scalars"}).root_container.contents) == 1


def test_the_episode_filter_exports_only_the_chosen_episodes(nav_store, tmp_path):
    store_path, _ = nav_store
    lengths = TrajectoryStore(store_path).episode_lengths
    export_store(store_path, tmp_path / "some.rrd", episodes=[2, 0])
    entities = read_recording(tmp_path / "some.rrd")
    assert entities["obs/rgb"].num_rows == lengths[2] + lengths[0]
    assert set(entities["action"].column("episode").to_pylist()) == {0, 2}
    assert entities["map/image"].num_rows == 2


def test_the_nav_map_path_is_the_robots_path_in_map_pixels(nav_store, tmp_path):
    store_path, poses = nav_store
    export_store(store_path, tmp_path / "map.rrd", episodes=[1])
    entities = read_recording(tmp_path / "map.rrd")
    strip = column(entities["map/path"], "LineStrips2D:strips")[0]
    env = embodia.make(NAV)
    env.reset(seed=5)
    nav_map = NavMap.from_env(env)
    truth = np.asarray(poses.episodes[1][:-1])  # positions before each step, as the recorded gps
    assert np.allclose(np.asarray(strip), nav_map.to_pixels(truth), atol=1e-3)
    assert len(strip) == TrajectoryStore(store_path).episode_lengths[1] and np.ptp(truth, axis=0).max() > 0.3
    image = column(entities["map/image"], "Image:buffer")[0]
    assert len(image) == nav_map.topdown.base.size  # the map's own pixels
    goal = column(entities["map/goal"], "Points2D:positions")[0]
    goal_world = np.asarray(env.unwrapped.episode.goals[0], dtype=float).reshape(-1, 3)[0, :2]
    assert np.allclose(goal, nav_map.to_pixels(goal_world[None])[0], atol=1e-2)
    env.close()


def test_a_kitchen_store_carries_its_instruction_and_state(tmp_path):
    store_path = tmp_path / "kitchen.zarr"
    embodia.rollout("embodia/Kitchen-OpenDrawer-v0", "random", episodes=1, max_steps=10, record=store_path)
    expected = decode_instruction(TrajectoryStore(store_path).episode(0, ["instruction"])["instruction"][0])
    export_store(store_path, tmp_path / "kitchen.rrd")
    entities = read_recording(tmp_path / "kitchen.rrd")
    assert "drawer" in expected.lower() and column(entities["instruction"], "TextDocument:text") == [expected]
    assert "obs/instruction" not in entities  # text, not 96 series of byte values
    assert [len(v) for v in column(entities["obs/state"], "Scalars:scalars")] == [33] * 10
    assert entities["action"].num_rows == 10


def test_bad_stores_episodes_and_outputs_are_refused(nav_store, tmp_path):
    store_path, _ = nav_store
    with pytest.raises(StoreNotFoundError):
        export_store(tmp_path / "missing.zarr", tmp_path / "a.rrd")
    with pytest.raises(EpisodeIndexError):
        export_store(store_path, tmp_path / "b.rrd", episodes=[7])
    assert not (tmp_path / "b.rrd").exists() and list(tmp_path.iterdir()) == []
    (tmp_path / "c.rrd").write_bytes(b"keep me")
    with pytest.raises(OutputPathError, match="already exists"):
        export_store(store_path, tmp_path / "c.rrd")
    assert (tmp_path / "c.rrd").read_bytes() == b"keep me"
    export_store(store_path, tmp_path / "c.rrd", episodes=[0], overwrite=True)
    assert (
        read_recording(tmp_path / "c.rrd")["action"].num_rows
        == TrajectoryStore(store_path).episode_lengths[0]
    )


class StopAfter:
    """A policy that turns left, then is interrupted (Ctrl-C) at its ``stop_at``-th call."""

    def __init__(self, stop_at: int) -> None:
        self.stop_at, self.calls = stop_at, 0

    def reset(self, seed=None) -> None:
        pass

    def act(self, obs) -> np.ndarray:
        self.calls += 1
        if self.calls == self.stop_at:
            raise KeyboardInterrupt
        return np.array(2)


def test_the_hook_logs_live_episodes_and_an_interrupted_one(tmp_path):
    hook = RerunHook(tmp_path / "live.rrd")
    result = embodia.rollout(NAV, "random", episodes=2, seed=1, max_steps=8, hooks=[hook])
    env = embodia.make(NAV)
    interrupted = embodia.rollout(env, StopAfter(5), episodes=1, seed=9, hooks=[hook])
    env.close()
    hook.close()
    assert interrupted.interrupted and not interrupted.episodes
    entities = read_recording(tmp_path / "live.rrd")
    steps = sum(e.length for e in result.episodes)
    assert entities["obs/rgb"].num_rows == steps + 4 and entities["action"].num_rows == steps + 4
    notes = column(entities["episodes"], "TextLog:text")
    assert (
        len(notes) == 3
        and "interrupted" in notes[2]
        and "seed 9" in notes[2]
        and "interrupted" not in notes[0]
    )
    assert entities["map/image"].num_rows == 3
    with pytest.raises(OutputPathError):
        RerunHook(tmp_path / "live.rrd")


def test_the_stores_frequency_times_the_episodes_in_seconds(tmp_path):
    episode = {"state": np.zeros((3, 2), np.float32), "action": np.zeros((3, 1), np.float32)}
    with TrajectoryStore(tmp_path / "timed.zarr", mode="a", fps=4) as store:
        store.add_episodes([(episode, {"env_id": "e"}), (episode, {"env_id": "e"})])
    with TrajectoryStore(tmp_path / "untimed.zarr", mode="a") as store:
        store.add_episode(episode, env_id="e")
    assert export_store(tmp_path / "timed.zarr", tmp_path / "timed.rrd")["fps"] == 4.0
    action = read_recording(tmp_path / "timed.rrd")["action"]
    nanoseconds = action.column("episode_time").cast(pa.int64()).to_pylist()
    assert nanoseconds == [0, 250_000_000, 500_000_000] * 2  # episode_step / fps, restarting per episode
    assert export_store(tmp_path / "untimed.zarr", tmp_path / "untimed.rrd")["fps"] is None
    assert "episode_time" not in read_recording(tmp_path / "untimed.rrd")["action"].column_names
