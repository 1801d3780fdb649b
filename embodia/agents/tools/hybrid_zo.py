"""Tool ``hybrid_finetune``: zeroth-order base weights + first-order LoRA fine-tuning on a small task."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from embodia.agents.tools.registry import ModelSpec, Progress, ToolArgumentError, no_progress, tool


@dataclass
class HybridArgs:
    """Arguments of ``hybrid_finetune``."""

    mode: Literal["hybrid", "lora", "zo", "full"] = "hybrid"
    """hybrid: ZO on base weights + backprop on LoRA; lora / zo: one part only; full: first-order SGD on all."""
    steps: int = 60
    """Optimisation steps."""
    batch_size: int = 8
    """Examples per step."""
    lr_fo: float = 0.05
    """SGD learning rate of the first-order part."""
    lr_zo: float = 2e-5
    """SGD learning rate of the zeroth-order part."""
    mu: float = 1e-3
    """Perturbation scale of the two-point ZO estimate."""
    lora_rank: int = 4
    """LoRA rank on the query/value projections."""
    zo_layers: str = "all"
    """Decoder blocks updated by ZO: 'all' or a range like '20-29'."""
    zo_scope: Literal["all", "blocks"] = "all"
    """all (the paper): ZO also updates the embeddings / tied LM head and the final norm, every weight but
    LoRA; blocks: only the decoder blocks (the largest noise tensor is then 3.4 MiB instead of 108 MiB)."""
    eval_every: int = 20
    """Test accuracy every this many steps."""
    seed: int = 0
    """Seed of LoRA init, data order and ZO noise."""
    model: ModelSpec = "smollm2"
    """A known model name or a local model folder / .gguf file (a private copy is trained)."""


@tool("hybrid_finetune")
def hybrid_finetune(args: HybridArgs, progress: Progress = no_progress) -> dict:
    """Hybrid zeroth/first-order fine-tuning on a 4-way topic classification task: base weights by seeded
    two-point (MeZO) estimates, LoRA by backprop, separate learning rates, reshuffling SGD; returns test
    accuracy, measured training memory beyond the weights, and pass counts."""
    from embodia.agents.llm import load_local_lm
    from embodia.agents.methods.hybrid_zo import HybridConfig, finetune

    if args.steps < 1 or args.batch_size < 1 or args.lora_rank < 1 or args.eval_every < 1:
        raise ToolArgumentError("hybrid_finetune: steps, batch_size, lora_rank and eval_every must be >= 1")
    config = HybridConfig(
        mode=args.mode,
        steps=args.steps,
        batch_size=args.batch_size,
        lr_fo=args.lr_fo,
        lr_zo=args.lr_zo,
        mu=args.mu,
        lora_rank=args.lora_rank,
        zo_layers=args.zo_layers,
        zo_scope=args.zo_scope,
        eval_every=args.eval_every,
        seed=args.seed,
    )
    lm = load_local_lm(args.model, fresh=True)
    try:
        result = finetune(lm, config, progress=lambda d, t, m: progress(d, t, m))
    except ValueError as error:
        raise ToolArgumentError(f"hybrid_finetune: {error}") from None
    return {"model": lm.name, **result.__dict__}
