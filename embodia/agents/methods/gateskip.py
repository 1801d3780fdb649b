"""GateSkip: residual-stream gates for token-wise layer skipping (Laitenberger et al., ICLR 2026).

Every attention and MLP branch of a decoder layer gets a sigmoid-linear vector gate computed from the
(normalised) hidden state entering the branch::

    g_l(h) = sigmoid(W_l h + b_l)            W_l: d x d, initialised to 0;  b_l = 5 (g ~ 0.993, ~identity)
    x <- x + g_l(h) * f_l(h)                 f_l = attention or MLP, h = RMSNorm(x)

Fine-tuning (gates only here; the base weights stay frozen) minimises

    L = CE(next token) + lambda * mean_{l, t} mean_d g_l(h_t)          (gate sparsity penalty)

At inference a token's importance at branch l is its mean gate value s_{l,t} = mean_d g_l(h_t). With a
per-layer budget ``skip`` (fraction of tokens), the floor(skip * T) tokens of lowest s_{l,t} in each
sequence skip the branch: their residual stream passes through unchanged. Because the gate reads the
branch *input*, the decision is made before the branch runs. The MLP really runs only on the kept tokens
(gather / scatter); for attention the skipped tokens' outputs are dropped while their keys and values are
still computed, so later tokens can attend to them (the paper copies them from the layer below).
``skipped_fraction`` counts skipped (token, branch) pairs over all of them.

A control ranks tokens at random instead of by gate (``ranking="random"``) with the same budget.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

from embodia.agents.llm import LocalLM
from embodia.agents.methods.data import completion_tasks, corpus_chunks


@dataclass
class GateSkipConfig:
    """Gate fine-tuning and evaluation settings."""

    steps: int = 150
    """Gate fine-tuning steps."""
    batch_size: int = 4
    """Sequences per step."""
    seq_len: int = 64
    """Tokens per training sequence."""
    lr: float = 2e-2
    """Adam learning rate of the gate biases."""
    weight_lr_scale: float = 0.02
    """The gate weight matrices learn at ``lr * weight_lr_scale``: Adam moves every entry of a d x d matrix
    by about the learning rate per step, so at the bias's rate W h would swamp the gate within a few steps."""
    sparsity: float = 0.1
    """lambda: weight of the mean-gate penalty."""
    bias_init: float = 5.0
    """Initial gate bias (sigmoid(5) ~ 0.993: the gated model starts as the original)."""
    eval_chunks: int = 24
    """Held-out chunks for perplexity."""
    eval_len: int = 128
    """Tokens per held-out chunk."""
    task_limit: int | None = None
    """Evaluate at most this many completion tasks (None: all ~80)."""
    keep_first: bool = True
    """Never skip the first token of a sequence: it is the attention sink every later token reads (the
    paper finds trained gates keep BOS tokens as anchors; a brief fine-tune does not learn that reliably)."""
    seed: int = 0
    """Seed of data order and the random-ranking control."""


class _SkipState:
    """Shared by all gated branches of one model: budget, ranking, padding mask and gate statistics."""

    def __init__(self) -> None:
        self.skip = 0.0
        self.ranking = "gate"  # "gate" | "random"
        self.generator = torch.Generator().manual_seed(0)
        self.token_mask: torch.Tensor | None = None  # (B, T) bool: real tokens
        self.gate_means: list[torch.Tensor] = []  # (B, T) per branch, for the sparsity loss
        self.skipped = 0
        self.total = 0
        self.keep_first = True

    def keep_mask(self, importance: torch.Tensor) -> torch.Tensor | None:
        """(B, T) bool of tokens that run the branch, or None when nothing is skipped."""
        if self.skip <= 0:
            return None
        real = (
            self.token_mask if self.token_mask is not None else torch.ones_like(importance, dtype=torch.bool)
        )
        score = (
            importance if self.ranking == "gate" else torch.rand(importance.shape, generator=self.generator)
        )
        score = score.masked_fill(~real, math.inf)
        if self.keep_first:
            score[:, 0] = math.inf
        keep = real.clone()
        for row in range(score.shape[0]):
            n_skip = int(self.skip * int(real[row].sum()))
            if n_skip > 0:
                lowest = torch.topk(score[row], n_skip, largest=False).indices
                keep[row, lowest] = False
        return keep

    def count(self, keep: torch.Tensor | None, shape: torch.Size) -> None:
        real = self.token_mask
        n = int(real.sum()) if real is not None else shape[0] * shape[1]
        self.total += n
        if keep is not None:
            self.skipped += n - int((keep & real).sum() if real is not None else keep.sum())


class GatedBranch(nn.Module):
    """Wraps an attention or MLP module: ``g(h) * f(h)``, with token skipping when a budget is set."""

    def __init__(self, branch: nn.Module, hidden_size: int, state: _SkipState, kind: str, bias_init: float):
        super().__init__()
        self.branch = branch
        self.gate = nn.Linear(hidden_size, hidden_size)
        nn.init.zeros_(self.gate.weight)
        nn.init.constant_(self.gate.bias, bias_init)
        self.state = state
        self.kind = kind

    def forward(self, hidden_states: torch.Tensor, *args, **kwargs):
        gate = torch.sigmoid(self.gate(hidden_states))
        importance = gate.mean(-1)
        if self.training:
            self.state.gate_means.append(importance)
        keep = self.state.keep_mask(importance.detach())
        self.state.count(keep, hidden_states.shape[:2])
        if self.kind == "mlp":
            if keep is None:
                return gate * self.branch(hidden_states)
            out = torch.zeros_like(hidden_states)
            out[keep] = gate[keep] * self.branch(hidden_states[keep][None])[0]
            return out
        out, weights = self.branch(hidden_states, *args, **kwargs)
        out = gate * out
        if keep is not None:
            out = out * keep[..., None].to(out.dtype)
        return out, weights


class GateSkipModel:
    """A :class:`LocalLM` with gates on every attention and MLP branch (modifies ``lm.model`` in place)."""

    def __init__(self, lm: LocalLM, bias_init: float = 5.0) -> None:
        self.lm = lm
        self.state = _SkipState()
        for param in lm.model.parameters():
            param.requires_grad_(False)
        for layer in lm.layers:
            if not isinstance(layer.self_attn, GatedBranch):
                layer.self_attn = GatedBranch(layer.self_attn, lm.hidden_size, self.state, "attn", bias_init)
                layer.mlp = GatedBranch(layer.mlp, lm.hidden_size, self.state, "mlp", bias_init)
        self.branches = [b for layer in lm.layers for b in (layer.self_attn, layer.mlp)]

    def gate_parameters(self) -> list[nn.Parameter]:
        return [p for b in self.branches for p in b.gate.parameters()]

    def state_dict(self) -> dict[str, torch.Tensor]:
        return {f"{i}.{k}": v for i, b in enumerate(self.branches) for k, v in b.gate.state_dict().items()}

    def load_state_dict(self, tensors: dict[str, torch.Tensor]) -> None:
        for i, b in enumerate(self.branches):
            b.gate.load_state_dict({k: tensors[f"{i}.{k}"] for k in ("weight", "bias")})

    def save(self, path: str | Path) -> None:
        from safetensors.torch import save_file

        save_file({k: v.contiguous() for k, v in self.state_dict().items()}, str(path))

    def load(self, path: str | Path) -> None:
        from safetensors.torch import load_file

        self.load_state_dict(load_file(str(path)))

    def set_budget(self, skip: float, ranking: str = "gate", seed: int = 0) -> None:
        if not 0.0 <= skip < 1.0:
            raise ValueError(f"skip fraction must be in [0, 1), got {skip}")
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


def train_gates(
    gated: GateSkipModel,
    config: GateSkipConfig,
    progress: Callable[[int, int, str], None] | None = None,
) -> list[dict[str, float]]:
    """Fine-tune the gates on the training corpus with the sparsity penalty; returns the loss history."""
    lm = gated.lm
    torch.manual_seed(config.seed)
    chunks = corpus_chunks(lm, "train", config.seq_len, config.steps * config.batch_size, seed=config.seed)
    weights = [b.gate.weight for b in gated.branches]
    biases = [b.gate.bias for b in gated.branches]
    optimizer = torch.optim.Adam(
        [{"params": weights, "lr": config.lr * config.weight_lr_scale}, {"params": biases, "lr": config.lr}]
    )
    gated.set_budget(0.0)
    lm.model.train()
    history = []
    try:
        for step in range(config.steps):
            batch = torch.tensor(chunks[step * config.batch_size : (step + 1) * config.batch_size])
            gated.state.gate_means.clear()
            lm_loss = lm.model(batch, labels=batch).loss
            gate_mean = torch.stack([g.mean() for g in gated.state.gate_means]).mean()
            loss = lm_loss + config.sparsity * gate_mean
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            history.append({"step": step, "lm_loss": lm_loss.item(), "gate_mean": gate_mean.item()})
            if progress is not None:
                progress(step + 1, config.steps, f"lm loss {lm_loss.item():.3f} gate {gate_mean.item():.3f}")
    finally:
        gated.state.gate_means.clear()
        lm.model.eval()
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
    """Baseline quality, gate fine-tuning, then quality vs skipped fraction. Modifies ``lm`` (use a fresh one)."""
    random.seed(config.seed)
    heldout = corpus_chunks(lm, "heldout", config.eval_len, config.eval_chunks, seed=config.seed)
    result = GateSkipResult(
        baseline_perplexity=perplexity(lm, heldout), baseline_accuracy=task_accuracy(lm, config.task_limit)
    )
    gated = GateSkipModel(lm, bias_init=config.bias_init)
    gated.state.keep_first = config.keep_first
    n_evals = len(budgets) * len(rankings)
    total = config.steps + n_evals

    def train_progress(done: int, _total: int, message: str) -> None:
        if progress is not None:
            progress(done, total, message)

    result.history = train_gates(gated, config, train_progress)
    if gates_out is not None:
        gated.save(gates_out)
    done = config.steps
    for ranking in rankings:
        for budget in budgets:
            if ranking != "gate" and budget == 0:
                done += 1
                continue
            gated.set_budget(budget, ranking, seed=config.seed)
            ppl = perplexity(lm, heldout)
            skipped = gated.skipped_fraction
            acc = task_accuracy(lm, config.task_limit)
            result.points.append(SkipPoint(budget, ranking, skipped, ppl, acc))
            done += 1
            if progress is not None:
                progress(done, total, f"{ranking} skip {budget:.0%}: ppl {ppl:.2f} acc {acc:.0%}")
    result.gate_profile = gated.gate_profile(torch.tensor(heldout[:2])).tolist()
    gated.set_budget(0.0)
    return result
