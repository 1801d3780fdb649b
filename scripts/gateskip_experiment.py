"""GateSkip on SmolLM2-135M: perplexity and task accuracy vs the fraction of branch computations skipped.

Adds gates to every attention/MLP branch and fine-tunes on Python-documentation prose with a recipe
(``--recipe``; default ``paper``: the whole model and the gates, L2 sparsity with weight 1, skipping on
during training with the budget ramping from the 0th to the 20th gate percentile, one batch-level
threshold), then evaluates held-out perplexity and next-word accuracy on ~80 completion tasks at
per-layer skip budgets, ranking tokens by gate value and, as a control, at random.
``--recipe frozen-gates-l1`` is embodia's earlier variant (gates only, L1, no skipping in training).
Each recipe writes its own results file (``results/methods/gateskip.json`` for the paper recipe,
``gateskip_frozen_backbone.json``, ``gateskip_frozen_gates_l1.json``).

    .venv/bin/python scripts/gateskip_experiment.py            # the full run (tens of minutes on 2 cores)
    .venv/bin/python scripts/gateskip_experiment.py --quick    # a few steps, tiny eval (what tests run)
"""

from __future__ import annotations

import argparse
import sys
import time

from embodia.agents.llm import load_local_lm
from embodia.agents.methods.gateskip import (
    RECIPES,
    GateSkipConfig,
    GateSkipResult,
    recipe_config,
    run_gateskip,
)
from embodia.agents.methods.report import progress_bar, save_json
from embodia.core.results import Column, Table, default_results_path, write_results

#: the results file of each recipe (under results/)
RESULTS = {
    "paper": "methods/gateskip",
    "frozen-backbone": "methods/gateskip_frozen_backbone",
    "frozen-gates-l1": "methods/gateskip_frozen_gates_l1",
}


def skipping_table(result: GateSkipResult) -> Table:
    """Quality at each budget: the original model, then gate and random ranking."""
    table = Table(
        [
            Column("ranking", "token ranking"),
            Column("budget", "skip budget", ".0%"),
            Column("skipped", "branch computations skipped", ".1%"),
            Column("perplexity", "held-out perplexity", ".4g"),
            Column("accuracy", "task accuracy", ".1%"),
        ]
    )
    table.add(
        ranking="none (original model)",
        budget=0.0,
        skipped=0.0,
        perplexity=result.baseline_perplexity,
        accuracy=result.baseline_accuracy,
    )
    for p in result.points:
        table.add(
            ranking=p.ranking,
            budget=p.budget,
            skipped=p.skipped_fraction,
            perplexity=p.perplexity,
            accuracy=p.accuracy,
        )
    return table


def training_table(recipe: str, config: GateSkipConfig, result: GateSkipResult, seconds: float) -> Table:
    """What fine-tuning did: skipping at the last step, LM loss and mean gate at the first and last step."""
    table = Table(
        [
            Column("recipe", "recipe"),
            Column("steps", "steps"),
            Column("lr", "peak learning rate", ".2g"),
            Column("last_skipped", "skipped at the last step", ".1%"),
            Column("loss_first", "LM loss, first step", ".2f"),
            Column("loss_last", "LM loss, last step", ".2f"),
            Column("gate_first", "mean gate, first step", ".4f"),
            Column("gate_last", "mean gate, last step", ".4f"),
            Column("seconds", "wall time (s)", ",.0f"),
        ]
    )
    first, last = result.history[0], result.history[-1]
    table.add(
        recipe=recipe,
        steps=config.steps,
        lr=config.lr,
        last_skipped=last["skipped_fraction"],
        loss_first=first["lm_loss"],
        loss_last=last["lm_loss"],
        gate_first=first["gate_mean"],
        gate_last=last["gate_mean"],
        seconds=seconds,
    )
    return table


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
    parser.add_argument("--out", default="runs/agents/gateskip.json", help="raw JSON output")
    parser.add_argument("--results", help="results file (default: results/methods/gateskip[_RECIPE].json)")
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
    seconds = time.perf_counter() - started

    skipping = skipping_table(result)
    training = training_table(args.recipe, config, result, seconds)
    print(skipping.markdown())
    print()
    print(training.markdown())
    print(
        f"\nrecipe {args.recipe}: {config.steps} steps of {config.batch_size} x {config.seq_len} tokens, "
        f"finetune={config.finetune}, {config.sparsity_loss} x {config.sparsity:g}, "
        f"training skip {config.train_skip_start:.0%} -> {config.train_skip_end:.0%}"
    )

    save_json(
        args.out,
        {"recipe": args.recipe, "config": config, "budgets": budgets, "result": result, "seconds": seconds},
    )
    name = RESULTS[args.recipe]
    path = write_results(
        args.results or default_results_path(name, quick=args.quick),
        {"skipping": skipping, "training": training},
        name=None if args.results else name,  # a --results path names the file it writes
        title=f"GateSkip on SmolLM2-135M-Instruct, recipe {args.recipe}: quality vs branch computations skipped",
        seeds=[args.seed],
        data={"config": config, "gate_profile": result.gate_profile, "history": result.history},
    )
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
