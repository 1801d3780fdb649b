"""Gradient steps/s of DEAS, its baselines and its update before the speed-ups (same batch size and networks;
the price of sequences, distributions and flow policies, and what each speed-up buys).

"before" is DEAS's update with the full backward pass in the actor step and Adam's per-parameter loop; the
float32 rows use the actor-only backward and fused Adam (same results up to float rounding); the bfloat16
rows run the MLPs' matrix products in bfloat16 (mixed precision: results differ at bfloat16's precision).

    python -m benchmarks.bench_deas_throughput [--quick]

Both learners update from the same in-memory windows (sampling included, so the ratio is what a
training run sees), interleaved in one process, one torch thread (the training default).
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

from benchmarks._common import interleaved, markdown_table, save
from embodia.data.sampling import WindowSampler, to_torch
from embodia.policies.deas import DEAS, DEASConfig
from embodia.policies.fql import FQL, FQLConfig
from embodia.policies.iql import IQL, IQLConfig
from embodia.policies.networks import ObsNormalizer


def synthetic(steps: int, obs_dim: int = 28, action_dim: int = 5) -> tuple[dict[str, np.ndarray], np.ndarray]:
    rng = np.random.default_rng(0)
    arrays = {
        "state": rng.normal(size=(steps, obs_dim)).astype(np.float32),
        "action": rng.uniform(-1, 1, size=(steps, action_dim)).astype(np.float32),
        "reward": -rng.integers(0, 2, size=steps).astype(np.float32),
        "terminated": np.zeros(steps, dtype=bool),
    }
    return arrays, np.arange(1000, steps + 1, 1000)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    updates, repeats, batch = (5, 2, 64) if args.quick else (50, 7, 256)
    arrays, ends = synthetic(20_000)
    normalizer = ObsNormalizer.fit(["state"], arrays)

    class DEASBefore(DEAS):
        actor_gradients_only = False  # the full backward pass through the critic in the actor step
        fused_adam = False  # Adam's per-parameter loop

    bf16 = {"matmul_precision": "bfloat16"}
    learners = {
        "deas (H=4, distributional) — before": DEASBefore(DEASConfig(horizon=4), normalizer, 5, (-1.0, 0.0)),
        "deas (H=4, distributional)": DEAS(DEASConfig(horizon=4), normalizer, 5, (-1.0, 0.0)),
        "deas (H=4, distributional), bfloat16 matmuls": DEAS(
            DEASConfig(horizon=4, **bf16), normalizer, 5, (-1.0, 0.0)
        ),
        "deas (H=8, distributional)": DEAS(DEASConfig(horizon=8), normalizer, 5, (-1.0, 0.0)),
        "deas (H=4, FQL extraction)": DEAS(
            DEASConfig(horizon=4, extraction="fql"), normalizer, 5, (-1.0, 0.0)
        ),
        "deas (H=4, FQL extraction), bfloat16 matmuls": DEAS(
            DEASConfig(horizon=4, extraction="fql", **bf16), normalizer, 5, (-1.0, 0.0)
        ),
        "iql (H=1, scalar)": IQL(IQLConfig(), normalizer, 5),
        "fql (H=1)": FQL(FQLConfig(), normalizer, 5, (-1.0, 0.0)),
        "qc-fql (H=5)": FQL(FQLConfig(horizon=5), normalizer, 5, (-1.0, 0.0)),
    }
    windows = {name: type(learner).window_for(learner.config) for name, learner in learners.items()}
    samplers = {name: WindowSampler(arrays, windows[name], episode_ends=ends, seed=0) for name in learners}

    def runner(name: str):
        def run() -> float:
            for _ in range(updates):
                learners[name].update(to_torch(samplers[name].sample(batch)))
            return updates

        return run

    rates = interleaved({name: runner(name) for name in learners}, repeats)
    base = next(iter(learners))
    rows = [
        [name, f"{rates[name]:.1f}", "1.00" if name == base else f"{rates[f'{name}/{base}']:.2f}"]
        for name in learners
    ]
    print(
        markdown_table([f"learner (batch {batch}, 3x256 MLPs)", "grad steps/s", "ratio to DEAS before"], rows)
    )
    if not args.quick:
        save("deas_throughput", {"rates": rates, "batch": batch})


if __name__ == "__main__":
    main()
