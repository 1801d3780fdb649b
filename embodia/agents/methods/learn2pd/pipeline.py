"""The whole Learn2PD run in a few calls: train the LM, collect traces, train the filter, compare strategies."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import torch

from embodia.agents.methods.learn2pd.filter import AcceptFilter, collect_traces, evaluate, train_filter
from embodia.agents.methods.learn2pd.model import (
    LMConfig,
    MaskedDiffusionLM,
    load_model,
    save_model,
    train_lm,
)
from embodia.agents.methods.learn2pd.tasks import make_batch


@dataclass
class Trained:
    """A trained LM with its acceptance filter, and how long each took."""

    model: MaskedDiffusionLM
    accept_filter: AcceptFilter
    train_s: float
    filter_s: float


def build(
    task: str, lm_steps: int, seed: int = 0, trace_prompts: int = 512, d_model: int = 64, log=None
) -> Trained:
    """Train the LM on ``task``, decode ``trace_prompts`` fresh prompts one token per pass, fit the filter."""
    start = time.perf_counter()
    model = train_lm(LMConfig(task=task, d_model=d_model), lm_steps, seed=seed, log=log)
    mid = time.perf_counter()
    prompts, _ = make_batch(
        task, trace_prompts, model.config.max_len, torch.Generator().manual_seed(seed + 10_000)
    )
    x, y = collect_traces(model, prompts, model.config.max_len)
    f = train_filter(x, y, seed=seed)
    return Trained(model, f, mid - start, time.perf_counter() - mid)


def save(trained: Trained, folder: str | Path) -> Path:
    """The LM (``config.json`` + ``model.safetensors``) and the filter (``filter.safetensors``)."""
    from safetensors.torch import save_file

    folder = save_model(trained.model, folder)
    save_file(
        {k: v.contiguous() for k, v in trained.accept_filter.state_dict().items()},
        str(folder / "filter.safetensors"),
    )
    return folder


def load(folder: str | Path) -> Trained:
    """What :func:`save` wrote."""
    from safetensors.torch import load_file

    model = load_model(folder)
    f = AcceptFilter()
    f.load_state_dict(load_file(str(Path(folder) / "filter.safetensors")))
    return Trained(model, f.eval(), 0.0, 0.0)


def compare(
    trained: Trained, task: str, n: int, seed: int, thresholds=(0.9,), filter_thresholds=(0.9,)
) -> list[dict]:
    """Accuracy, mean passes and speed-up vs ``one`` of every strategy on ``n`` held-out prompts."""
    model, f = trained.model, trained.accept_filter
    prompts, _ = make_batch(task, n, model.config.max_len, torch.Generator().manual_seed(seed + 20_000))
    runs = [("one", {})]
    runs += [("threshold", {"threshold": tau}) for tau in thresholds]
    runs += [
        (s, {"accept_filter": f, "filter_threshold": rho})
        for rho in filter_thresholds
        for s in ("filter", "filter+eotp")
    ]
    rows = []
    for strategy, kw in runs:
        start = time.perf_counter()
        r = evaluate(task, model, prompts, model.config.max_len, strategy, **kw)
        label = f"threshold {kw['threshold']}" if "threshold" in kw else strategy
        label += f" rho {kw['filter_threshold']}" if "filter_threshold" in kw else ""
        rows.append({"strategy": label, **r, "seconds": time.perf_counter() - start})
    for r in rows:
        r["speedup"] = rows[0]["passes"] / r["passes"]
    return rows
