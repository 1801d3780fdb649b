"""Window sampling from a pixel store larger than the sampler's memory budget: streaming vs in memory.

    python -m benchmarks.bench_sampling_budget [--quick] [--results PATH]

Builds a synthetic pixel store under a temporary directory (deleted afterwards): episodes of ~200 steps
with 64x64x3 uint8 ``rgb`` (a blocky background, a moving square and a little sensor noise) and
``goal_rgb`` (the episode's last frame), 28-d ``state``, 7-d ``action``, ``reward`` and ``terminated``,
written directly with ``TrajectoryStore.add_episodes`` in batches. ~4 GB of rows (~200 MB with
``--quick``). Three samplers over the same store draw batches of 256 windows of horizon 4, each converted
to the tensors a learner gets (``to_torch``): (a) in memory (budget above the store's size: the whole
store is loaded), (b) streaming with a 1 GiB budget (64 MiB with ``--quick``) and the default reuse 4,
(c) the same with reuse 16 (each row read serves 16 draws: a quarter of the read bandwidth, more local
batches). Each is timed twice: sampling only, and with a gradient step of a small conv BC policy on the
images after every batch (what a pixel learner puts behind the sampler). They run in turns; before each
timed stretch of a streaming sampler, enough batches to use up the blocks its reader thread read ahead
while the others ran are drawn untimed, so it is timed in steady state. Reported: rates and the medians
of the paired ratios to (a). Target: >= 0.5 in training. Writes ``results/benchmarks/sampling_budget.json``
(``--quick``: under ``runs/quick-results/``), the raw numbers in its ``data``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks._common import save_results
from embodia.core.results import Column, Table
from embodia.data.sampling import WindowSampler, to_torch
from embodia.data.store import TrajectoryStore

IMAGE = (64, 64, 3)
#: the reuse of the second streaming sampler (the default is 4)
HIGH_REUSE = 16.0


def synthetic_episodes(rng: np.random.Generator, count: int, noise: np.ndarray) -> list:
    """``count`` episodes of 150-250 steps of structured pixel data (compresses like camera frames)."""
    episodes = []
    for _ in range(count):
        length = int(rng.integers(150, 251))
        background = rng.integers(0, 200, size=(8, 8, 3), dtype=np.uint8).repeat(8, 0).repeat(8, 1)
        frames = np.broadcast_to(background, (length, *IMAGE)).copy()
        path = np.linspace(rng.integers(0, 56, 2), rng.integers(0, 56, 2), length).astype(int)
        color = rng.integers(0, 256, size=3, dtype=np.uint8)
        for t, (y, x) in enumerate(path):
            frames[t, y : y + 8, x : x + 8] = color
        frames += noise[rng.integers(0, len(noise), size=length)]
        terminated = np.zeros(length, dtype=bool)
        terminated[-1] = bool(rng.integers(0, 2))
        data = {
            "rgb": frames,
            "goal_rgb": np.broadcast_to(frames[-1], frames.shape),
            "state": rng.normal(size=(length, 28)).astype(np.float32),
            "action": rng.uniform(-1, 1, size=(length, 7)).astype(np.float32),
            "reward": terminated.astype(np.float32),
            "terminated": terminated,
        }
        episodes.append((data, {"env_id": "synthetic/Pixels-v0"}))
    return episodes


def build_store(path: Path, target_bytes: int) -> tuple[int, float]:
    """Write episodes until their rows take ``target_bytes``; returns (raw bytes, seconds)."""
    rng = np.random.default_rng(0)
    noise = rng.integers(0, 4, size=(64, *IMAGE), dtype=np.uint8)
    started = time.perf_counter()
    written = 0
    with TrajectoryStore(path, mode="w") as store:
        while written < target_bytes:
            batch = synthetic_episodes(rng, 10, noise)
            store.add_episodes(batch)
            written += sum(sum(v.nbytes for v in data.values()) for data, _ in batch)
    return written, time.perf_counter() - started


def disk_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def timed(sampler: WindowSampler, batches: int, batch_size: int, step=None) -> float:
    """Batches per second over ``batches`` batches converted for a learner (and given to ``step``)."""
    started = time.perf_counter()
    for _ in range(batches):
        batch = to_torch(sampler.sample(batch_size))
        if step is not None:
            step(batch)
    return batches / (time.perf_counter() - started)


def conv_bc_step(seed: int = 0):
    """One gradient step of a small pixel BC policy (conv encoder of rgb + goal_rgb, MLP head): the consumer
    a pixel learner puts behind the sampler."""
    import torch
    from torch import nn

    torch.manual_seed(seed)
    net = nn.Sequential(
        nn.Conv2d(6, 16, 4, stride=2), nn.ReLU(), nn.Conv2d(16, 32, 4, stride=2), nn.ReLU(),
        nn.Conv2d(32, 32, 3, stride=2), nn.ReLU(), nn.Flatten(), nn.LazyLinear(128), nn.ReLU(), nn.Linear(128, 7),
    )  # fmt: skip
    optimizer = None

    def step(batch) -> None:
        nonlocal optimizer
        images = torch.cat([batch["obs"]["rgb"], batch["obs"]["goal_rgb"]], dim=-1)
        x = images.permute(0, 3, 1, 2).float().div_(255.0)
        loss = (net(x) - batch["action"][:, 0]).pow(2).mean()
        if optimizer is None:
            optimizer = torch.optim.Adam(net.parameters(), 1e-3)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    return step


def tables(raw: dict) -> dict[str, Table]:
    """The tables the documentation shows, from the raw numbers: the samplers, and the store they read."""
    size = raw["memory"]["budget"]
    budget = f"{size / 2**30:g} GiB" if size >= 2**30 else f"{size >> 20} MiB"
    samplers = Table(
        [
            Column("sampler", "sampler"),
            Column("mib_held", "MiB held", ",.0f"),
            Column("batches_per_s", "sampling only: batches/s", ".0f"),
            Column("ratio", "ratio to in memory", ".2f"),
            Column("train_steps_per_s", "with a conv BC step: steps/s", ".1f"),
            Column("train_ratio", "ratio to in memory", ".2f"),
        ]
    )
    labels = {
        "memory": "in memory",
        "streaming": f"streaming, {budget}, `reuse=4` (default)",
        "streaming_reuse": f"streaming, {budget}, `reuse={raw['high_reuse']:g}`",
    }
    for name, label in labels.items():
        samplers.add(
            sampler=label,
            mib_held=raw["memory"][f"held_{name}"] / 2**20,
            batches_per_s=raw["median"][name],
            ratio=raw["ratios"][name],
            train_steps_per_s=raw["train_median"][name],
            train_ratio=raw["train_ratios"][name],
        )
    s, plan = raw["store"], raw["plan"]
    store = Table(
        [
            Column("steps", "steps"),
            Column("episodes", "episodes"),
            Column("raw_gb", "GB of rows", ".1f"),
            Column("disk_gb", "GB on disk", ".1f"),
            Column("load_s", "in-memory load, s", ".0f"),
            Column("first_batch_s", "first streaming batch, s", ".0f"),
            Column("pool_share", "block pool, share of the store", ".0%"),
        ]
    )
    store.add(
        steps=s["steps"],
        episodes=s["episodes"],
        raw_gb=s["raw_bytes"] / 1e9,
        disk_gb=s["disk_bytes"] / 1e9,
        load_s=raw["load_seconds"],
        first_batch_s=raw["warmup_seconds"],
        pool_share=plan["pool"] / plan["blocks"],
    )
    return {"samplers": samplers, "store": store}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="~200 MB store, 64 MiB budget (for tests)")
    parser.add_argument(
        "--results", default=None, help="results file (default: results/benchmarks/sampling_budget.json)"
    )
    args = parser.parse_args(argv)
    if args.quick:
        target, budget, batches, repeats, need_free = 200_000_000, 64 << 20, 60, 3, 1 << 30
    else:
        target, budget, batches, repeats, need_free = 4_000_000_000, 1 << 30, 1500, 5, 12 << 30
    batch_size, horizon = 256, 4
    tmp_root = Path(os.environ.get("TMPDIR", tempfile.gettempdir()))
    free = shutil.disk_usage(tmp_root).free
    if free < need_free:
        sys.exit(
            f"refusing to run: {tmp_root} has {free / 2**30:.1f} GiB free, this benchmark needs "
            f"{need_free / 2**30:.0f} GiB (set TMPDIR to a roomier disk)"
        )
    tmp = Path(tempfile.mkdtemp(prefix="bench_sampling_budget_", dir=tmp_root))
    try:
        raw, build_seconds = build_store(tmp / "pixels.zarr", target)
        on_disk = disk_bytes(tmp / "pixels.zarr")
        store = TrajectoryStore(tmp / "pixels.zarr")
        print(
            f"store: {store.num_steps} steps, {store.num_episodes} episodes, {raw / 1e9:.2f} GB of rows, "
            f"{on_disk / 1e9:.2f} GB on disk; written in {build_seconds:.0f} s",
            flush=True,
        )
        started = time.perf_counter()
        memory = WindowSampler(store, horizon, seed=0, memory_budget=2 * raw + (1 << 30))
        load_seconds = time.perf_counter() - started
        streaming = WindowSampler(store, horizon, seed=0, memory_budget=budget)
        started = time.perf_counter()
        streaming.sample(batch_size)
        warmup_seconds = time.perf_counter() - started
        stream = streaming._stream
        assert stream is not None and streaming.plan is not None
        plan = streaming.plan
        more_reuse = WindowSampler(store, horizon, seed=0, memory_budget=budget, reuse=HIGH_REUSE)
        samplers = {"memory": memory, "streaming": streaming, "streaming_reuse": more_reuse}
        train_batches = max(4, batches // 40)
        steps = {name: conv_bc_step() for name in samplers}
        for name, sampler in samplers.items():  # first steps (lazy layers, allocator) off the clock
            for _ in range(2):
                steps[name](to_torch(sampler.sample(batch_size)))
        rates: dict[str, list[float]] = {name: [] for name in samplers}
        train_rates: dict[str, list[float]] = {name: [] for name in samplers}
        for _ in range(repeats):
            for name, sampler in samplers.items():
                if sampler is not memory:  # use up the blocks read ahead while the other samplers ran
                    drain = -(-plan.prefetch * sampler._stream.draws_per_rotation // batch_size) + 1
                    for _ in range(drain):
                        to_torch(sampler.sample(batch_size))
                rates[name].append(timed(sampler, batches, batch_size))
                train_rates[name].append(timed(sampler, train_batches, batch_size, steps[name]))

        def ratio_of(table: dict[str, list[float]], name: str) -> float:
            return statistics.median(s / m for s, m in zip(table[name], table["memory"]))

        ratios = {name: ratio_of(rates, name) for name in samplers}
        train_ratios = {name: ratio_of(train_rates, name) for name in samplers}
        ratio = ratios["streaming"]
        median = {name: statistics.median(values) for name, values in rates.items()}
        train_median = {name: statistics.median(values) for name, values in train_rates.items()}
        memory_held, streaming_held = memory.memory_nbytes(), streaming.memory_nbytes()
        reuse_held = more_reuse.memory_nbytes()
        for sampler in (streaming, more_reuse):
            sampler.close()
        rotations = batches * batch_size / stream.draws_per_rotation
        print(f"first streaming batch {warmup_seconds:.1f} s")
        print(
            f"streaming: {len(stream.block_begin)} blocks of {plan.block_rows} rows, pool of {stream.pool_size} + "
            f"{plan.prefetch} read ahead, rotation every {stream.draws_per_rotation} windows "
            f"({rotations:.0f} rotations per timed stretch); streamed {plan.streamed}, in memory {plan.resident}"
        )
        payload = {
            "rates": rates,
            "median": median,
            "ratio_streaming_over_memory": ratio,
            "ratios": ratios,
            "train_rates": train_rates,
            "train_median": train_median,
            "train_ratios": train_ratios,
            "high_reuse": HIGH_REUSE,
            "store": {
                "steps": store.num_steps,
                "episodes": store.num_episodes,
                "raw_bytes": raw,
                "disk_bytes": on_disk,
                "build_seconds": build_seconds,
            },
            "memory": {
                "budget": budget,
                "held_memory": memory_held,
                "held_streaming": streaming_held,
                "held_streaming_reuse": reuse_held,
            },
            "load_seconds": load_seconds,
            "warmup_seconds": warmup_seconds,
            "plan": {
                "block_rows": plan.block_rows,
                "blocks": len(stream.block_begin),
                "pool": stream.pool_size,
                "prefetch": plan.prefetch,
                "draws_per_rotation": stream.draws_per_rotation,
                "streamed": plan.streamed,
                "resident": plan.resident,
            },
            "batch_size": batch_size,
            "horizon": horizon,
            "batches_per_repeat": batches,
            "repeats": repeats,
            "load_average": os.getloadavg(),
            "cpus": os.cpu_count(),
        }
        results = tables(payload)
        for table in results.values():
            print(table.markdown(), end="\n\n")
        save_results(
            "sampling_budget",
            results,
            quick=args.quick,
            path=args.results,
            data=payload,
            title="Window sampling from a pixel store larger than the memory budget",
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
