"""Spatial-DISE with SmolLM2-135M, text only: accuracy per quadrant and kind against chance.

Generates N questions of each of the ten kinds (seed 0), asks the model each one as text (the stimulus
written out as '#' / '.' grids, cube layers and coordinates; SmolLM2 cannot read images), picks the option
letter with the highest log-probability, and prints accuracy with its 95 % Wilson interval next to chance
(1/4) per kind and per quadrant, plus which letters the model chose (position bias).

    .venv/bin/python scripts/spatial_dise_experiment.py            # 25 questions per kind
    .venv/bin/python scripts/spatial_dise_experiment.py --quick    # 2 per kind (tests)
    .venv/bin/python scripts/spatial_dise_experiment.py --circular # each question once per option order
    .venv/bin/python scripts/spatial_dise_experiment.py --model http://127.0.0.1:8080/v1#qwen   # letter parsed
    .venv/bin/python scripts/spatial_dise_experiment.py --model http://127.0.0.1:8080/v1#qwen-vl --images \
        --results runs/qwen_vl.json   # a VLM gets each question as its composite PNG
    .venv/bin/python scripts/spatial_dise_experiment.py --export runs/agents/spatial_dise_set   # + JSONL/PNG
    .venv/bin/python scripts/spatial_dise_experiment.py --blind    # stimulus-blind baselines, no model

``--blind`` answers with the stimulus-blind baselines (``spatial_dise.blind``: the medoid of the options,
the option nearest their per-atom majority, the medoid of the option texts) instead of a model, on 100
questions per kind and seed, seeds 0-2, once with every distractor one change from the key (the first
three near misses of each pool: the earlier design) and once with the balanced choice from the pool, and
writes ``results/methods/spatial_dise_blind.json`` (table ``blind``: accuracy, the 95 % Wilson interval
and the exact p-value of guessing as well, per kind, design and answerer).

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
from embodia.agents.methods.spatial_dise.blind import BLIND_ANSWERERS, blind_answers
from embodia.core.results import Column, Table, default_results_path, write_results

DESIGNS = {"one change each": False, "balanced pool": True}
"""The distractor designs the blind baselines are measured on (name -> ``balanced``)."""
BLIND = [
    Column("kind", "kind"),
    Column("design", "distractors"),
    Column("answerer", "blind answerer"),
    Column("n", "n"),
    Column("accuracy", "accuracy", ".1%"),
    Column("interval", "95 % interval", ".0%"),
    Column("p_value", "p (>= by guessing)", ".3f"),
    Column("above_chance", "above chance"),
]

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


def blind_table(kinds: list[str], n: int, seeds: list[int], progress: bool = True) -> tuple[Table, dict]:
    """The blind answerers' accuracy per kind (and over all kinds), design and answerer, seeds pooled."""
    table = Table(BLIND)
    raw: dict = {}
    for design, balanced in DESIGNS.items():
        by_seed = {seed: generate_spatial_questions(kinds, n, seed, balanced=balanced) for seed in seeds}
        questions = [q for seed in seeds for q in by_seed[seed]]
        for answerer in BLIND_ANSWERERS:  # ties broken by a generator seeded like the questions
            choices = [c for seed in seeds for c in blind_answers(by_seed[seed], answerer, seed)]
            report = evaluate_spatial_answers(questions, choices)
            raw[f"{design}/{answerer}"] = report
            for kind in [*kinds, "all"]:
                summary = report if kind == "all" else report["by_kind"][kind]
                low, high = summary["interval"]
                table.add(
                    kind=kind,
                    design=design,
                    answerer=answerer,
                    n=summary["n"],
                    accuracy=summary["accuracy"],
                    interval={"low": float(low), "high": float(high)},
                    p_value=summary["p_value"],
                    above_chance="yes" if summary["above_chance"] else "no",
                )
            if progress:
                print(f"{design} / {answerer}: {report['accuracy']:.3f}", file=sys.stderr)
    return table, raw


def run_blind(args: argparse.Namespace) -> int:
    from embodia.agents.methods.spatial_dise import kinds_for

    n = 2 if args.quick else args.n
    seeds = [0] if args.quick else [args.seed + k for k in range(3)]
    kinds = kinds_for(args.kinds)
    started = time.perf_counter()
    table, raw = blind_table(kinds, n, seeds, not args.quiet)
    seconds = time.perf_counter() - started
    print(table.markdown())
    print(f"\n{len(kinds)} kinds x {n} questions x {len(seeds)} seeds per design; {seconds:.0f} s")
    written = write_results(
        args.results or default_results_path("methods/spatial_dise_blind", quick=args.quick),
        {"blind": table},
        title="Spatial-DISE: stimulus-blind answerers (options only) against chance, per distractor design",
        seeds=seeds,
        data={"per_kind": n, "seconds": seconds, "reports": raw},
    )
    print(f"results: {written}", file=sys.stderr)
    return 0


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
    parser.add_argument(
        "--images",
        action="store_true",
        help="send each question as its composite PNG (an OpenAI-compatible endpoint serving a VLM)",
    )
    parser.add_argument("--out", default="runs/agents/spatial_dise.json", help="every answer (JSON)")
    parser.add_argument(
        "--results",
        default=None,
        help="results file (default: results/methods/spatial_dise[_circular].json)",
    )
    parser.add_argument("--export", default=None, help="also write the questions as JSONL + PNG here")
    parser.add_argument("--quiet", action="store_true")
    parser.add_argument(
        "--blind",
        action="store_true",
        help="stimulus-blind baselines instead of a model (100 per kind, seeds 0-2)",
    )
    args = parser.parse_args(argv)
    if args.blind:
        if args.n == parser.get_default("n"):
            args.n = 100
        return run_blind(args)

    n = 2 if args.quick else args.n
    questions = generate_spatial_questions(args.kinds, n, args.seed)
    if args.export:
        export_jsonl(questions, args.export)
    lm = load_lm(args.model)
    started = time.perf_counter()
    with progress_bar("spatial-dise", not args.quiet) as update:
        answers = answer_all(lm, questions, progress=update, circular=args.circular, images=args.images)
    report = evaluate_spatial_answers(questions, [a.choice for a in answers])
    seconds = time.perf_counter() - started

    written_tables = tables(report)
    print(written_tables["accuracy"].markdown())
    print(f"\nletters chosen and letters of the keys\n\n{written_tables['letters'].markdown()}")
    mode = ("circular" if args.circular else "single pass") + (", images" if args.images else "")
    print(f"\nmodel {lm.name} ({mode}), {len(questions)} questions, {seconds:.0f} s")
    raw = {
        "model": lm.name,
        "seed": args.seed,
        "per_kind": n,
        "circular": args.circular,
        "images": args.images,
        "seconds": seconds,
    }
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
        title=f"Spatial-DISE with {lm.name}, {'images' if args.images else 'text only'} ({mode}): accuracy "
        "against chance",
        seeds=[args.seed],
        data=raw,
    )
    print(f"results: {written}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
