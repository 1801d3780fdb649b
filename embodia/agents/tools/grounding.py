"""Tool ``grounding_reliability``: token-level reliability of an answer generated from a context.

Implements the scores of "Grounding or Guessing? Visual Signals for Detecting Hallucinations in Sign
Language Translation" (arXiv:2510.18439) as :mod:`embodia.agents.methods.grounding` defines them: the
reliability combines only the context signals (feature sensitivity to masking the context, counterfactual
margins against the larger of the masked-context and mismatched-context probabilities); META adds the
model's confidence and entropy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from pydantic import Field

from embodia.agents.tools.registry import ModelSpec, ToolArgumentError, tool


@dataclass
class GroundingArgs:
    """Arguments of ``grounding_reliability``."""

    context: str
    """The source the answer should be grounded in (notes, a document; for SLT the video's role)."""
    question: str
    """The question / instruction answered from the context."""
    answer: str | None = None
    """The answer to score; omitted: the model generates one (greedy, up to 24 tokens)."""
    mismatched_context: str | None = None
    """Another item's context for the counterfactual (omitted: built-in notes about unrelated people)."""
    layer: int | None = None
    """Decoder layer whose hidden states are compared (default: two thirds of the way up)."""
    lowest_fraction: Annotated[float, Field(gt=0, le=1)] = 0.1
    """The sentence scores average the ceil(lowest_fraction * T) least reliable of the T answer tokens."""
    model: ModelSpec = "smollm2"
    """A known model name or a local model folder / .gguf file."""


@tool("grounding_reliability")
def grounding_reliability(args: GroundingArgs) -> dict:
    """Grounding reliability: for every answer token, how much it depends on the context (feature
    sensitivity to masking it; probability and log-probability margins against the larger of the
    masked-context and mismatched-context probabilities), combined by the shipped calibration into a
    reliability in [0, 1], and META, which also uses the model's confidence and entropy; the sentence
    scores average the least reliable tenth of the tokens."""
    from embodia.agents.llm import load_local_lm
    from embodia.agents.methods.grounding import (
        DEFAULT_MISMATCHED_NOTES,
        answer_tokens,
        default_calibration,
        lowest_count,
        sentence_score,
        token_signals,
    )

    if not args.context.strip() or not args.question.strip():
        raise ToolArgumentError("grounding_reliability: context and question must be non-empty")
    mismatched = args.mismatched_context
    if mismatched is None:
        mismatched = " ".join(DEFAULT_MISMATCHED_NOTES)
    if not mismatched.strip() or mismatched.strip() == args.context.strip():
        raise ToolArgumentError(
            "grounding_reliability: mismatched_context must be non-empty and differ from the context"
        )
    lm = load_local_lm(args.model)
    if args.layer is not None and not 0 <= args.layer < lm.num_layers:
        raise ToolArgumentError(f"grounding_reliability: layer must be in 0..{lm.num_layers - 1}")
    prompt = lm.chat_text(f"Context: {args.context}\n{args.question}")
    masked = lm.chat_text(f"Context: (none)\n{args.question}")
    mismatched_prompt = lm.chat_text(f"Context: {mismatched}\n{args.question}")
    if args.answer is None:
        answer_ids = answer_tokens(lm, prompt, max_new_tokens=24)
    else:
        answer_ids = lm.encode(args.answer)
    if not answer_ids:
        raise ToolArgumentError("grounding_reliability: the answer is empty")
    signals = token_signals(lm, prompt, masked, mismatched_prompt, answer_ids, args.layer)
    default_calibration().apply(signals)
    tokens = [
        {
            "token": s.token,
            "reliability": s.reliability,
            "meta": s.meta,
            "confidence": s.confidence,
            "entropy": s.entropy,
            "sensitivity": s.sensitivity,
            "p_masked": s.p_masked,
            "p_mismatched": s.p_mismatched,
            "prob_margin": s.prob_margin,
            "log_margin": s.log_margin,
        }
        for s in signals
    ]
    return {
        "model": lm.name,
        "answer": lm.decode(answer_ids),
        "tokens": tokens,
        "lowest_tokens": lowest_count(len(signals), args.lowest_fraction),
        "sentence_reliability": sentence_score([s.reliability for s in signals], args.lowest_fraction),
        "sentence_meta": sentence_score([s.meta for s in signals], args.lowest_fraction),
    }
