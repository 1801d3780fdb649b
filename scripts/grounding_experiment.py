"""Grounding reliability on SmolLM2-135M: detecting hallucinated answer tokens induced on purpose.

The model answers questions from a few short notes ("Mara lives in Lisbon. ..."); for half the
questions the answering note is removed, so the answer cannot be grounded. Each answer token gets the
hidden-state sensitivity to masking the notes and the counterfactual margins against the larger of the
probabilities with the notes masked and with another question's notes (arXiv:2510.18439). Two logistic
calibrations fitted on the first half of the items combine them: the reliability (context signals only)
and META (plus log-confidence and entropy). AUCs for detecting hallucinated tokens / sentences are measured
on the second half and compared with the single signals, confidence and entropy.

    .venv/bin/python scripts/grounding_experiment.py                       # 80 questions -> results/methods/grounding.json
    .venv/bin/python scripts/grounding_experiment.py --write-calibration   # also update the shipped calibration
    .venv/bin/python scripts/grounding_experiment.py --quick               # 8 questions (tests)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from embodia.agents.llm import load_local_lm
from embodia.agents.methods.grounding import GroundingResult, run_grounding
from embodia.agents.methods.report import progress_bar, save_json
from embodia.core.results import Column, Table, default_results_path, write_results

CALIBRATION = (
    Path(__file__).resolve().parents[1] / "embodia" / "sim_assets" / "agents" / "grounding_calibration.json"
)
RESULTS = "methods/grounding"
#: how the page names each score of GroundingResult.token_auc
LABELS = {
    "reliability": "reliability (context signals)",
    "meta": "META (context + text signals)",
    "counterfactual log margin": "counterfactual log margin (masked or mismatched)",
    "counterfactual prob margin": "counterfactual prob margin",
    "masked-only log margin": "masked-only log margin (the old counterfactual)",
    "sensitivity": "sensitivity",
    "confidence": "confidence",
    "entropy": "entropy",
}


def auc_table(result: GroundingResult) -> Table:
    """Detection AUC of every score, per token and per sentence (None where a score has no sentence form)."""
    table = Table(
        [
            Column("score", "score"),
            Column("token_auc", "token AUC", ".3f"),
            Column("sentence_auc", "sentence AUC (lowest 10 % of all T tokens)", ".3f"),
            Column("sentence_auc_content", "sentence AUC (content tokens)", ".3f"),
        ]
    )
    for name, value in result.token_auc.items():
        table.add(
            score=LABELS.get(name, name),
            token_auc=value,
            sentence_auc=result.sentence_auc.get(name),
            sentence_auc_content=result.sentence_auc_content.get(name),
        )
    return table


def counts_table(result: GroundingResult, n_items: int, seconds: float) -> Table:
    """What the AUCs were measured on (the second half of the questions) and how long the run took."""
    table = Table(
        [
            Column("questions", "questions"),
            Column("calibration_questions", "calibration questions"),
            Column("tokens", "scored content tokens"),
            Column("hallucinated_tokens", "hallucinated tokens"),
            Column("answers", "answers"),
            Column("hallucinated_answers", "hallucinated answers"),
            Column("seconds", "wall time (s)", ",.0f"),
        ]
    )
    table.add(
        questions=n_items,
        calibration_questions=n_items // 2,
        tokens=result.tokens,
        hallucinated_tokens=result.hallucinated_tokens,
        answers=result.sentences,
        hallucinated_answers=result.hallucinated_sentences,
        seconds=seconds,
    )
    return table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny run for tests")
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--items", type=int, default=80)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--write-calibration", action="store_true", help=f"write the fitted weights to {CALIBRATION}"
    )
    parser.add_argument("--out", default="runs/agents/grounding.json", help="raw JSON output")
    parser.add_argument("--results", help=f"results file (default: results/{RESULTS}.json)")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)

    n_items = 8 if args.quick else args.items
    lm = load_local_lm(args.model)
    started = time.perf_counter()
    with progress_bar("grounding", not args.quiet) as update:
        result = run_grounding(lm, n_items=n_items, seed=args.seed, progress=update)
    seconds = time.perf_counter() - started

    aucs, test_set = auc_table(result), counts_table(result, n_items, seconds)
    print(aucs.markdown())
    print()
    print(test_set.markdown())

    save_json(args.out, {"items": n_items, "result": result})
    path = write_results(
        args.results or default_results_path(RESULTS, quick=args.quick),
        {"auc": aucs, "test_set": test_set},
        name=RESULTS,
        title="Grounding reliability on SmolLM2-135M-Instruct: detecting hallucinated answer tokens",
        seeds=[args.seed],
        data={"calibration": result.calibration, "examples": result.examples},
    )
    print(f"results: {path}")
    if args.write_calibration:
        CALIBRATION.write_text(json.dumps(result.calibration, indent=2) + "\n")
        print(f"calibration written to {CALIBRATION}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
