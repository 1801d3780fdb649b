"""A tiny vision-language model: a patch encoder gives 9 visual tokens (one per grid cell), a small causal
transformer reads them, the question tokens and [BOS], and generates the answer tokens.

Supervised warm start (:func:`sft`), sampling (:func:`generate`), greedy accuracy (:func:`accuracy`),
safetensors + JSON folders (:func:`save_model`, :func:`load_model`).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from torch import nn

from embodia.agents.methods.vppo.tasks import BOS, INDEX, VOCAB_SIZE, correct, lengths, make_batch

N_VISUAL = 9


@dataclass
class VLMConfig:
    """Sizes of :class:`TinyVLM`."""

    d_model: int = 48
    """Width of the visual and word tokens."""
    heads: int = 4
    """Attention heads per layer."""
    layers: int = 2
    """Causal transformer layers."""
    prompt_len: int = 2
    """Question tokens (:func:`.tasks.lengths`)."""
    answer_len: int = 2
    """Answer tokens generated, [EOS] included (:func:`.tasks.lengths`)."""

    @classmethod
    def for_task(cls, kind: str, **sizes) -> VLMConfig:
        """The config whose prompt and answer lengths fit questions of ``kind``."""
        prompt_len, answer_len = lengths(kind)
        return cls(prompt_len=prompt_len, answer_len=answer_len, **sizes)


class TinyVLM(nn.Module):
    """``answer_logits(images, prompts, answers) -> [B, T, V]``: logits of answer token t given its prefix."""

    def __init__(self, config: VLMConfig | None = None) -> None:
        super().__init__()
        self.config = config = config or VLMConfig()
        d = config.d_model
        # one visual token per 8x8 grid cell (a small "ViT" patch embedding with a hidden layer)
        self.encoder = nn.Sequential(nn.Conv2d(3, 2 * d, 8, stride=8), nn.GELU(), nn.Conv2d(2 * d, d, 1))
        self.embed = nn.Embedding(VOCAB_SIZE, d)
        self.register_buffer(
            "cell_ids", torch.tensor([INDEX[f"cell{i}"] for i in range(N_VISUAL)]), persistent=False
        )
        self.pos = nn.Parameter(torch.randn(N_VISUAL + config.prompt_len + config.answer_len, d) * 0.02)
        layer = nn.TransformerEncoderLayer(
            d, config.heads, 2 * d, dropout=0.0, batch_first=True, norm_first=True
        )
        self.decoder = nn.TransformerEncoder(layer, config.layers, enable_nested_tensor=False)
        self.head = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, VOCAB_SIZE))

    def forward(self, images: torch.Tensor, prompts: torch.Tensor, prefix: torch.Tensor) -> torch.Tensor:
        """Logits ``[B, prefix_len + 1, V]`` of the answer positions after [BOS] + ``prefix``."""
        visual = self.encoder(images - 0.5).flatten(2).transpose(1, 2)  # [B, 9, d]
        visual = visual + self.embed.weight[self.cell_ids]  # each cell's token carries its name's embedding
        bos = torch.full((len(prompts), 1), BOS, dtype=torch.long)
        words = self.embed(torch.cat([prompts, bos, prefix], dim=1))
        x = torch.cat([visual, words], dim=1)
        x = x + self.pos[: x.shape[1]]
        mask = nn.Transformer.generate_square_subsequent_mask(x.shape[1])
        h = self.decoder(x, mask=mask, is_causal=True)
        return self.head(h[:, N_VISUAL + self.config.prompt_len :])

    def answer_logits(
        self, images: torch.Tensor, prompts: torch.Tensor, answers: torch.Tensor
    ) -> torch.Tensor:
        """Teacher-forced logits ``[B, T, V]`` of ``answers`` ``[B, T]``."""
        return self(images, prompts, answers[:, :-1])


@torch.no_grad()
def generate(model: nn.Module, images, prompts, greedy: bool = False, generator=None) -> torch.Tensor:
    """Answers ``long [B, model.config.answer_len]``, sampled at temperature 1 (or greedy)."""
    out = torch.zeros(len(prompts), 0, dtype=torch.long)
    for _ in range(model.config.answer_len):
        logits = model(images, prompts, out)[:, -1]
        if greedy:
            token = logits.argmax(-1)
        else:
            token = torch.multinomial(logits.softmax(-1), 1, generator=generator)[:, 0]
        out = torch.cat([out, token[:, None]], dim=1)
    return out


def accuracy(model: nn.Module, batch) -> float:
    """Greedy exact-match accuracy on ``batch`` = ``(images, prompts, answers)``."""
    images, prompts, answers = batch
    return correct(generate(model, images, prompts, greedy=True), answers).mean().item()


def sft(
    model: TinyVLM, kind: str, steps: int, seed: int, batch: int = 64, lr: float = 3e-3, log=None
) -> TinyVLM:
    """Supervised cross-entropy on answers of fresh training questions (seed offset 10_000 + seed)."""
    torch.manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    model.train()
    for step in range(steps):
        images, prompts, answers = make_batch(kind, batch, 10_000 + seed, start=step * batch)
        logits = model.answer_logits(images, prompts, answers)
        loss = nn.functional.cross_entropy(logits.flatten(0, 1), answers.flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
        if log is not None:
            log(step + 1, steps, f"sft loss {loss.item():.3f}")
    return model.eval()


def save_model(model: TinyVLM, folder: str | Path, task: str) -> Path:
    """``config.json`` (sizes, task) + ``model.safetensors`` in ``folder``."""
    from safetensors.torch import save_file

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    payload = {"type": "vppo-tiny-vlm", "task": task, **asdict(model.config)}
    (folder / "config.json").write_text(json.dumps(payload, indent=2))
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(folder / "model.safetensors"))
    return folder


def load_model(folder: str | Path) -> tuple[TinyVLM, str]:
    """``(model, task)`` from a folder :func:`save_model` wrote (no pickle)."""
    from safetensors.torch import load_file

    folder = Path(folder)
    cfg = json.loads((folder / "config.json").read_text())
    if cfg.pop("type", None) != "vppo-tiny-vlm":
        raise ValueError(f"{folder}: not a VPPO tiny-VLM folder")
    task = cfg.pop("task")
    model = TinyVLM(VLMConfig(**cfg))
    model.load_state_dict(load_file(str(folder / "model.safetensors")))
    return model.eval(), task
