"""GateSkip: residual-stream gates for token-wise layer skipping.

Paper: "What Layers When: Learning to Skip Compute in LLMs with Residual Gates" (Laitenberger, Kopiczko,
Snoek, Asano; ICLR 2026; arXiv:2510.13876), read with the authors' public code (GateSkip repository:
``GatedWrapper``, ``GateLayer``, ``ModelGating``, ``jobs/job_common.sh``).

Every attention and MLP branch ``f_l`` of a decoder layer gets a sigmoid-linear *vector* gate computed from
the branch's (normalised) input ``h = RMSNorm(x)``; it scales the branch output before it re-enters the
residual stream::

    g_l(h) = sigmoid(W_l h + b_l)        W_l: d x d ~ N(0, 0.01^2),  b_l = 5  (g ~ 0.993: ~ the original model)
    x <- x + m_{l,t} * g_l(h) * f_l(h)   m_{l,t} in {0, 1}: 0 when token t skips branch l

The gate reads ``h`` detached (the authors' ``gate(hidden_states.detach())``): the gate learns from the
loss, but does not push gradients into the layers below through its input. Token importance is the mean
gate, ``s_{l,t} = mean_d g_l(h_t)``. With a skip budget ``p`` (a fraction of tokens) one threshold serves
the whole batch: ``tau_l`` is the p-quantile of ``s_{l,t}`` over all valid tokens of the batch (the
``floor(p * N)``-th smallest of the ``N`` valid tokens; ties broken by position, so exactly that many
skip), and ``m_{l,t} = 0`` where ``s_{l,t} <= tau_l``. The decision is made from the branch *input*,
before the branch runs.

Fine-tuning minimises (paper recipe; sparsity weight ``lambda = 1``, L2; L1 is an ablation)::

    L = CE(next token) + lambda * (1 / M) * sum_l mean_{t, d} g_l(h_t)^2          (M gated branches)

with skipping *on during training*: the training budget ramps linearly with the optimiser step ``k``,
``p_k = p_0 + min(1, k / K) * (p_1 - p_0)``, from the 0th to the 20th percentile (``p_0 = 0``,
``p_1 = 0.2``, ``K`` = all training steps, as in the authors' default job script), so the model learns
to work with skipped tokens. The mask is hard (no straight-through): a skipped token's branch output is
zero and its gate is trained only by the sparsity term at that branch. At inference a fixed per-layer
budget ``p`` is used; ``skipped_fraction`` counts skipped (token, branch) pairs over all of them.

Reference-code defaults (main runs, Llama-3.2-1B): the whole model is fine-tuned together with the gates,
AdamW (betas 0.9 / 0.95, weight decay 0.001), learning rate 3e-6, 1000 warm-up steps then cosine decay to
6800 steps (warm-up ~15 % of training), gradient clipping at 1.0, one 512- or 1024-token sequence per step,
validity mask = neither padding nor EOS. Recipes (:data:`RECIPES`, :func:`recipe_config`):

- ``"paper"`` (the defaults of :class:`GateSkipConfig`): the above, scaled to this machine's step count.
- ``"frozen-backbone"``: the paper's ablation: base weights frozen, only the gates learn, lr 1e-4 (the
  authors start it from a backbone fine-tuned under random skipping; here from the original model).
- ``"frozen-gates-l1"``: embodia's earlier variant, kept as an ablation (its page, docs/methods/gateskip.md, shows its table beside the
  paper recipe's): gates only (Adam, lr 2e-2 on biases, 4e-4 on weights, constant), W = 0, L1 with lambda 0.1,
  no skipping during training, a per-sequence top-k instead of the batch threshold, the first token never
  skipped, the gate input not detached.

Implementation: the MLP really runs only on the kept tokens (gather / scatter); for attention the skipped
tokens' outputs are dropped while their keys and values are still computed, so later tokens can attend to
them (the paper copies them from the layer below when decoding with a cache). A control ranks tokens at
random (``ranking="random"``) with the same budget and threshold rule.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import torch
from pydantic import Field
from torch import nn

from embodia.agents.llm import LocalLM
from embodia.agents.methods.data import completion_tasks, corpus_chunks
from embodia.core.validation import validate

Recipe = Literal["paper", "frozen-backbone", "frozen-gates-l1"]
Fraction = Annotated[float, Field(ge=0, lt=1)]


@dataclass
class GateSkipConfig:
    """GateSkip fine-tuning and evaluation settings; the defaults are the paper recipe (see module doc)."""

    steps: Annotated[int, Field(ge=1)] = 150
    """Optimiser steps (the paper: 6800 on one GPU; here as many as the CPU allows)."""
    batch_size: Annotated[int, Field(ge=1)] = 4
    """Sequences per step (the reference: 1 sequence of 512 / 1024 tokens)."""
    seq_len: Annotated[int, Field(ge=8)] = 64
    """Tokens per training sequence."""
    finetune: Literal["full", "gates"] = "full"
    """What learns: ``"full"`` the whole model and the gates (paper), ``"gates"`` only the gates (frozen
    backbone, an ablation)."""
    lr: Annotated[float, Field(gt=0)] = 3e-6
    """Peak learning rate of the backbone and the gate biases (paper, full fine-tune: 3e-6)."""
    weight_lr_scale: Annotated[float, Field(gt=0, le=1)] = 1.0
    """The gate weight matrices learn at ``lr * weight_lr_scale`` (paper: 1; the old variant's 2e-2 bias
    rate needed 0.02, else W h swamps the gate within a few steps)."""
    betas: tuple[Fraction, Fraction] = (0.9, 0.95)
    """AdamW betas (reference: 0.9, 0.95)."""
    weight_decay: Annotated[float, Field(ge=0)] = 1e-3
    """AdamW decoupled weight decay on every trained parameter (reference: 0.001)."""
    warmup: Annotated[float, Field(ge=0, le=1)] = 0.15
    """Fraction of the steps with a linear warm-up from 0 (reference: 1000 of 6800 steps)."""
    cosine: bool = True
    """Cosine decay to 0 at the last step after the warm-up (False: constant after the warm-up)."""
    max_grad_norm: Annotated[float, Field(ge=0)] = 1.0
    """Clip the global gradient norm to this (0: no clipping; reference: 1.0)."""
    sparsity: Annotated[float, Field(ge=0)] = 1.0
    """lambda: weight of the gate sparsity penalty (paper: 1.0)."""
    sparsity_loss: Literal["l2", "l1"] = "l2"
    """Penalty on the gate values: ``"l2"`` mean g^2 (paper), ``"l1"`` mean g (ablation)."""
    bias_init: float = 5.0
    """Initial gate bias (sigmoid(5) ~ 0.993: the gated model starts close to the original)."""
    gate_init_std: Annotated[float, Field(ge=0)] = 0.01
    """Standard deviation of the normal initialisation of the gate weights (paper: 0.01; 0: zeros)."""
    detach_gate_input: bool = True
    """The gate reads its input detached (reference code): no gradient into the layers below through it."""
    train_skip_start: Fraction = 0.0
    """Skip budget (percentile of gate values) at the first training step (reference: 0)."""
    train_skip_end: Fraction = 0.2
    """Skip budget at the end of the ramp (reference: 0.2; 0 trains without skipping)."""
    ramp_steps: Annotated[int, Field(ge=1)] | None = None
    """Steps over which the training budget ramps linearly (None: all ``steps``, as in the reference)."""
    threshold: Literal["batch", "sequence"] = "batch"
    """Skip threshold: one quantile over all valid tokens of the batch (paper), or ``floor(p * T)``
    lowest tokens of each sequence (the old variant)."""
    keep_first: bool = False
    """Never skip the first token of a sequence, the attention sink (off in the paper, whose trained gates
    keep BOS tokens by themselves; on in the old variant)."""
    eval_chunks: Annotated[int, Field(ge=1)] = 24
    """Held-out chunks for perplexity."""
    eval_len: Annotated[int, Field(ge=8)] = 128
    """Tokens per held-out chunk."""
    task_limit: Annotated[int, Field(ge=1)] | None = None
    """Evaluate at most this many completion tasks (None: all ~80)."""
    seed: int = 0
    """Seed of the gate initialisation, data order and the random-ranking control."""

    def __post_init__(self) -> None:
        if self.train_skip_end < self.train_skip_start:
            raise ValueError(
                f"train_skip_end ({self.train_skip_end}) must be >= train_skip_start ({self.train_skip_start})"
            )


#: field overrides of each recipe on top of the defaults (the paper recipe)
RECIPES: dict[str, dict[str, Any]] = {
    "paper": {},
    "frozen-backbone": {"finetune": "gates", "lr": 1e-4},
    "frozen-gates-l1": {
        "finetune": "gates",
        "lr": 2e-2,
        "weight_lr_scale": 0.02,
        "betas": (0.9, 0.999),
        "weight_decay": 0.0,
        "warmup": 0.0,
        "cosine": False,
        "max_grad_norm": 0.0,
        "sparsity": 0.1,
        "sparsity_loss": "l1",
        "gate_init_std": 0.0,
        "detach_gate_input": False,
        "train_skip_end": 0.0,
        "threshold": "sequence",
        "keep_first": True,
    },
}


def recipe_config(recipe: Recipe = "paper", **overrides: Any) -> GateSkipConfig:
    """A validated :class:`GateSkipConfig`: the recipe's settings, then ``overrides`` (None values ignored)."""
    if recipe not in RECIPES:
        raise ValueError(f"unknown GateSkip recipe {recipe!r}; known: {', '.join(RECIPES)}")
    values = {**RECIPES[recipe], **{k: v for k, v in overrides.items() if v is not None}}
    return validate(GateSkipConfig, values, where=f"gateskip config ({recipe})")


def train_budget(step: int, config: GateSkipConfig) -> float:
    """Training skip budget at optimiser step ``step`` (0-based): the linear ramp of the reference code."""
    ramp = config.ramp_steps or config.steps
    fraction = min(1.0, step / ramp)
    return config.train_skip_start + fraction * (config.train_skip_end - config.train_skip_start)


def lr_factor(step: int, config: GateSkipConfig) -> float:
    """Learning-rate multiplier at ``step``: linear warm-up from 0, then cosine decay to 0 (or constant)."""
    warm = round(config.warmup * config.steps)
    if step < warm:
        return step / warm
    if not config.cosine:
        return 1.0
    progress = (step - warm) / max(1, config.steps - warm)
    return 0.5 * (1.0 + math.cos(math.pi * progress))


def sparsity_penalty(gates: Sequence[torch.Tensor], kind: str = "l2") -> torch.Tensor:
    """``(1/M) sum_l mean g_l^2`` (``"l2"``) or ``(1/M) sum_l mean g_l`` (``"l1"``) over the gate tensors."""
    if kind == "l2":
        return torch.stack([g.pow(2).mean() for g in gates]).mean()
    return torch.stack([g.mean(-1).mean() for g in gates]).mean()  # g > 0: mean |g| = mean g


class _SkipState:
    """Shared by all gated branches of one model: budget, ranking, padding mask, counters, gate values."""

    def __init__(self) -> None:
        self.skip = 0.0
        self.ranking = "gate"  # "gate" | "random"
        self.threshold = "batch"  # "batch" | "sequence"
        self.keep_first = False
        self.detach_input = True
        self.generator = torch.Generator().manual_seed(0)
        self.token_mask: torch.Tensor | None = None  # (B, T) bool: valid tokens
        self.record = False  # keep every branch's gate values (for the sparsity loss)
        self.gates: list[torch.Tensor] = []  # (B, T, d) per branch while recording
        self.skipped = 0
        self.total = 0

    def keep_mask(self, importance: torch.Tensor) -> torch.Tensor | None:
        """(B, T) bool of the tokens that run the branch, or None when nothing is skipped.

        ``"batch"``: the ``floor(skip * N)`` lowest-scoring of the batch's ``N`` valid tokens skip (one
        threshold, the skip-quantile, for the whole batch); ``"sequence"``: ``floor(skip * T_b)`` per row.
        """
        if self.skip <= 0:
            return None
        valid = (
            self.token_mask if self.token_mask is not None else torch.ones_like(importance, dtype=torch.bool)
        )
        score = (
            importance if self.ranking == "gate" else torch.rand(importance.shape, generator=self.generator)
        )
        score = score.masked_fill(~valid, math.inf)
        if self.keep_first:
            score[:, 0] = math.inf
        keep = valid.clone()
        if self.threshold == "batch":
            n_skip = int(self.skip * int(valid.sum()))
            if n_skip > 0:
                lowest = torch.topk(score.flatten(), n_skip, largest=False).indices
                keep.view(-1)[lowest] = False
            return keep
        for row in range(score.shape[0]):
            n_skip = int(self.skip * int(valid[row].sum()))
            if n_skip > 0:
                lowest = torch.topk(score[row], n_skip, largest=False).indices
                keep[row, lowest] = False
        return keep

    def count(self, keep: torch.Tensor | None, shape: torch.Size) -> None:
        valid = self.token_mask
        n = int(valid.sum()) if valid is not None else shape[0] * shape[1]
        self.total += n
        if keep is not None:
            self.skipped += n - int((keep & valid).sum() if valid is not None else keep.sum())


class GatedBranch(nn.Module):
    """Wraps an attention or MLP module: ``m * g(h) * f(h)``, with token skipping when a budget is set."""

    def __init__(
        self,
        branch: nn.Module,
        hidden_size: int,
        state: _SkipState,
        kind: str,
        bias_init: float,
        init_std: float = 0.01,
    ) -> None:
        super().__init__()
        self.branch = branch
        self.gate = nn.Linear(hidden_size, hidden_size)
        if init_std > 0:
            nn.init.normal_(self.gate.weight, mean=0.0, std=init_std)
        else:
            nn.init.zeros_(self.gate.weight)
        nn.init.constant_(self.gate.bias, bias_init)
        self.state = state
        self.kind = kind

    def forward(self, hidden_states: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        gate_input = hidden_states.detach() if self.state.detach_input else hidden_states
        gate = torch.sigmoid(self.gate(gate_input))
        if self.state.record:
            self.state.gates.append(gate)
        keep = self.state.keep_mask(gate.mean(-1).detach())
        self.state.count(keep, hidden_states.shape[:2])
        if self.kind == "mlp":
            if keep is None:
                return gate * self.branch(hidden_states)
            kept = gate[keep] * self.branch(hidden_states[keep][None])[0]  # the MLP runs on kept tokens only
            return torch.zeros_like(hidden_states).index_put((keep,), kept)
        out, weights = self.branch(hidden_states, *args, **kwargs)
        out = gate * out
        if keep is not None:
            out = out * keep[..., None].to(out.dtype)
        return out, weights


class GateSkipModel:
    """A :class:`LocalLM` with gates on every attention and MLP branch (modifies ``lm.model`` in place)."""

    def __init__(self, lm: LocalLM, bias_init: float = 5.0, gate_init_std: float = 0.01) -> None:
        self.lm = lm
        self.state = _SkipState()
        for layer in lm.layers:
            if not isinstance(layer.self_attn, GatedBranch):
                size = lm.hidden_size
                layer.self_attn = GatedBranch(
                    layer.self_attn, size, self.state, "attn", bias_init, gate_init_std
                )
                layer.mlp = GatedBranch(layer.mlp, size, self.state, "mlp", bias_init, gate_init_std)
        self.branches: list[GatedBranch] = [b for layer in lm.layers for b in (layer.self_attn, layer.mlp)]

    def configure(self, config: GateSkipConfig) -> None:
        """Take the threshold rule, first-token rule and gate-input detaching from ``config``."""
        self.state.threshold = config.threshold
        self.state.keep_first = config.keep_first
        self.state.detach_input = config.detach_gate_input

    def gate_parameters(self) -> list[nn.Parameter]:
        return [p for b in self.branches for p in b.gate.parameters()]

    def state_dict(self) -> dict[str, torch.Tensor]:
        return {f"{i}.{k}": v for i, b in enumerate(self.branches) for k, v in b.gate.state_dict().items()}

    def load_state_dict(self, tensors: dict[str, torch.Tensor]) -> None:
        for i, b in enumerate(self.branches):
            b.gate.load_state_dict({k: tensors[f"{i}.{k}"] for k in ("weight", "bias")})

    def save(self, path: str | Path) -> None:
        """Save the gates (.safetensors; after a full fine-tune the backbone changed too: save it apart)."""
        from safetensors.torch import save_file

        save_file({k: v.contiguous() for k, v in self.state_dict().items()}, str(path))

    def load(self, path: str | Path) -> None:
        from safetensors.torch import load_file

        self.load_state_dict(load_file(str(path)))

    def set_budget(self, skip: float, ranking: str = "gate", seed: int = 0) -> None:
        """Skip ``skip`` of the tokens at every branch from now on (resets the counters)."""
        if not 0.0 <= skip < 1.0:
            raise ValueError(f"skip fraction must be in [0, 1), got {skip}")
        if ranking not in ("gate", "random"):
            raise ValueError(f"ranking must be 'gate' or 'random', got {ranking!r}")
        self.state.skip, self.state.ranking = skip, ranking
        self.state.generator.manual_seed(seed)
        self.state.skipped = self.state.total = 0

    @property
    def skipped_fraction(self) -> float:
        return self.state.skipped / max(self.state.total, 1)

    def gate_profile(self, ids: torch.Tensor) -> torch.Tensor:
        """Mean gate per branch (attn0, mlp0, attn1, ...) on ``ids``: a (2 * layers,) tensor."""
        self.set_budget(0.0)
        captured: list[torch.Tensor] = []
        hooks = [
            b.gate.register_forward_hook(lambda _m, _i, o: captured.append(torch.sigmoid(o).mean()))
            for b in self.branches
        ]
        try:
            with torch.no_grad():
                self.lm.model(ids)
        finally:
            for h in hooks:
                h.remove()
        return torch.stack(captured)


def _optimizer(
    gated: GateSkipModel, config: GateSkipConfig
) -> tuple[torch.optim.Optimizer, list[nn.Parameter]]:
    """AdamW over the gates (and the backbone when ``finetune == "full"``); returns it and its parameters."""
    gate_ids = {id(p) for p in gated.gate_parameters()}
    backbone = [p for p in gated.lm.model.parameters() if id(p) not in gate_ids]
    for param in backbone:
        param.requires_grad_(config.finetune == "full")
    for param in gated.gate_parameters():
        param.requires_grad_(True)
    groups = [
        {"params": [b.gate.weight for b in gated.branches], "lr": config.lr * config.weight_lr_scale},
        {"params": [b.gate.bias for b in gated.branches], "lr": config.lr},
    ]
    if config.finetune == "full":
        groups.append({"params": backbone, "lr": config.lr})
    for group in groups:
        group["initial_lr"] = group["lr"]
    optimizer = torch.optim.AdamW(groups, betas=config.betas, weight_decay=config.weight_decay)
    return optimizer, [p for g in groups for p in g["params"]]


def train_gates(
    gated: GateSkipModel,
    config: GateSkipConfig,
    progress: Callable[[int, int, str], None] | None = None,
) -> list[dict[str, float]]:
    """Fine-tune with skipping on (the budget ramps per :func:`train_budget`) and the sparsity penalty.

    Returns one record per step: CE loss, sparsity term, mean gate, budget, skipped fraction, learning rate.
    """
    config = validate(GateSkipConfig, config, where="gateskip config")
    lm = gated.lm
    torch.manual_seed(config.seed)
    gated.configure(config)
    chunks = corpus_chunks(lm, "train", config.seq_len, config.steps * config.batch_size, seed=config.seed)
    optimizer, params = _optimizer(gated, config)
    lm.model.train()
    gated.state.record = True
    history = []
    try:
        for step in range(config.steps):
            batch = torch.tensor(chunks[step * config.batch_size : (step + 1) * config.batch_size])
            budget = train_budget(step, config)
            gated.set_budget(budget, "gate")
            factor = lr_factor(step, config)
            for group in optimizer.param_groups:
                group["lr"] = group["initial_lr"] * factor
            gated.state.gates.clear()
            lm_loss = lm.model(batch, labels=batch).loss
            penalty = sparsity_penalty(gated.state.gates, config.sparsity_loss)
            loss = lm_loss + config.sparsity * penalty
            optimizer.zero_grad()
            loss.backward()
            if config.max_grad_norm > 0:
                torch.nn.utils.clip_grad_norm_(params, config.max_grad_norm)
            optimizer.step()
            gate_mean = float(torch.stack([g.detach().mean() for g in gated.state.gates]).mean())
            history.append(
                {
                    "step": step,
                    "lm_loss": lm_loss.item(),
                    "sparsity_term": penalty.item(),
                    "gate_mean": gate_mean,
                    "skip_budget": budget,
                    "skipped_fraction": gated.skipped_fraction,
                    "lr": config.lr * factor,
                }
            )
            if progress is not None:
                message = (
                    f"lm loss {lm_loss.item():.3f} gate {gate_mean:.3f} skip {gated.skipped_fraction:.1%}"
                )
                progress(step + 1, config.steps, message)
    finally:
        gated.state.record = False
        gated.state.gates.clear()
        gated.set_budget(0.0)
        lm.model.eval()
        for param in lm.model.parameters():
            param.requires_grad_(False)
    return history


def perplexity(lm: LocalLM, chunks: Sequence[Sequence[int]], batch_size: int = 8) -> float:
    """Perplexity of ``lm`` on token chunks (at the current budget when gated)."""
    total, count = 0.0, 0
    with torch.no_grad():
        for start in range(0, len(chunks), batch_size):
            batch = torch.tensor(chunks[start : start + batch_size])
            loss = lm.model(batch, labels=batch).loss
            total += float(loss) * batch.numel()
            count += batch.numel()
    return math.exp(total / count)


def task_accuracy(lm: LocalLM, limit: int | None = None) -> float:
    """Top-1 next-token accuracy on the completion tasks (at the current budget when gated)."""
    tasks = completion_tasks()[:limit] if limit else completion_tasks()
    by_length: dict[int, list[tuple[list[int], int]]] = {}
    for task in tasks:
        ids = lm.encode(task.prompt)
        by_length.setdefault(len(ids), []).append((ids, lm.encode(task.answer)[0]))
    correct = 0
    with torch.no_grad():
        for items in by_length.values():
            ids = torch.tensor([i for i, _ in items])
            predicted = lm.model(ids).logits[:, -1].argmax(-1)
            correct += int((predicted == torch.tensor([a for _, a in items])).sum())
    return correct / len(tasks)


@dataclass
class SkipPoint:
    """Quality at one skip budget."""

    budget: float
    ranking: str
    skipped_fraction: float
    perplexity: float
    accuracy: float


@dataclass
class GateSkipResult:
    """Everything one run measured."""

    baseline_perplexity: float
    """Original model (no gates)."""
    baseline_accuracy: float
    points: list[SkipPoint] = field(default_factory=list)
    history: list[dict[str, float]] = field(default_factory=list)
    gate_profile: list[float] = field(default_factory=list)
    """Mean gate of each branch (attn0, mlp0, attn1, mlp1, ...) on held-out text after training."""


def run_gateskip(
    lm: LocalLM,
    config: GateSkipConfig,
    budgets: Sequence[float] = (0.0, 0.15, 0.25, 0.5),
    rankings: Sequence[str] = ("gate", "random"),
    gates_out: str | Path | None = None,
    progress: Callable[[int, int, str], None] | None = None,
) -> GateSkipResult:
    """Baseline quality, GateSkip fine-tuning, then quality vs skipped fraction. Modifies ``lm`` (use a fresh one)."""
    config = validate(GateSkipConfig, config, where="gateskip config")
    random.seed(config.seed)
    heldout = corpus_chunks(lm, "heldout", config.eval_len, config.eval_chunks, seed=config.seed)
    result = GateSkipResult(
        baseline_perplexity=perplexity(lm, heldout), baseline_accuracy=task_accuracy(lm, config.task_limit)
    )
    torch.manual_seed(config.seed)
    gated = GateSkipModel(lm, bias_init=config.bias_init, gate_init_std=config.gate_init_std)
    gated.configure(config)
    total = config.steps + len(budgets) * len(rankings)

    def train_progress(done: int, _total: int, message: str) -> None:
        if progress is not None:
            progress(done, total, message)

    result.history = train_gates(gated, config, train_progress)
    if gates_out is not None:
        gated.save(gates_out)
    done = config.steps
    for ranking in rankings:
        for budget in budgets:
            done += 1
            if ranking != "gate" and budget == 0:
                continue
            gated.set_budget(budget, ranking, seed=config.seed)
            ppl = perplexity(lm, heldout)
            skipped = gated.skipped_fraction
            acc = task_accuracy(lm, config.task_limit)
            result.points.append(SkipPoint(budget, ranking, skipped, ppl, acc))
            if progress is not None:
                progress(done, total, f"{ranking} skip {budget:.0%}: ppl {ppl:.2f} acc {acc:.0%}")
    result.gate_profile = gated.gate_profile(torch.tensor(heldout[:2])).tolist()
    gated.set_budget(0.0)
    return result
