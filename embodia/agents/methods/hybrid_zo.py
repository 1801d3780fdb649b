"""Hybrid zeroth-order / first-order fine-tuning: ZO on the base weights, backprop on LoRA.

Paper: S. Ma, P. Yu and H. Huang, "New Hybrid Fine-Tuning Paradigm for LLMs: Algorithm Design and
Convergence Analysis Framework", ICLR 2026, arXiv:2604.09940. The ZO estimator is MeZO's (S. Malladi et
al., "Fine-Tuning Language Models with Just Forward Passes", NeurIPS 2023, arXiv:2305.17333).

The model is split into base weights w (frozen for backprop) and LoRA adapters phi (W x + (a/r) B A x on
the attention query/value projections). Each step on a minibatch B (drawn by *random reshuffling*: a
fresh permutation of the training set every epoch, without replacement):

    zeroth order, base (MeZO two-point estimate, seeded):
        z ~ N(0, I) from seed s_k (regenerated, never stored)
        g_hat = [L(w + mu z, phi) - L(w - mu z, phi)] / (2 mu)        (two forward passes, no backward)
        w <- w - lr_zo * g_hat * z
    first order, adapters:
        phi <- phi - lr_fo * grad_phi L(w, phi)                        (one forward + backward)

Which weights w covers (``zo_scope``): the paper updates the whole LLM by ZO and only the PEFT module by
backprop, and MeZO perturbs every trainable tensor, so the default ``all`` is every weight of the model
except the LoRA adapters: the token embeddings (tied with the LM head in SmolLM2, one tensor), the final
norm and the decoder blocks of ``zo_layers``. ``blocks`` restricts ZO to those decoder blocks (what
embodia did before). For SmolLM2-135M (``zo_layers="all"``): ``all`` = 134,515,008 ZO weights, the
largest noise tensor the 49,152 x 576 embedding (108.0 MiB in float32); ``blocks`` = 106,202,880 ZO
weights, the largest noise tensor one 1,536 x 576 MLP projection (3.4 MiB). The noise is regenerated per
tensor, so that largest tensor is the transient memory ZO adds.

``mode="lora"`` does only the second line, ``mode="zo"`` only the first, ``mode="hybrid"`` both (with
separate learning rates), ``mode="full"`` is plain first-order SGD on everything (memory reference).

Memory is *measured* per step, beyond the weights themselves: bytes autograd saves for the backward
pass (counted with ``saved_tensors_hooks``), gradient buffers, optimiser state (none: plain SGD), and the
largest transient ZO noise tensor.

The task: 4-way topic classification of templated sentences with arbitrary label letters (so the
pretrained model starts at chance); logits are read at the last position over the four label tokens.
Train and test sentences use disjoint vocabulary.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch
from torch import nn

from embodia.agents.llm import LocalLM

MODES = ("lora", "zo", "hybrid", "full")
LABELS = (" A", " B", " C", " D")

_TOPICS = {
    "sport": (
        [
            "football",
            "tennis",
            "the marathon",
            "basketball",
            "the swimming race",
            "hockey",
            "golf",
            "the cycling tour",
            "baseball",
            "the boxing match",
            "rugby",
            "volleyball",
        ],
        ["won", "lost", "trained for", "scored in", "cheered at", "played"],
    ),
    "food": (
        [
            "the soup",
            "the bread",
            "a pizza",
            "the salad",
            "pasta",
            "the cake",
            "rice",
            "the curry",
            "a sandwich",
            "the pie",
            "noodles",
            "the stew",
        ],
        ["cooked", "ate", "baked", "tasted", "ordered", "served"],
    ),
    "weather": (
        [
            "the storm",
            "heavy rain",
            "the snow",
            "strong wind",
            "the fog",
            "a heatwave",
            "hail",
            "the thunder",
            "a frost",
            "the drizzle",
            "sunshine",
            "the clouds",
        ],
        ["watched", "feared", "forecast", "noticed", "expected", "reported"],
    ),
    "music": (
        [
            "the guitar",
            "a symphony",
            "the piano",
            "jazz",
            "the violin",
            "an opera",
            "the drums",
            "a song",
            "the choir",
            "the cello",
            "a concert",
            "the flute",
        ],
        ["heard", "practised", "recorded", "enjoyed", "performed", "composed"],
    ),
}
_WHO = [
    "My brother",
    "The teacher",
    "Our neighbour",
    "A tourist",
    "The old man",
    "My friend",
    "Anna",
    "The children",
    "Tom",
    "The journalist",
]


def topic_dataset(split: str, seed: int = 0) -> list[tuple[str, int]]:
    """(sentence, label) pairs; ``train`` uses the first half of every word list, ``test`` the second."""
    rng = random.Random(seed + (0 if split == "train" else 1))
    data = []
    for label, (nouns, verbs) in enumerate(_TOPICS.values()):
        half = len(nouns) // 2
        nouns_split = nouns[:half] if split == "train" else nouns[half:]
        verbs_split = verbs[:3] if split == "train" else verbs[3:]
        for noun in nouns_split:
            for verb in verbs_split[:2]:
                who = rng.choice(_WHO)
                data.append((f"{who} {verb} {noun}.", label))
    rng.shuffle(data)
    return data


def _prompt(sentence: str) -> str:
    return f"Topic letters: A, B, C or D.\nSentence: {sentence}\nTopic:"


class LoRALinear(nn.Module):
    """``W x + (alpha / r) * B A x`` with A ~ N(0, 1/r) and B = 0 (starts as the base layer)."""

    def __init__(self, base: nn.Linear, rank: int, alpha: float) -> None:
        super().__init__()
        self.base = base
        self.scale = alpha / rank
        self.lora_a = nn.Parameter(torch.randn(rank, base.in_features) / math.sqrt(rank * base.in_features))
        self.lora_b = nn.Parameter(torch.zeros(base.out_features, rank))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.base(x) + self.scale * (x @ self.lora_a.T) @ self.lora_b.T


@dataclass
class HybridConfig:
    """Fine-tuning settings."""

    mode: str = "hybrid"
    """``lora`` (first order on adapters), ``zo`` (zeroth order on base), ``hybrid`` (both), ``full``."""
    steps: int = 120
    """Optimisation steps."""
    batch_size: int = 8
    """Examples per step."""
    lr_fo: float = 0.05
    """SGD learning rate of the first-order part (LoRA, or everything for ``full``)."""
    lr_zo: float = 2e-5
    """SGD learning rate of the zeroth-order part (base weights)."""
    mu: float = 1e-3
    """Perturbation scale of the two-point estimate."""
    lora_rank: int = 4
    """LoRA rank (query and value projections of every layer)."""
    lora_alpha: float = 8.0
    """LoRA scaling numerator."""
    zo_layers: str = "all"
    """Decoder blocks whose weights the ZO part updates: ``all`` or a range such as ``20-29``."""
    zo_scope: str = "all"
    """``all`` (the paper): besides those blocks, ZO also updates the embeddings / tied LM head and the
    final norm, i.e. every weight but the LoRA adapters; ``blocks``: only the decoder blocks."""
    eval_every: int = 20
    """Test accuracy every this many steps."""
    seed: int = 0
    """Seed of LoRA init, data order and ZO noise."""
    test_limit: int | None = None
    """Score only the first this many test sentences (quick runs); None: all 48."""


@dataclass
class MemoryReport:
    """Training memory beyond the weights, in bytes (peak over the measured steps)."""

    saved_activations: int = 0
    gradients: int = 0
    optimizer_state: int = 0
    zo_noise: int = 0

    @property
    def total(self) -> int:
        return self.saved_activations + self.gradients + self.optimizer_state + self.zo_noise


@dataclass
class HybridResult:
    mode: str
    accuracy_before: float
    accuracy: float
    curve: list[tuple[int, float]] = field(default_factory=list)
    """(step, test accuracy)."""
    memory: dict[str, int] = field(default_factory=dict)
    forward_passes: int = 0
    backward_passes: int = 0
    trainable_fo: int = 0
    """Parameters updated by backprop."""
    trainable_zo: int = 0
    """Parameters updated by zeroth-order estimates."""


class _Classifier:
    def __init__(self, lm: LocalLM) -> None:
        self.lm = lm
        label_ids = [lm.encode(label) for label in LABELS]
        if any(len(ids) != 1 for ids in label_ids):
            raise ValueError("every label must be one token for this tokenizer")
        self.label_ids = torch.tensor([ids[0] for ids in label_ids])

    def logits(self, sentences: Sequence[str]) -> torch.Tensor:
        """(B, 4) label logits at the last prompt token (no full-vocabulary projection)."""
        seqs = [self.lm.encode(_prompt(s)) for s in sentences]
        ids, mask = self.lm.batch_ids(seqs)
        hidden = self.lm.model.model(input_ids=ids, attention_mask=mask).last_hidden_state
        last = hidden[torch.arange(len(seqs)), mask.sum(1) - 1]
        head = self.lm.model.get_output_embeddings().weight[self.label_ids]
        return last @ head.T

    def loss(self, batch: Sequence[tuple[str, int]]) -> torch.Tensor:
        logits = self.logits([s for s, _ in batch])
        return nn.functional.cross_entropy(logits, torch.tensor([y for _, y in batch]))

    def accuracy(self, data: Sequence[tuple[str, int]], batch_size: int = 16) -> float:
        correct = 0
        with torch.no_grad():
            for start in range(0, len(data), batch_size):
                chunk = data[start : start + batch_size]
                predicted = self.logits([s for s, _ in chunk]).argmax(-1)
                correct += int((predicted == torch.tensor([y for _, y in chunk])).sum())
        return correct / len(data)


def _parse_layers(spec: str, n_layers: int) -> set[int]:
    if spec == "all":
        return set(range(n_layers))
    lo, _, hi = spec.partition("-")
    try:
        first, last = int(lo), int(hi or lo)
    except ValueError:
        raise ValueError(f"zo_layers must be 'all' or a range like '20-29', got {spec!r}") from None
    if not 0 <= first <= last < n_layers:
        raise ValueError(f"zo_layers {spec!r} is outside 0-{n_layers - 1}")
    return set(range(first, last + 1))


ZO_SCOPES = ("all", "blocks")


def _zo_parameters(lm: LocalLM, layers: set[int], scope: str = "all") -> list[nn.Parameter]:
    """The base weights the ZO part updates, in ``named_parameters`` order (a tied weight once), no LoRA.

    ``all``: the decoder blocks in ``layers`` and every weight outside the blocks (embeddings, LM head,
    final norm); ``blocks``: the decoder blocks in ``layers`` only.
    """
    if scope not in ZO_SCOPES:
        raise ValueError(f"zo_scope must be one of {', '.join(ZO_SCOPES)}, got {scope!r}")
    blocks = {id(layer): index for index, layer in enumerate(lm.layers)}
    in_block: dict[int, int] = {}
    for layer in lm.layers:
        for p in layer.parameters():
            in_block[id(p)] = blocks[id(layer)]
    params = []
    for name, p in lm.model.named_parameters():
        if "lora_" in name:
            continue
        block = in_block.get(id(p))
        if (block is None and scope == "all") or (block is not None and block in layers):
            params.append(p)
    return params


def _perturb(params: Sequence[nn.Parameter], seed: int, scale: float) -> int:
    """p += scale * z(seed) for every parameter; z regenerated from the seed. Returns the largest z's bytes."""
    generator = torch.Generator().manual_seed(seed)
    largest = 0
    with torch.no_grad():
        for p in params:
            z = torch.randn(p.shape, generator=generator, dtype=p.dtype)
            p.add_(z, alpha=scale)
            largest = max(largest, z.numel() * z.element_size())
    return largest


def zo_projected_gradient(
    loss: Callable[[], float], params: Sequence[nn.Parameter], seed: int, mu: float
) -> tuple[float, float, int]:
    """Two-point estimate of the directional derivative along z(seed): (L(w + mu z) - L(w - mu z)) / (2 mu).

    Leaves the parameters as they were (up to float rounding). Returns (estimate, mean of the two losses,
    bytes of the largest noise tensor).
    """
    with torch.no_grad():
        noise = _perturb(params, seed, mu)
        loss_plus = loss()
        _perturb(params, seed, -2 * mu)
        loss_minus = loss()
        _perturb(params, seed, mu)
    return (loss_plus - loss_minus) / (2 * mu), 0.5 * (loss_plus + loss_minus), noise


class _SavedTensorMeter:
    """Counts the bytes autograd keeps for backward (distinct storages), via saved_tensors_hooks."""

    def __init__(self) -> None:
        self.storages: dict[int, int] = {}

    def pack(self, tensor: torch.Tensor) -> torch.Tensor:
        storage = tensor.untyped_storage()
        self.storages[storage.data_ptr()] = storage.nbytes()
        return tensor

    @property
    def bytes(self) -> int:
        return sum(self.storages.values())


def finetune(
    lm: LocalLM, config: HybridConfig, progress: Callable[[int, int, str], None] | None = None
) -> HybridResult:
    """Fine-tune ``lm`` in place (use a fresh copy) and measure accuracy, memory and passes."""
    if config.mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {config.mode!r}")
    if config.zo_scope not in ZO_SCOPES:
        raise ValueError(f"zo_scope must be one of {', '.join(ZO_SCOPES)}, got {config.zo_scope!r}")
    torch.manual_seed(config.seed)
    train, test = topic_dataset("train", config.seed), topic_dataset("test", config.seed)[: config.test_limit]
    model = lm.model
    for p in model.parameters():
        p.requires_grad_(config.mode == "full")
    lora_params: list[nn.Parameter] = []
    if config.mode in ("lora", "hybrid"):
        for layer in lm.layers:
            for name in ("q_proj", "v_proj"):
                wrapped = LoRALinear(getattr(layer.self_attn, name), config.lora_rank, config.lora_alpha)
                setattr(layer.self_attn, name, wrapped)
                lora_params += [wrapped.lora_a, wrapped.lora_b]
    fo_params = list(model.parameters()) if config.mode == "full" else lora_params
    zo_params = (
        _zo_parameters(lm, _parse_layers(config.zo_layers, lm.num_layers), config.zo_scope)
        if config.mode in ("zo", "hybrid")
        else []
    )
    clf = _Classifier(lm)
    model.eval()  # no dropout in these models; eval keeps behaviour deterministic
    result = HybridResult(
        mode=config.mode,
        accuracy_before=clf.accuracy(test),
        accuracy=0.0,
        trainable_fo=sum(p.numel() for p in fo_params),
        trainable_zo=sum(p.numel() for p in zo_params),
    )
    result.curve.append((0, result.accuracy_before))
    memory = MemoryReport()
    rng = random.Random(config.seed)
    order: list[int] = []
    for step in range(1, config.steps + 1):
        if len(order) < config.batch_size:  # random reshuffling: a new permutation each epoch
            epoch = list(range(len(train)))
            rng.shuffle(epoch)
            order += epoch
        batch = [train[i] for i in order[: config.batch_size]]
        del order[: config.batch_size]
        message = ""
        if zo_params:
            seed = config.seed * 1_000_003 + step
            projected, mean_loss, noise = zo_projected_gradient(
                lambda b=batch: float(clf.loss(b)), zo_params, seed, config.mu
            )
            memory.zo_noise = max(memory.zo_noise, noise)
            result.forward_passes += 2
            message = f"zo loss {mean_loss:.3f}"
        if fo_params:
            meter = _SavedTensorMeter()
            with torch.autograd.graph.saved_tensors_hooks(meter.pack, lambda t: t):
                loss = clf.loss(batch)
            for p in fo_params:
                p.grad = None
            loss.backward()
            result.forward_passes += 1
            result.backward_passes += 1
            memory.saved_activations = max(memory.saved_activations, meter.bytes)
            memory.gradients = max(
                memory.gradients,
                sum(p.grad.numel() * p.grad.element_size() for p in fo_params if p.grad is not None),
            )
            with torch.no_grad():
                for p in fo_params:
                    if p.grad is not None:
                        p.add_(p.grad, alpha=-config.lr_fo)
                        p.grad = None
            message = f"loss {loss.item():.3f}"
        if zo_params:
            _perturb(zo_params, config.seed * 1_000_003 + step, -config.lr_zo * projected)
        if step % config.eval_every == 0 or step == config.steps:
            result.curve.append((step, clf.accuracy(test)))
            message += f" test acc {result.curve[-1][1]:.0%}"
        if progress is not None:
            progress(step, config.steps, message.strip())
    result.accuracy = result.curve[-1][1]
    result.memory = {
        "saved_activations": memory.saved_activations,
        "gradients": memory.gradients,
        "optimizer_state": memory.optimizer_state,
        "zo_noise": memory.zo_noise,
        "total": memory.total,
    }
    return result
