"""Prior explanations from Captum, and their de-duplication and faithfulness filtering.

Every prior explains the probability of the target class, ``softmax(model(x))[c]``, the quantity the
metrics track, against the task's baseline:

============================ ================================================================================
``saliency``                 |d f_c / d x| (Captum ``Saliency``; one gradient; unsigned)
``integrated_gradients``     (x - b) * mean over 32 points of the path b -> x of the gradient (Captum)
``occlusion``                tables: f_c(x) - f_c(x with feature i <- b_i), one pass per feature (Captum
                             ``FeatureAblation``); images: the same for every 2x2 patch, a pixel getting
                             the mean over the patches covering it (Captum ``Occlusion``, stride 1)
``kernel_shap``              Kernel SHAP (Captum ``KernelShap``), ``shap_samples`` coalitions per input
                             (default 4d + 64 for d features; images: 2x2 superpixels as players)
============================ ================================================================================
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import torch
from torch import Tensor, nn

from embodia.agents.methods.amortized_explainer import PRIOR_METHODS
from embodia.agents.methods.amortized_explainer.data import ExplainerError, class_probability
from embodia.agents.methods.amortized_explainer.metrics import faithfulness_correlation


def _probabilities(model: nn.Module):
    return lambda z: torch.softmax(model(z), dim=-1)


def _superpixels(shape: tuple[int, ...], size: int = 2) -> Tensor:
    """A feature mask grouping each ``size`` x ``size`` patch of a (C, H, W) image into one player."""
    _, h, w = shape
    rows = torch.arange(h) // size
    cols = torch.arange(w) // size
    return (rows[:, None] * ((w + size - 1) // size) + cols[None, :]).expand(shape).unsqueeze(0)


def prior_attributions(
    model: nn.Module,
    x: Tensor,
    targets: Tensor,
    method: str,
    baseline: Tensor,
    *,
    ig_steps: int = 32,
    shap_samples: int | None = None,
    seed: int = 0,
) -> Tensor:
    """Attributions of ``method`` (one of :data:`PRIOR_METHODS`) for the batch ``x``, shape of ``x``."""
    from captum.attr import FeatureAblation, IntegratedGradients, KernelShap, Occlusion, Saliency

    if method not in PRIOR_METHODS:
        raise ExplainerError(f"unknown prior method {method!r}; choose one of {', '.join(PRIOR_METHODS)}")
    forward = _probabilities(model)
    image = x.dim() > 2
    x = x.detach().float()
    baselines = baseline.to(x.dtype).expand_as(x).contiguous()
    targets = targets.long()
    if method == "saliency":
        with torch.enable_grad():
            out = Saliency(forward).attribute(x.clone().requires_grad_(True), target=targets)
    elif method == "integrated_gradients":
        with torch.enable_grad():
            out = IntegratedGradients(forward).attribute(
                x, baselines=baselines, target=targets, n_steps=ig_steps, internal_batch_size=4096
            )
    elif method == "occlusion" and image:
        window = (x.shape[1], 2, 2)
        with torch.no_grad():
            out = Occlusion(forward).attribute(
                x,
                sliding_window_shapes=window,
                strides=(1, 1, 1),
                baselines=baselines,
                target=targets,
                perturbations_per_eval=64,
            )
    elif method == "occlusion":
        with torch.no_grad():
            out = FeatureAblation(forward).attribute(
                x, baselines=baselines, target=targets, perturbations_per_eval=x.shape[1]
            )
    else:
        mask = _superpixels(tuple(x.shape[1:])) if image else None
        players = int(mask.max()) + 1 if mask is not None else x[0].numel()
        n = shap_samples if shap_samples is not None else 4 * players + 64
        torch.manual_seed(seed)  # Captum draws the coalitions from torch's global generator
        with torch.no_grad(), warnings.catch_warnings():
            # a batch gets one Kernel SHAP model per input, which is what is wanted here
            warnings.filterwarnings("ignore", message="You are providing multiple inputs for Lime")
            out = KernelShap(forward).attribute(
                x,
                baselines=baselines,
                target=targets,
                n_samples=n,
                feature_mask=mask,
                perturbations_per_eval=n,
            )
    return out.detach().float()


@dataclass
class PriorSelection:
    """Which prior methods supervise the explainer, and why the others do not."""

    kept: list[str]
    """Methods kept, most faithful first."""
    weights: dict[str, float]
    """Weight of each kept method in L_prior (proportional to its faithfulness correlation, sum 1)."""
    faithfulness: dict[str, float]
    """Mean faithfulness correlation of every method on the prior inputs."""
    similarity: dict[str, dict[str, float]]
    """Mean cosine similarity between the methods' attributions."""
    dropped: dict[str, str] = field(default_factory=dict)
    """Method -> reason (a duplicate of a kept method, or below the faithfulness threshold)."""


def mean_cosine(a: Tensor, b: Tensor) -> float:
    """Mean over inputs of the cosine similarity of two attributions (0 for an all-zero attribution)."""
    a, b = a.reshape(len(a), -1), b.reshape(len(b), -1)
    return float(torch.nn.functional.cosine_similarity(a, b, dim=1, eps=1e-12).mean())


def deduplicate(
    attributions: dict[str, Tensor], faithfulness: dict[str, float], threshold: float = 0.95
) -> tuple[list[str], dict[str, str]]:
    """Keep methods in decreasing faithfulness; drop one whose mean cosine to a kept one exceeds ``threshold``.

    Returns (kept names, {dropped name: reason}).
    """
    kept: list[str] = []
    dropped: dict[str, str] = {}
    for name in sorted(attributions, key=lambda k: -faithfulness[k]):
        twin = next((k for k in kept if mean_cosine(attributions[name], attributions[k]) > threshold), None)
        if twin is None:
            kept.append(name)
        else:
            dropped[name] = f"duplicate of {twin} (mean cosine > {threshold})"
    return kept, dropped


def select_priors(
    model: nn.Module,
    x: Tensor,
    targets: Tensor,
    attributions: dict[str, Tensor],
    baseline: Tensor,
    *,
    dedup_threshold: float = 0.95,
    faith_threshold: float = 0.1,
    subsets: int = 50,
    subset_fraction: float = 0.25,
    seed: int = 0,
) -> PriorSelection:
    """De-duplicate the priors' attributions of ``x``, then keep those faithful enough (see the package doc)."""
    score = class_probability(model)
    faith = {
        name: float(
            faithfulness_correlation(
                score, x, a, baseline, targets, subsets=subsets, subset_fraction=subset_fraction, seed=seed
            ).mean()
        )
        for name, a in attributions.items()
    }
    similarity = {
        a: {b: mean_cosine(attributions[a], attributions[b]) for b in attributions} for a in attributions
    }
    unique, dropped = deduplicate(attributions, faith, dedup_threshold)
    kept = []
    for name in unique:
        if faith[name] >= faith_threshold and faith[name] > 0:
            kept.append(name)
        else:
            dropped[name] = f"faithfulness correlation {faith[name]:.3f} < {faith_threshold}"
    total = sum(faith[k] for k in kept)
    weights = {k: faith[k] / total for k in kept}
    return PriorSelection(kept, weights, faith, similarity, dropped)
