"""EmotionHallucer-style evaluation of SmolLM2-135M, with and without PEP-MEK prompting.

32 adversarial yes/no question pairs written for embodia (20 emotion-psychology knowledge pairs, 12
perception pairs whose scene is described in text). Pair accuracy counts a pair only when both the
basic and the hallucinated question are answered correctly; the yes-percentage difference is the share
of "yes" answers minus the share of "yes" labels (0.5 here) and r_fp the share of the wrong answers that
are "yes" (the paper's two bias measures).

    .venv/bin/python scripts/emotion_hallucer_experiment.py           # all pairs, direct and PEP-MEK -> results/methods/emotion_hallucer.json
    .venv/bin/python scripts/emotion_hallucer_experiment.py --quick   # 3 pairs, short generations (tests)
    .venv/bin/python scripts/emotion_hallucer_experiment.py --prompting direct   # only the direct row
    .venv/bin/python scripts/emotion_hallucer_experiment.py --pairs my_pairs.json --model http://127.0.0.1:8080/v1#qwen
"""

from __future__ import annotations

import argparse
import sys
import time

from embodia.agents.llm import load_lm
from embodia.agents.methods.emotion_hallucer import BUILTIN_PAIRS, PairMetrics, evaluate, load_pairs
from embodia.agents.methods.report import progress_bar, save_json
from embodia.core.results import Column, Table, default_results_path, write_results

RESULTS = "methods/emotion_hallucer"


def tables(runs: dict[str, PairMetrics]) -> dict[str, Table]:
    """The metrics per prompting, and per prompting and category."""
    overall = Table(
        [
            Column("prompting", "prompting"),
            Column("pairs", "pairs"),
            Column("pair_acc", "pair acc", ".1%"),
            Column("basic_acc", "basic acc", ".1%"),
            Column("hallucinated_acc", "hallucinated acc", ".1%"),
            Column("yes_ratio", "yes ratio", ".1%"),
            Column("yes_diff", "yes % difference", "+.2f"),
            Column("r_fp", "r_fp", ".2f"),
        ]
    )
    by_category = Table(
        [
            Column("prompting", "prompting"),
            Column("category", "category"),
            Column("pairs", "pairs"),
            Column("pair_acc", "pair acc", ".0%"),
            Column("yes_diff", "yes % difference", "+.2f"),
            Column("r_fp", "r_fp", ".2f"),
        ]
    )
    for name, m in runs.items():
        overall.add(
            prompting=name,
            pairs=m.pairs,
            pair_acc=m.pair_accuracy,
            basic_acc=m.basic_accuracy,
            hallucinated_acc=m.hallucinated_accuracy,
            yes_ratio=m.yes_ratio,
            yes_diff=m.yes_bias,
            r_fp=m.false_positive_ratio,
        )
        for category, v in m.by_category.items():
            by_category.add(
                prompting=name,
                category=category,
                pairs=v["pairs"],
                pair_acc=v["pair_accuracy"],
                yes_diff=v["yes_bias"],
                r_fp=v["false_positive_ratio"],
            )
    return {"prompting": overall, "categories": by_category}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny run for tests")
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--pairs", default=BUILTIN_PAIRS)
    parser.add_argument("--max-new-tokens", type=int, default=48)
    parser.add_argument(
        "--prompting",
        choices=["both", "direct", "pep-mek"],
        default="both",
        help="which rows to run (PEP-MEK takes most of the time)",
    )
    parser.add_argument("--out", default="runs/agents/emotion_hallucer.json", help="raw JSON output")
    parser.add_argument("--results", help=f"results file (default: results/{RESULTS}.json)")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)

    pairs = load_pairs(args.pairs)
    max_new = args.max_new_tokens
    if args.quick:
        pairs, max_new = [pairs[0], pairs[-1], pairs[1]], 12
    lm = load_lm(args.model)
    started = time.perf_counter()
    runs = {}
    chosen = {"both": (False, True), "direct": (False,), "pep-mek": (True,)}[args.prompting]
    for pep_mek in chosen:
        name = "PEP-MEK" if pep_mek else "direct"
        with progress_bar(f"emotion-hallucer {name}", not args.quiet) as update:
            runs[name] = evaluate(lm, pairs, pep_mek=pep_mek, max_new_tokens=max_new, progress=update)
    seconds = time.perf_counter() - started

    results = tables({name: m for name, (m, _) in runs.items()})
    run = Table(
        [
            Column("model", "model"),
            Column("max_new_tokens", "PEP-MEK generation length (tokens)"),
            Column("seconds", "wall time (s)", ",.0f"),
        ]
    )
    run.add(model=lm.name, max_new_tokens=max_new, seconds=seconds)
    results["run"] = run
    print(results["prompting"].markdown())
    print()
    print(results["categories"].markdown())
    print(f"\nmodel {lm.name}, {seconds:.0f} s")

    save_json(args.out, {name: {"metrics": m, "transcripts": t} for name, (m, t) in runs.items()})
    path = write_results(
        args.results or default_results_path(RESULTS, quick=args.quick),
        results,
        name=RESULTS,
        title=f"EmotionHallucer-style pairs on {lm.name}, direct and with PEP-MEK",
        data={"pairs": str(args.pairs), "unanswered": {name: m.unanswered for name, (m, _) in runs.items()}},
    )
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
