"""Hybrid ZO/FO fine-tuning on a tiny pretrained transformer that must store new key -> value facts.

Paper: S. Ma, P. Yu and H. Huang, "New Hybrid Fine-Tuning Paradigm for LLMs: Algorithm Design and
Convergence Analysis Framework", ICLR 2026, arXiv:2604.09940; the ZO estimator is MeZO's (S. Malladi et
al., "Fine-Tuning Language Models with Just Forward Passes", NeurIPS 2023, arXiv:2305.17333). The update
rules are those of :mod:`embodia.agents.methods.hybrid_zo` (whose seeded two-point estimate
``zo_projected_gradient``, noise regeneration ``_perturb`` and ``LoRALinear`` this module reuses); this
module gives them a task on which PEFT alone has something to lack:

* a ~110k-parameter decoder (2 pre-norm blocks, d 64, 4 heads, tied embedding / LM head) is pretrained
  here with Adam on ``n_old_keys x n_relations`` random facts ``[key, relation, ?] -> value``;
* it is then fine-tuned on *new* keys (tokens it never saw as inputs) with random values. Rank-4 LoRA on the
  query/value projections must route every new fact through a rank-4 update of frozen weights with the
  new keys' (untrained) embeddings frozen; ZO (and full first-order SGD) can also move the embeddings.

Modes, each with plain SGD and random reshuffling (a fresh permutation of the facts every epoch):

    lora:    phi <- phi - lr_fo grad_phi L(w, phi)                              (1 forward + 1 backward)
    zo:      w <- w - lr_zo [(L(w + mu z) - L(w - mu z)) / (2 mu)] z,  z ~ N(0, I) from a seed   (2 forwards)
    hybrid:  both updates on the same minibatch, separate learning rates        (3 forwards + 1 backward)
    full:    first-order SGD on every weight (the capacity reference)           (1 forward + 1 backward)

``zo`` and ``hybrid`` perturb every weight but LoRA's (the paper's scope). :func:`steps_for_budget` turns
a budget of forward passes into each mode's step count, so the modes can be compared at equal forward
passes (the cost ZO is judged by). Accuracy is the argmax over the whole vocabulary at the query position,
on the new facts (what fine-tuning must store) and on the pretrained facts (what it must not forget).
``zo_random_sign`` is a control that is not in the paper: the ZO step keeps its size but gets a random sign.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import nn

from embodia.agents.methods.hybrid_zo import LoRALinear, _perturb, zo_projected_gradient

FACT_MODES = ("lora", "zo", "hybrid", "full")
#: forward and backward passes of one step of each mode
PASSES_PER_STEP = {"lora": (1, 1), "zo": (2, 0), "hybrid": (3, 1), "full": (1, 1)}


@dataclass
class FactsTask:
    """The vocabulary and the facts: values, relations, one query token, pretrained keys, new keys."""

    n_values: int = 32
    """Value tokens (answers)."""
    n_relations: int = 2
    """Relation tokens; a fact is (key, relation) -> value."""
    n_old_keys: int = 128
    """Keys whose facts the model is pretrained on."""
    n_new_keys: int = 32
    """Keys whose facts fine-tuning must store (never seen as inputs in pretraining)."""

    @property
    def vocab(self) -> int:
        return self.n_values + self.n_relations + 1 + self.n_old_keys + self.n_new_keys

    @property
    def query_token(self) -> int:
        return self.n_values + self.n_relations

    def key_token(self, key: int, new: bool) -> int:
        return self.query_token + 1 + (self.n_old_keys if new else 0) + key

    def facts(self, new: bool, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(inputs (N, 3) = [key, relation, query], targets (N,) value tokens), values drawn from ``seed``."""
        generator = torch.Generator().manual_seed(seed * 2 + int(new))
        n_keys = self.n_new_keys if new else self.n_old_keys
        rows = [
            [self.key_token(k, new), self.n_values + r, self.query_token]
            for k in range(n_keys)
            for r in range(self.n_relations)
        ]
        targets = torch.randint(self.n_values, (len(rows),), generator=generator)
        return torch.tensor(rows), targets


@dataclass
class TinyLMConfig:
    """The tiny decoder and its pretraining."""

    d_model: int = 64
    """Width."""
    n_layers: int = 2
    """Decoder blocks."""
    n_heads: int = 4
    """Attention heads."""
    d_mlp: int = 256
    """MLP hidden width."""
    pretrain_steps: int = 1500
    """Adam steps on the old facts."""
    pretrain_lr: float = 3e-3
    """Adam learning rate of pretraining."""
    pretrain_batch: int = 128
    """Facts per pretraining step."""


class _Block(nn.Module):
    def __init__(self, config: TinyLMConfig) -> None:
        super().__init__()
        d = config.d_model
        self.n_heads = config.n_heads
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.q_proj, self.k_proj, self.v_proj, self.o_proj = (nn.Linear(d, d) for _ in range(4))
        self.mlp = nn.Sequential(nn.Linear(d, config.d_mlp), nn.GELU(), nn.Linear(config.d_mlp, d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        h = self.norm1(x)

        def heads(y: torch.Tensor) -> torch.Tensor:
            return y.view(b, t, self.n_heads, d // self.n_heads).transpose(1, 2)

        q, k, v = heads(self.q_proj(h)), heads(self.k_proj(h)), heads(self.v_proj(h))
        attended = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o_proj(attended.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.norm2(x))


class TinyLM(nn.Module):
    """Token + position embeddings, pre-norm causal blocks, final norm, LM head tied to the embeddings."""

    def __init__(self, vocab: int, config: TinyLMConfig, length: int = 3) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, config.d_model)
        self.position = nn.Parameter(torch.randn(length, config.d_model) * 0.02)
        nn.init.normal_(self.embed.weight, std=0.02)
        self.blocks = nn.ModuleList(_Block(config) for _ in range(config.n_layers))
        self.norm = nn.LayerNorm(config.d_model)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """Logits over the vocabulary at the last position, (B, vocab)."""
        x = self.embed(ids) + self.position[: ids.shape[1]]
        for block in self.blocks:
            x = block(x)
        return self.norm(x[:, -1]) @ self.embed.weight.T


def accuracy(model: nn.Module, inputs: torch.Tensor, targets: torch.Tensor) -> float:
    with torch.no_grad():
        return float((model(inputs).argmax(-1) == targets).float().mean())


def pretrain(task: FactsTask, config: TinyLMConfig, seed: int) -> TinyLM:
    """A TinyLM trained with Adam on the old facts (full vocabulary cross-entropy at the query position)."""
    torch.manual_seed(seed)
    model = TinyLM(task.vocab, config)
    inputs, targets = task.facts(new=False, seed=seed)
    optimiser = torch.optim.Adam(model.parameters(), lr=config.pretrain_lr)
    for _ in range(config.pretrain_steps):
        index = torch.randint(len(inputs), (config.pretrain_batch,))
        loss = nn.functional.cross_entropy(model(inputs[index]), targets[index])
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    return model


@dataclass
class FactsConfig:
    """Fine-tuning settings of one mode."""

    mode: str = "hybrid"
    """``lora``, ``zo``, ``hybrid`` or ``full``."""
    steps: int = 300
    """Optimisation steps (see :func:`steps_for_budget` for equal forward passes)."""
    batch_size: int = 16
    """Facts per step."""
    lr_fo: float = 0.5
    """SGD learning rate of the first-order part (LoRA, or every weight for ``full``)."""
    lr_zo: float = 1e-3
    """SGD learning rate of the zeroth-order part (every weight but LoRA)."""
    mu: float = 1e-3
    """Perturbation scale of the two-point estimate (MeZO's default)."""
    lora_rank: int = 4
    """LoRA rank (query and value projections of every block)."""
    lora_alpha: float = 8.0
    """LoRA scaling numerator."""
    seed: int = 0
    """Seed of the LoRA init, the data order and the ZO noise."""
    zo_random_sign: bool = False
    """A control, not the paper: step along z with the estimate's magnitude but a random sign, so the ZO part
    moves the weights as far as ZO does but without the gradient information."""


@dataclass
class FactsResult:
    mode: str
    steps: int
    forward_passes: int = 0
    backward_passes: int = 0
    new_before: float = 0.0
    """Accuracy on the new facts before fine-tuning."""
    new_after: float = 0.0
    """Accuracy on the new facts after fine-tuning."""
    old_after: float = 0.0
    """Accuracy on the pretrained facts after fine-tuning (forgetting)."""
    loss_curve: list[tuple[int, float]] = field(default_factory=list)
    """(step, training loss on all new facts)."""
    trainable_fo: int = 0
    trainable_zo: int = 0


def steps_for_budget(mode: str, forward_passes: int) -> int:
    """The steps of ``mode`` that fit in ``forward_passes`` forward passes (at least one)."""
    return max(forward_passes // PASSES_PER_STEP[mode][0], 1)


def add_lora(model: TinyLM, rank: int, alpha: float) -> list[nn.Parameter]:
    """Wrap every block's q/v projection in LoRA; returns the adapter parameters."""
    params: list[nn.Parameter] = []
    for block in model.blocks:
        for name in ("q_proj", "v_proj"):
            wrapped = LoRALinear(getattr(block, name), rank, alpha)
            setattr(block, name, wrapped)
            params += [wrapped.lora_a, wrapped.lora_b]
    return params


def finetune_facts(
    model: TinyLM,
    task: FactsTask,
    config: FactsConfig,
    data_seed: int,
    progress: Callable[[int, int, str], None] | None = None,
    curve_every: int = 0,
) -> FactsResult:
    """Fine-tune ``model`` in place (give it a copy) on the new facts of ``data_seed``; see the module doc."""
    if config.mode not in FACT_MODES:
        raise ValueError(f"mode must be one of {', '.join(FACT_MODES)}, got {config.mode!r}")
    torch.manual_seed(config.seed)
    new_x, new_y = task.facts(new=True, seed=data_seed)
    old_x, old_y = task.facts(new=False, seed=data_seed)
    for p in model.parameters():
        p.requires_grad_(config.mode == "full")
    base = [p for _, p in model.named_parameters()]
    lora = add_lora(model, config.lora_rank, config.lora_alpha) if config.mode in ("lora", "hybrid") else []
    fo_params = base if config.mode == "full" else lora
    zo_params = base if config.mode in ("zo", "hybrid") else []
    model.eval()

    def loss_of(index: torch.Tensor) -> torch.Tensor:
        return nn.functional.cross_entropy(model(new_x[index]), new_y[index])

    result = FactsResult(
        mode=config.mode,
        steps=config.steps,
        new_before=accuracy(model, new_x, new_y),
        trainable_fo=sum(p.numel() for p in fo_params),
        trainable_zo=sum(p.numel() for p in zo_params),
    )
    rng, sign_rng = random.Random(config.seed), random.Random(config.seed + 7_919)
    order: list[int] = []
    for step in range(1, config.steps + 1):
        if len(order) < config.batch_size:  # random reshuffling
            epoch = list(range(len(new_x)))
            rng.shuffle(epoch)
            order += epoch
        index = torch.tensor(order[: config.batch_size])
        del order[: config.batch_size]
        if zo_params:
            seed = config.seed * 1_000_003 + step
            projected, _, _ = zo_projected_gradient(
                lambda i=index: float(loss_of(i)), zo_params, seed, config.mu
            )
            result.forward_passes += 2
        if fo_params:
            loss = loss_of(index)
            grads = torch.autograd.grad(loss, fo_params)
            with torch.no_grad():
                for p, g in zip(fo_params, grads):
                    p.add_(g, alpha=-config.lr_fo)
            result.forward_passes += 1
            result.backward_passes += 1
        if zo_params:
            if config.zo_random_sign:
                projected = abs(projected) * sign_rng.choice((-1.0, 1.0))
            _perturb(zo_params, config.seed * 1_000_003 + step, -config.lr_zo * projected)
        if curve_every and (step % curve_every == 0 or step == config.steps):
            with torch.no_grad():
                full_loss = float(nn.functional.cross_entropy(model(new_x), new_y))
            if not math.isfinite(full_loss):
                full_loss = float("inf")
            result.loss_curve.append((step, full_loss))
        if progress is not None:
            progress(step, config.steps, config.mode)
    result.new_after = accuracy(model, new_x, new_y)
    result.old_after = accuracy(model, old_x, old_y)
    return result
