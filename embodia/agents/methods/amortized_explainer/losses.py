"""DeepFaith's two losses and its mix-weight schedule, as the authors' code defines them.

Read against ``1911416-GuoYuhan/DeepFaith``: ``src/main/loss_func.py`` (``SuperviseLoss``,
``BernoulliCustomSTE``, ``FaithfulLoss``), ``src/modules/components/correlation.py`` (``pearson``),
``perturbation_delta.py`` (``minus``), ``perturb.py`` (``perturb_by_mask``) and ``src/main/train_explainer.py``
(``loss_weight``, the variance trigger, ``TrainConfig``).

**Pearson with the authors' eps** (eq. of ``correlation.pearson``), over the last dimension:

    r(u, v) = sum (u - mean u)(v - mean v) / (sqrt(sum (u - mean u)^2 + eps) * sqrt(sum (v - mean v)^2 + eps)),
    eps = 1e-5

**Pattern-consistency loss** (``SuperviseLoss``): the prior p of an (input, prior) pair is min-max
normalised, p' = (p - min p) / (max p - min p + 1e-8), and L_prior = (1 - mean_batch r(s, p')) / 2.

**Local-correlation loss** (``FaithfulLoss``), for an explanation a of input x, R runs (the loss's default
``nr_runs = 100``; the authors' training script sets 10):

    m_r ~ Bernoulli(sigmoid(a))                      (one mask per run, drawn from the explanation itself)
    x_r = m_r * x + (1 - m_r) * eps_r,  eps_r ~ N(0, I)   (``perturb_by_mask``: m = 1 keeps the feature)
    D_r = f_c(x) - f_c(x_r),   c = argmax f(x)       (``minus``; f = softmax of the model)
    A_r = sum_i a_i m_{r,i}
    L_faith = (1 - mean_x r(A, D)) / 2               (r over the runs)

The mask is sampled with a straight-through estimator whose backward pass is the authors':
dL/dprob = clamp(dL/dm * m * prob, -1, 1) (``BernoulliCustomSTE.backward``), so L_faith's gradient reaches
a both through A (directly) and through the mask, and the latter path differentiates the model (x_r
depends on m). With m = 1 meaning *kept*, A is the attribution mass of the kept features, which a
removal-faithful attribution makes *anti*-correlated with D; ``mask_keeps=False`` (m = 1 marks the
removed features) is the sign of the faithfulness-correlation metric, offered as an ablation.

**Mix weight** (``train_explainer.py``): L = alpha L_prior + (1 - alpha) L_faith, alpha = 1 at the start.
After epoch t (0-based) with at least 5 epochs of mean L_prior recorded, v = var(last 5) (population
variance): if the trigger is off and v <= eps (1e-5) it turns on with t0 = t; if v > divider * eps
(divider 10) it turns off and alpha = 1. While on, alpha = 1 - 1 / (1 + exp(-(t - t0) / divider)), a
sigmoid decay that starts at 0.5.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
from torch import Tensor, nn

EPS = 1e-5
"""The authors' eps inside pearson's square roots."""


def pearson_eps(u: Tensor, v: Tensor, eps: float = EPS) -> Tensor:
    """The authors' pearson over the last dimension (see the module docstring)."""
    u = u - u.mean(-1, keepdim=True)
    v = v - v.mean(-1, keepdim=True)
    return (u * v).sum(-1) / (torch.sqrt((u * u).sum(-1) + eps) * torch.sqrt((v * v).sum(-1) + eps))


def minmax(prior: Tensor) -> Tensor:
    """Each row min-max normalised to [0, 1] (the authors' ``(a - min) / (max - min + 1e-8)``)."""
    flat = prior.reshape(len(prior), -1)
    low, high = flat.min(1, keepdim=True).values, flat.max(1, keepdim=True).values
    return ((flat - low) / (high - low + 1e-8)).view(prior.shape)


def supervise_loss(explanation: Tensor, prior: Tensor) -> Tensor:
    """L_prior = (1 - mean r(s, minmax(p))) / 2 over a batch of (input, prior) pairs."""
    n = len(explanation)
    return (1 - pearson_eps(explanation.reshape(n, -1), minmax(prior).reshape(n, -1)).mean()) / 2


class BernoulliSTE(torch.autograd.Function):
    """m ~ Bernoulli(prob); backward: clamp(grad * m * prob, -1, 1) (the authors' estimator)."""

    @staticmethod
    def forward(ctx, prob: Tensor, generator: torch.Generator | None = None) -> Tensor:  # type: ignore[override]
        mask = torch.bernoulli(prob.detach(), generator=generator)
        ctx.save_for_backward(mask, prob)
        return mask

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple[Tensor, None]:  # type: ignore[override]
        mask, prob = ctx.saved_tensors
        return torch.clamp(grad * mask * prob, -1.0, 1.0), None


def faithful_loss(
    model: nn.Module,
    x: Tensor,
    explanation: Tensor,
    *,
    runs: int = 100,
    mask_keeps: bool = True,
    fill: str = "noise",
    baseline: Tensor | None = None,
    generator: torch.Generator | None = None,
) -> Tensor:
    """L_faith of the module docstring for a batch; the model is differentiated through the masks.

    ``fill``: ``noise`` (the authors' N(0, 1) replacement) or ``baseline`` (the task's baseline).
    """
    n = len(x)
    with torch.no_grad():
        y0 = torch.softmax(model(x), dim=-1)
    c = y0.argmax(1)
    p0 = y0.gather(1, c[:, None]).squeeze(1)
    a = explanation.reshape(n, -1)
    d = a.shape[1]
    mask = BernoulliSTE.apply(torch.sigmoid(a).expand(runs, n, d), generator)
    if fill == "noise":
        replacement = torch.randn(runs, n, d, generator=generator)
    elif fill == "baseline" and baseline is not None:
        replacement = baseline.reshape(1, 1, d).float()
    else:
        raise ValueError(f"fill must be 'noise' or 'baseline' (with a baseline), got {fill!r}")
    keep = mask if mask_keeps else 1 - mask
    perturbed = keep * x.reshape(1, n, d) + (1 - keep) * replacement
    probs = torch.softmax(model(perturbed.reshape(runs * n, *x.shape[1:])), dim=-1)
    drops = p0.repeat(runs) - probs.gather(1, c.repeat(runs)[:, None]).squeeze(1)
    mass = (a[None] * mask).sum(-1)  # (runs, n)
    corr = pearson_eps(mass.T, drops.view(runs, n).T)
    return (1 - corr.mean()) / 2


@dataclass
class AlphaSchedule:
    """alpha per epoch: the authors' variance trigger and sigmoid decay (module docstring).

    ``prior_only`` keeps alpha at 1, ``faith_only`` at 0.
    """

    mode: str = "dynamic"
    """``dynamic``, ``prior_only`` (alpha = 1) or ``faith_only`` (alpha = 0)."""
    eps: float = EPS
    """The trigger turns on when the variance of the last ``window`` epochs' L_prior is at most this."""
    divider: float = 10.0
    """The decay's time scale in epochs; a variance above ``divider * eps`` resets alpha to 1."""
    window: int = 5
    """Epochs whose L_prior variance is looked at."""
    alpha: float = field(init=False)
    """alpha for the next epoch."""
    history: list[float] = field(default_factory=list, init=False)
    """Mean L_prior of every epoch so far."""
    triggered: list[int] = field(default_factory=list, init=False)
    """Epochs at which the trigger turned on."""
    on: bool = field(default=False, init=False)
    """Whether the trigger is on (alpha decaying)."""
    begin: int = field(default=0, init=False)
    """The epoch t0 at which it last turned on."""

    def __post_init__(self) -> None:
        self.alpha = 0.0 if self.mode == "faith_only" else 1.0

    def step(self, prior_loss: float) -> float:
        """Record one epoch's mean L_prior; returns alpha for the next epoch."""
        epoch = len(self.history)
        self.history.append(float(prior_loss))
        if self.mode != "dynamic":
            return self.alpha
        if len(self.history) >= self.window:
            last = self.history[-self.window :]
            mean = sum(last) / len(last)
            var = sum((v - mean) ** 2 for v in last) / len(last)
            if not self.on and var <= self.eps:
                self.on, self.begin = True, epoch
                self.triggered.append(epoch)
            if var > self.divider * self.eps:
                self.on, self.alpha = False, 1.0
        if self.on:
            self.alpha = 1 - 1 / (1 + math.exp(-(epoch - self.begin) / self.divider))
        return self.alpha
