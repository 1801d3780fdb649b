"""Tool ``gateskip``: fine-tune GateSkip gates on a local model and measure quality vs skipped compute."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from embodia.agents.tools.registry import (
    ModelSpec,
    OutputPath,
    Progress,
    ToolArgumentError,
    no_progress,
    tool,
)


@dataclass
class GateSkipArgs:
    """Arguments of ``gateskip``."""

    model: ModelSpec = "smollm2"
    """A known model name or a local model folder / .gguf file (a private copy gets the gates)."""
    recipe: Literal["paper", "frozen-backbone", "frozen-gates-l1"] = "paper"
    """Training recipe: ``paper`` (whole model + gates, L2 sparsity x 1, skipping on in training with the
    budget ramping 0 -> 20th gate percentile, batch-level threshold), ``frozen-backbone`` (the paper's
    ablation: only the gates learn), ``frozen-gates-l1`` (embodia's earlier variant: gates only, L1 x 0.1,
    no skipping in training, per-sequence top-k, first token kept)."""
    steps: int = 60
    """Fine-tuning steps (sequences of ``seq_len`` tokens, ``batch_size`` per step)."""
    batch_size: int = 4
    """Sequences per fine-tuning step."""
    seq_len: int = 64
    """Tokens per fine-tuning sequence."""
    lr: float | None = None
    """Peak learning rate (None: the recipe's: 3e-6 paper, 1e-4 frozen-backbone, 2e-2 frozen-gates-l1). The
    paper's 3e-6 is for 6800 steps; for a few hundred steps ~1e-4 keeps the summed rate comparable."""
    sparsity: float | None = None
    """Weight of the gate sparsity penalty (None: the recipe's: 1.0, or 0.1 for frozen-gates-l1)."""
    budgets: list[float] = field(default_factory=lambda: [0.0, 0.15, 0.25, 0.5])
    """Per-layer fractions of tokens that skip each branch, each in [0, 1)."""
    random_control: bool = True
    """Also evaluate random token ranking at the same budgets."""
    eval_chunks: int = 12
    """Held-out 128-token chunks for perplexity."""
    gates_out: OutputPath | None = None
    """Save the trained gates here (.safetensors); under `embodia mcp`, a path inside its workspace. With
    the ``paper`` recipe the backbone is fine-tuned too: the gates alone do not rebuild that model."""
    seed: int = 0
    """Seed of data order and the random control."""


@tool("gateskip")
def gateskip(args: GateSkipArgs, progress: Progress = no_progress) -> dict:
    """GateSkip: add sigmoid gates to every attention/MLP branch of a local LM, fine-tune briefly with a
    gate sparsity penalty and token skipping switched on (per the recipe), then skip low-gate tokens under
    per-layer budgets; returns perplexity and task accuracy vs the fraction of branch computations skipped
    (with a random-ranking control)."""
    from embodia.agents.llm import load_local_lm
    from embodia.agents.methods.gateskip import recipe_config, run_gateskip

    if any(not 0.0 <= b < 1.0 for b in args.budgets) or not args.budgets:
        raise ToolArgumentError(f"gateskip: budgets must be fractions in [0, 1), got {args.budgets}")
    if args.steps < 1 or args.batch_size < 1 or args.seq_len < 8 or args.eval_chunks < 1:
        raise ToolArgumentError("gateskip: steps, batch_size, eval_chunks must be >= 1 and seq_len >= 8")
    if (args.lr is not None and args.lr <= 0) or (args.sparsity is not None and args.sparsity < 0):
        raise ToolArgumentError("gateskip: lr must be > 0 and sparsity >= 0")
    config = recipe_config(
        args.recipe,
        steps=args.steps,
        batch_size=args.batch_size,
        seq_len=args.seq_len,
        lr=args.lr,
        sparsity=args.sparsity,
        eval_chunks=args.eval_chunks,
        seed=args.seed,
    )
    lm = load_local_lm(args.model, fresh=True)
    rankings = ("gate", "random") if args.random_control else ("gate",)
    result = run_gateskip(
        lm,
        config,
        budgets=args.budgets,
        rankings=rankings,
        gates_out=args.gates_out,
        progress=lambda d, t, m: progress(d, t, m),
    )
    return {
        "model": lm.name,
        "recipe": args.recipe,
        "baseline_perplexity": result.baseline_perplexity,
        "baseline_accuracy": result.baseline_accuracy,
        "points": result.points,
        "final_lm_loss": result.history[-1]["lm_loss"] if result.history else None,
        "final_train_skipped_fraction": result.history[-1]["skipped_fraction"] if result.history else None,
        "gate_profile": result.gate_profile,
        "gates_out": args.gates_out,
    }
