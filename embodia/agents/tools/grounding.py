"""Tool ``grounding_reliability``: token-level reliability of an answer generated from a context."""

from __future__ import annotations

from dataclasses import dataclass

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
    layer: int | None = None
    """Decoder layer whose hidden states are compared (default: two thirds of the way up)."""
    k_lowest: int = 2
    """The sentence score averages this many least reliable tokens."""
    model: ModelSpec = "smollm2"
    """A known model name or a local model folder / .gguf file."""


@tool("grounding_reliability")
def grounding_reliability(args: GroundingArgs) -> dict:
    """Grounding reliability: for every answer token, how much it depends on the context (feature
    sensitivity and counterfactual log-probability with the context masked), combined by the shipped
    calibration into a reliability in [0, 1]; the sentence score averages the least reliable tokens."""
    from embodia.agents.llm import load_local_lm
    from embodia.agents.methods.grounding import default_calibration, sentence_score, token_signals

    if not args.context.strip() or not args.question.strip():
        raise ToolArgumentError("grounding_reliability: context and question must be non-empty")
    if args.k_lowest < 1:
        raise ToolArgumentError(f"grounding_reliability: k_lowest must be >= 1, got {args.k_lowest}")
    lm = load_local_lm(args.model)
    if args.layer is not None and not 0 <= args.layer < lm.num_layers:
        raise ToolArgumentError(f"grounding_reliability: layer must be in 0..{lm.num_layers - 1}")
    prompt = lm.chat_text(f"Context: {args.context}\n{args.question}")
    masked = lm.chat_text(f"Context: (none)\n{args.question}")
    if args.answer is None:
        from embodia.agents.methods.grounding import answer_tokens

        answer_ids = answer_tokens(lm, prompt, max_new_tokens=24)
    else:
        answer_ids = lm.encode(args.answer)
    if not answer_ids:
        raise ToolArgumentError("grounding_reliability: the answer is empty")
    calibration = default_calibration()
    signals = token_signals(lm, prompt, masked, answer_ids, args.layer)
    for s in signals:
        s.reliability = calibration.reliability(s)
    return {
        "model": lm.name,
        "answer": lm.decode(answer_ids),
        "tokens": signals,
        "sentence_reliability": sentence_score([s.reliability for s in signals], args.k_lowest),
    }
