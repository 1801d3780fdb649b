"""Wrapper cost: embodia env step vs the raw ogbench env step (same simulator, same states, same actions).

    python -m benchmarks.bench_env_overhead [--quick]

The raw side is ogbench's environment inside the wrapper stack ``gymnasium.make`` gives it
(TimeLimit, OrderEnforcing, PassiveEnvChecker); the embodia side is ``embodia.make``. Both step the
*same* ogbench instance from the same saved state with the same actions, so the physics work is
identical (contact-rich manipulation steps vary several-fold in cost with the state) and only the
wrapper differs. Acceptance: embodia costs <= 5 % over the raw env (ratio >= 0.95).
"""

from __future__ import annotations

import argparse

import gymnasium
import numpy as np
import ogbench  # noqa: F401
from gymnasium.wrappers import OrderEnforcing, PassiveEnvChecker, TimeLimit

import embodia
from benchmarks._common import interleaved, save_results
from embodia.core.results import Column, Table


def measure(embodia_id: str, steps: int, repeats: int) -> dict:
    ours = embodia.make(embodia_id)
    ours.reset(seed=0)
    unwrapped = ours.unwrapped
    raw = TimeLimit(OrderEnforcing(PassiveEnvChecker(unwrapped.raw)), max_episode_steps=10**9)
    start_state = unwrapped.get_state()
    actions = (
        np.random.default_rng(0).uniform(-1, 1, size=(steps, *ours.action_space.shape)).astype(np.float32)
    )

    def stepper(env: gymnasium.Env):
        def run() -> float:
            unwrapped.set_state(start_state)
            for action in actions:
                env.step(action)
            return len(actions)

        return run

    raw.reset(seed=0)  # OrderEnforcing wants a reset before the first step
    rates = interleaved({"ogbench": stepper(raw), "embodia": stepper(ours)}, repeats)
    ours.close()
    return {
        "embodia_id": embodia_id,
        "ogbench_id": unwrapped.raw_id,
        **rates,
        "ratio": rates["embodia/ogbench"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--results", default=None, help="results file (default: results/benchmarks/env_overhead.json)"
    )
    args = parser.parse_args()
    cases = [
        ("embodia/PointMaze-Medium-v0", 4000),
        ("embodia/CubeSingle-v0", 600),
        ("embodia/Puzzle3x3-v0", 400),
    ]
    repeats = 2 if args.quick else 11
    results = [measure(env_id, steps // (4 if args.quick else 1), repeats) for env_id, steps in cases]
    table = Table(
        [
            Column("env", "environment"),
            Column("ogbench_id", "ogbench id"),
            Column("ogbench", "raw ogbench, steps/s", ",.0f"),
            Column("embodia", "embodia, steps/s", ",.0f"),
            Column("ratio", "ratio (median of paired runs)", ".3f"),
        ]
    )
    for r in results:
        table.add(
            env=f"`{r['embodia_id']}`",
            ogbench_id=f"`{r['ogbench_id']}`",
            ogbench=r["ogbench"],
            embodia=r["embodia"],
            ratio=r["ratio"],
        )
    print(table.markdown())
    save_results(
        "env_overhead",
        {"steps": table},
        quick=args.quick,
        path=args.results,
        data={"results": results, "repeats": repeats},
        title="Environment step: embodia's wrapper against the raw ogbench environment",
    )


if __name__ == "__main__":
    main()
