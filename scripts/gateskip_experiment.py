"""GateSkip on SmolLM2-135M: perplexity and task accuracy vs the fraction of branch computations skipped.

Adds gates to every attention/MLP branch, fine-tunes only the gates on Python-documentation prose with
the sparsity penalty, then evaluates held-out perplexity and next-word accuracy on ~80 completion tasks
at per-layer skip budgets 0/15/25/50 %, ranking tokens by gate value and, as a control, at random.

    .venv/bin/python scripts/gateskip_experiment.py            # the full run (tens of minutes on 2 cores)
    .venv/bin/python scripts/gateskip_experiment.py --quick    # a few steps, tiny eval (what tests run)
"""

from __future__ import annotations

import argparse
import sys
import time

from embodia.agents.llm import load_local_lm
from embodia.agents.methods.gateskip import GateSkipConfig, run_gateskip
from embodia.agents.methods.report import markdown_table, progress_bar, save_json


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny run for tests")
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--steps", type=int, help="gate fine-tuning steps (default 80; quick 3)")
    parser.add_argument("--budgets", type=float, nargs="+", default=[0.0, 0.15, 0.25, 0.5])
    parser.add_argument("--eval-chunks", type=int, default=12, help="held-out 128-token chunks (full run)")
    parser.add_argument("--task-limit", type=int, help="evaluate only the first N completion tasks")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="runs/agents/gateskip.json", help="JSON results")
    parser.add_argument("--gates-out", help="save the trained gates (.safetensors)")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)

    if args.quick:
        config = GateSkipConfig(
            steps=args.steps or 3,
            batch_size=2,
            seq_len=32,
            lr=2e-2,
            sparsity=0.1,
            eval_chunks=2,
            eval_len=64,
            task_limit=16,
            seed=args.seed,
        )
        budgets = [b for b in args.budgets if b in (0.0, 0.25)] or args.budgets[:2]
    else:
        config = GateSkipConfig(
            steps=args.steps or 80,
            batch_size=4,
            seq_len=64,
            lr=2e-2,
            sparsity=0.1,
            eval_chunks=args.eval_chunks,
            task_limit=args.task_limit,
            eval_len=128,
            seed=args.seed,
        )
        budgets = args.budgets
    started = time.perf_counter()
    lm = load_local_lm(args.model, fresh=True)
    with progress_bar("gateskip", not args.quiet) as update:
        result = run_gateskip(lm, config, budgets=budgets, gates_out=args.gates_out, progress=update)
    rows = [
        [
            "none (original model)",
            "0 %",
            f"{result.baseline_perplexity:.2f}",
            f"{result.baseline_accuracy:.1%}",
        ]
    ]
    for p in result.points:
        rows.append([f"{p.ranking}", f"{p.skipped_fraction:.1%}", f"{p.perplexity:.2f}", f"{p.accuracy:.1%}"])
    print(
        markdown_table(
            ["token ranking", "branch computations skipped", "held-out perplexity", "task accuracy"], rows
        )
    )
    print(f"\n{config.steps} gate fine-tuning steps, {time.perf_counter() - started:.0f} s")
    save_json(
        args.out,
        {"config": config, "budgets": budgets, "result": result, "seconds": time.perf_counter() - started},
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
