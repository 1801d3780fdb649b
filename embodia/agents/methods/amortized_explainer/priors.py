"""The prior pool (Captum), and its per-input de-duplication and faithfulness filtering.

The pool is the authors' tabular pool (DeepFaith, ``configs/explain_method/tabular.yaml``; the method names
of ``src/main/build_dataset.py``): integrated gradients, GradientSHAP, DeepLIFT, saliency, occlusion,
feature ablation, LIME and Kernel SHAP, all eight from Captum. Every prior explains the probability of the
target class, ``softmax(model(x))[c]``, against the task's baseline:

======================== ==========================================================================================
``integrated_gradients`` (x - b) * mean over 20 path points of the gradient (authors: ``n_steps: 20``)
``gradient_shap``        GradientSHAP, 5 noisy samples on the path b -> x (Captum's default ``n_samples``)
``deeplift``             DeepLIFT (rescale rule; Captum ``DeepLift`` on the model + softmax, ``eps`` 1e-9)
``saliency``             |d f_c / d x| (one gradient; unsigned)
``occlusion``            tables: a window of one feature (authors: ``sliding_window_shapes: 1``), i.e. the
                         drop f_c(x) - f_c(x with feature i <- b_i); images: 2x2 patches, stride 1
``feature_ablation``     the drop of each feature (pixel) ablated alone (Captum ``FeatureAblation``)
``lime``                 LIME, 100 samples (authors: ``n_samples: 100``), Captum's default Lasso surrogate
``kernel_shap``          Kernel SHAP, 100 samples (authors: ``n_samples: 100``)
======================== ==========================================================================================

On images LIME and Kernel SHAP play 2x2 superpixels. On tables occlusion and feature ablation are the same
computation (as in the authors' pool); the de-duplication drops the second.

**De-duplication** (authors' ``src/main/dedup_saliency.py``), per input: method k's duplicates are the
other methods whose attribution has cosine similarity >= ``threshold`` to k's; going through the pool in
order, a method not yet removed removes its duplicates.

**Filtering** (authors' ``src/main/filter.py``), per input: for each faithfulness metric, the p-quantile
of the pool's values on that input (the (1 - p)-quantile for a lower-is-better metric); a de-duplicated
method is kept for that input when it is on the good side of that quantile for *every* metric, i.e. it is
dropped where it lies in the worst ``p`` (0.2) of any metric. The authors filter on all ten of their
evaluation metrics; here the filter metrics are faithfulness correlation and faithfulness estimate, so that
the metrics the explainer is evaluated on (deletion / insertion AUC, infidelity, region perturbation) never
enter its supervision.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import torch
from torch import Tensor, nn

from embodia.agents.methods.amortized_explainer import PRIOR_METHODS
from embodia.agents.methods.amortized_explainer.data import ExplainerError, class_probability
from embodia.agents.methods.amortized_explainer.metrics import (
    faithfulness_correlation,
    faithfulness_estimate,
)

#: filter metrics -> True where higher is better
FILTER_METRICS = {"faithfulness_correlation": True, "faithfulness_estimate": True}


class _Probabilities(nn.Module):
    """model + softmax as one module (DeepLIFT needs a module to hook)."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model
        self.softmax = nn.Softmax(dim=-1)

    def forward(self, x: Tensor) -> Tensor:
        return self.softmax(self.model(x))


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
    ig_steps: int = 20,
    samples: int = 100,
    seed: int = 0,
) -> Tensor:
    """Attributions of ``method`` (one of :data:`PRIOR_METHODS`) for the batch ``x``, shape of ``x``."""
    from captum import attr

    if method not in PRIOR_METHODS:
        raise ExplainerError(f"unknown prior method {method!r}; choose one of {', '.join(PRIOR_METHODS)}")
    forward = _Probabilities(model).eval()
    image = x.dim() > 2
    x = x.detach().float()
    baselines = baseline.to(x.dtype).expand_as(x).contiguous()
    targets = targets.long()
    mask = _superpixels(tuple(x.shape[1:])) if image else None
    torch.manual_seed(seed)  # GradientSHAP, LIME and Kernel SHAP draw from torch's global generator
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Captum's notes on batched LIME and DeepLIFT's softmax
        if method in ("saliency", "integrated_gradients", "gradient_shap", "deeplift"):
            with torch.enable_grad():
                z = x.clone().requires_grad_(True)
                if method == "saliency":
                    out = attr.Saliency(forward).attribute(z, target=targets)
                elif method == "integrated_gradients":
                    out = attr.IntegratedGradients(forward).attribute(
                        z, baselines=baselines, target=targets, n_steps=ig_steps, internal_batch_size=4096
                    )
                elif method == "gradient_shap":
                    out = attr.GradientShap(forward).attribute(z, baselines=baselines[:1], target=targets)
                else:
                    out = attr.DeepLift(forward, eps=1e-9).attribute(z, baselines=baselines, target=targets)
        else:
            with torch.no_grad():
                if method == "occlusion":
                    window = (x.shape[1], 2, 2) if image else (1,)
                    out = attr.Occlusion(forward).attribute(
                        x,
                        sliding_window_shapes=window,
                        strides=(1, 1, 1) if image else 1,
                        baselines=baselines,
                        target=targets,
                        perturbations_per_eval=64,
                    )
                elif method == "feature_ablation":
                    out = attr.FeatureAblation(forward).attribute(
                        x, baselines=baselines, target=targets, perturbations_per_eval=64
                    )
                else:
                    cls = attr.Lime if method == "lime" else attr.KernelShap
                    out = cls(forward).attribute(
                        x,
                        baselines=baselines,
                        target=targets,
                        n_samples=samples,
                        feature_mask=mask,
                        perturbations_per_eval=samples,
                    )
    return out.detach().float()


def compute_priors(
    model: nn.Module, x: Tensor, targets: Tensor, baseline: Tensor, methods: list[str], seed: int = 0
) -> dict[str, Tensor]:
    """Every method's attributions of ``x`` (the explainer's supervision)."""
    return {m: prior_attributions(model, x, targets, m, baseline, seed=seed) for m in methods}


# ---------------------------------------------------------------------------------------------- selection
def duplicates_per_input(stack: Tensor, threshold: float = 0.9) -> Tensor:
    """(N, K) bool: True where method k is removed as a duplicate for input n (authors' rule, see above).

    ``stack``: (N, K, d) attributions, the K methods in pool order.
    """
    flat = nn.functional.normalize(stack.flatten(2).float(), dim=-1, eps=1e-12)
    cos = flat @ flat.transpose(1, 2)  # (N, K, K); an all-zero attribution has cosine 0 to everything
    n, k = cos.shape[:2]
    duplicate = (cos >= threshold) & ~torch.eye(k, dtype=torch.bool)
    removed = torch.zeros(n, k, dtype=torch.bool)
    for j in range(k):
        removed |= duplicate[:, j] & ~removed[:, j : j + 1]
    return removed


def filter_per_input(metrics: dict[str, Tensor], higher_is_better: dict[str, bool], p: float = 0.2) -> Tensor:
    """(N, K) bool: True where method k passes every metric for input n (not in the worst ``p`` of any).

    ``metrics``: name -> (N, K) values of the K methods on each input. Quantiles are over the K methods of
    one input, linearly interpolated (numpy's default, as in the authors' ``filter.py``).
    """
    passed = None
    for name, values in metrics.items():
        values = values.double()
        if higher_is_better[name]:
            ok = values >= torch.quantile(values, p, dim=1, keepdim=True)
        else:
            ok = values <= torch.quantile(values, 1 - p, dim=1, keepdim=True)
        passed = ok if passed is None else passed & ok
    if passed is None:
        raise ValueError("filter_per_input needs at least one metric")
    return passed


@dataclass
class PriorSelection:
    """Which prior supervises the explainer on which input, and why the others do not."""

    methods: list[str]
    """The pool, in order."""
    keep: Tensor
    """(N, K) bool: method k supervises input n."""
    duplicate: Tensor
    """(N, K) bool: removed as a duplicate."""
    filtered: Tensor
    """(N, K) bool: de-duplicated but in the worst ``p`` of a filter metric."""
    faithfulness: dict[str, dict[str, float]]
    """Mean of each filter metric per method over the inputs."""
    weights: dict[str, float] = field(default_factory=dict)
    """Share of the (input, prior) training pairs each method supplies."""
    dropped: dict[str, str] = field(default_factory=dict)
    """Methods kept for no input -> why."""


def select_priors(
    model: nn.Module,
    x: Tensor,
    targets: Tensor,
    attributions: dict[str, Tensor],
    baseline: Tensor,
    *,
    dedup_threshold: float = 0.9,
    p: float = 0.2,
    subsets: int = 50,
    subset_fraction: float = 0.25,
    seed: int = 0,
) -> PriorSelection:
    """De-duplicate and filter the priors' attributions of ``x`` per input (see the module docstring)."""
    score = class_probability(model)
    methods = list(attributions)
    values = {
        "faithfulness_correlation": [
            faithfulness_correlation(
                score,
                x,
                attributions[m],
                baseline,
                targets,
                subsets=subsets,
                subset_fraction=subset_fraction,
                seed=seed,
            )
            for m in methods
        ],
        "faithfulness_estimate": [
            faithfulness_estimate(score, x, attributions[m], baseline, targets) for m in methods
        ],
    }
    metrics = {k: torch.stack(v, dim=1) for k, v in values.items()}  # (N, K)
    duplicate = duplicates_per_input(torch.stack([attributions[m] for m in methods], 1), dedup_threshold)
    passed = filter_per_input(metrics, FILTER_METRICS, p)
    keep = ~duplicate & passed
    total = max(int(keep.sum()), 1)
    weights = {m: float(keep[:, j].sum()) / total for j, m in enumerate(methods) if keep[:, j].any()}
    dropped = {}
    for j, m in enumerate(methods):
        if not keep[:, j].any():
            dropped[m] = "a duplicate on every input" if duplicate[:, j].all() else "filtered on every input"
    faith = {m: {k: float(v[:, j].mean()) for k, v in metrics.items()} for j, m in enumerate(methods)}
    return PriorSelection(methods, keep, duplicate, ~duplicate & ~passed, faith, weights, dropped)
