"""Tools over the language-model back end: generate text, score continuations."""

from __future__ import annotations

from dataclasses import dataclass

from embodia.agents.tools.registry import ModelSpec, tool


@dataclass
class GenerateArgs:
    """Arguments of ``lm_generate``."""

    prompt: str
    """The user message (the model's chat template is applied unless ``chat`` is false)."""
    model: ModelSpec = "smollm2"
    """A known model name, a local model folder or .gguf file, or an OpenAI-compatible endpoint
    ``http://host:port/v1#model``."""
    max_new_tokens: int = 64
    """Most tokens to generate."""
    temperature: float = 0.0
    """0 decodes greedily; above 0 samples."""
    chat: bool = True
    """Apply the chat template (false: plain text continuation; local models only)."""


@tool("lm_generate")
def lm_generate(args: GenerateArgs) -> dict:
    """Generate text with a local language model (SmolLM2-135M-Instruct by default) or an HTTP endpoint."""
    from embodia.agents.llm import load_lm

    if args.max_new_tokens < 1:
        from embodia.agents.tools.registry import ToolArgumentError

        raise ToolArgumentError(f"lm_generate: max_new_tokens must be at least 1, got {args.max_new_tokens}")
    lm = load_lm(args.model)
    text = lm.generate(
        args.prompt, max_new_tokens=args.max_new_tokens, temperature=args.temperature, chat=args.chat
    )
    return {"model": lm.name, "text": text}


@dataclass
class ScoreArgs:
    """Arguments of ``lm_score``."""

    prompt: str
    """Text the continuations follow (used as is: no chat template)."""
    continuations: list[str]
    """Candidate continuations, each scored by its summed token log-probability."""
    model: ModelSpec = "smollm2"
    """A known model name or a local model folder / .gguf file."""


@tool("lm_score")
def lm_score(args: ScoreArgs) -> dict:
    """Log-probability of each candidate continuation of a prompt, and the most likely one."""
    from embodia.agents.llm import load_local_lm
    from embodia.agents.tools.registry import ToolArgumentError

    if not args.continuations or any(not c for c in args.continuations):
        raise ToolArgumentError("lm_score: continuations must be a non-empty list of non-empty strings")
    lm = load_local_lm(args.model)
    scores = lm.continuation_logprobs(args.prompt, args.continuations)
    best = max(range(len(scores)), key=scores.__getitem__)
    return {"model": lm.name, "logprobs": scores, "best": args.continuations[best], "best_index": best}
