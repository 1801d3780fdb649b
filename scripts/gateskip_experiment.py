"""GateSkip on SmolLM2-135M: perplexity and task accuracy vs the fraction of branch computations skipped.

Adds gates to every attention/MLP branch and fine-tunes on Python-documentation prose with a recipe
(``--recipe``; default ``paper``: the whole model and the gates, L2 sparsity with weight 1, skipping on
during training with the budget ramping from the 0th to the 20th gate percentile, one batch-level
threshold), then evaluates held-out perplexity and next-word accuracy on ~80 completion tasks at
per-layer skip budgets, ranking tokens by gate value and, as a control, at random.
``--recipe frozen-gates-l1`` is embodia's earlier variant (gates only, L1, no skipping in training).

    .venv/bin/python scripts/gateskip_experiment.py            # the full run (tens of minutes on 2 cores)
    .venv/bin/python scripts/gateskip_experiment.py --quick    # a few steps, tiny eval (what tests run)
"""

from __future__ import annotations

import argparse
import sys
import time

from embodia.agents.llm import load_local_lm
from embodia.agents.methods.gateskip import RECIPES, recipe_config, run_gateskip
from embodia.agents.methods.report import markdown_table, progress_bar, save_json


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny run for tests")
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--recipe", choices=sorted(RECIPES), default="paper", help="training recipe")
    parser.add_argument("--steps", type=int, help="fine-tuning steps (default 150; quick 3)")
    parser.add_argument(
        "--lr", type=float, help="peak learning rate (default: the recipe's; paper 3e-6 is for 6800 steps)"
    )
    parser.add_argument("--budgets", type=float, nargs="+", default=[0.0, 0.05, 0.15, 0.25, 0.5])
    parser.add_argument("--eval-chunks", type=int, default=8, help="held-out 128-token chunks (full run)")
    parser.add_argument("--task-limit", type=int, help="evaluate only the first N completion tasks")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, help="torch CPU threads (1 is fastest on a busy machine)")
    parser.add_argument("--out", default="runs/agents/gateskip.json", help="JSON results")
    parser.add_argument("--gates-out", help="save the trained gates (.safetensors)")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)

    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    if args.quick:
        config = recipe_config(
            args.recipe,
            steps=args.steps or 3,
            lr=args.lr,
            batch_size=2,
            seq_len=32,
            eval_chunks=2,
            eval_len=64,
            task_limit=16,
            seed=args.seed,
        )
        budgets = [b for b in args.budgets if b in (0.0, 0.25)] or args.budgets[:2]
    else:
        config = recipe_config(
            args.recipe,
            steps=args.steps or 150,
            lr=args.lr,
            batch_size=4,
            seq_len=64,
            eval_chunks=args.eval_chunks,
            eval_len=128,
            task_limit=args.task_limit,
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
        rows.append([p.ranking, f"{p.skipped_fraction:.1%}", f"{p.perplexity:.2f}", f"{p.accuracy:.1%}"])
    print(
        markdown_table(
            ["token ranking", "branch computations skipped", "held-out perplexity", "task accuracy"], rows
        )
    )
    first, last = result.history[0], result.history[-1]
    seconds = time.perf_counter() - started
    print(
        f"\nrecipe {args.recipe}: {config.steps} steps of {config.batch_size} x {config.seq_len} tokens, "
        f"finetune={config.finetune}, lr {config.lr:g}, {config.sparsity_loss} x {config.sparsity:g}, "
        f"training skip {config.train_skip_start:.0%} -> {config.train_skip_end:.0%} "
        f"(last step skipped {last['skipped_fraction']:.1%}), lm loss {first['lm_loss']:.3f} -> "
        f"{last['lm_loss']:.3f}, mean gate {first['gate_mean']:.4f} -> {last['gate_mean']:.4f}; {seconds:.0f} s"
    )
    save_json(
        args.out,
        {"recipe": args.recipe, "config": config, "budgets": budgets, "result": result, "seconds": seconds},
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
