"""Tool ``emotion_hallucer``: paired yes/no emotion-hallucination evaluation, with or without PEP-MEK."""

from __future__ import annotations

from dataclasses import dataclass

from embodia.agents.methods.emotion_hallucer import BUILTIN_PAIRS
from embodia.agents.tools.registry import (
    ModelSpec,
    Progress,
    ToolArgumentError,
    name_or_input_path,
    no_progress,
    tool,
)

PairSet = name_or_input_path(BUILTIN_PAIRS)
"""The built-in pair set's name, or a pair file (an input path)."""


@dataclass
class EmotionHallucerArgs:
    """Arguments of ``emotion_hallucer``."""

    pairs: PairSet = BUILTIN_PAIRS
    """Pair file (JSON pair form, or flat per-question JSON / JSON lines; under `embodia mcp`, inside its
    workspace), or the built-in set's name."""
    pep_mek: bool = False
    """Wrap the model in PEP-MEK prompting (extract knowledge, predict, explain, re-predict)."""
    limit: int | None = None
    """Evaluate only the first N pairs."""
    max_new_tokens: int = 48
    """Length of generated knowledge / explanations (PEP-MEK)."""
    model: ModelSpec = "smollm2"
    """A known model name, a local model folder / .gguf file, or an endpoint http://host:port/v1#model."""
    include_transcripts: bool = False
    """Return every question's answer (and PEP-MEK's knowledge / explanation)."""


@tool("emotion_hallucer")
def emotion_hallucer(args: EmotionHallucerArgs, progress: Progress = no_progress) -> dict:
    """EmotionHallucer evaluation: ask each adversarial basic/hallucinated yes-no question pair and report
    pair accuracy (both right), basic and hallucinated accuracy, and the bias measures (yes-percentage
    difference ``yes_bias``, false-positive ratio ``false_positive_ratio``), overall and per category;
    optionally through PEP-MEK prompting."""
    from embodia.agents.llm import load_lm
    from embodia.agents.methods.emotion_hallucer import evaluate, load_pairs

    if args.limit is not None and args.limit < 1:
        raise ToolArgumentError(f"emotion_hallucer: limit must be >= 1, got {args.limit}")
    pairs = load_pairs(args.pairs)
    if args.limit is not None:
        pairs = pairs[: args.limit]
    lm = load_lm(args.model)
    metrics, transcripts = evaluate(
        lm,
        pairs,
        pep_mek=args.pep_mek,
        max_new_tokens=args.max_new_tokens,
        progress=lambda d, t, m: progress(d, t, m),
    )
    out = {"model": lm.name, "pep_mek": args.pep_mek, **metrics.__dict__}
    if args.include_transcripts:
        out["transcripts"] = transcripts
    return out
