"""Window sampling throughput: from a zarr trajectory store vs from the same arrays in memory.

    python -m benchmarks.bench_sampling [--quick] [--results PATH]

The store holds cube-single-sized episodes (28-d state, 5-d action). Three readers draw batches of
256 windows of horizon 4: (1) ``WindowSampler`` over the NumPy arrays (baseline), (2) ``WindowSampler``
over the store (reads the store once, then samples from the cache; its one-off load time is reported),
(3) naive per-batch zarr reads without a cache, to show what the cache buys.
Acceptance: (2) reaches >= 50 % of (1). Writes ``results/benchmarks/sampling.json`` (``--quick``: under
``runs/quick-results/``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks._common import interleaved, save_results
from embodia.core.results import Column, Table
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--results", default=None, help="results file (default: results/benchmarks/sampling.json)"
    )
    args = parser.parse_args(argv)
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
    shutil.rmtree(tmp, ignore_errors=True)
    steps = episodes * length
    table = Table(
        [
            Column("source", f"source ({batch_size} windows of H={horizon} per batch)"),
            Column("batches_per_s", "batches/s", ",.1f"),
            Column("ratio", "ratio to in-memory arrays", ".3f"),
            Column("load_s", f"one-off load of the {steps:,}-step store, s", ".2f"),
        ]
    )
    table.add(source="in-memory arrays (baseline)", batches_per_s=rates["memory"], ratio=1.0, load_s=None)
    table.add(
        source="`WindowSampler` over the zarr store (cached: reads the store once)",
        batches_per_s=rates["store"],
        ratio=rates["store/memory"],
        load_s=load_seconds,
    )
    table.add(
        source="zarr store read per batch, no cache (why the cache exists)",
        batches_per_s=rates["uncached"],
        ratio=rates["uncached/memory"],
        load_s=None,
    )
    print(table.markdown())
    save_results(
        "sampling",
        {"sources": table},
        quick=args.quick,
        path=args.results,
        data={
            "rates": rates,
            "load_seconds": load_seconds,
            "steps": steps,
            "batch_size": batch_size,
            "horizon": horizon,
            "repeats": repeats,
            "load_average": os.getloadavg(),
        },
        title="Window sampling: from a zarr store against the same arrays in memory",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
