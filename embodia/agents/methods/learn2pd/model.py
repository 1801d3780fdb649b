"""A small masked-diffusion language model (bidirectional transformer) and its training objective.

Forward process: each answer token is replaced by [MASK] independently with probability t, t ~ U(0, 1)
(the prompt is never masked). The model p_theta(x_0 | x_t) predicts every masked token at once from the
partly masked row. Training minimises the masked-diffusion bound used by MDLM / LLaDA:

    L(theta) = - E_{t ~ U(0,1)} E_{x_t ~ q(x_t | x_0, t)} [ (1 / (t L)) sum_{i : x_t^i = [MASK]} log p_theta(x_0^i | x_t) ]

with L the answer length (``diffusion_loss`` computes the bracket for a batch, averaged over the batch).
Decoding starts from an all-[MASK] answer and unmasks positions over several forward passes
(:mod:`.decode`).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from torch import nn

from embodia.agents.methods.learn2pd.tasks import VOCAB, make_batch


@dataclass
class LMConfig:
    """Size of the model and of its rows."""

    max_len: int = 8
    """Most digits in a prompt (the prompt region is ``max_len + 1`` positions with [SEP])."""
    d_model: int = 64
    """Width of the transformer."""
    heads: int = 4
    """Attention heads."""
    layers: int = 2
    """Transformer layers."""
    task: str = "sort"
    """Task the model is trained on (:data:`~.tasks.TASKS`)."""
    answer_len: int | None = None
    """Positions of the answer region (content + [EOT] padding); ``None``: ``max_len``."""
    min_len: int = 2
    """Fewest digits in a prompt."""

    @property
    def answer(self) -> int:
        """Positions of the answer region."""
        return self.max_len if self.answer_len is None else self.answer_len


class MaskedDiffusionLM(nn.Module):
    """Token + position embeddings, a bidirectional transformer encoder, a linear head (no causal mask)."""

    def __init__(self, config: LMConfig) -> None:
        super().__init__()
        self.config = config
        self.length = config.max_len + 1 + config.answer
        self.tok = nn.Embedding(VOCAB.size, config.d_model)
        self.pos = nn.Embedding(self.length, config.d_model)
        layer = nn.TransformerEncoderLayer(
            config.d_model, config.heads, 4 * config.d_model, dropout=0.0, batch_first=True, norm_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, config.layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(config.d_model)
        self.head = nn.Linear(config.d_model, VOCAB.size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits ``[B, length, vocab]`` for a row ``[B, length]``."""
        h = self.tok(x) + self.pos(torch.arange(x.shape[1], device=x.device))
        return self.head(self.norm(self.encoder(h)))


def diffusion_loss(
    logits: torch.Tensor, targets: torch.Tensor, masked: torch.Tensor, t: torch.Tensor
) -> torch.Tensor:
    """``mean_b [ (1 / (t_b L)) sum_{i masked} -log softmax(logits_bi)[targets_bi] ]`` over the answer region.

    ``logits`` ``[B, L, V]``, ``targets`` ``[B, L]``, ``masked`` ``[B, L]`` (bool), ``t`` ``[B]``.
    """
    nll = nn.functional.cross_entropy(logits.transpose(1, 2), targets, reduction="none")
    per_row = (nll * masked).sum(dim=1) / (t * targets.shape[1])
    return per_row.mean()


def train_lm(
    config: LMConfig, steps: int, batch: int = 128, lr: float = 3e-3, seed: int = 0, log=None
) -> MaskedDiffusionLM:
    """Train a fresh model on ``config.task`` with :func:`diffusion_loss` (AdamW, cosine schedule)."""
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    model = MaskedDiffusionLM(config)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=steps, pct_start=0.1)
    p = config.max_len + 1
    for step in range(steps):
        prompts, answers = make_batch(config.task, batch, config.max_len, gen, config.answer, config.min_len)
        t = torch.rand(batch, generator=gen).clamp_min(1e-3)
        masked = torch.rand(answers.shape, generator=gen) < t[:, None]
        x = torch.cat([prompts, torch.where(masked, VOCAB.mask, answers)], dim=1)
        loss = diffusion_loss(model(x)[:, p:], answers, masked, t)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if log is not None:
            log(step + 1, steps, f"loss {loss.item():.3f}")
    return model.eval()


def save_model(model: MaskedDiffusionLM, folder: str | Path) -> Path:
    """``config.json`` + ``model.safetensors`` in ``folder``."""
    from safetensors.torch import save_file

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps({"type": "learn2pd-lm", **asdict(model.config)}, indent=2))
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(folder / "model.safetensors"))
    return folder


def load_model(folder: str | Path) -> MaskedDiffusionLM:
    """The model :func:`save_model` wrote (no pickle)."""
    from safetensors.torch import load_file

    folder = Path(folder)
    cfg = json.loads((folder / "config.json").read_text())
    if cfg.pop("type", None) != "learn2pd-lm":
        raise ValueError(f"{folder}: not a learn2pd model folder")
    model = MaskedDiffusionLM(LMConfig(**cfg))
    model.load_state_dict(load_file(str(folder / "model.safetensors")))
    return model.eval()
