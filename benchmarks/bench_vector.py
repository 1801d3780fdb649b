"""Vectorised stepping: serial rollout vs ``run_vector_episodes`` (sync and async, 2/4/8 environments).

    python -m benchmarks.bench_vector [--quick] [--results PATH]

The same episodes (same seeds, same ``max_steps``) of an MLP :class:`~embodia.policies.actor_policy.ActorPolicy`
(2x256, random weights, one action per step) in PointMaze-Medium (a fast simulator: the policy's forward
pass is most of a step) and CubeSingle (a slow, contact-rich simulator: physics is most of a step).
Steps/s are each runner's own figure: steps over the time of the stepping loop, resets included,
environment construction excluded (an async vector env starts a process per environment; its
construction time is listed separately). Every configuration runs ``repeats`` times, interleaved, and each
ratio is the median of per-repeat ratios to the serial run of the same repeat (drift cancels). Torch runs
one intra-op thread for every configuration: small forward passes on a shared machine are several times
slower with more. ``sync-act`` is the sync vector env asking the policy per environment (no batching): the
cost of the vector env alone. Writes ``results/benchmarks/vector.json`` (``--quick``: under
``runs/quick-results/``), the raw numbers with the machine's load in its ``data``.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time
from typing import Any

import numpy as np
import torch

import embodia
from benchmarks._common import save_results
from embodia.core.results import Column, Table
from embodia.policies.actor_policy import ActorPolicy
from embodia.policies.networks import Actor, ObsNormalizer
from embodia.runner import rollout
from embodia.runner.vector import run_vector_episodes

ENVS = {
    # id: (episodes, max_steps) full, quick
    "embodia/PointMaze-Medium-v0": ((16, 250), (8, 60)),
    "embodia/CubeSingle-v0": ((16, 50), (8, 15)),
}
CONFIGS = [("serial", 1), *((m, n) for m in ("sync", "async") for n in (2, 4, 8)), ("sync-act", 8)]
#: how the table names each runner mode
RUNNERS = {
    "serial": "serial",
    "sync": "sync, batched",
    "async": "async, batched",
    "sync-act": "sync, one `act` per env",
}


def mlp_policy(env_id: str) -> ActorPolicy:
    """A 2x256 MLP actor over the env's observation keys (random weights, fixed seed)."""
    env = embodia.make(env_id)
    spaces = env.observation_space.spaces
    keys = sorted(spaces)
    sizes = [int(np.prod(spaces[k].shape)) for k in keys]
    action_dim = int(np.prod(env.action_space.shape))
    env.close()
    torch.manual_seed(0)
    dim = sum(sizes)
    normalizer = ObsNormalizer(keys, np.zeros(dim), np.ones(dim), sizes=sizes)
    policy = ActorPolicy(Actor(dim, action_dim, 1, (256, 256)), normalizer)
    obs = {k: np.zeros((8, size), np.float32) for k, size in zip(keys, sizes)}
    for n in range(1, 9):  # first calls of a batch size are slower (kernel selection): not the runners' cost
        policy.act_batch({k: v[:n] for k, v in obs.items()})
    policy.act({k: v[0] for k, v in obs.items()})
    return policy


def run_config(
    env_id: str, policy: ActorPolicy, config: tuple[str, int], episodes: int, max_steps: int
) -> dict:
    mode, n = config
    seeds = list(range(episodes))
    start = time.perf_counter()
    if mode == "serial":
        result = rollout(env_id, policy, episodes=episodes, seed=0, max_steps=max_steps)
    else:
        result = run_vector_episodes(
            env_id,
            policy,
            seeds,
            num_envs=n,
            mode=mode.removesuffix("-act"),
            max_steps=max_steps,
            batch=not mode.endswith("-act"),
        )
    wall = time.perf_counter() - start
    steps = sum(e.length for e in result.episodes)
    loop = steps / result.steps_per_second
    return {
        "steps": steps,
        "steps_per_s": result.steps_per_second,
        "loop_s": loop,
        "setup_s": wall - loop,
        "returns": [e.return_ for e in result.episodes],
    }


def measure(env_id: str, episodes: int, max_steps: int, repeats: int) -> dict[str, Any]:
    policy = mlp_policy(env_id)
    runs: dict[str, list[dict]] = {f"{m}-{n}" if m != "serial" else m: [] for m, n in CONFIGS}
    for _ in range(repeats):
        for (mode, n), name in zip(CONFIGS, runs):
            runs[name].append(run_config(env_id, policy, (mode, n), episodes, max_steps))
    serial = runs["serial"]
    summary = {}
    for name, values in runs.items():
        summary[name] = {
            "steps_per_s": statistics.median(v["steps_per_s"] for v in values),
            "ratio": statistics.median(v["steps_per_s"] / s["steps_per_s"] for v, s in zip(values, serial)),
            "setup_s": statistics.median(v["setup_s"] for v in values),
            "same_returns": all(v["returns"] == s["returns"] for v, s in zip(values, serial)),
        }
    return {
        "env_id": env_id,
        "episodes": episodes,
        "max_steps": max_steps,
        "summary": summary,
        "runs": runs,
    }


def load() -> dict[str, Any]:
    return {
        "uptime": subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip(),
        "loadavg": list(os.getloadavg()),
    }


def runner_table(results: list[dict]) -> Table:
    """The table the documentation shows, from the raw numbers of :func:`measure`."""
    table = Table(
        [
            Column("env", "environment"),
            Column("runner", "runner"),
            Column("envs", "envs"),
            Column("steps_per_s", "steps/s", ",.0f"),
            Column("ratio", "vs serial", ".2f"),
            Column("setup_s", "setup, s", ".1f"),
        ]
    )
    for r in results:
        for (mode, n), s in zip(CONFIGS, r["summary"].values()):
            table.add(
                env=r["env_id"].removeprefix("embodia/").removesuffix("-v0"),
                runner=RUNNERS[mode],
                envs=n,
                steps_per_s=s["steps_per_s"],
                ratio=s["ratio"],
                setup_s=s["setup_s"],
            )
    return table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--results", default=None, help="results file (default: results/benchmarks/vector.json)"
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    before = load()
    repeats = 1 if args.quick else 3
    results = []
    for env_id, (full, quick) in ENVS.items():
        episodes, max_steps = quick if args.quick else full
        results.append(measure(env_id, episodes, max_steps, repeats))
    after = load()
    table = runner_table(results)
    print(table.markdown())
    print(f"load before: {before['uptime']}\nload after:  {after['uptime']}")
    payload = {
        "quick": args.quick,
        "repeats": repeats,
        "cpus": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "load_before": before,
        "load_after": after,
        "results": results,
    }
    save_results(
        "vector",
        {"runners": table},
        quick=args.quick,
        path=args.results,
        data=payload,
        title="Vectorised stepping: serial runner against gymnasium vector environments",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
