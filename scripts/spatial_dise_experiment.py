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

Writes the results file ``results/methods/spatial_dise.json`` (``spatial_dise_circular.json`` with
``--circular``; a ``--quick`` run writes under ``runs/quick-results/``, ``--results PATH`` anywhere: give it
for another model or question set, so the committed SmolLM2 measurement stays) with two tables:
``accuracy`` (per kind, per quadrant and overall: accuracy, chance, the 95 % Wilson interval, the exact
one-sided p-value of guessing as well, invalid answers) and ``letters`` (the letters chosen against the
letters of the keys); every answer goes to ``--out``.
"""

from __future__ import annotations

import argparse
import sys
import time

from embodia.agents.llm import load_lm
from embodia.agents.methods.report import progress_bar, save_json
from embodia.agents.methods.spatial_dise import (
    answer_all,
    evaluate_spatial_answers,
    export_jsonl,
    generate_spatial_questions,
)
from embodia.core.results import Column, Table, default_results_path, write_results

ACCURACY = [
    Column("quadrant", "quadrant"),
    Column("kind", "kind"),
    Column("n", "n"),
    Column("accuracy", "accuracy", ".1%"),
    Column("chance", "chance", ".0%"),
    Column("interval", "95 % interval", ".0%"),
    Column("p_value", "p (>= by guessing)", ".2f"),
    Column("invalid", "invalid answers"),
]


def _row(quadrant: str, kind: str, s: dict) -> dict:
    low, high = s["interval"]
    return {
        "quadrant": quadrant,
        "kind": kind,
        "n": s["n"],
        "accuracy": s["accuracy"],
        "chance": s["chance"],
        "interval": {"low": float(low), "high": float(high)},
        "p_value": s["p_value"],
        "invalid": s["invalid"],
    }


def tables(report: dict) -> dict[str, Table]:
    """The accuracy per kind, per quadrant (kind "all") and overall; the letters chosen and the keys'."""
    accuracy = Table(ACCURACY)
    for quadrant, summary in report["by_quadrant"].items():
        for kind, s in report["by_kind"].items():
            if s["quadrant"] == quadrant:
                accuracy.add(**_row(quadrant, kind, s))
        accuracy.add(**_row(quadrant, "all", summary))
    accuracy.add(**_row("overall", "all", report))
    letters = Table([Column("letter", "letter"), Column("chosen", "chosen"), Column("key", "correct")])
    for letter, count in report["chosen"].items():
        letters.add(letter=letter, chosen=count, key=report["key"].get(letter))
    return {"accuracy": accuracy, "letters": letters}


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
    parser.add_argument("--out", default="runs/agents/spatial_dise.json", help="every answer (JSON)")
    parser.add_argument(
        "--results",
        default=None,
        help="results file (default: results/methods/spatial_dise[_circular].json)",
    )
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

    written_tables = tables(report)
    print(written_tables["accuracy"].markdown())
    print(f"\nletters chosen and letters of the keys\n\n{written_tables['letters'].markdown()}")
    mode = "circular" if args.circular else "single pass"
    print(f"\nmodel {lm.name} ({mode}), {len(questions)} questions, {seconds:.0f} s")
    raw = {"model": lm.name, "seed": args.seed, "per_kind": n, "circular": args.circular, "seconds": seconds}
    save_json(
        args.out,
        {
            **raw,
            "report": report,
            "answers": [
                {"id": q.id, "answer": q.answer_label, "given": a.letter, "scores": a.scores, "text": a.text}
                for q, a in zip(questions, answers)
            ],
        },
    )
    name = "methods/spatial_dise" + ("_circular" if args.circular else "")
    written = write_results(
        args.results or default_results_path(name, quick=args.quick),
        written_tables,
        title=f"Spatial-DISE with {lm.name}, text only ({mode}): accuracy against chance",
        seeds=[args.seed],
        data=raw,
    )
    print(f"results: {written}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
