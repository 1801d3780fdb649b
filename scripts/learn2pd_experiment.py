"""Learn2PD on a masked-diffusion LM trained here: one token per pass vs threshold vs learned filter (+EoTP).

Task ``shuffle`` (default): write any permutation of 2-8 digits into an 8-position answer padded with
[EOT]; the model is trained on random permutations, so parallel decoding can pick inconsistent modes.
Accuracy: the answer is a permutation of the prompt followed by [EOT]s. Forward passes: mean per prompt.

    .venv/bin/python scripts/learn2pd_experiment.py                 # 3000 LM steps per seed, 2 seeds
    .venv/bin/python scripts/learn2pd_experiment.py --quick         # seconds (tests)
    .venv/bin/python scripts/learn2pd_experiment.py --task sort --save runs/agents/learn2pd_model

Writes the results file ``results/methods/learn2pd_<task>.json`` (table ``strategies``: mean over seeds,
the range over seeds as the interval; a ``--quick`` run writes under ``runs/quick-results/``,
``--results PATH`` elsewhere) and the raw numbers of every seed to ``--out``.
"""

from __future__ import annotations

import argparse
import statistics
import sys

import torch

from embodia.agents.methods.learn2pd.pipeline import build, compare, save
from embodia.agents.methods.learn2pd.tasks import TASKS
from embodia.agents.methods.report import progress_bar, save_json
from embodia.core.results import Column, Table, default_results_path, interval, write_results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny run for tests")
    parser.add_argument("--task", choices=TASKS, default="shuffle")
    parser.add_argument("--steps", type=int, default=3000, help="LM training steps")
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--eval", type=int, default=1000, help="held-out prompts")
    parser.add_argument("--filter-thresholds", type=float, nargs="+", default=[0.5, 0.9, 0.97])
    parser.add_argument("--save", default=None, help="folder for the first seed's LM + filter")
    parser.add_argument("--out", default="runs/agents/learn2pd.json", help="raw numbers (JSON)")
    parser.add_argument(
        "--results", default=None, help="results file (default: results/methods/learn2pd_<task>.json)"
    )
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    steps, seeds, n, traces = args.steps, args.seeds, args.eval, 512
    if args.quick:
        steps, seeds, n, traces = 60, 1, 64, 64
    thresholds = (0.99, 0.9, 0.7)
    per_seed = []
    for seed in range(seeds):
        with progress_bar(f"learn2pd LM seed {seed}", not args.quiet) as update:
            trained = build(args.task, steps, seed, traces, log=update)
        if seed == 0 and args.save:
            save(trained, args.save)
        rows = compare(trained, args.task, n, seed, thresholds, args.filter_thresholds)
        per_seed.append(
            {"seed": seed, "train_s": trained.train_s, "filter_s": trained.filter_s, "rows": rows}
        )
    table = Table(
        [
            Column("strategy", "strategy"),
            Column("accuracy", "accuracy", ".1%"),
            Column("passes", "forward passes", ".2f"),
            Column("speedup", "speed-up vs one (×)", ".2f"),
        ]
    )
    for i, row in enumerate(per_seed[0]["rows"]):
        acc = [s["rows"][i]["accuracy"] for s in per_seed]
        table.add(
            strategy=row["strategy"],
            accuracy=interval(statistics.mean(acc), min(acc), max(acc)) if len(acc) > 1 else acc[0],
            passes=statistics.mean(s["rows"][i]["passes"] for s in per_seed),
            speedup=statistics.mean(s["rows"][i]["speedup"] for s in per_seed),
        )
    print(
        f"task {args.task}, {steps} LM steps, {seeds} seed(s), {n} held-out prompts, filter rho {args.filter_thresholds}"
    )
    print(table.markdown())
    raw = {
        "task": args.task,
        "steps": steps,
        "eval": n,
        "filter_thresholds": args.filter_thresholds,
        "seeds": per_seed,
    }
    save_json(args.out, raw)
    written = write_results(
        args.results or default_results_path(f"methods/learn2pd_{args.task}", quick=args.quick),
        {"strategies": table},
        title=f"Learn2PD on the {args.task} task: accuracy and forward passes per decoding strategy",
        seeds=range(seeds),
        data=raw,
    )
    print(f"results: {written}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
