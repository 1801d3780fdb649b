"""COLD-Steer on SmolLM2-135M: p(target continuation) on held-out prompts vs number of examples.

Behaviour: continue an opinion prompt ("The hotel room we booked was") with a negative word rather than
a positive one (the model's prior favours the positive word, so there is room to steer; ``--behaviour
positive`` steers the other way). Steering edits are built from n in-context examples (disjoint prompts and words from
the held-out set) with the unit-kernel and finite-difference COLD-Steer variants and the mean-difference
baseline; the score is p(target) / (p(target) + p(other)) on 20 held-out prompts.

    .venv/bin/python scripts/cold_steer_experiment.py           # n = 1, 2, 4, 8, 16 -> results/methods/cold_steer.json
    .venv/bin/python scripts/cold_steer_experiment.py --quick   # n = 2, 4 prompts (what tests run)
"""

from __future__ import annotations

import argparse
import sys
import time

from embodia.agents.llm import load_local_lm
from embodia.agents.methods.cold_steer import METHODS, run_cold_steer
from embodia.agents.methods.report import progress_bar, save_json
from embodia.core.results import Column, Table, default_results_path, write_results

RESULTS = "methods/cold_steer"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny run for tests")
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--layer", type=int, default=10)
    parser.add_argument("--alpha", type=float, default=0.5, help="shift norm / median activation norm")
    parser.add_argument("--counts", type=int, nargs="+", default=[1, 2, 4, 8, 16])
    parser.add_argument(
        "--behaviour",
        choices=["negative", "positive"],
        default="negative",
        help="target words (the model's prior favours positive ones)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="runs/agents/cold_steer.json", help="raw JSON output")
    parser.add_argument("--results", help=f"results file (default: results/{RESULTS}.json)")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)

    counts, heldout = ([2], 4) if args.quick else (args.counts, 20)
    started = time.perf_counter()
    lm = load_local_lm(args.model)
    with progress_bar("cold-steer", not args.quiet) as update:
        result = run_cold_steer(
            lm,
            layer=args.layer,
            alpha=args.alpha,
            example_counts=counts,
            heldout=heldout,
            behaviour=args.behaviour,
            seed=args.seed,
            progress=update,
        )
    seconds = time.perf_counter() - started

    steering = Table(
        [
            Column("method", "method"),
            Column("examples", "examples"),
            Column("mean_p", "mean p(target)", ".3f"),
            Column("flipped", "held-out prompts with p(target) > 0.5", ".0%"),
        ]
    )
    steering.add(
        method="before steering", examples=None, mean_p=result.before_mean, flipped=result.before_flipped
    )
    by = {(p.method, p.n_examples): p for p in result.points}
    for method in METHODS:
        for n in counts:
            p = by[(method, n)]
            steering.add(
                method=method, examples=n, mean_p=p.mean_target_probability, flipped=p.flipped_fraction
            )
    run = Table(
        [
            Column("behaviour", "behaviour"),
            Column("layer", "layer"),
            Column("alpha", "alpha (shift / median activation norm)"),
            Column("heldout", "held-out prompts"),
            Column("seconds", "wall time (s)", ",.0f"),
        ]
    )
    run.add(behaviour=args.behaviour, layer=args.layer, alpha=args.alpha, heldout=heldout, seconds=seconds)
    print(steering.markdown())
    print(f"\nlayer {args.layer}, alpha {args.alpha}, {heldout} held-out prompts, {seconds:.0f} s")

    save_json(args.out, {"counts": counts, "heldout": heldout, "result": result})
    path = write_results(
        args.results or default_results_path(RESULTS, quick=args.quick),
        {"steering": steering, "run": run},
        name=RESULTS,
        title=f"COLD-Steer on SmolLM2-135M-Instruct: steering toward {args.behaviour} words from n examples",
        seeds=[args.seed],
    )
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
