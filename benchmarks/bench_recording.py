"""Recording overhead: rollout steps/s with recording to a zarr store vs without (same env, same actions).

    python -m benchmarks.bench_recording [--quick] [--results PATH]

All variants run the same fixed action sequences through ``embodia.runner.run_episode`` in one
process, interleaved; ratios are with / without. Two commit policies are measured: the default
(finished episodes committed in batches at most ``commit_every`` seconds apart) and one commit per
episode (``commit_every=0``). Acceptance: overhead <= 10 % for state observations (default policy).
Writes ``results/benchmarks/recording.json`` (``--quick``: under ``runs/quick-results/``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

import embodia
from benchmarks._common import interleaved, save_results
from embodia.core.results import Column, Table
from embodia.data.recorder import EpisodeRecorder
from embodia.data.store import TrajectoryStore
from embodia.runner import RecordingHook, run_episode


class FixedActions:
    """Replays one fixed action sequence (so every variant does identical work)."""

    def __init__(self, actions: np.ndarray) -> None:
        self.actions, self.t = actions, 0

    def reset(self, seed=None) -> None:
        self.t = 0

    def act(self, obs) -> np.ndarray:
        action = self.actions[self.t % len(self.actions)]
        self.t += 1
        return action


def measure(env_id: str, episodes: int, steps: int, repeats: int) -> dict:
    env = embodia.make(env_id)
    actions = (
        np.random.default_rng(0).uniform(-1, 1, size=(steps, *env.action_space.shape)).astype(np.float32)
    )
    policy = FixedActions(actions)
    tmp = Path(tempfile.mkdtemp())
    # The stores exist (and hold one episode) before timing: creating a store is a one-off cost.
    batched = EpisodeRecorder(TrajectoryStore(tmp / "batched.zarr", mode="w"), env_id)
    per_episode = EpisodeRecorder(TrajectoryStore(tmp / "each.zarr", mode="w"), env_id, commit_every=0)
    for recorder in (batched, per_episode):
        run_episode(env, policy, 0, hooks=[RecordingHook(recorder)], max_steps=steps)
        recorder.flush()

    def without() -> float:
        return sum(run_episode(env, policy, seed, max_steps=steps).length for seed in range(episodes))

    def recording(recorder: EpisodeRecorder):
        hooks = [RecordingHook(recorder)]

        def run() -> float:
            done = sum(
                run_episode(env, policy, seed, hooks=hooks, max_steps=steps).length
                for seed in range(episodes)
            )
            recorder.flush()  # everything committed before the clock stops
            return done

        return run

    rates = interleaved(
        {"without": without, "batched": recording(batched), "per_episode": recording(per_episode)}, repeats
    )
    env.close()
    shutil.rmtree(tmp, ignore_errors=True)
    return {
        "env_id": env_id,
        "steps_per_episode": steps,
        "episodes": episodes,
        "commit_every": batched.commit_every,
        **rates,
        "ratio": rates["batched/without"],
        "ratio_per_episode": rates["per_episode/without"],
    }


def recording_table(results: list[dict]) -> Table:
    """The table the documentation shows, from the raw numbers of :func:`measure`."""
    commit_every = results[0]["commit_every"]
    table = Table(
        [
            Column("env", "environment"),
            Column("without", "not recording, steps/s", ",.0f"),
            Column("batched", f"recording (commits <= {commit_every:g} s apart), steps/s", ",.0f"),
            Column("ratio", "ratio", ".3f"),
            Column("overhead", "overhead", ".1%"),
            Column("per_episode", "one commit per episode (`commit_every=0`), steps/s", ",.0f"),
            Column("ratio_per_episode", "ratio", ".3f"),
            Column("overhead_per_episode", "overhead", ".1%"),
        ]
    )
    for r in results:
        table.add(
            env=f"`{r['env_id']}`",
            without=r["without"],
            batched=r["batched"],
            ratio=r["ratio"],
            overhead=1 - r["ratio"],
            per_episode=r["per_episode"],
            ratio_per_episode=r["ratio_per_episode"],
            overhead_per_episode=1 - r["ratio_per_episode"],
        )
    return table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--results", default=None, help="results file (default: results/benchmarks/recording.json)"
    )
    args = parser.parse_args(argv)
    cases = [("embodia/PointMaze-Medium-v0", 1000), ("embodia/CubeSingle-v0", 200)]
    episodes, repeats = (2, 2) if args.quick else (20, 9)
    results = [measure(env_id, episodes, steps, repeats) for env_id, steps in cases]
    table = recording_table(results)
    print(table.markdown())
    save_results(
        "recording",
        {"recording": table},
        quick=args.quick,
        path=args.results,
        data={"results": results, "repeats": repeats, "load_average": os.getloadavg()},
        title="Recording: rollout steps/s with and without a zarr store",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
