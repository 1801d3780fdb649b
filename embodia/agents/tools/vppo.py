"""Tool ``token_perception``: VPPO's per-token visual dependency of a tiny VLM's answers, and its sparsity."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import Field

from embodia.agents.tools.registry import InputPath, Progress, no_progress, tool


@dataclass
class TokenPerceptionArgs:
    """Arguments of ``token_perception``."""

    task: Literal["count", "colour", "mixed", "total"] = "mixed"
    """Question kind: count squares of a colour, the colour at a grid cell, both, or the templated two-colour
    count with its total (ignored with ``model``,
    which knows its task)."""
    seed: Annotated[int, Field(ge=0, le=2**31 - 1)] = 0
    """Seed of the questions, the perturbation and the on-the-fly model."""
    n: Annotated[int, Field(ge=1, le=200)] = 16
    """Held-out questions to answer (greedy) and measure."""
    perturbation: Literal["patches", "blank"] = "patches"
    """Perturbed image: random grid cells blackened (the paper's choice) or a black image."""
    threshold: Annotated[float, Field(ge=0.0, le=10.0)] = 0.05
    """A token counts as perceptive when its KL exceeds this (nats)."""
    model: InputPath | None = None
    """Folder written by ``scripts/vppo_experiment.py --save`` (``config.json`` + ``model.safetensors``);
    without it a tiny model is trained on the fly for ``sft_steps`` steps (a few seconds)."""
    sft_steps: Annotated[int, Field(ge=10, le=400)] = 150
    """Supervised steps of the on-the-fly model."""


@tool("token_perception")
def token_perception(args: TokenPerceptionArgs, progress: Progress = no_progress) -> dict:
    """VPPO token perception: for each answer token of a small vision-language model, the KL between its
    next-token distributions with the real and a perturbed image; returns per-question tokens and KLs and
    the sparsity (share above a threshold, Gini)."""
    import torch

    from embodia.agents.methods.vppo import model as vlm
    from embodia.agents.methods.vppo import tasks, vppo

    torch.set_num_threads(1)
    if args.model is not None:
        model, task = vlm.load_model(args.model)
    else:
        task = args.task
        torch.manual_seed(args.seed)
        model = vlm.sft(
            vlm.TinyVLM(vlm.VLMConfig.for_task(task)),
            task,
            args.sft_steps,
            args.seed,
            log=lambda d, t, m: progress(d, t, m),
        )
    images, prompts, answers = tasks.make_batch(task, args.n, 777_000 + args.seed)
    samples = vlm.generate(model, images, prompts, greedy=True)
    perturbed = vppo.perturb(images, args.perturbation, torch.Generator().manual_seed(args.seed))
    s = vppo.token_perception(model, images, perturbed, prompts, samples)
    stats = vppo.sparsity(s, args.threshold)
    questions = [
        {
            "question": tasks.decode(prompts[i].tolist()),
            "answer": tasks.decode(samples[i].tolist()),
            "correct": bool((samples[i] == answers[i]).all()),
            "perception": s[i].tolist(),
        }
        for i in range(args.n)
    ]
    return {
        "task": task,
        "perturbation": args.perturbation,
        "accuracy": sum(q["correct"] for q in questions) / args.n,
        "threshold": args.threshold,
        **stats,
        "questions": questions,
    }
