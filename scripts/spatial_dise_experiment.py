"""Spatial-DISE with SmolLM2-135M, text only: accuracy per quadrant and kind against chance.

Generates N questions of each of the ten kinds (seed 0), asks the model each one as text (the stimulus
written out as '#' / '.' grids, cube layers and coordinates; SmolLM2 cannot read images), picks the option
letter with the highest log-probability, and prints accuracy with its 95 % Wilson interval next to chance
(1/4) per kind and per quadrant, plus which letters the model chose (position bias).

    .venv/bin/python scripts/spatial_dise_experiment.py            # 25 questions per kind
    .venv/bin/python scripts/spatial_dise_experiment.py --quick    # 2 per kind (tests)
    .venv/bin/python scripts/spatial_dise_experiment.py --circular # each question once per option order
    .venv/bin/python scripts/spatial_dise_experiment.py --model http://127.0.0.1:8080/v1#qwen   # letter parsed
    .venv/bin/python scripts/spatial_dise_experiment.py --export runs/agents/spatial_dise_set   # + JSONL/PNG
"""

from __future__ import annotations

import argparse
import sys
import time

from embodia.agents.llm import load_lm
from embodia.agents.methods.report import markdown_table, progress_bar, save_json
from embodia.agents.methods.spatial_dise import (
    answer_all,
    evaluate_spatial_answers,
    export_jsonl,
    generate_spatial_questions,
)


def _row(name: str, kind: str, s: dict) -> list:
    low, high = s["interval"]
    mark = " *" if s["above_chance"] else ""
    return [
        name,
        kind,
        s["n"],
        f"{s['accuracy']:.1%}{mark}",
        f"{s['chance']:.0%}",
        f"[{low:.0%}, {high:.0%}]",
        f"{s['p_value']:.2f}",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 questions per kind (tests)")
    parser.add_argument("--n", type=int, default=25, help="questions per kind")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--kinds", nargs="+", default=["all"], help="kinds, quadrants or 'all'")
    parser.add_argument("--model", default="smollm2")
    parser.add_argument(
        "--circular",
        action="store_true",
        help="ask each question once per rotation of its options and average (cancels a letter preference)",
    )
    parser.add_argument("--out", default="runs/agents/spatial_dise.json")
    parser.add_argument("--export", default=None, help="also write the questions as JSONL + PNG here")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)

    n = 2 if args.quick else args.n
    questions = generate_spatial_questions(args.kinds, n, args.seed)
    if args.export:
        export_jsonl(questions, args.export)
    lm = load_lm(args.model)
    started = time.perf_counter()
    with progress_bar("spatial-dise", not args.quiet) as update:
        answers = answer_all(lm, questions, progress=update, circular=args.circular)
    report = evaluate_spatial_answers(questions, [a.choice for a in answers])
    seconds = time.perf_counter() - started

    rows = []
    for quadrant, summary in report["by_quadrant"].items():
        for kind, s in report["by_kind"].items():
            if s["quadrant"] == quadrant:
                rows.append(_row(quadrant, kind, s))
        rows.append(_row(f"**{quadrant}**", "all", summary))
    rows.append(_row("**overall**", "all", report))
    print(
        markdown_table(
            ["quadrant", "kind", "n", "accuracy", "chance", "95% interval", "p (>= by guessing)"], rows
        )
    )
    chosen = ", ".join(f"{k} {v}" for k, v in report["chosen"].items())
    key = ", ".join(f"{k} {v}" for k, v in report["key"].items())
    print(f"\nletters chosen: {chosen}; correct letters: {key}")
    mode = "circular" if args.circular else "single pass"
    print(
        f"model {lm.name} ({mode}), {len(questions)} questions, {seconds:.0f} s (* = interval above chance)"
    )
    save_json(
        args.out,
        {
            "model": lm.name,
            "seed": args.seed,
            "per_kind": n,
            "circular": args.circular,
            "seconds": seconds,
            "report": report,
            "answers": [
                {"id": q.id, "answer": q.answer_label, "given": a.letter, "scores": a.scores, "text": a.text}
                for q, a in zip(questions, answers)
            ],
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
