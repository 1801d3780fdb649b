"""Window sampling throughput: from a zarr trajectory store vs from the same arrays in memory.

    python benchmarks/bench_sampling.py [--quick]

The store holds cube-single-sized episodes (28-d state, 5-d action). Three readers draw batches of
256 windows of horizon 4: (1) ``WindowSampler`` over the NumPy arrays (baseline), (2) ``WindowSampler``
over the store (reads the store once, then samples from the cache; its one-off load time is reported),
(3) naive per-batch zarr reads without a cache, to show what the cache buys.
Acceptance: (2) reaches >= 50 % of (1).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks._common import interleaved, markdown_table, save
from embodia.data.sampling import WindowSampler
from embodia.data.store import TrajectoryStore


def build_store(path: Path, episodes: int, length: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    store = TrajectoryStore(path, mode="w")
    parts: dict[str, list[np.ndarray]] = {}
    for _ in range(episodes):
        episode = {
            "state": rng.normal(size=(length, 28)).astype(np.float32),
            "action": rng.uniform(-1, 1, size=(length, 5)).astype(np.float32),
            "reward": rng.normal(size=length).astype(np.float32),
            "terminated": np.zeros(length, dtype=bool),
        }
        store.add_episode(episode, env_id="synthetic")
        for key, value in episode.items():
            parts.setdefault(key, []).append(value)
    return {key: np.concatenate(values) for key, values in parts.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    episodes, length, batches, repeats = (20, 200, 20, 2) if args.quick else (500, 200, 200, 5)
    batch_size, horizon = 256, 4
    tmp = Path(tempfile.mkdtemp())
    arrays = build_store(tmp / "s.zarr", episodes, length)
    store = TrajectoryStore(tmp / "s.zarr")

    memory = WindowSampler(arrays, horizon, episode_ends=store.episode_ends, seed=0)
    started = time.perf_counter()
    cached = WindowSampler(store, horizon, seed=0)
    load_seconds = time.perf_counter() - started
    zarr_state, zarr_action = store.array("state"), store.array("action")
    rng = np.random.default_rng(0)

    def from_memory() -> float:
        for _ in range(batches):
            memory.sample(batch_size)
        return batches

    def from_store() -> float:
        for _ in range(batches):
            cached.sample(batch_size)
        return batches

    def uncached() -> float:
        n = max(1, batches // 20)
        for _ in range(n):
            starts = np.sort(cached.starts[rng.integers(0, len(cached.starts), size=batch_size)])
            index = (starts[:, None] + np.arange(horizon)).ravel()
            zarr_state.get_orthogonal_selection((starts,))
            zarr_action.get_orthogonal_selection((index,))
        return n

    rates = interleaved({"memory": from_memory, "store": from_store, "uncached": uncached}, repeats)
    steps = episodes * length
    rows = [
        ["in-memory arrays (baseline)", f"{rates['memory']:.0f}", "1.00"],
        [
            f"zarr store, cached (load {load_seconds * 1e3:.0f} ms for {steps} steps)",
            f"{rates['store']:.0f}",
            f"{rates['store/memory']:.2f}",
        ],
        [
            "zarr store, per-batch reads, no cache",
            f"{rates['uncached']:.1f}",
            f"{rates['uncached/memory']:.4f}",
        ],
    ]
    print(
        markdown_table(
            [f"source ({batch_size} windows of H={horizon} per batch)", "batches/s", "ratio"], rows
        )
    )
    if not args.quick:
        save(
            "sampling",
            {
                "rates": rates,
                "load_seconds": load_seconds,
                "steps": steps,
                "batch_size": batch_size,
                "horizon": horizon,
            },
        )
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
