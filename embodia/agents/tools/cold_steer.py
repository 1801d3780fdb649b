"""Tool ``cold_steer``: steer a local model's activations from a few in-context examples (COLD-Steer)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from embodia.agents.tools.registry import ModelSpec, Progress, ToolArgumentError, no_progress, tool


@dataclass
class ExampleArg:
    """One in-context example."""

    prompt: str
    """Text before the behaviour."""
    target: str
    """Continuation showing the target behaviour (e.g. " wonderful")."""
    other: str = ""
    """Continuation without it (needed by mean_difference and for measuring probabilities)."""


@dataclass
class ColdSteerArgs:
    """Arguments of ``cold_steer``."""

    examples: list[ExampleArg] = field(default_factory=list)
    """In-context examples of the behaviour; empty: the built-in positivity examples."""
    queries: list[ExampleArg] = field(default_factory=list)
    """Prompts to steer; with ``target``/``other`` set, p(target) before and after is reported.
    Empty: the built-in held-out positivity prompts."""
    method: Literal["unit_kernel", "finite_difference", "mean_difference"] = "unit_kernel"
    """COLD-Steer variant (unit-kernel gradient, finite difference) or the mean-difference baseline."""
    layer: int = 10
    """Decoder block whose output is steered (0-based)."""
    alpha: float = 0.5
    """Shift norm as a multiple of the median activation norm at that layer."""
    n_examples: int = 8
    """Number of built-in examples when ``examples`` is empty."""
    builtin_behaviour: Literal["negative", "positive"] = "negative"
    """Target of the built-in opinion examples/queries: negative or positive words."""
    generate_tokens: int = 0
    """Also generate this many tokens per query with the prompt steered (0: only probabilities)."""
    steer_generated_tokens: bool = False
    """Also shift the generated tokens' activations (the paper steers only the prompt's positions)."""
    model: ModelSpec = "smollm2"
    """A known model name or a local model folder / .gguf file."""


@tool("cold_steer")
def cold_steer(args: ColdSteerArgs, progress: Progress = no_progress) -> dict:
    """COLD-Steer: build an activation steering edit from a handful of examples without training (unit kernel:
    the examples' mean loss gradient at their last prompt token; finite difference with two forward passes;
    mean-difference baseline) and apply it to the queries; returns p(target) before/after and optional
    steered generations."""
    from embodia.agents.llm import load_local_lm
    from embodia.agents.methods.cold_steer import (
        SteeringExample,
        build_steering,
        positivity_examples,
        steered_generate,
        target_probability,
    )

    lm = load_local_lm(args.model)
    if not 0 <= args.layer < lm.num_layers:
        raise ToolArgumentError(f"cold_steer: layer must be in 0..{lm.num_layers - 1}, got {args.layer}")
    examples = [SteeringExample(e.prompt, e.target, e.other) for e in args.examples] or positivity_examples(
        args.n_examples, split="train", behaviour=args.builtin_behaviour
    )
    queries = [SteeringExample(q.prompt, q.target, q.other) for q in args.queries] or positivity_examples(
        10, split="heldout", behaviour=args.builtin_behaviour
    )
    if args.method == "mean_difference" and any(not e.other for e in examples):
        raise ToolArgumentError("cold_steer: mean_difference needs `other` in every example")
    if any(not e.target for e in examples):
        raise ToolArgumentError("cold_steer: every example needs a non-empty `target`")
    progress(0, 2, "building the steering edit")
    steering = build_steering(lm, args.method, args.layer, examples, args.alpha)
    progress(1, 2, "applying it")
    measurable = [q for q in queries if q.target and q.other]
    out: dict = {
        "model": lm.name,
        "method": args.method,
        "layer": args.layer,
        "alpha": args.alpha,
        "n_examples": len(examples),
        "queries": [],
    }
    before = target_probability(lm, measurable) if measurable else []
    after = target_probability(lm, measurable, steering) if measurable else []
    probs = {q.prompt: (b, a) for q, b, a in zip(measurable, before, after)}
    for q in queries:
        entry: dict = {"prompt": q.prompt}
        if q.prompt in probs:
            entry["p_target_before"], entry["p_target_after"] = probs[q.prompt]
        if args.generate_tokens > 0:
            entry["generation"] = steered_generate(
                lm, q.prompt, steering, args.generate_tokens, steer_generated=args.steer_generated_tokens
            )
        out["queries"].append(entry)
    if measurable:
        out["mean_p_target_before"] = sum(before) / len(before)
        out["mean_p_target_after"] = sum(after) / len(after)
    progress(2, 2, "done")
    return out
