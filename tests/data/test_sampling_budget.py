"""WindowSampler under a memory budget: streamed windows, start distribution, corruption, memory held."""

from __future__ import annotations

import gc
import pickle
import threading
import tracemalloc

import numpy as np
import pytest

from embodia.core.errors import StoreCorruptError
from embodia.data.sampling import WindowDataset, WindowSampler
from embodia.data.store import TrajectoryStore
from embodia.data.window_stream import BUDGET_ENV, DEFAULT_MEMORY_BUDGET, parse_bytes, resolve_memory_budget

IMAGE = (32, 32, 3)  # 3 KiB rows: 32-row chunks
BUDGET = 4 << 20  # the store below holds ~9 MB of rows


def episodes(lengths: list[int], terminal: list[bool]) -> list[tuple[dict, dict]]:
    """Episodes whose rows carry (episode, step, global row) in their state and image pixels."""
    out, row = [], 0
    for e, (length, term) in enumerate(zip(lengths, terminal)):
        rows = np.arange(row, row + length)
        rgb = np.zeros((length, *IMAGE), dtype=np.uint8)
        rgb[..., 0] = (rows % 256)[:, None, None]
        rgb[..., 1] = (rows // 256)[:, None, None]
        rgb[..., 2] = e
        terminated = np.zeros(length, dtype=bool)
        terminated[-1] = term
        data = {
            "rgb": rgb,
            "state": np.stack([np.full(length, e), np.arange(length), rows], axis=1).astype(np.float32),
            "action": np.stack([np.full(length, e), np.arange(length)], axis=1).astype(np.float32),
            "reward": (np.arange(length) + 1).astype(np.float32),
            "terminated": terminated,
        }
        out.append((data, {"env_id": "synthetic/Rows-v0"}))
        row += length
    return out


@pytest.fixture(scope="module")
def pixel_store(tmp_path_factory):
    rng = np.random.default_rng(0)
    lengths = rng.integers(2, 90, size=60).tolist()
    terminal = (rng.uniform(size=60) < 0.4).tolist()
    path = tmp_path_factory.mktemp("budget") / "pixels.zarr"
    with TrajectoryStore(path, mode="w") as store:
        store.add_episodes(episodes(lengths, terminal))
    return path


def assert_same_windows(a: dict, b: dict) -> None:
    for key in ("action", "reward", "valid", "terminal", "steps"):
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)
    for part in ("obs", "next_obs"):
        assert a[part].keys() == b[part].keys()
        for key in a[part]:
            np.testing.assert_array_equal(a[part][key], b[part][key], err_msg=f"{part}/{key}")
            assert a[part][key].dtype == b[part][key].dtype


@pytest.mark.parametrize("horizon", [1, 4])
def test_streamed_windows_equal_in_memory_windows(pixel_store, horizon):
    store = TrajectoryStore(pixel_store)
    memory = WindowSampler(store, horizon=horizon, seed=0)
    streaming = WindowSampler(store, horizon=horizon, seed=0, memory_budget=BUDGET)
    assert not memory.streaming and streaming.streaming
    assert streaming.plan.streamed == ["rgb"] and "state" in streaming.arrays
    assert streaming.plan.block_rows % 32 == 0  # whole chunks
    np.testing.assert_array_equal(streaming.starts, memory.starts)
    for _ in range(40):
        batch = streaming.sample(128)
        assert_same_windows(batch, memory.windows(streaming.last_starts))
    # windows() at arbitrary starts (read through the chunk cache) as well
    starts = np.random.default_rng(1).choice(memory.starts, size=200)
    assert_same_windows(streaming.windows(starts), memory.windows(starts))
    streaming.close()


def test_streamed_windows_never_cross_episodes(pixel_store):
    sampler = WindowSampler(TrajectoryStore(pixel_store), horizon=5, seed=3, memory_budget=BUDGET)
    for _ in range(20):
        batch = sampler.sample(256)
        episode = batch["obs"]["rgb"][:, 0, 0, 2]
        assert (batch["next_obs"]["rgb"][:, 0, 0, 2] == episode).all()
        assert (batch["action"][..., 0] == episode[:, None]).all()
        row = batch["obs"]["state"][:, 2]
        assert (batch["obs"]["rgb"][:, 0, 0, 0] == row % 256).all()
        # the bootstrap observation is `steps` rows on, or the last row after a terminal
        next_row = batch["next_obs"]["state"][:, 2]
        expected = np.where(batch["terminal"], row + batch["steps"] - 1, row + batch["steps"])
        np.testing.assert_array_equal(next_row, expected)
    sampler.close()


def test_start_distribution_is_close_to_uniform(pixel_store):
    store = TrajectoryStore(pixel_store)
    sampler = WindowSampler(store, horizon=4, seed=5, memory_budget=BUDGET)
    stream = sampler._stream
    n_starts = len(sampler.starts)
    assert stream.pool_size < len(stream.blocks) / 2  # batches really come from a part of the store
    passes = 8
    batches = round(passes * 4.0 * n_starts / 256)  # reuse 4: each start drawn 4 times per pass
    counts = np.zeros(store.num_steps, dtype=np.int64)
    for _ in range(batches):
        sampler.sample(256)
        np.add.at(counts, sampler.last_starts, 1)
    sampler.close()
    counts = counts[sampler.starts]
    assert counts.sum() == batches * 256
    expected = counts.sum() / n_starts
    # Pearson's chi-square against uniform, as a z-score (Wilson-Hilferty): iid draws give |z| < 3.
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    df = n_starts - 1
    z = ((chi2 / df) ** (1 / 3) - (1 - 2 / (9 * df))) / np.sqrt(2 / (9 * df))
    assert abs(z) < 4.0, (chi2, df, z)
    # Total variation from uniform: no larger than iid sampling's (same number of draws) by much.
    iid = np.bincount(np.random.default_rng(0).integers(0, n_starts, size=counts.sum()), minlength=n_starts)
    tv = 0.5 * np.abs(counts / counts.sum() - 1 / n_starts).sum()
    tv_iid = 0.5 * np.abs(iid / iid.sum() - 1 / n_starts).sum()
    assert tv < 1.15 * tv_iid, (tv, tv_iid)
    # Coarse view: each tenth of the store gets its share to within 3 %.
    tenths = np.array_split(counts, 10)
    shares = np.array([t.sum() / counts.sum() / (len(t) / n_starts) for t in tenths])
    assert np.abs(shares - 1).max() < 0.03, shares


def test_in_memory_path_is_unchanged(tmp_path):
    """The batches of the implementation before memory budgets, for the same data and seed."""
    lengths = [37, 5, 60, 12, 41]
    ends = np.cumsum(lengths)
    n = int(ends[-1])
    terminated = np.zeros(n, bool)
    terminated[[ends[1] - 1, ends[3] - 1]] = True
    data = {
        "state": np.arange(n * 3, dtype=np.float32).reshape(n, 3),
        "action": -np.arange(n * 2, dtype=np.float32).reshape(n, 2),
        "reward": np.arange(n, dtype=np.float32) / 10,
        "terminated": terminated,
    }
    expected = [
        [429, 279, 315, 408, 258, 354, 381, 96, 21, 138],
        [132, 396, 414, 0, 225, 375, 54, 363, 51, 210],
        [372, 141, 156, 129, 330, 120, 447, 201, 216, 228],
    ]
    expected_next = [
        [441, 291, 327, 420, 270, 366, 393, 108, 33, 150],
        [144, 408, 426, 12, 237, 387, 66, 375, 63, 222],
        [384, 153, 168, 141, 339, 123, 459, 213, 228, 240],
    ]
    with TrajectoryStore(tmp_path / "s.zarr", mode="w") as store:
        begin = 0
        for end in ends:
            store.add_episode({k: v[begin:end] for k, v in data.items()}, env_id="e")
            begin = end
    store = TrajectoryStore(tmp_path / "s.zarr")
    samplers = [
        WindowSampler(data, horizon=4, episode_ends=ends, seed=7),
        WindowSampler(store, horizon=4, seed=7),
        WindowSampler(store, horizon=4, seed=7, memory_budget="1MiB"),
    ]
    for sampler in samplers:
        assert not sampler.streaming
        for obs, next_obs in zip(expected, expected_next):
            batch = sampler.sample(10)
            np.testing.assert_array_equal(batch["obs"]["state"][:, 0], obs)
            np.testing.assert_array_equal(batch["next_obs"]["state"][:, 0], next_obs)


def test_corrupt_chunk_raises_store_corrupt_error_from_sample(pixel_store, tmp_path):
    import shutil

    path = tmp_path / "corrupt.zarr"
    shutil.copytree(pixel_store, path)
    chunk = sorted((path / "data" / "rgb" / "c").rglob("*"))
    chunk = [p for p in chunk if p.is_file()][5]
    raw = bytearray(chunk.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    chunk.write_bytes(bytes(raw))
    sampler = WindowSampler(TrajectoryStore(path), horizon=2, seed=0, memory_budget=BUDGET)
    with pytest.raises(StoreCorruptError, match="data/rgb.*checksum"):
        for _ in range(1000):  # a pass over every block is far fewer batches
            sampler.sample(256)
    with pytest.raises(StoreCorruptError):  # and it stays broken
        sampler.sample(256)
    sampler.close()


def test_memory_held_stays_within_budget(pixel_store):
    store = TrajectoryStore(pixel_store)
    gc.collect()
    tracemalloc.start()
    try:
        baseline = tracemalloc.get_traced_memory()[0]
        sampler = WindowSampler(store, horizon=4, seed=0, memory_budget=BUDGET)
        for _ in range(60):
            sampler.sample(256)
        out = sampler.windows(sampler.starts[::7])  # fills the chunk cache
        out_nbytes = sum(v.nbytes for part in ("obs", "next_obs") for v in out[part].values())
        held = sampler.memory_nbytes()
        cache = sampler._stream.nbytes
        peak = tracemalloc.get_traced_memory()[1] - baseline
    finally:
        tracemalloc.stop()
    sampler.close()
    assert cache > BUDGET // 2  # the budget is used, not ignored
    assert held <= BUDGET
    # everything allocated beyond the output the caller holds: zarr's read buffers, index arrays, batches
    assert peak - out_nbytes <= BUDGET * 1.1, (peak, out_nbytes)


def test_dataset_pickle_thread_and_budget_options(pixel_store, monkeypatch):
    store = TrajectoryStore(pixel_store)
    memory = WindowSampler(store, horizon=3, seed=0)
    monkeypatch.setenv(BUDGET_ENV, "4MiB")
    streaming = WindowSampler(store, horizon=3, seed=0)
    assert streaming.streaming
    # WindowDataset keeps working (reads at arbitrary starts)
    for i in (0, 1, 500, len(memory) - 1):
        a, b = WindowDataset(streaming)[i], WindowDataset(memory)[i]
        assert (a["obs"]["rgb"] == b["obs"]["rgb"]).all() and (a["action"] == b["action"]).all()
    # a copy (e.g. in a DataLoader worker) starts its own reader and draws the same batches
    copy = pickle.loads(pickle.dumps(streaming))
    assert_same_windows(copy.sample(64), streaming.sample(64))
    threads = [t for t in threading.enumerate() if t.name == "embodia-window-prefetch"]
    assert len(threads) >= 2
    copy.close()
    del streaming
    gc.collect()
    for thread in threads:
        thread.join(timeout=10)
        assert not thread.is_alive()
    with pytest.raises(KeyError, match="streamed"):
        copy.arrays["rgb"]
    monkeypatch.setenv(BUDGET_ENV, "lots")
    with pytest.raises(ValueError, match=BUDGET_ENV):
        WindowSampler(store, horizon=3)
    monkeypatch.delenv(BUDGET_ENV)
    assert resolve_memory_budget(None) == DEFAULT_MEMORY_BUDGET
    assert parse_bytes("1.5GiB") == 3 << 29 and parse_bytes("512m") == 512 << 20 and parse_bytes(10) == 10
    with pytest.raises(ValueError, match="too small"):
        WindowSampler(store, horizon=3, memory_budget=300_000)
