"""Hybrid ZO/FO fine-tuning on SmolLM2-135M: LoRA-only vs ZO-only vs hybrid (and full FO for memory).

4-way topic classification of templated sentences with arbitrary label letters (chance = 25 %), train
and test sentences with disjoint vocabulary. Same steps, batch and data order for every mode. Memory is
what training needs beyond the weights, measured per step (saved activations, gradients, optimiser
state, ZO noise). ZO covers every weight but LoRA by default, as the paper (``--zo-scope blocks``: only
the decoder blocks).

    .venv/bin/python scripts/hybrid_zo_experiment.py           # 120 steps per mode
    .venv/bin/python scripts/hybrid_zo_experiment.py --quick   # 2 steps of lora / zo / hybrid, ZO on blocks 26-29, 8 test sentences (tests)
"""

from __future__ import annotations

import argparse
import sys
import time

from embodia.agents.llm import load_local_lm
from embodia.agents.methods.hybrid_zo import HybridConfig, finetune
from embodia.agents.methods.report import markdown_table, progress_bar, save_json


def _mib(n: int) -> str:
    return f"{n / 2**20:.1f}"


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
    parser.add_argument("--out", default="runs/agents/hybrid_zo.json")
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
            batch_size=8,
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
    rows = []
    for r in results:
        rows.append(
            [
                r.mode,
                f"{r.accuracy_before:.1%}",
                f"{r.accuracy:.1%}",
                steps,
                f"{r.forward_passes} / {r.backward_passes}",
                f"{r.trainable_fo:,}",
                f"{r.trainable_zo:,}",
                _mib(r.memory["saved_activations"]),
                _mib(r.memory["gradients"]),
                _mib(r.memory["zo_noise"]),
                _mib(r.memory["total"]),
            ]
        )
    print(
        markdown_table(
            [
                "mode",
                "test acc before",
                "test acc after",
                "steps",
                "forward / backward passes",
                "FO params",
                "ZO params",
                "saved activations MiB",
                "gradients MiB",
                "ZO noise MiB",
                "training memory MiB",
            ],
            rows,
        )
    )
    print("\naccuracy curves (step: test accuracy):")
    for r in results:
        print(f"  {r.mode}: " + ", ".join(f"{s}: {a:.0%}" for s, a in r.curve))
    print(f"\nZO scope {args.zo_scope}, ZO blocks {zo_layers}, {time.perf_counter() - started:.0f} s")
    save_json(args.out, {"steps": steps, "results": results})
    return 0


if __name__ == "__main__":
    sys.exit(main())
