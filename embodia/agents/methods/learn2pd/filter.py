"""Decoding traces and the learned acceptance filter f_phi of Learn2PD.

Traces: decode training prompts one token per pass (strategy ``one``); at every pass record, for each
masked answer position i, its features x_i (:func:`~.decode.features`) and the label

    y_i = 1[ current prediction yhat_i == the token finally decoded at i ]

i.e. whether unmasking i now would have changed nothing (the paper's oracle, "extremely greedy parallel"
decoding, unmasks exactly the positions with y_i = 1). The filter is a small MLP trained with binary
cross-entropy, BCE(sigmoid(f_phi(x_i)), y_i); at decoding time positions with f_phi >= rho are unmasked.
"""

from __future__ import annotations

import torch
from torch import nn

from embodia.agents.methods.learn2pd.decode import N_FEATURES, parallel_decode
from embodia.agents.methods.learn2pd.tasks import check


class AcceptFilter(nn.Module):
    """``features [..., N_FEATURES] -> P(current prediction is final)``; inputs standardised inside."""

    def __init__(self, hidden: int = 32) -> None:
        super().__init__()
        self.register_buffer("mean", torch.zeros(N_FEATURES))
        self.register_buffer("std", torch.ones(N_FEATURES))
        self.net = nn.Sequential(
            nn.Linear(N_FEATURES, hidden),
            nn.ReLU(),
            nn.Linear(hidden, hidden),
            nn.ReLU(),
            nn.Linear(hidden, 1),
        )

    def logits(self, x: torch.Tensor) -> torch.Tensor:
        return self.net((x - self.mean) / self.std).squeeze(-1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.logits(x))


def collect_traces(
    model, prompts: torch.Tensor, answer_len: int, block: int | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Features ``[N, N_FEATURES]`` and labels ``[N]`` from one-token decoding of ``prompts`` (positions of
    the current block only when ``block`` is set: those the filter is asked about at decoding time)."""
    steps: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]] = []

    def record(rows, feats, preds, masked):
        steps.append((rows, feats, preds, masked))

    final = parallel_decode(model, prompts, answer_len, "one", on_step=record, block=block).tokens
    xs, ys = [], []
    for rows, feats, preds, masked in steps:
        xs.append(feats[masked])
        ys.append((preds == final[rows])[masked].float())
    return torch.cat(xs), torch.cat(ys)


def train_filter(
    x: torch.Tensor, y: torch.Tensor, steps: int = 400, lr: float = 3e-3, seed: int = 0
) -> AcceptFilter:
    """Fit :class:`AcceptFilter` to traces with BCE (full batch, Adam)."""
    torch.manual_seed(seed)
    f = AcceptFilter()
    f.mean.copy_(x.mean(0))
    f.std.copy_(x.std(0).clamp_min(1e-3))
    opt = torch.optim.Adam(f.parameters(), lr=lr)
    loss_fn = nn.BCEWithLogitsLoss()
    for _ in range(steps):
        loss = loss_fn(f.logits(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return f.eval()


@torch.no_grad()
def evaluate(
    task: str,
    model,
    prompts,
    answer_len: int,
    strategy: str,
    threshold: float = 0.9,
    accept_filter=None,
    filter_threshold: float = 0.9,
    block: int | None = None,
) -> dict:
    """Accuracy (:func:`~.tasks.check`) and mean forward passes of ``strategy`` on ``prompts``."""
    out = parallel_decode(
        model, prompts, answer_len, strategy, threshold, accept_filter, filter_threshold, block=block
    )
    return {
        "accuracy": check(task, prompts, out.tokens).float().mean().item(),
        "passes": out.passes.float().mean().item(),
    }
