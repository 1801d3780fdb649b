"""The whole Learn2PD run in a few calls: train the LM, collect traces, train the filter, compare strategies."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, replace
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
    block: int | None = None
    """Block length of semi-autoregressive decoding the filter was trained with (``None``: one block)."""


def _prompts(config: LMConfig, n: int, seed: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return make_batch(config.task, n, config.max_len, gen, config.answer, config.min_len)[0]


def build(
    task: str,
    lm_steps: int,
    seed: int = 0,
    trace_prompts: int = 512,
    d_model: int = 64,
    log=None,
    config: LMConfig | None = None,
    block: int | None = None,
    lr: float = 3e-3,
) -> Trained:
    """Train the LM on ``task`` (``config`` overrides the default sizes; its task is replaced by ``task``),
    decode ``trace_prompts`` fresh prompts one token per pass (in blocks of ``block``), fit the filter."""
    start = time.perf_counter()
    config = replace(config or LMConfig(d_model=d_model), task=task)
    model = train_lm(config, lm_steps, lr=lr, seed=seed, log=log)
    mid = time.perf_counter()
    prompts = _prompts(config, trace_prompts, seed + 10_000)
    x, y = collect_traces(model, prompts, config.answer, block)
    f = train_filter(x, y, seed=seed)
    return Trained(model, f, mid - start, time.perf_counter() - mid, block)


def save(trained: Trained, folder: str | Path) -> Path:
    """The LM (``config.json`` + ``model.safetensors``) and the filter (``filter.safetensors``)."""
    from safetensors.torch import save_file

    folder = save_model(trained.model, folder)
    save_file(
        {k: v.contiguous() for k, v in trained.accept_filter.state_dict().items()},
        str(folder / "filter.safetensors"),
    )
    (folder / "decode.json").write_text(json.dumps({"block": trained.block}))
    return folder


def load(folder: str | Path) -> Trained:
    """What :func:`save` wrote."""
    from safetensors.torch import load_file

    model = load_model(folder)
    f = AcceptFilter()
    f.load_state_dict(load_file(str(Path(folder) / "filter.safetensors")))
    decode = Path(folder) / "decode.json"
    block = json.loads(decode.read_text())["block"] if decode.exists() else None
    return Trained(model, f.eval(), 0.0, 0.0, block)


def compare(
    trained: Trained,
    task: str,
    n: int,
    seed: int,
    thresholds=(0.9,),
    filter_thresholds=(0.9,),
    block: int | None = None,
) -> list[dict]:
    """Accuracy, mean passes and speed-up vs ``one`` of every strategy on ``n`` held-out prompts
    (``block``: decoding block length, default the one the filter was trained with)."""
    model, f = trained.model, trained.accept_filter
    block = trained.block if block is None else block
    prompts = _prompts(replace(model.config, task=task), n, seed + 20_000)
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
        r = evaluate(task, model, prompts, model.config.answer, strategy, block=block, **kw)
        label = f"threshold {kw['threshold']}" if "threshold" in kw else strategy
        label += f" rho {kw['filter_threshold']}" if "filter_threshold" in kw else ""
        rows.append({"strategy": label, **r, "seconds": time.perf_counter() - start})
    for r in rows:
        r["speedup"] = rows[0]["passes"] / r["passes"]
    return rows
