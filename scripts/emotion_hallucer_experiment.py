"""EmotionHallucer-style evaluation of SmolLM2-135M, with and without PEP-MEK prompting.

32 adversarial yes/no question pairs written for embodia (20 emotion-psychology knowledge pairs, 12
perception pairs whose scene is described in text). Pair accuracy counts a pair only when both the
basic and the hallucinated question are answered correctly; the yes-percentage difference is the share
of "yes" answers minus the share of "yes" labels (0.5 here) and r_fp the share of the wrong answers that
are "yes" (the paper's two bias measures).

    .venv/bin/python scripts/emotion_hallucer_experiment.py           # all pairs, direct and PEP-MEK
    .venv/bin/python scripts/emotion_hallucer_experiment.py --quick   # 3 pairs, short generations (tests)
    .venv/bin/python scripts/emotion_hallucer_experiment.py --prompting direct   # only the direct row
    .venv/bin/python scripts/emotion_hallucer_experiment.py --pairs my_pairs.json --model http://127.0.0.1:8080/v1#qwen
"""

from __future__ import annotations

import argparse
import sys
import time

from embodia.agents.llm import load_lm
from embodia.agents.methods.emotion_hallucer import BUILTIN_PAIRS, evaluate, load_pairs
from embodia.agents.methods.report import markdown_table, progress_bar, save_json


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


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
    parser.add_argument("--out", default="runs/agents/emotion_hallucer.json")
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
    rows = []
    for name, (m, _) in runs.items():
        cats = " / ".join(
            f"{c} {v['pair_accuracy']:.0%}, {v['yes_bias']:+.2f}, {_ratio(v['false_positive_ratio'])}"
            for c, v in m.by_category.items()
        )
        rows.append(
            [
                name,
                m.pairs,
                f"{m.pair_accuracy:.1%}",
                f"{m.basic_accuracy:.1%}",
                f"{m.hallucinated_accuracy:.1%}",
                f"{m.yes_ratio:.1%}",
                f"{m.yes_bias:+.2f}",
                _ratio(m.false_positive_ratio),
                cats,
            ]
        )
    print(
        markdown_table(
            [
                "prompting",
                "pairs",
                "pair acc",
                "basic acc",
                "hallucinated acc",
                "yes ratio",
                "yes % difference",
                "r_fp",
                "by category: pair acc, yes % difference, r_fp",
            ],
            rows,
        )
    )
    print(f"\nmodel {lm.name}, {time.perf_counter() - started:.0f} s")
    save_json(args.out, {name: {"metrics": m, "transcripts": t} for name, (m, t) in runs.items()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
