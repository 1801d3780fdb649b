"""Hybrid ZO/FO fine-tuning on SmolLM2-135M: LoRA-only vs ZO-only vs hybrid (and full FO for memory).

4-way topic classification of templated sentences with arbitrary label letters (chance = 25 %), train
and test sentences with disjoint vocabulary. Same steps, batch and data order for every mode. Memory is
what training needs beyond the weights, measured per step (saved activations, gradients, optimiser
state, ZO noise). ZO covers every weight but LoRA by default, as the paper (``--zo-scope blocks``: only
the decoder blocks). Each scope writes its own results file (``results/methods/hybrid_zo.json``,
``hybrid_zo_blocks.json``).

    .venv/bin/python scripts/hybrid_zo_experiment.py           # 120 steps per mode
    .venv/bin/python scripts/hybrid_zo_experiment.py --quick   # 2 steps of lora / zo / hybrid, ZO on blocks 26-29, 8 test sentences (tests)
"""

from __future__ import annotations

import argparse
import sys
import time

from embodia.agents.llm import load_local_lm
from embodia.agents.methods.hybrid_zo import HybridConfig, HybridResult, finetune
from embodia.agents.methods.report import progress_bar, save_json
from embodia.core.results import Column, Table, default_results_path, write_results

#: the results file of each ZO scope (under results/)
RESULTS = {"all": "methods/hybrid_zo", "blocks": "methods/hybrid_zo_blocks"}
MIB = 2**20
BATCH = 8


def modes_table(results: list[HybridResult], steps: int) -> Table:
    """Accuracy, passes, trainable parameters and training memory (MiB beyond the weights) per mode."""
    table = Table(
        [
            Column("mode", "mode"),
            Column("acc_before", "test acc before", ".1%"),
            Column("acc_after", "test acc after", ".1%"),
            Column("steps", "steps"),
            Column("forward", "forward passes"),
            Column("backward", "backward passes"),
            Column("fo_params", "FO params", ","),
            Column("zo_params", "ZO params", ","),
            Column("saved_mib", "saved activations MiB", ".1f"),
            Column("gradients_mib", "gradients MiB", ".1f"),
            Column("noise_mib", "ZO noise MiB", ".1f"),
            Column("total_mib", "training memory MiB", ".1f"),
        ]
    )
    for r in results:
        table.add(
            mode=r.mode,
            acc_before=r.accuracy_before,
            acc_after=r.accuracy,
            steps=steps,
            forward=r.forward_passes,
            backward=r.backward_passes,
            fo_params=r.trainable_fo,
            zo_params=r.trainable_zo,
            saved_mib=r.memory["saved_activations"] / MIB,
            gradients_mib=r.memory["gradients"] / MIB,
            noise_mib=r.memory["zo_noise"] / MIB,
            total_mib=r.memory["total"] / MIB,
        )
    return table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny run for tests")
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--steps", type=int, help="steps per mode (default 120; quick 2)")
    parser.add_argument("--modes", nargs="+", default=["lora", "zo", "hybrid", "full"])
    parser.add_argument("--zo-layers", default="all")
    parser.add_argument(
        "--zo-scope",
        choices=["all", "blocks"],
        default="all",
        help="all: every weight but LoRA (the paper); blocks: only the decoder blocks",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="runs/agents/hybrid_zo.json", help="raw JSON output")
    parser.add_argument("--results", help="results file (default: results/methods/hybrid_zo[_blocks].json)")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)

    steps = args.steps or (2 if args.quick else 120)
    modes = [m for m in args.modes if m != "full"] if args.quick else args.modes
    zo_layers = "26-29" if args.quick and args.zo_layers == "all" else args.zo_layers
    started = time.perf_counter()
    results = []
    for mode in modes:
        config = HybridConfig(
            mode=mode,
            steps=steps,
            batch_size=BATCH,
            zo_layers=zo_layers,
            zo_scope=args.zo_scope,
            eval_every=steps if args.quick else max(steps // 6, 1),
            seed=args.seed,
            test_limit=8 if args.quick else None,
        )
        lm = load_local_lm(args.model, fresh=True)
        with progress_bar(f"hybrid-zo {mode}", not args.quiet) as update:
            results.append(finetune(lm, config, progress=update))
        del lm
    seconds = time.perf_counter() - started

    table = modes_table(results, steps)
    run = Table(
        [
            Column("zo_scope", "ZO scope"),
            Column("zo_layers", "ZO blocks"),
            Column("batch", "batch"),
            Column("seconds", "wall time, all modes (s)", ",.0f"),
        ]
    )
    run.add(zo_scope=args.zo_scope, zo_layers=zo_layers, batch=BATCH, seconds=seconds)
    print(table.markdown())
    print("\naccuracy curves (step: test accuracy):")
    for r in results:
        print(f"  {r.mode}: " + ", ".join(f"{s}: {a:.0%}" for s, a in r.curve))
    print(f"\nZO scope {args.zo_scope}, ZO blocks {zo_layers}, {seconds:.0f} s")

    save_json(args.out, {"steps": steps, "results": results})
    name = RESULTS[args.zo_scope]
    path = write_results(
        args.results or default_results_path(name, quick=args.quick),
        {"modes": table, "run": run},
        name=name,
        title=f"Hybrid ZO/FO fine-tuning of SmolLM2-135M-Instruct (ZO scope {args.zo_scope}): accuracy and memory",
        seeds=[args.seed],
        data={
            "curves": {r.mode: r.curve for r in results},
            "memory_bytes": {r.mode: r.memory for r in results},
        },
    )
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
