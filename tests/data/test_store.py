"""TrajectoryStore: layout, append/commit, reading, schema and format checks, recovery."""

from __future__ import annotations

import json

import numpy as np
import pytest
import zarr

from embodia.core.errors import (
    StoreCorruptError,
    StoreError,
    StoreFormatError,
    StoreNotFoundError,
    StoreSchemaError,
)
from embodia.data.store import FORMAT_VERSION, READABLE_FORMATS, TrajectoryStore


def make_episode(length: int, offset: float = 0.0, state_dim: int = 3) -> dict[str, np.ndarray]:
    t = np.arange(length, dtype=np.float32)
    return {
        "state": np.stack([t + offset] * state_dim, axis=1),
        "action": np.stack([t, -t], axis=1).astype(np.float32),
        "reward": np.ones(length, dtype=np.float32),
        "terminated": np.zeros(length, dtype=bool),
        "truncated": np.eye(1, length, length - 1, dtype=bool)[0],
        "success": np.zeros(length, dtype=bool),
    }


def test_layout_and_roundtrip(tmp_path):
    store = TrajectoryStore(tmp_path / "s.zarr", mode="a")
    assert store.add_episode(make_episode(5), env_id="embodia/X-v0", env_kwargs={"task_id": 2}, seed=7) == 0
    assert store.add_episode(make_episode(3, offset=100), env_id="embodia/X-v0", seed=8, success=True) == 1

    root = zarr.open_group(str(tmp_path / "s.zarr"), mode="r")
    assert root.attrs["embodia_format"] == FORMAT_VERSION
    assert list(root["meta/episode_ends"][:3]) == [5, 8, 0]  # the rest is unused capacity
    assert set(root["data"].array_keys()) == {
        "state",
        "action",
        "reward",
        "terminated",
        "truncated",
        "success",
    }
    assert root["data/state"].shape[0] >= 8 and root["data/state"].shape[1:] == (3,)
    np.testing.assert_array_equal(root["data/state"][5:8], make_episode(3, offset=100)["state"])

    reopened = TrajectoryStore(tmp_path / "s.zarr")
    assert len(reopened) == 2 and reopened.num_steps == 8
    assert reopened.obs_keys == ["state"]
    np.testing.assert_array_equal(reopened.episode(1)["state"], make_episode(3, offset=100)["state"])
    np.testing.assert_array_equal(reopened.episode(-1)["action"], make_episode(3)["action"])
    meta = reopened.episode_meta(0)
    assert (meta.env_id, meta.env_kwargs, meta.seed, meta.length, meta.return_) == (
        "embodia/X-v0",
        {"task_id": 2},
        7,
        5,
        5.0,
    )
    assert reopened.episode_meta(1).success is True
    summary = reopened.summary()
    assert (
        summary["episodes"] == 2 and summary["success_rate"] == 0.5 and summary["env_ids"] == ["embodia/X-v0"]
    )
    with pytest.raises(IndexError):
        reopened.episode(2)


def test_initial_and_final_state_columns(tmp_path):
    store = TrajectoryStore(tmp_path / "s.zarr", mode="w")
    store.add_episode(make_episode(4), env_id="e", initial_state=np.arange(6.0), final_state=np.ones(6))
    meta = TrajectoryStore(tmp_path / "s.zarr").episode_meta(0)
    np.testing.assert_array_equal(meta.initial_state, np.arange(6.0))
    np.testing.assert_array_equal(meta.final_state, np.ones(6))
    with pytest.raises(StoreSchemaError, match="initial_state"):
        store.add_episode(make_episode(4), env_id="e", initial_state=np.zeros(5))


def test_schema_mismatch_is_rejected_and_loses_nothing(tmp_path):
    store = TrajectoryStore(tmp_path / "s.zarr", mode="a")
    store.add_episode(make_episode(4), env_id="e")
    with pytest.raises(StoreSchemaError, match="'state' is float32\\(4,\\), store has float32\\(3,\\)"):
        store.add_episode(make_episode(4, state_dim=4), env_id="e")
    bad = make_episode(4)
    bad["action"] = bad["action"][:3]
    with pytest.raises(StoreSchemaError, match="share their length"):
        store.add_episode(bad, env_id="e")
    assert len(TrajectoryStore(tmp_path / "s.zarr")) == 1


def test_missing_store_and_not_a_store(tmp_path):
    with pytest.raises(StoreNotFoundError, match="does not exist"):
        TrajectoryStore(tmp_path / "nope.zarr")
    (tmp_path / "dir.zarr").mkdir()
    with pytest.raises(StoreNotFoundError, match="empty directory"):
        TrajectoryStore(tmp_path / "dir.zarr")
    zarr.open_group(str(tmp_path / "plain.zarr"), mode="w")
    with pytest.raises(StoreError, match="not an embodia trajectory store"):
        TrajectoryStore(tmp_path / "plain.zarr")


def test_format_version_is_checked(tmp_path):
    TrajectoryStore(tmp_path / "s.zarr", mode="a").add_episode(make_episode(2), env_id="e")
    newer = max(READABLE_FORMATS) + 1
    zarr.open_group(str(tmp_path / "s.zarr"), mode="r+").attrs["embodia_format"] = newer
    with pytest.raises(
        StoreFormatError, match=f"format version {newer}, this embodia .* reads versions 1, 2"
    ):
        TrajectoryStore(tmp_path / "s.zarr")


def test_corrupt_store(tmp_path):
    TrajectoryStore(tmp_path / "s.zarr", mode="a").add_episode(make_episode(2), env_id="e")
    (tmp_path / "s.zarr" / "zarr.json").write_text("{not json")
    with pytest.raises(StoreCorruptError, match="root metadata"):
        TrajectoryStore(tmp_path / "s.zarr")


def test_read_only_store_refuses_writes(tmp_path):
    TrajectoryStore(tmp_path / "s.zarr", mode="a").add_episode(make_episode(2), env_id="e")
    with pytest.raises(StoreError, match="read-only"):
        TrajectoryStore(tmp_path / "s.zarr").add_episode(make_episode(2), env_id="e")


def test_uncommitted_rows_are_invisible_and_overwritten(tmp_path):
    """Simulate a writer killed after writing an episode's rows and table row, before the commit."""
    with TrajectoryStore(tmp_path / "s.zarr", mode="a") as store:
        store.add_episode(make_episode(4), env_id="e")
    root = zarr.open_group(str(tmp_path / "s.zarr"), mode="r+")
    for key, value in make_episode(6, offset=50).items():
        root["data"][key][4:10] = value  # data written ...
    root["meta/episodes/length"][1] = 6  # ... and the table row, but episode_ends never extended

    reader = TrajectoryStore(tmp_path / "s.zarr")
    assert len(reader) == 1 and reader.num_steps == 4
    assert reader.load(["state"])["state"].shape == (4, 3)
    assert reader.episodes_table()["length"].tolist() == [4]

    writer = TrajectoryStore(tmp_path / "s.zarr", mode="a")
    writer.add_episode(make_episode(2, offset=9), env_id="e")
    final = TrajectoryStore(tmp_path / "s.zarr")
    assert list(final.episode_ends) == [4, 6]
    np.testing.assert_array_equal(final.episode(1)["state"], make_episode(2, offset=9)["state"])
    assert final.episodes_table()["length"].tolist() == [4, 2]


def test_capacity_grows_past_the_first_allocation(tmp_path):
    store = TrajectoryStore(tmp_path / "s.zarr", mode="a")
    for i in range(3):
        store.add_episode(make_episode(700, offset=i), env_id="e")
    reread = TrajectoryStore(tmp_path / "s.zarr")
    assert reread.num_steps == 2100
    np.testing.assert_array_equal(reread.episode(2)["state"], make_episode(700, offset=2)["state"])


def test_env_kwargs_are_json(tmp_path):
    store = TrajectoryStore(tmp_path / "s.zarr", mode="a")
    store.add_episode(make_episode(2), env_id="e", env_kwargs={"width": 64, "name": "a"})
    raw = zarr.open_group(str(tmp_path / "s.zarr"))["meta/episodes/env_kwargs"][0]
    assert json.loads(str(raw)) == {"name": "a", "width": 64}
