"""Grounding reliability on SmolLM2-135M: detecting hallucinated answer tokens induced on purpose.

The model answers questions from a few short notes ("Mara lives in Lisbon. ..."); for half the
questions the answering note is removed, so the answer cannot be grounded. Each answer token gets the
hidden-state sensitivity to masking the notes and the counterfactual margins against the larger of the
probabilities with the notes masked and with another question's notes (arXiv:2510.18439). Two logistic
calibrations fitted on the first half of the items combine them: the reliability (context signals only)
and META (plus log-confidence and entropy). AUCs for detecting hallucinated tokens / sentences are measured
on the second half and compared with the single signals, confidence and entropy.

    .venv/bin/python scripts/grounding_experiment.py                       # 80 questions
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
from embodia.agents.methods.grounding import run_grounding
from embodia.agents.methods.report import markdown_table, progress_bar, save_json

CALIBRATION = (
    Path(__file__).resolve().parents[1] / "embodia" / "sim_assets" / "agents" / "grounding_calibration.json"
)


def _cell(table: dict[str, float], name: str) -> str:
    return f"{table[name]:.3f}" if name in table else "-"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny run for tests")
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--items", type=int, default=80)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--write-calibration", action="store_true", help=f"write the fitted weights to {CALIBRATION}"
    )
    parser.add_argument("--out", default="runs/agents/grounding.json")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)

    n_items = 8 if args.quick else args.items
    lm = load_local_lm(args.model)
    started = time.perf_counter()
    with progress_bar("grounding", not args.quiet) as update:
        result = run_grounding(lm, n_items=n_items, seed=args.seed, progress=update)
    rows = [
        [
            name,
            _cell(result.token_auc, name),
            _cell(result.sentence_auc, name),
            _cell(result.sentence_auc_content, name),
        ]
        for name in result.token_auc
    ]
    header = ["score", "token AUC", "sentence AUC (all T tokens)", "sentence AUC (content tokens)"]
    print(markdown_table(header, rows))
    print(
        f"\ntest half: {result.tokens} content tokens ({result.hallucinated_tokens} hallucinated), "
        f"{result.sentences} answers ({result.hallucinated_sentences} hallucinated); "
        f"{time.perf_counter() - started:.0f} s"
    )
    save_json(args.out, {"items": n_items, "result": result})
    if args.write_calibration:
        CALIBRATION.write_text(json.dumps(result.calibration, indent=2) + "\n")
        print(f"calibration written to {CALIBRATION}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
