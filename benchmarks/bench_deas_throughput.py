"""Gradient steps/s of DEAS, its baselines and its update before the speed-ups (same batch size and networks;
the price of sequences, distributions and flow policies, and what each speed-up buys).

"before" is DEAS's update with the full backward pass in the actor step and Adam's per-parameter loop; the
float32 rows use the actor-only backward and fused Adam (same results up to float rounding); the bfloat16
rows run the MLPs' matrix products in bfloat16 (mixed precision: results differ at bfloat16's precision).

The second table (``distillation_fix``) pairs each learner with FQL-style extraction against the same learner
as it was before distillation moved to the one-step policy's raw output (distilled on ``clamp(mu(s, z))``),
interleaved, to show that the fix does not slow an update.

    python -m benchmarks.bench_deas_throughput [--quick] [--results PATH]

All learners update from the same in-memory windows (sampling included, so the ratio is what a training run
sees), interleaved in one process, one torch thread (the training default). Writes
``results/benchmarks/deas_throughput.json`` (``--quick``: under ``runs/quick-results/``).
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

from benchmarks._common import interleaved, save_results
from embodia.core.results import Column, Table
from embodia.data.sampling import WindowSampler, to_torch
from embodia.policies.deas import DEAS, DEASConfig
from embodia.policies.flow import FlowPolicy
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


DEAS4 = "DEAS (H=4, distributional), float32: actor gradients only + fused Adam — the default"
DEAS4_BF16 = "DEAS (H=4, distributional), bfloat16 matrix products"
DEAS4_FQL = "DEAS (H=4, FQL extraction: flow BC + one-step policy, 10 Euler steps), float32"
DEAS4_FQL_BF16 = "DEAS (H=4, FQL extraction), bfloat16 matrix products"
#: bfloat16 row -> its float32 row (the "bfloat16 over its float32" column)
FLOAT32_OF = {DEAS4_BF16: DEAS4, DEAS4_FQL_BF16: DEAS4_FQL}


def learners(normalizer: ObsNormalizer) -> dict:
    """The learners compared, by the name their row gets; the first is the baseline of every ratio."""

    class DEASBefore(DEAS):
        actor_gradients_only = False  # the full backward pass through the critic in the actor step
        fused_adam = False  # Adam's per-parameter loop

    bf16 = {"matmul_precision": "bfloat16"}
    # the DDPG+BC rows: DEAS's defaults before they became the paper's FQL-style extraction (measured as such)
    ddpg = {"extraction": "ddpg_bc", "alpha": 1.0, "value_target": "hl_gauss"}
    return {
        "DEAS (H=4, distributional) — before": DEASBefore(
            DEASConfig(horizon=4, **ddpg), normalizer, 5, (-1.0, 0.0)
        ),
        DEAS4: DEAS(DEASConfig(horizon=4, **ddpg), normalizer, 5, (-1.0, 0.0)),
        DEAS4_BF16: DEAS(DEASConfig(horizon=4, **ddpg, **bf16), normalizer, 5, (-1.0, 0.0)),
        "DEAS (H=8, distributional), float32": DEAS(
            DEASConfig(horizon=8, **ddpg), normalizer, 5, (-1.0, 0.0)
        ),
        DEAS4_FQL: DEAS(DEASConfig(horizon=4, extraction="fql"), normalizer, 5, (-1.0, 0.0)),
        DEAS4_FQL_BF16: DEAS(DEASConfig(horizon=4, extraction="fql", **bf16), normalizer, 5, (-1.0, 0.0)),
        "IQL (H=1, scalar), float32": IQL(IQLConfig(), normalizer, 5),
        "FQL (H=1), float32": FQL(FQLConfig(), normalizer, 5, (-1.0, 0.0)),
        "QC-FQL (H=5), float32": FQL(FQLConfig(horizon=5), normalizer, 5, (-1.0, 0.0)),
    }


def clamped_distillation(learner):
    """``learner`` with its one-step policies distilled on their clamped output (the code before the fix).

    ``fql_actor_loss`` distils ``actor.one_step``'s output and clamps only what Q sees; making ``one_step``
    itself clamp restores the earlier loss, where both terms saw the clamped output.
    """
    for module in learner.modules().values():
        for part in module.modules():
            if isinstance(part, FlowPolicy) and part.flow_steps == 0:
                raw = part.one_step
                part.one_step = lambda obs, noise, raw=raw: raw(obs, noise).clamp(-1.0, 1.0)
    return learner


def distillation_pairs(normalizer: ObsNormalizer) -> dict[str, tuple]:
    """Learner name -> (distilled on the clamped output: before, on the raw output: after), float32."""

    def pair(make):
        return clamped_distillation(make()), make()

    return {
        "FQL (H=1)": pair(lambda: FQL(FQLConfig(), normalizer, 5, (-1.0, 0.0))),
        "QC-FQL (H=5)": pair(lambda: FQL(FQLConfig(horizon=5, alpha=100.0), normalizer, 5, (-1.0, 0.0))),
        "DEAS (H=4, FQL extraction: the paper's defaults)": pair(
            lambda: DEAS(DEASConfig(horizon=4), normalizer, 5, (-1.0, 0.0))
        ),
    }


def table(rates: dict[str, float], names: list[str], batch: int) -> Table:
    """Steps/s per learner, the median paired ratio to the first, and bfloat16 over its float32 row."""
    result = Table(
        [
            Column("learner", f"learner (batch {batch}, 3x256 MLPs)"),
            Column("steps_per_second", "grad steps/s", ".1f"),
            Column("ratio", "ratio to DEAS before", ".2f"),
            Column("bfloat16_gain", "bfloat16 over its float32", ".2f"),
        ]
    )
    base = names[0]
    for name in names:
        float32 = FLOAT32_OF.get(name)
        result.add(
            learner=name,
            steps_per_second=rates[name],
            ratio=1.0 if name == base else rates[f"{name}/{base}"],
            bfloat16_gain=rates[name] / rates[float32] if float32 else None,
        )
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--results", default=None, help="results file (default: results/benchmarks/deas_throughput.json)"
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    updates, repeats, batch = (5, 2, 64) if args.quick else (50, 7, 256)
    arrays, ends = synthetic(20_000)
    normalizer = ObsNormalizer.fit(["state"], arrays)
    compared = learners(normalizer)
    windows = {name: type(learner).window_for(learner.config) for name, learner in compared.items()}
    samplers = {name: WindowSampler(arrays, windows[name], episode_ends=ends, seed=0) for name in compared}

    def runner(name: str):
        def run() -> float:
            for _ in range(updates):
                compared[name].update(to_torch(samplers[name].sample(batch)))
            return updates

        return run

    rates = interleaved({name: runner(name) for name in compared}, repeats)
    learners_table = table(rates, list(compared), batch)
    print(learners_table.markdown())

    fix_table = Table(
        [
            Column("learner", f"learner (batch {batch}, float32)"),
            Column("before", "steps/s, distilled on the clamped output (before)", ".1f"),
            Column("after", "steps/s, distilled on the raw output (after)", ".1f"),
            Column("ratio", "after / before (paired median)", ".2f"),
        ]
    )
    pair_rates = {}
    for name, (before, after) in distillation_pairs(normalizer).items():
        window = type(after).window_for(after.config)
        sampler = WindowSampler(arrays, window, episode_ends=ends, seed=0)

        def updating(learner, sampler=sampler):
            def run() -> float:
                for _ in range(updates):
                    learner.update(to_torch(sampler.sample(batch)))
                return updates

            return run

        measured = interleaved({"before": updating(before), "after": updating(after)}, repeats)
        pair_rates[name] = measured
        fix_table.add(
            learner=name, before=measured["before"], after=measured["after"], ratio=measured["after/before"]
        )
    print(fix_table.markdown())
    save_results(
        "deas_throughput",
        {"learners": learners_table, "distillation_fix": fix_table},
        quick=args.quick,
        path=args.results,
        data={
            "rates": rates,
            "distillation_fix_rates": pair_rates,
            "batch": batch,
            "updates": updates,
            "repeats": repeats,
        },
        title="Gradient steps/s of DEAS and its baselines (one process, one torch thread)",
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
