"""Hybrid ZO/FO on a tiny pretrained transformer storing new facts: LoRA vs ZO vs hybrid at equal forward passes.

Per seed: pretrain a ~110k-parameter decoder here on 64 keys x 2 relations of random facts, then fine-tune a
copy per mode on 64 new keys x 2 relations (128 new facts, 32 possible values) with the same budget of
forward passes: ``full`` (first-order SGD on every weight: the capacity reference), ``lora`` (rank 4 on q/v),
``zo`` (MeZO on every weight), ``hybrid`` (both), and the hybrid once more with LoRA's step count (three
times the forward passes: does the ZO part add anything to LoRA at all?), also as a control whose ZO steps
keep their size but take a random sign (is it the gradient estimate or just moving the frozen weights?).
Accuracy on the new facts and on the pretrained ones (forgetting) is the argmax over the whole vocabulary.

Learning rates: chosen on seed 100 (not a reported seed) from full 0.03 / 0.1 / 0.3 / 1, LoRA 0.1 / 0.3 / 1 /
3, ZO 1e-4 / 3e-4 / 1e-3 / 3e-3 (larger ZO rates diverge); the hybrid uses the best LoRA and ZO rates.

    .venv/bin/python scripts/hybrid_zo_facts_experiment.py           # 3 seeds, ~10 min on the shared 2-core machine
    .venv/bin/python scripts/hybrid_zo_facts_experiment.py --quick   # seconds (tests)

Writes ``results/methods/hybrid_zo_facts.json`` (table ``modes``: mean over seeds with a 95 % t interval,
clipped to 0-100 % for accuracies; ``paired``: per-seed hybrid - LoRA differences;
a ``--quick`` run writes under ``runs/quick-results/``, ``--results PATH`` elsewhere) and every seed's raw
numbers to ``--out``.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
import time

import torch
from scipy import stats

from embodia.agents.methods.hybrid_zo_facts import (
    FactsConfig,
    FactsTask,
    TinyLMConfig,
    accuracy,
    finetune_facts,
    pretrain,
    steps_for_budget,
)
from embodia.agents.methods.report import progress_bar, save_json
from embodia.core.results import Column, Table, default_results_path, interval, write_results

NAME = "methods/hybrid_zo_facts"
#: (row label, mode, learning rate FO, learning rate ZO, steps: "budget" or "lora")
ROWS = [
    ("full FO (every weight)", "full", 0.03, 0.0, "budget"),
    ("LoRA r4", "lora", 0.3, 0.0, "budget"),
    ("ZO (every weight)", "zo", 0.0, 1e-4, "budget"),
    ("hybrid (ZO + LoRA r4)", "hybrid", 0.3, 1e-4, "budget"),
    ("hybrid, LoRA's steps (3x forwards)", "hybrid", 0.3, 1e-4, "lora"),
    ("control: hybrid, LoRA's steps, ZO sign random", "hybrid", 0.3, 1e-4, "lora"),
]


def t_interval(values: list[float], bounds: tuple[float, float] | None = None) -> dict[str, float]:
    """Mean with a 95 % Student-t interval, clipped to ``bounds`` (accuracies: 0-1); one value: itself."""
    mean = statistics.fmean(values)
    if len(values) < 2:
        return interval(mean, mean, mean)
    half = stats.t.ppf(0.975, len(values) - 1) * statistics.stdev(values) / len(values) ** 0.5
    low, high = mean - half, mean + half
    if bounds is not None:
        low, high = max(low, bounds[0]), min(high, bounds[1])
    return interval(mean, low, high)


#: the paired comparisons with LoRA alone: (row label, what it tests)
PAIRED = [
    ("hybrid (ZO + LoRA r4)", "equal forward passes"),
    ("hybrid, LoRA's steps (3x forwards)", "equal steps (the ZO part's own effect)"),
    ("control: hybrid, LoRA's steps, ZO sign random", "equal steps, ZO steps without gradient information"),
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny run for tests")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--forward-passes", type=int, default=1200, help="budget per mode")
    parser.add_argument("--pretrain-steps", type=int, default=400)
    parser.add_argument("--out", default="runs/agents/hybrid_zo_facts.json", help="raw numbers (JSON)")
    parser.add_argument("--results", help="results file (default: results/methods/hybrid_zo_facts.json)")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    seeds, budget, pretrain_steps = args.seeds, args.forward_passes, args.pretrain_steps
    task = FactsTask(n_old_keys=64, n_new_keys=64)
    if args.quick:
        seeds, budget, pretrain_steps = 1, 24, 30
        task = FactsTask(n_values=8, n_old_keys=8, n_new_keys=8)
    lm_config = TinyLMConfig(pretrain_steps=pretrain_steps)
    started = time.perf_counter()
    per_seed = []
    for seed in range(seeds):
        model = pretrain(task, lm_config, seed)
        old_x, old_y = task.facts(new=False, seed=seed)
        entry = {"seed": seed, "pretrained_old_acc": accuracy(model, old_x, old_y), "rows": {}}
        for label, mode, lr_fo, lr_zo, steps_rule in ROWS:
            steps = steps_for_budget("lora" if steps_rule == "lora" else mode, budget)
            config = FactsConfig(
                mode=mode,
                steps=steps,
                lr_fo=lr_fo,
                lr_zo=lr_zo,
                seed=seed,
                zo_random_sign=label.startswith("control"),
            )
            with progress_bar(f"seed {seed} {label}", not args.quiet) as update:
                result = finetune_facts(
                    copy.deepcopy(model), task, config, seed, update, curve_every=max(steps // 6, 1)
                )
            entry["rows"][label] = result
        per_seed.append(entry)
    seconds = time.perf_counter() - started

    table = Table(
        [
            Column("mode", "mode"),
            Column("steps", "steps"),
            Column("forward", "forward passes"),
            Column("backward", "backward passes"),
            Column("fo_params", "FO params", ","),
            Column("zo_params", "ZO params", ","),
            Column("new_before", "new facts acc before", ".1%"),
            Column("new_after", "new facts acc after", ".1%"),
            Column("old_after", "pretrained facts acc after", ".1%"),
            Column("loss", "final train loss", ".2f"),
        ]
    )
    for label, *_ in ROWS:
        results = [entry["rows"][label] for entry in per_seed]
        first = results[0]
        table.add(
            mode=label,
            steps=first.steps,
            forward=first.forward_passes,
            backward=first.backward_passes,
            fo_params=first.trainable_fo,
            zo_params=first.trainable_zo,
            new_before=t_interval([r.new_before for r in results], (0.0, 1.0)),
            new_after=t_interval([r.new_after for r in results], (0.0, 1.0)),
            old_after=t_interval([r.old_after for r in results], (0.0, 1.0)),
            loss=t_interval([r.loss_curve[-1][1] for r in results]),
        )
    paired = Table(
        [
            Column("hybrid", "hybrid run"),
            Column("comparison", "against LoRA r4 at"),
            Column("gain", "new facts acc, hybrid minus LoRA", ".1%"),
            Column("wins", "seeds where the hybrid stores more"),
        ]
    )
    for label, comparison in PAIRED:
        gains = [e["rows"][label].new_after - e["rows"]["LoRA r4"].new_after for e in per_seed]
        paired.add(
            hybrid=label,
            comparison=comparison,
            gain=t_interval(gains),
            wins=f"{sum(g > 0 for g in gains)} / {len(gains)}",
        )
    run = Table(
        [
            Column("params", "model params", ","),
            Column("new_facts", "new facts"),
            Column("values", "values (chance)"),
            Column("pretrained_acc", "pretrained facts acc before", ".1%"),
            Column("budget", "forward passes per mode"),
            Column("seconds", "wall time, all seeds (s)", ",.0f"),
        ]
    )
    n_params = sum(p.numel() for p in pretrain(task, TinyLMConfig(pretrain_steps=0), 0).parameters())
    run.add(
        params=n_params,
        new_facts=task.n_new_keys * task.n_relations,
        values=task.n_values,
        pretrained_acc=t_interval([e["pretrained_old_acc"] for e in per_seed], (0.0, 1.0)),
        budget=budget,
        seconds=seconds,
    )
    print(table.markdown())
    print()
    print(paired.markdown())
    print()
    print(run.markdown())
    save_json(args.out, {"forward_passes": budget, "seeds": per_seed})
    path = write_results(
        args.results or default_results_path(NAME, quick=args.quick),
        {"modes": table, "paired": paired, "run": run},
        name=NAME,
        title="Hybrid ZO/FO on a tiny pretrained transformer storing 128 new facts, equal forward passes",
        seeds=list(range(seeds)),
        data={
            "loss_curves": {label: [e["rows"][label].loss_curve for e in per_seed] for label, *_ in ROWS},
            "learning_rates": {label: {"fo": lf, "zo": lz} for label, _, lf, lz, _ in ROWS},
        },
    )
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
