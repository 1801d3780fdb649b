"""Learn2PD on a masked-diffusion LM trained here: one token per pass vs threshold vs learned filter (+EoTP).

Task ``shuffle`` (default): write any permutation of 2-8 digits into an 8-position answer padded with
[EOT]; the model is trained on random permutations, so parallel decoding can pick inconsistent modes.
Accuracy: the answer is a permutation of the prompt followed by [EOT]s. Forward passes: mean per prompt.

    .venv/bin/python scripts/learn2pd_experiment.py                 # 3000 LM steps per seed, 2 seeds
    .venv/bin/python scripts/learn2pd_experiment.py --quick         # seconds (tests)
    .venv/bin/python scripts/learn2pd_experiment.py --task sort --save runs/agents/learn2pd_model
"""

from __future__ import annotations

import argparse
import statistics
import sys

import torch

from embodia.agents.methods.learn2pd.pipeline import build, compare, save
from embodia.agents.methods.learn2pd.tasks import TASKS
from embodia.agents.methods.report import markdown_table, progress_bar, save_json


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny run for tests")
    parser.add_argument("--task", choices=TASKS, default="shuffle")
    parser.add_argument("--steps", type=int, default=3000, help="LM training steps")
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--eval", type=int, default=1000, help="held-out prompts")
    parser.add_argument("--filter-thresholds", type=float, nargs="+", default=[0.5, 0.9, 0.97])
    parser.add_argument("--save", default=None, help="folder for the first seed's LM + filter")
    parser.add_argument("--out", default="runs/agents/learn2pd.json")
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
    table = []
    for i, row in enumerate(per_seed[0]["rows"]):
        acc = [s["rows"][i]["accuracy"] for s in per_seed]
        passes = [s["rows"][i]["passes"] for s in per_seed]
        speed = [s["rows"][i]["speedup"] for s in per_seed]
        table.append(
            [
                row["strategy"],
                f"{statistics.mean(acc):.1%}" + (f" ({min(acc):.1%}-{max(acc):.1%})" if len(acc) > 1 else ""),
                f"{statistics.mean(passes):.2f}",
                f"{statistics.mean(speed):.2f}x",
            ]
        )
    text = markdown_table(["strategy", "accuracy", "forward passes", "speed-up vs one"], table)
    print(
        f"task {args.task}, {steps} LM steps, {seeds} seed(s), {n} held-out prompts, filter rho {args.filter_thresholds}"
    )
    print(text)
    save_json(
        args.out,
        {
            "task": args.task,
            "steps": steps,
            "eval": n,
            "filter_thresholds": args.filter_thresholds,
            "seeds": per_seed,
            "table": text,
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
