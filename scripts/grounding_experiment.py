"""Grounding reliability on SmolLM2-135M: detecting hallucinated answer tokens induced on purpose.

The model answers questions from a few short notes ("Mara lives in Lisbon. ..."); for half the
questions the answering note is removed, so the answer cannot be grounded. Each answer token gets the
hidden-state sensitivity to masking the notes and the counterfactual margins against the larger of the
probabilities with the notes masked and with another question's notes (arXiv:2510.18439). Two logistic
calibrations fitted on the first half of each seed's questions combine them: the reliability (context signals
only) and META (plus log-confidence and entropy). AUCs for detecting hallucinated tokens / answers are
measured on the second halves of three seeds, pooled, with 95 % bootstrap intervals, under two labellings of
the same answers: by construction (note removed; words copied from the notes grounded) and by the reference
(embodia's earlier labels). See embodia/agents/methods/grounding_task.py.

    .venv/bin/python scripts/grounding_experiment.py                       # 3 x 24 questions -> results/methods/grounding_relabelled.json
    .venv/bin/python scripts/grounding_experiment.py --write-calibration   # also update the shipped calibration
    .venv/bin/python scripts/grounding_experiment.py --quick               # 2 x 4 questions (tests)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from embodia.agents.llm import load_local_lm
from embodia.agents.methods.grounding_task import (
    LABELLINGS,
    SENTENCE_SCORES,
    TOKEN_SCORES,
    GroundingConfig,
    GroundingResult,
    run_grounding,
)
from embodia.agents.methods.report import progress_bar, save_json
from embodia.core.results import Column, Table, default_results_path, interval, write_results

CALIBRATION = (
    Path(__file__).resolve().parents[1] / "embodia" / "sim_assets" / "agents" / "grounding_calibration.json"
)
RESULTS = "methods/grounding_relabelled"
#: how the page names each score
LABELS = {
    "reliability": "reliability (context signals)",
    "meta": "META (context + text signals)",
    "counterfactual log margin": "counterfactual log margin (masked or mismatched)",
    "counterfactual prob margin": "counterfactual prob margin",
    "masked-only log margin": "masked-only log margin",
    "sensitivity": "sensitivity",
    "confidence": "confidence",
    "entropy": "entropy",
}
LABELLING_NAMES = {
    "construction": "by construction (note removed; words copied from the notes grounded)",
    "reference": "by the reference (earlier labels)",
}


def _cell(value: dict[str, float] | None) -> dict[str, float] | None:
    return None if value is None else interval(value["value"], value["low"], value["high"])


def auc_table(result: GroundingResult) -> Table:
    """Pooled detection AUC [95 % bootstrap interval] of every score, per token and per answer, both labellings."""
    new, old = result.labellings["construction"], result.labellings["reference"]
    table = Table(
        [
            Column("score", "score"),
            Column("token_auc", "token AUC, by construction", ".3f"),
            Column("token_auc_reference", "token AUC, by the reference", ".3f"),
            Column("sentence_auc", "answer AUC, by construction (note removed)", ".3f"),
            Column("sentence_auc_reference", "answer AUC, by the reference", ".3f"),
        ]
    )
    for name in TOKEN_SCORES:
        sentence = name in SENTENCE_SCORES
        table.add(
            score=LABELS[name],
            token_auc=_cell(new.token_auc[name]),
            token_auc_reference=_cell(old.token_auc[name]),
            sentence_auc=_cell(new.sentence_auc[name]) if sentence else None,
            sentence_auc_reference=_cell(old.sentence_auc[name]) if sentence else None,
        )
    table.add(
        score="reliability minus confidence (paired difference of AUCs)",
        token_auc=_cell(new.difference["token"]),
        token_auc_reference=_cell(old.difference["token"]),
        sentence_auc=_cell(new.difference["sentence"]),
        sentence_auc_reference=_cell(old.difference["sentence"]),
    )
    return table


def per_seed_table(result: GroundingResult) -> Table:
    """The AUCs of the main scores seed by seed (each on the second half of its questions)."""
    table = Table(
        [
            Column("labelling", "labelling"),
            Column("seed", "seed"),
            Column("token_reliability", "token AUC, reliability", ".3f"),
            Column("token_log_margin", "token AUC, log margin", ".3f"),
            Column("token_confidence", "token AUC, confidence", ".3f"),
            Column("sentence_reliability", "answer AUC, reliability", ".3f"),
            Column("sentence_confidence", "answer AUC, confidence", ".3f"),
        ]
    )
    for labelling in LABELLINGS:
        for row in result.labellings[labelling].per_seed:
            t, s = row["token_auc"], row["sentence_auc"]
            table.add(
                labelling=labelling,
                seed=row["seed"],
                token_reliability=t["reliability"],
                token_log_margin=t["counterfactual log margin"],
                token_confidence=t["confidence"],
                sentence_reliability=s["reliability"],
                sentence_confidence=s["confidence"],
            )
    return table


def counts_table(result: GroundingResult, config: GroundingConfig, seconds: float) -> Table:
    """What the AUCs were measured on (the second halves of every seed's questions), and the wall time."""
    table = Table(
        [
            Column("labelling", "labelling"),
            Column("seeds", "seeds"),
            Column("questions", "questions per seed"),
            Column("tokens", "scored tokens"),
            Column("hallucinated_tokens", "hallucinated tokens"),
            Column("answers", "scored answers"),
            Column("hallucinated_answers", "hallucinated answers"),
            Column("seconds", "wall time of the run (s)", ",.0f"),
        ]
    )
    for labelling in LABELLINGS:
        r = result.labellings[labelling]
        table.add(
            labelling=LABELLING_NAMES[labelling],
            seeds=len(config.seeds),
            questions=config.items,
            tokens=r.tokens,
            hallucinated_tokens=r.hallucinated_tokens,
            answers=r.sentences,
            hallucinated_answers=r.hallucinated_sentences,
            seconds=seconds,
        )
    return table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny run for tests (2 seeds x 4 questions)")
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--items", type=int, default=24, help="questions per seed")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument(
        "--write-calibration",
        action="store_true",
        help=f"write seed 0's calibration (labels by construction) to {CALIBRATION}",
    )
    parser.add_argument("--out", default="runs/agents/grounding.json", help="raw JSON output")
    parser.add_argument("--results", help=f"results file (default: results/{RESULTS}.json)")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)

    config = GroundingConfig(
        items=4 if args.quick else args.items,
        seeds=(0, 1) if args.quick else tuple(args.seeds),
        bootstrap=20 if args.quick else 1000,
    )
    lm = load_local_lm(args.model)
    started = time.perf_counter()
    with progress_bar("grounding", not args.quiet) as update:
        result = run_grounding(lm, config, progress=update)
    seconds = time.perf_counter() - started

    tables = {
        "auc": auc_table(result),
        "per_seed": per_seed_table(result),
        "test_set": counts_table(result, config, seconds),
    }
    for table in tables.values():
        print(table.markdown(), end="\n\n")

    save_json(args.out, {"config": config, "result": result})
    path = write_results(
        args.results or default_results_path(RESULTS, quick=args.quick),
        tables,
        name=RESULTS,
        title="Grounding reliability on SmolLM2-135M-Instruct: hallucinations labelled by construction vs by the reference",
        seeds=config.seeds,
        data={
            "calibrations": {k: r.calibrations for k, r in result.labellings.items()},
            "examples": result.examples,
        },
    )
    print(f"results: {path}")
    if args.write_calibration:
        calibration = result.labellings["construction"].calibrations[0]
        CALIBRATION.write_text(json.dumps(calibration, indent=2) + "\n")
        print(f"calibration written to {CALIBRATION}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
