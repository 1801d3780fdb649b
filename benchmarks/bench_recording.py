"""Recording overhead: rollout steps/s with recording to a zarr store vs without (same env, same actions).

    python -m benchmarks.bench_recording [--quick]

All variants run the same fixed action sequences through ``embodia.runner.run_episode`` in one
process, interleaved; ratios are with / without. Two commit policies are measured: the default
(finished episodes committed in batches at most ``commit_every`` seconds apart) and one commit per
episode (``commit_every=0``). Acceptance: overhead <= 10 % for state observations (default policy).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

import numpy as np

import embodia
from benchmarks._common import interleaved, markdown_table, save
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    cases = [("embodia/PointMaze-Medium-v0", 1000), ("embodia/CubeSingle-v0", 200)]
    episodes, repeats = (2, 2) if args.quick else (20, 9)
    results = [measure(env_id, episodes, steps, repeats) for env_id, steps in cases]
    rows = [
        [
            r["env_id"],
            f"{r['without']:.0f}",
            f"{r['batched']:.0f} ({(1 - r['ratio']) * 100:.1f} %)",
            f"{r['per_episode']:.0f} ({(1 - r['ratio_per_episode']) * 100:.1f} %)",
        ]
        for r in results
    ]
    header = [
        "env",
        "steps/s, not recording",
        f"recording, commits <= {results[0]['commit_every']:g} s apart (overhead)",
        "recording, one commit per episode (overhead)",
    ]
    print(markdown_table(header, rows))
    if not args.quick:
        save("recording", {"results": results})


if __name__ == "__main__":
    main()
