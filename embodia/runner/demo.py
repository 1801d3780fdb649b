"""`make demo`: the stack's main job end to end on a real OGBench simulator.

1. run a few episodes with the environment's scripted expert, recording them to a zarr store;
2. re-simulate every recorded episode from its initial state and actions and verify the states;
3. render the replayed episodes to an mp4;
4. print a summary table.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from embodia.data.store import TrajectoryStore
from embodia.runner import rollout
from embodia.runner.replay import replay

console = Console()


def run_demo(
    out: Path,
    env_id: str = "embodia/CubeSingle-v0",
    episodes: int = 5,
    seed: int = 0,
    video_episodes: int = 2,
) -> int:
    """Run the demo into ``out`` (replaced if present); returns a process exit status."""
    out.mkdir(parents=True, exist_ok=True)
    store_path, video_path = out / "demo.zarr", out / "demo.mp4"
    shutil.rmtree(store_path, ignore_errors=True)

    console.rule(f"[bold]1. {episodes} expert episodes of {env_id}, recorded to {store_path}")
    started = time.perf_counter()
    result = rollout(env_id, "expert", episodes=episodes, seed=seed, record=store_path, progress=True)
    run_seconds = time.perf_counter() - started

    console.rule("[bold]2. replay from the recorded initial states and actions, verify states")
    store = TrajectoryStore(store_path)
    started = time.perf_counter()
    replays = replay(store, verify=True, tolerance=1e-6, progress=True)
    replay_seconds = time.perf_counter() - started

    console.rule(f"[bold]3. render the first {video_episodes} episodes to {video_path}")
    started = time.perf_counter()
    replay(
        store,
        list(range(min(video_episodes, store.num_episodes))),
        verify=True,
        video=video_path,
        progress=True,
    )
    video_seconds = time.perf_counter() - started

    table = Table(title=f"{env_id}: expert episodes, recorded and replayed")
    for column in ("episode", "seed", "length", "return", "success", "replay success", "max state deviation"):
        table.add_column(column, justify="right")
    for ep, rep in zip(result.episodes, replays):
        table.add_row(
            str(ep.index),
            str(ep.seed),
            str(ep.length),
            f"{ep.return_:.1f}",
            "yes" if ep.success else "no",
            "yes" if rep.success else "no",
            f"{rep.max_deviation:.1e}",
        )
    table.add_section()
    table.add_row(
        "all",
        "",
        f"{result.mean_length:.1f}",
        f"{result.mean_return:.2f}",
        f"{result.success_rate:.0%}",
        f"{sum(r.success for r in replays) / len(replays):.0%}",
        f"{max(r.max_deviation for r in replays):.1e}",
    )
    console.print(table)
    console.print(
        f"run {run_seconds:.1f} s ({result.steps_per_second:.0f} steps/s with recording) | "
        f"replay+verify {replay_seconds:.1f} s | video {video_seconds:.1f} s"
    )
    console.print(
        f"store: {store_path}  ({store.num_episodes} episodes, {store.num_steps} steps)   video: {video_path}"
    )
    console.print(f"next: `embodia info {store_path}`, `embodia replay {store_path} --verify`")
    return 0
