"""GateSkip on a small decoder trained from scratch: associative recall with filler tokens.

Paper: "What Layers When: Learning to Skip Compute in LLMs with Residual Gates" (Laitenberger, Kopiczko,
Snoek, Asano; ICLR 2026; arXiv:2510.13876), read with the authors' code (``Thiggel/GateSkip``:
``experiment/models/gating/GatedWrapper.py`` for the gate on the detached branch input, the mean-gate
token importance and the ``importance <= threshold`` skip mask; ``jobs/*/cot.job`` for the recipe). The
gate, the skip rule, the L2 sparsity term, the budget ramp and the learning-rate schedule are the ones of
:mod:`embodia.agents.methods.gateskip` (its docstring has the equations); this module gives them a task on
which the paper's mechanism has something to choose.

The task: each sequence holds ``pairs`` key-value pairs (``k v``, adjacent) at random places among filler
tokens, then ``[Q] k*``; the model must answer the value that followed ``k*``. Only the pair tokens and the
query carry the answer; the filler (more than half of the tokens) carries nothing. A model that has learned
which tokens matter can skip the filler's attention and MLP branches at no loss; skipping tokens at random
removes pair tokens too.

Protocol (the paper's: a pretrained model, then gated fine-tuning, then budgets at inference):

1. **Ungated model.** A pre-norm decoder (``layers`` x (attention + MLP), width ``width``) is trained from
   scratch with cross-entropy on the answer token. Its branches are already wrapped in the GateSkip gates,
   but with ``W = 0, b = 30`` (``sigmoid(30) == 1`` in float32) and frozen: exactly the ungated model.
2. **GateSkip fine-tuning.** Gates re-initialised as the paper's (``W ~ N(0, 0.01^2)``, ``b = 5``), then the
   whole model and the gates are trained with the paper recipe of :class:`GateSkipConfig`: loss
   ``CE + lambda * (1/M) sum_l mean g_l^2`` (L2, ``lambda = 1``), skipping on with the batch-level budget
   ramping from the 0th to the 20th gate percentile, AdamW (0.9, 0.95), weight decay 0.001, 15 % warm-up then
   cosine decay, gradient clipping at 1.0.
   A control copy of the pretrained model gets the same fine-tuning steps, data and optimiser without gates
   (open and frozen), sparsity term or skipping: the ungated model, trained as long as the gated one.
3. **Evaluation.** Answer accuracy on held-out sequences at per-branch budgets ``p``: the ``floor(p N)``
   lowest-gate tokens of the batch skip each branch (gate ranking); the same count chosen at random on the
   fine-tuned model and on the ungated control (random skipping). The share of the skipped (token, branch)
   pairs that fall on filler shows whether the gates learned which tokens matter.

Where this differs from the paper: the loss is on the answer token only (the filler is unpredictable noise;
the paper's validity mask drops padding and EOS), and the fine-tuning learning rate is this small model's
(``finetune_lr``, default 1e-3) — the paper's 3e-6 is for a pretrained 1B-parameter model and would not move
a 200k-parameter one in hundreds of steps. The random control skips exactly ``floor(p N)`` tokens chosen at
random (the authors' ``randomly_skip`` drops each token with probability ``p``: the same budget in expectation).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Annotated, Any

import torch
from pydantic import Field
from torch import nn
from torch.nn import functional as F

from embodia.agents.methods.gateskip import (
    GatedBranch,
    GateSkipConfig,
    _SkipState,
    lr_factor,
    recipe_config,
    sparsity_penalty,
    train_budget,
)
from embodia.core.validation import validate

#: gate bias of the ungated model: sigmoid(30) rounds to 1.0 in float32, so ``g * f(h) == f(h)``
OPEN_BIAS = 30.0


@dataclass
class RecallConfig:
    """Task, model and training settings of the associative-recall GateSkip experiment."""

    pairs: Annotated[int, Field(ge=1)] = 3
    """Key-value pairs per sequence."""
    length: Annotated[int, Field(ge=4)] = 24
    """Tokens per sequence, the final ``[Q] k*`` included; the rest not taken by pairs is filler."""
    keys: Annotated[int, Field(ge=2)] = 8
    """Size of the key vocabulary."""
    values: Annotated[int, Field(ge=2)] = 8
    """Size of the value vocabulary."""
    fillers: Annotated[int, Field(ge=1)] = 8
    """Size of the filler vocabulary (filler tokens are drawn uniformly from it)."""
    width: Annotated[int, Field(ge=8)] = 64
    """Model width d (the gates are d x d, as in the paper)."""
    layers: Annotated[int, Field(ge=1)] = 4
    """Decoder layers (each: one attention and one MLP branch, both gated)."""
    heads: Annotated[int, Field(ge=1)] = 4
    """Attention heads."""
    batch_size: Annotated[int, Field(ge=1)] = 64
    """Sequences per optimiser step (pretraining and fine-tuning)."""
    pretrain_steps: Annotated[int, Field(ge=1)] = 700
    """Steps of training the ungated model from scratch."""
    pretrain_lr: Annotated[float, Field(gt=0)] = 3e-3
    """Peak learning rate of the ungated model (AdamW, 5 % warm-up, cosine decay)."""
    finetune_steps: Annotated[int, Field(ge=1)] = 350
    """Steps of GateSkip fine-tuning (the paper recipe; the budget ramps over all of them)."""
    finetune_lr: Annotated[float, Field(gt=0)] = 1e-3
    """Peak learning rate of GateSkip fine-tuning (the paper's 3e-6 is for a pretrained 1B model)."""
    eval_sequences: Annotated[int, Field(ge=1)] = 1024
    """Held-out sequences per evaluation point."""
    eval_batch: Annotated[int, Field(ge=1)] = 512
    """Sequences per evaluation batch (the skip threshold is one quantile over a batch's tokens)."""
    seed: int = 0
    """Seed of the data, the initialisation and the random-ranking control."""

    def __post_init__(self) -> None:
        if 2 * self.pairs + 2 > self.length:
            raise ValueError(f"{self.pairs} pairs and the query do not fit in {self.length} tokens")
        if self.pairs > self.keys:
            raise ValueError(f"{self.pairs} distinct keys need a key vocabulary of at least that size")
        if self.width % self.heads:
            raise ValueError(f"width {self.width} is not a multiple of heads {self.heads}")

    @property
    def vocab(self) -> int:
        return self.keys + self.values + self.fillers + 1

    @property
    def query_token(self) -> int:
        return self.vocab - 1


def recall_batch(
    config: RecallConfig, batch: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(ids, answers, filler)``: (B, T) tokens, (B,) value tokens, (B, T) bool marking filler positions.

    Token ids: keys ``[0, K)``, values ``[K, K + V)``, filler ``[K + V, K + V + F)``, then ``[Q]``.
    """
    body = config.length - 2
    n_fill = body - 2 * config.pairs
    # order of the items (a pair or one filler token): a random permutation of `pairs` ones and filler zeros
    items = torch.cat([torch.ones(batch, config.pairs), torch.zeros(batch, n_fill)], dim=1)
    order = torch.rand(batch, config.pairs + n_fill, generator=generator).argsort(dim=1)
    is_pair = items.gather(1, order).bool()
    size = is_pair.long() + 1
    start = size.cumsum(1) - size  # position of each item in the body
    keys = torch.rand(batch, config.keys, generator=generator).argsort(dim=1)[:, : config.pairs]
    values = torch.randint(0, config.values, (batch, config.pairs), generator=generator) + config.keys
    ids = torch.randint(0, config.fillers, (batch, config.length), generator=generator) + config.keys
    ids += config.values
    filler = torch.ones(batch, config.length, dtype=torch.bool)
    pair_start = start[is_pair].view(batch, config.pairs)
    rows = torch.arange(batch)[:, None]
    ids[rows, pair_start] = keys
    ids[rows, pair_start + 1] = values
    filler[rows, pair_start] = False
    filler[rows, pair_start + 1] = False
    asked = torch.randint(0, config.pairs, (batch,), generator=generator)
    ids[:, -2] = config.query_token
    ids[:, -1] = keys[torch.arange(batch), asked]
    filler[:, -2:] = False
    return ids, values[torch.arange(batch), asked], filler


class _Attention(nn.Module):
    """Causal multi-head self-attention; returns ``(out, None)`` like the Hugging Face modules GatedBranch wraps."""

    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width, bias=False)
        self.out = nn.Linear(width, width, bias=False)

    def forward(self, h: torch.Tensor) -> tuple[torch.Tensor, None]:
        b, t, d = h.shape
        q, k, v = self.qkv(h).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(y.transpose(1, 2).reshape(b, t, d)), None


class _Block(nn.Module):
    def __init__(self, width: int, heads: int, state: _SkipState) -> None:
        super().__init__()
        self.norm1, self.norm2 = nn.RMSNorm(width), nn.RMSNorm(width)
        mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))
        self.attn = GatedBranch(_Attention(width, heads), width, state, "attn", OPEN_BIAS, 0.0)
        self.mlp = GatedBranch(mlp, width, state, "mlp", OPEN_BIAS, 0.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x))[0]
        return x + self.mlp(self.norm2(x))


class GatedDecoder(nn.Module):
    """A small pre-norm decoder whose every attention and MLP branch is a GateSkip :class:`GatedBranch`."""

    def __init__(self, config: RecallConfig) -> None:
        super().__init__()
        self.state = _SkipState()
        self.embed = nn.Embedding(config.vocab, config.width)
        self.position = nn.Parameter(torch.randn(config.length, config.width) * 0.02)
        self.blocks = nn.ModuleList(
            [_Block(config.width, config.heads, self.state) for _ in range(config.layers)]
        )
        self.norm = nn.RMSNorm(config.width)
        self.head = nn.Linear(config.width, config.vocab, bias=False)
        self.branches: list[GatedBranch] = [b for block in self.blocks for b in (block.attn, block.mlp)]
        for param in self.gate_parameters():
            param.requires_grad_(False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """Logits at the last position (the answer), (B, vocab)."""
        x = self.embed(ids) + self.position[: ids.shape[1]]
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x[:, -1]))

    def gate_parameters(self) -> list[nn.Parameter]:
        return [p for b in self.branches for p in b.gate.parameters()]

    def backbone_parameters(self) -> list[nn.Parameter]:
        gates = {id(p) for p in self.gate_parameters()}
        return [p for p in self.parameters() if id(p) not in gates]

    def init_gates(self, bias: float = 5.0, std: float = 0.01) -> None:
        """The paper's gate initialisation, ``W ~ N(0, std^2)``, ``b = bias``; the gates become trainable."""
        with torch.no_grad():
            for branch in self.branches:
                nn.init.normal_(branch.gate.weight, 0.0, std) if std > 0 else nn.init.zeros_(
                    branch.gate.weight
                )
                nn.init.constant_(branch.gate.bias, bias)
        for param in self.gate_parameters():
            param.requires_grad_(True)

    def set_budget(self, skip: float, ranking: str = "gate", seed: int = 0) -> None:
        """Skip ``skip`` of the batch's tokens at every branch (resets the counters), as GateSkipModel does."""
        if not 0.0 <= skip < 1.0:
            raise ValueError(f"skip fraction must be in [0, 1), got {skip}")
        self.state.skip, self.state.ranking = skip, ranking
        self.state.generator.manual_seed(seed)
        self.state.skipped = self.state.total = 0

    @property
    def skipped_fraction(self) -> float:
        return self.state.skipped / max(self.state.total, 1)


def _schedule(step: int, steps: int, warmup: float) -> float:
    return lr_factor(step, GateSkipConfig(steps=steps, warmup=warmup))


def pretrain(
    model: GatedDecoder, config: RecallConfig, progress: Callable[[int, str], None] | None = None
) -> list[float]:
    """Train the ungated model (gates frozen open) from scratch on the answer's cross-entropy; losses per step."""
    generator = torch.Generator().manual_seed(config.seed * 1000 + 1)
    params = model.backbone_parameters()
    optimizer = torch.optim.AdamW(params, lr=config.pretrain_lr, betas=(0.9, 0.95), weight_decay=0.01)
    model.set_budget(0.0)
    model.train()
    losses = []
    for step in range(config.pretrain_steps):
        for group in optimizer.param_groups:
            group["lr"] = config.pretrain_lr * _schedule(step, config.pretrain_steps, 0.05)
        ids, answers, _ = recall_batch(config, config.batch_size, generator)
        loss = F.cross_entropy(model(ids), answers)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        losses.append(loss.item())
        if progress is not None:
            progress(step + 1, f"pretrain loss {loss.item():.3f}")
    model.eval()
    return losses


def gateskip_recipe(config: RecallConfig, **overrides: Any) -> GateSkipConfig:
    """The paper recipe (:func:`recipe_config` ``"paper"``) at this task's steps and learning rate."""
    return recipe_config(
        "paper", steps=config.finetune_steps, lr=config.finetune_lr, batch_size=config.batch_size, **overrides
    )


def finetune(
    model: GatedDecoder,
    config: RecallConfig,
    recipe: GateSkipConfig | None = None,
    progress: Callable[[int, str], None] | None = None,
    gated: bool = True,
) -> list[dict[str, float]]:
    """GateSkip fine-tuning (paper recipe): paper gate init, whole model + gates, L2 sparsity, skip ramp on.

    ``gated=False`` is the control: the same steps, data and optimiser, but the gates stay open and frozen,
    no sparsity term and no skipping (the ungated model trained as long as the gated one).
    """
    recipe = validate(GateSkipConfig, recipe or gateskip_recipe(config), where="gateskip recipe")
    if not gated:
        recipe = replace(recipe, sparsity=0.0, train_skip_start=0.0, train_skip_end=0.0)
    torch.manual_seed(config.seed * 1000 + 2)
    if gated:
        model.init_gates(recipe.bias_init, recipe.gate_init_std)
    model.state.threshold, model.state.keep_first = recipe.threshold, recipe.keep_first
    model.state.detach_input = recipe.detach_gate_input
    generator = torch.Generator().manual_seed(config.seed * 1000 + 3)
    gates = [b.gate for b in model.branches] if gated else []
    groups = [
        {"params": [g.weight for g in gates], "initial_lr": recipe.lr * recipe.weight_lr_scale},
        {"params": [g.bias for g in gates], "initial_lr": recipe.lr},
        {"params": model.backbone_parameters(), "initial_lr": recipe.lr},
    ]
    groups = [g for g in groups if g["params"]]
    if recipe.finetune == "gates":
        for param in groups.pop()["params"]:
            param.requires_grad_(False)
    params = [p for g in groups for p in g["params"]]
    optimizer = torch.optim.AdamW(groups, lr=recipe.lr, betas=recipe.betas, weight_decay=recipe.weight_decay)
    model.train()
    model.state.record = True
    history = []
    try:
        for step in range(recipe.steps):
            budget = train_budget(step, recipe)
            model.set_budget(budget, "gate")
            for group in optimizer.param_groups:
                group["lr"] = group["initial_lr"] * lr_factor(step, recipe)
            ids, answers, _ = recall_batch(config, config.batch_size, generator)
            model.state.gates.clear()
            ce = F.cross_entropy(model(ids), answers)
            penalty = sparsity_penalty(model.state.gates, recipe.sparsity_loss)
            loss = ce + recipe.sparsity * penalty
            optimizer.zero_grad()
            loss.backward()
            if recipe.max_grad_norm > 0:
                torch.nn.utils.clip_grad_norm_(params, recipe.max_grad_norm)
            optimizer.step()
            gate_mean = float(torch.stack([g.detach().mean() for g in model.state.gates]).mean())
            history.append(
                {
                    "step": step,
                    "ce": ce.item(),
                    "sparsity_term": penalty.item(),
                    "gate_mean": gate_mean,
                    "skip_budget": budget,
                    "skipped_fraction": model.skipped_fraction,
                    "lr": optimizer.param_groups[-1]["lr"],
                }
            )
            if progress is not None:
                progress(
                    step + 1,
                    f"{'gateskip' if gated else 'ungated'} ce {ce.item():.3f} gate {gate_mean:.3f} skip {budget:.0%}",
                )
    finally:
        model.state.record = False
        model.state.gates.clear()
        model.set_budget(0.0)
        model.eval()
    return history


@dataclass
class RecallPoint:
    """Accuracy at one budget."""

    model: str
    """``"gateskip"`` (fine-tuned with gates) or ``"ungated"``."""
    ranking: str
    """``"gate"`` or ``"random"``."""
    budget: float
    skipped_fraction: float
    """Skipped (token, branch) pairs over all of them."""
    accuracy: float
    filler_share: float
    """Share of the skipped (token, branch) pairs that are filler tokens (NaN when nothing skipped)."""


def evaluate(
    model: GatedDecoder, config: RecallConfig, budget: float, ranking: str, name: str
) -> RecallPoint:
    """Answer accuracy on ``eval_sequences`` held-out sequences (the same ones for every call) at ``budget``."""
    generator = torch.Generator().manual_seed(config.seed * 1000 + 4)
    model.set_budget(budget, ranking, seed=config.seed)
    correct = skipped_filler = skipped = 0
    keeps: list[torch.Tensor] = []
    original = model.state.keep_mask

    def recording(importance: torch.Tensor) -> torch.Tensor | None:
        keep = original(importance)
        if keep is not None:
            keeps.append(keep)
        return keep

    model.state.keep_mask = recording  # type: ignore[method-assign]
    try:
        with torch.no_grad():
            for start in range(0, config.eval_sequences, config.eval_batch):
                n = min(config.eval_batch, config.eval_sequences - start)
                ids, answers, filler = recall_batch(config, n, generator)
                keeps.clear()
                correct += int((model(ids).argmax(-1) == answers).sum())
                for keep in keeps:
                    skipped += int((~keep).sum())
                    skipped_filler += int((~keep & filler).sum())
    finally:
        del model.state.keep_mask
    point = RecallPoint(
        name,
        ranking,
        budget,
        model.skipped_fraction,
        correct / config.eval_sequences,
        skipped_filler / skipped if skipped else math.nan,
    )
    model.set_budget(0.0)
    return point


@dataclass
class RecallRun:
    """One seed's measurements."""

    seed: int
    ungated_accuracy: float
    """The ungated model after pretraining and the control fine-tuning (as many steps as the gated one)."""
    pretrained_accuracy: float = 0.0
    """The ungated model after pretraining only (where GateSkip fine-tuning starts)."""
    points: list[RecallPoint] = field(default_factory=list)
    pretrain_loss: list[float] = field(default_factory=list)
    history: list[dict[str, float]] = field(default_factory=list)
    control_history: list[dict[str, float]] = field(default_factory=list)
    filler_fraction: float = 0.0
    """Share of all tokens that are filler (what a perfect ranking can skip for free)."""


def run_recall(
    config: RecallConfig,
    budgets: Sequence[float] = (0.15, 0.25, 0.35, 0.5),
    recipe: GateSkipConfig | None = None,
    progress: Callable[[int, int, str], None] | None = None,
) -> RecallRun:
    """Pretrain the ungated model, evaluate it, GateSkip-fine-tune a copy, evaluate both at ``budgets``."""
    config = validate(RecallConfig, config, where="gateskip recall config")
    torch.manual_seed(config.seed)
    model = GatedDecoder(config)
    total = config.pretrain_steps + 2 * config.finetune_steps

    def step_progress(offset: int) -> Callable[[int, str], None] | None:
        if progress is None:
            return None
        return lambda done, message: progress(offset + done, total, message)

    losses = pretrain(model, config, step_progress(0))
    control = copy.deepcopy(model)
    control.state = _SkipState()
    for branch in control.branches:
        branch.state = control.state
    run = RecallRun(config.seed, 0.0, pretrain_loss=losses)
    run.pretrained_accuracy = evaluate(model, config, 0.0, "gate", "ungated").accuracy
    run.history = finetune(model, config, recipe, step_progress(config.pretrain_steps))
    run.control_history = finetune(
        control, config, recipe, step_progress(config.pretrain_steps + config.finetune_steps), gated=False
    )
    run.ungated_accuracy = evaluate(control, config, 0.0, "gate", "ungated").accuracy
    run.filler_fraction = (config.length - 2 - 2 * config.pairs) / config.length
    for budget in budgets:
        run.points.append(evaluate(control, config, budget, "random", "ungated"))
    for ranking in ("gate", "random"):
        for budget in (0.0, *budgets) if ranking == "gate" else budgets:
            run.points.append(evaluate(model, config, budget, ranking, "gateskip"))
    return run


def quick_config(config: RecallConfig) -> RecallConfig:
    """A few-second version of ``config`` (what the tests run)."""
    return replace(
        config, pretrain_steps=60, finetune_steps=30, batch_size=32, eval_sequences=256, eval_batch=128
    )
