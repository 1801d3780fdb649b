"""Faithfulness metrics of attributions: deletion and insertion AUC, faithfulness correlation.

All take a scorer ``score(inputs, targets) -> (M,)`` (the model output the explanation is about, e.g. the
probability of the explained class), a batch ``x`` of N inputs, attributions of the same shape, the
baseline (the value a removed feature takes, broadcastable to one input) and the N target classes; each
returns one value per input, so a caller can average and put an interval on them.

Deletion AUC. With the features of input x ordered by decreasing attribution and ``steps`` = n, after step
k the first r_k = round(k d / n) features of that order are replaced by the baseline (k = 0..n, r_n = d),
giving the curve s_k = score(x_k). The area is the trapezoid rule over k / n in [0, 1]:

    AUC = (1 / n) * sum_{k=0}^{n-1} (s_k + s_{k+1}) / 2

Lower is better: a faithful attribution removes what the output depends on first. Insertion AUC starts
from the baseline and puts the features back in the same order; higher is better. For a probability
score both lie in [0, 1].

Faithfulness correlation (Bhatt, Weller and Moura, IJCAI 2020): for m random subsets S of a fixed size,
pearson over the subsets between sum_{i in S} a_i and score(x) - score(x with S replaced by the
baseline). An input whose attributions or output drops do not vary over the subsets gets 0.
Faithfulness estimate (Alvarez-Melis and Jaakkola, NeurIPS 2018): pearson over the features i between a_i
and score(x) - score(x with feature i alone replaced by the baseline). These two are the filter metrics of
the priors (:mod:`.priors`), not evaluation metrics.

Held-out evaluation metrics (the explainer is never trained or filtered on them):

- region perturbation (Samek et al., IEEE TNNLS 2017), AOPC of the most-relevant-first order: regions
  (single features on tables, 2x2 patches on images) ranked by their summed attribution are replaced, one
  more per step, by values drawn uniformly in [low, high] (the data's range), for L steps;
  AOPC = 1 / (L + 1) * sum_{k=0}^{L} (score(x) - score(x_k)). Higher is better.
- infidelity (Yeh et al., NeurIPS 2019; Captum's ``captum.metrics.infidelity``): E_I[(I . a - (f(x) -
  f(x - I)))^2] over Gaussian perturbations I ~ N(0, sigma^2), with Captum's ``normalize=True`` (the
  attribution is rescaled by the best scalar first, so only its pattern is judged). Lower is better.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor

from embodia.agents.methods.amortized_explainer.data import Scorer

#: inputs scored in one call (keeps the memory of a long deletion curve bounded)
CHUNK = 4096


def _scores(score: Scorer, inputs: Tensor, targets: Tensor) -> Tensor:
    with torch.no_grad():
        parts = [score(inputs[i : i + CHUNK], targets[i : i + CHUNK]) for i in range(0, len(inputs), CHUNK)]
    return torch.cat(parts).float()


def _flat(x: Tensor, attribution: Tensor, baseline: Tensor | float) -> tuple[Tensor, Tensor, Tensor]:
    if attribution.shape != x.shape:
        raise ValueError(
            f"attribution shape {tuple(attribution.shape)} differs from input shape {tuple(x.shape)}"
        )
    n = x.shape[0]
    flat_x = x.reshape(n, -1).float()
    base = torch.as_tensor(baseline, dtype=flat_x.dtype).expand(x.shape[1:]).reshape(1, -1)
    return flat_x, attribution.reshape(n, -1).float(), base.expand_as(flat_x)


def perturbation_curve(
    score: Scorer,
    x: Tensor,
    attribution: Tensor,
    baseline: Tensor | float,
    targets: Tensor,
    *,
    mode: str = "deletion",
    steps: int | None = None,
) -> Tensor:
    """The (N, steps + 1) curve of scores while features are deleted (or inserted) in attribution order.

    Features of equal attribution keep their index order. ``steps`` defaults to one feature per step.
    """
    if mode not in ("deletion", "insertion"):
        raise ValueError(f"mode must be 'deletion' or 'insertion', got {mode!r}")
    flat_x, flat_a, base = _flat(x, attribution, baseline)
    n, d = flat_x.shape
    steps = d if steps is None else max(1, min(int(steps), d))
    order = torch.argsort(-flat_a, dim=1, stable=True)
    rank = torch.empty_like(order)
    rank.scatter_(1, order, torch.arange(d).expand(n, d))  # rank[i, j]: position of feature j in the order
    counts = torch.tensor([round(k * d / steps) for k in range(steps + 1)])
    changed = rank[None] < counts[:, None, None]  # (steps + 1, N, d): the features already moved
    if mode == "deletion":
        inputs = torch.where(changed, base[None], flat_x[None])
    else:
        inputs = torch.where(changed, flat_x[None], base[None])
    inputs = inputs.reshape((steps + 1) * n, *x.shape[1:])
    values = _scores(score, inputs, targets.repeat(steps + 1))
    return values.view(steps + 1, n).T


def curve_auc(curve: Tensor) -> Tensor:
    """Trapezoid area of each row of ``curve`` over [0, 1] (columns evenly spaced)."""
    steps = curve.shape[-1] - 1
    return (curve[..., :-1] + curve[..., 1:]).sum(-1) / (2 * steps)


def deletion_auc(
    score: Scorer,
    x: Tensor,
    attribution: Tensor,
    baseline: Tensor | float,
    targets: Tensor,
    *,
    steps: int | None = None,
) -> Tensor:
    """Deletion AUC per input (lower is better); see the module docstring."""
    return curve_auc(
        perturbation_curve(score, x, attribution, baseline, targets, mode="deletion", steps=steps)
    )


def insertion_auc(
    score: Scorer,
    x: Tensor,
    attribution: Tensor,
    baseline: Tensor | float,
    targets: Tensor,
    *,
    steps: int | None = None,
) -> Tensor:
    """Insertion AUC per input (higher is better); see the module docstring."""
    return curve_auc(
        perturbation_curve(score, x, attribution, baseline, targets, mode="insertion", steps=steps)
    )


def pearson(a: Tensor, b: Tensor, dim: int = -1, eps: float = 1e-12) -> Tensor:
    """Pearson correlation along ``dim`` (differentiable); 0 where either side does not vary."""
    a = a - a.mean(dim, keepdim=True)
    b = b - b.mean(dim, keepdim=True)
    cov = (a * b).sum(dim)
    # clamped (not masked) so that the gradient stays finite; a side that does not vary gives cov = 0
    return cov / torch.sqrt(((a * a).sum(dim) * (b * b).sum(dim)).clamp_min(eps))


def random_subsets(n: int, d: int, subsets: int, size: int, generator: torch.Generator) -> Tensor:
    """(n, subsets, d) boolean masks, each with exactly ``size`` features chosen uniformly."""
    keys = torch.rand(n, subsets, d, generator=generator)
    chosen = torch.argsort(keys, dim=-1)[..., :size]
    mask = torch.zeros(n, subsets, d, dtype=torch.bool)
    return mask.scatter_(-1, chosen, True)


def faithfulness_correlation(
    score: Scorer,
    x: Tensor,
    attribution: Tensor,
    baseline: Tensor | float,
    targets: Tensor,
    *,
    subsets: int = 50,
    subset_fraction: float = 0.25,
    seed: int = 0,
) -> Tensor:
    """Faithfulness correlation per input (higher is better, at most 1); see the module docstring.

    Every input gets its own ``subsets`` random subsets of round(``subset_fraction`` * d) features (at
    least one), drawn from ``seed``: two attributions of the same inputs are judged on the same subsets.
    """
    flat_x, flat_a, base = _flat(x, attribution, baseline)
    n, d = flat_x.shape
    size = min(d, max(1, round(subset_fraction * d)))
    masks = random_subsets(n, d, subsets, size, torch.Generator().manual_seed(seed))
    mass = (masks * flat_a[:, None]).sum(-1)  # (n, subsets)
    removed = torch.where(masks, base[:, None], flat_x[:, None]).reshape(n * subsets, *x.shape[1:])
    full = _scores(score, x, targets)
    after = _scores(score, removed, targets.repeat_interleave(subsets)).view(n, subsets)
    return pearson(mass, full[:, None] - after)


def faithfulness_estimate(
    score: Scorer, x: Tensor, attribution: Tensor, baseline: Tensor | float, targets: Tensor
) -> Tensor:
    """Faithfulness estimate per input (higher is better): pearson_i(a_i, drop of removing feature i alone)."""
    flat_x, flat_a, base = _flat(x, attribution, baseline)
    n, d = flat_x.shape
    eye = torch.eye(d, dtype=torch.bool)
    removed = torch.where(eye[None], base[:, None], flat_x[:, None]).reshape(n * d, *x.shape[1:])
    full = _scores(score, x, targets)
    after = _scores(score, removed, targets.repeat_interleave(d)).view(n, d)
    return pearson(flat_a, full[:, None] - after)


def region_perturbation(
    score: Scorer,
    x: Tensor,
    attribution: Tensor,
    targets: Tensor,
    low: Tensor | float,
    high: Tensor | float,
    *,
    patch: int = 1,
    steps: int | None = None,
    seed: int = 0,
) -> Tensor:
    """AOPC of most-relevant-first region perturbation per input (higher is better); see the module doc.

    ``patch``: the side of the square regions of (C, H, W) images (1 on tables: one feature per region).
    ``steps`` (L) defaults to half the regions. ``low`` / ``high``: the range of the uniform fill, per
    feature or scalar.
    """
    n = x.shape[0]
    if x.dim() == 4:
        _, c, h, w = x.shape
        region = (torch.arange(h)[:, None] // patch) * ((w + patch - 1) // patch) + torch.arange(w) // patch
        region = region.expand(c, h, w).reshape(-1)
    else:
        region = torch.arange(x[0].numel())
    flat_x, flat_a, _ = _flat(x, attribution, 0.0)
    r = int(region.max()) + 1
    mass = torch.zeros(n, r).index_add_(1, region, flat_a)  # summed attribution per region
    order = torch.argsort(-mass, dim=1, stable=True)
    rank = torch.empty_like(order).scatter_(1, order, torch.arange(r).expand(n, r))
    steps = max(1, r // 2) if steps is None else max(1, min(int(steps), r))
    g = torch.Generator().manual_seed(seed)
    lo = torch.as_tensor(low, dtype=flat_x.dtype).expand(x.shape[1:]).reshape(1, -1)
    hi = torch.as_tensor(high, dtype=flat_x.dtype).expand(x.shape[1:]).reshape(1, -1)
    fill = lo + (hi - lo) * torch.rand(n, flat_x.shape[1], generator=g)
    feature_rank = rank[:, region]  # (n, d): the rank of each feature's region
    counts = torch.arange(steps + 1)
    changed = feature_rank[None] < counts[:, None, None]
    inputs = torch.where(changed, fill[None], flat_x[None]).reshape((steps + 1) * n, *x.shape[1:])
    curve = _scores(score, inputs, targets.repeat(steps + 1)).view(steps + 1, n).T
    return (curve[:, :1] - curve).mean(1)


def infidelity(
    model: torch.nn.Module,
    x: Tensor,
    attribution: Tensor,
    targets: Tensor,
    *,
    sigma: float = 0.1,
    samples: int = 20,
    seed: int = 0,
) -> Tensor:
    """Captum's infidelity per input (lower is better) of the class probability, Gaussian perturbations
    of deviation ``sigma``, ``normalize=True``; see the module docstring."""
    from captum.metrics import infidelity as captum_infidelity

    g = torch.Generator().manual_seed(seed)

    def perturb(inputs: Tensor) -> tuple[Tensor, Tensor]:
        noise = sigma * torch.randn(inputs.shape, generator=g)
        return noise, inputs - noise

    def forward(inputs: Tensor) -> Tensor:
        return torch.softmax(model(inputs), dim=-1)

    with torch.no_grad():
        return captum_infidelity(
            forward,
            perturb,
            x.float(),
            attribution.float(),
            target=targets.long(),
            n_perturb_samples=samples,
            normalize=True,
        ).float()


def mean_interval(
    values: Sequence[float] | np.ndarray | Tensor, confidence: float = 0.95
) -> dict[str, float]:
    """Mean and Student-t ``confidence`` interval of the mean (NaN-free input; one value: a point)."""
    from scipy import stats

    v = np.asarray(values.detach().cpu() if isinstance(values, Tensor) else values, dtype=np.float64).ravel()
    if v.size == 0:
        raise ValueError("mean_interval needs at least one value")
    mean = float(v.mean())
    if v.size == 1:
        return {"mean": mean, "low": mean, "high": mean, "n": 1}
    half = float(stats.t.ppf(0.5 + confidence / 2, v.size - 1) * v.std(ddof=1) / math.sqrt(v.size))
    return {"mean": mean, "low": mean - half, "high": mean + half, "n": int(v.size)}
