"""The amortised explainer: the network, its training loop, :func:`explain`, :func:`faithfulness_report`.

The loss, the prior selection and the alpha schedule are written out in the package docstring
(:mod:`embodia.agents.methods.amortized_explainer`); :func:`train_explainer` is that loss, step by step.

The network: h_theta(x, c) = g_theta([x - b, onehot(c)]) * (x - b), an MLP g_theta on the flattened input
(centred on the baseline b) and the class, multiplied feature-wise by x - b (``multiply_by_input``). The
product builds in what every removal-based metric takes for granted: a feature already at its baseline
value cannot matter, since removing it changes nothing. Without it the network predicts a directly.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import torch
from pydantic import Field
from torch import Tensor, nn

from embodia.agents.methods.amortized_explainer import METHODS, PRIOR_METHODS
from embodia.agents.methods.amortized_explainer.data import (
    ExplainerError,
    Scorer,
    class_probability,
    predict,
)
from embodia.agents.methods.amortized_explainer.metrics import (
    deletion_auc,
    faithfulness_correlation,
    insertion_auc,
    mean_interval,
    pearson,
)
from embodia.agents.methods.amortized_explainer.priors import (
    PriorSelection,
    prior_attributions,
    select_priors,
)

Fraction = Annotated[float, Field(ge=0, le=1)]


@dataclass
class ExplainerConfig:
    """How the amortised explainer is trained."""

    epochs: Annotated[int, Field(ge=1, le=10_000)] = 60
    """Passes over the training inputs."""
    batch_size: Annotated[int, Field(ge=1, le=4096)] = 64
    """Inputs per step (for L_faith, and again for L_prior)."""
    lr: Annotated[float, Field(gt=0, le=1)] = 2e-3
    """Adam learning rate."""
    hidden: Annotated[int, Field(ge=1, le=4096)] = 128
    """Width of the explainer MLP."""
    layers: Annotated[int, Field(ge=1, le=8)] = 2
    """Hidden layers of the explainer MLP."""
    multiply_by_input: bool = True
    """Attribution = network output * (x - baseline) (see the module docstring)."""
    alpha_mode: Literal["dynamic", "prior_only", "faith_only"] = "dynamic"
    """``dynamic``: alpha starts at 1 and decays after L_prior plateaus; ``prior_only``: alpha = 1;
    ``faith_only``: alpha = 0 (no prior method is run)."""
    alpha_floor: Fraction = 0.1
    """alpha never decays below this."""
    alpha_decay: Annotated[float, Field(gt=0, lt=1)] = 0.8
    """Factor applied to alpha once per epoch after the plateau."""
    plateau_patience: Annotated[int, Field(ge=1, le=1000)] = 5
    """Epochs without enough improvement of L_prior that make a plateau."""
    plateau_tolerance: Fraction = 0.02
    """Relative improvement of L_prior below which epochs count as flat."""
    faith_subsets: Annotated[int, Field(ge=2, le=1024)] = 32
    """Random feature subsets per input and step in L_faith."""
    subset_min_fraction: Fraction = 0.05
    """Smallest feature-inclusion probability of a subset in L_faith."""
    subset_max_fraction: Fraction = 0.5
    """Largest feature-inclusion probability of a subset in L_faith."""
    priors: list[Literal[PRIOR_METHODS]] = field(default_factory=lambda: list(PRIOR_METHODS))
    """Prior methods to run on the training inputs."""
    prior_samples: Annotated[int, Field(ge=1, le=100_000)] = 256
    """Training inputs the prior methods explain (the most expensive part of training)."""
    dedup_threshold: Annotated[float, Field(ge=-1, le=1)] = 0.95
    """A prior whose mean cosine to a more faithful kept one exceeds this is dropped."""
    faith_threshold: Annotated[float, Field(ge=-1, le=1)] = 0.1
    """A prior whose faithfulness correlation on the prior inputs is below this is dropped."""
    seed: Annotated[int, Field(ge=0)] = 0
    """Seeds the network, the batches and the subsets."""

    def __post_init__(self) -> None:
        if self.subset_min_fraction > self.subset_max_fraction:
            raise ValueError("subset_min_fraction must not exceed subset_max_fraction")


# ---------------------------------------------------------------------------------------------- alpha
@dataclass
class AlphaSchedule:
    """alpha per epoch: 1 until L_prior plateaus, then alpha <- max(floor, alpha * decay) each epoch.

    A plateau at epoch t: min(L_prior over the last ``patience`` epochs) > (1 - tolerance) * min(L_prior
    over the epochs before them). Once found it stays found. ``prior_only`` keeps alpha at 1, ``faith_only``
    at 0.
    """

    mode: str = "dynamic"
    floor: float = 0.1
    decay: float = 0.8
    patience: int = 5
    tolerance: float = 0.02
    alpha: float = field(init=False)
    history: list[float] = field(default_factory=list, init=False)
    plateau_epoch: int | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.alpha = 0.0 if self.mode == "faith_only" else 1.0

    def step(self, prior_loss: float) -> float:
        """Record one epoch's mean L_prior; returns alpha for the next epoch."""
        self.history.append(float(prior_loss))
        if self.mode != "dynamic":
            return self.alpha
        if self.plateau_epoch is None and len(self.history) > self.patience:
            before = min(self.history[: -self.patience])
            recent = min(self.history[-self.patience :])
            if recent > (1 - self.tolerance) * before:
                self.plateau_epoch = len(self.history)
        if self.plateau_epoch is not None:
            self.alpha = max(self.floor, self.alpha * self.decay)
        return self.alpha


# ---------------------------------------------------------------------------------------------- network
class AmortizedExplainer(nn.Module):
    """(x, c) -> attribution of x's shape for class c, in one forward pass (see the module docstring)."""

    def __init__(
        self,
        shape: tuple[int, ...],
        num_classes: int,
        baseline: Tensor,
        hidden: int = 128,
        layers: int = 2,
        multiply_by_input: bool = True,
    ) -> None:
        super().__init__()
        self.shape, self.num_classes = tuple(int(s) for s in shape), int(num_classes)
        self.hidden, self.layers, self.multiply_by_input = int(hidden), int(layers), bool(multiply_by_input)
        d = math.prod(self.shape)
        sizes = [d + self.num_classes] + [self.hidden] * self.layers
        blocks: list[nn.Module] = []
        for a, b in zip(sizes[:-1], sizes[1:]):
            blocks += [nn.Linear(a, b), nn.ReLU()]
        self.net = nn.Sequential(*blocks, nn.Linear(sizes[-1], d))
        self.register_buffer("baseline", baseline.detach().float().reshape(self.shape).clone())

    def config(self) -> dict[str, Any]:
        return {
            "shape": list(self.shape),
            "num_classes": self.num_classes,
            "hidden": self.hidden,
            "layers": self.layers,
            "multiply_by_input": self.multiply_by_input,
        }

    def forward(self, x: Tensor, target: Tensor) -> Tensor:
        centred = (x - self.baseline).reshape(len(x), -1)
        onehot = nn.functional.one_hot(target.long(), self.num_classes).to(centred.dtype)
        out = self.net(torch.cat([centred, onehot], dim=1))
        if self.multiply_by_input:
            out = out * centred
        return out.view(x.shape)


# ---------------------------------------------------------------------------------------------- losses
def prior_loss(attribution: Tensor, priors: dict[str, Tensor], weights: dict[str, float]) -> Tensor:
    """L_prior = sum_k w_k * mean (1 - cos(a, p_k)), over the flattened attributions of a batch."""
    a = attribution.reshape(len(attribution), -1)
    terms = [
        w * (1 - nn.functional.cosine_similarity(a, priors[k].reshape(len(a), -1), dim=1, eps=1e-8)).mean()
        for k, w in weights.items()
    ]
    return torch.stack(terms).sum()


def subset_masks(n: int, d: int, subsets: int, low: float, high: float, generator: torch.Generator) -> Tensor:
    """(n, subsets, d) masks; subset j includes each feature with its own probability q_j ~ U[low, high]."""
    q = low + (high - low) * torch.rand(n, subsets, 1, generator=generator)
    masks = torch.rand(n, subsets, d, generator=generator) < q
    empty = ~masks.any(-1)  # an empty subset says nothing: give it one random feature
    if empty.any():
        pick = torch.randint(d, (int(empty.sum()),), generator=generator)
        masks[empty] = nn.functional.one_hot(pick, d).bool()
    return masks


def output_drops(score: Scorer, x: Tensor, targets: Tensor, baseline: Tensor, masks: Tensor) -> Tensor:
    """D = f_c(x) - f_c(x with each subset replaced by the baseline), (n, subsets), without gradient."""
    n, m, d = masks.shape
    flat = x.reshape(n, 1, d)
    removed = torch.where(masks, baseline.reshape(1, 1, d), flat).reshape(n * m, *x.shape[1:])
    with torch.no_grad():
        full = score(x, targets)
        after = score(removed, targets.repeat_interleave(m)).view(n, m)
    return full[:, None] - after


def faithfulness_loss(attribution: Tensor, masks: Tensor, drops: Tensor) -> Tensor:
    """L_faith = mean (1 - pearson_j(sum_{i in S_j} a_i, D_j))."""
    mass = (masks.float() * attribution.reshape(len(attribution), 1, -1)).sum(-1)
    return (1 - pearson(mass, drops)).mean()


# ---------------------------------------------------------------------------------------------- training
@dataclass
class TrainingLog:
    """What happened while an explainer was trained."""

    prior_loss: list[float] = field(default_factory=list)
    """Mean L_prior per epoch (empty when no prior supervises the explainer)."""
    faith_loss: list[float] = field(default_factory=list)
    alpha: list[float] = field(default_factory=list)
    """alpha used in each epoch."""
    plateau_epoch: int | None = None
    selection: PriorSelection | None = None
    prior_seconds: float = 0.0
    """Time spent running the prior methods."""
    seconds: float = 0.0
    """Total training time, priors included."""


def compute_priors(
    model: nn.Module, x: Tensor, targets: Tensor, baseline: Tensor, methods: list[str], seed: int = 0
) -> dict[str, Tensor]:
    """Every method's attributions of ``x`` (the explainer's supervision)."""
    return {m: prior_attributions(model, x, targets, m, baseline, seed=seed) for m in methods}


def train_explainer(
    model: nn.Module,
    x_train: Tensor,
    baseline: Tensor,
    num_classes: int,
    config: ExplainerConfig | None = None,
    *,
    targets: Tensor | None = None,
    priors: dict[str, Tensor] | None = None,
    progress: Callable[[int, int, str], None] | None = None,
) -> tuple[AmortizedExplainer, TrainingLog]:
    """Train an explainer of ``model`` on ``x_train`` (targets: the model's predictions unless given).

    ``priors``: precomputed attributions of ``x_train[:config.prior_samples]`` by method (to share them
    between runs); otherwise the config's methods are run here. Returns the explainer in eval mode.
    """
    config = config or ExplainerConfig()
    started = time.perf_counter()
    torch.manual_seed(config.seed)
    generator = torch.Generator().manual_seed(config.seed)
    model.eval()
    score = class_probability(model)
    targets = predict(model, x_train) if targets is None else targets.long()
    baseline = baseline.float().reshape(x_train.shape[1:])
    log = TrainingLog()

    # prior explanations: run, de-duplicate, filter (skipped when alpha is fixed at 0)
    schedule = AlphaSchedule(
        config.alpha_mode,
        config.alpha_floor,
        config.alpha_decay,
        config.plateau_patience,
        config.plateau_tolerance,
    )
    n_prior = min(config.prior_samples, len(x_train))
    x_prior, t_prior = x_train[:n_prior], targets[:n_prior]
    kept: dict[str, Tensor] = {}
    if config.alpha_mode != "faith_only":
        if priors is None:
            priors = compute_priors(model, x_prior, t_prior, baseline, list(config.priors), config.seed)
        else:
            priors = {k: v[:n_prior] for k, v in priors.items() if k in config.priors}
        log.prior_seconds = time.perf_counter() - started
        log.selection = select_priors(
            model,
            x_prior,
            t_prior,
            priors,
            baseline,
            dedup_threshold=config.dedup_threshold,
            faith_threshold=config.faith_threshold,
            seed=config.seed,
        )
        kept = {k: priors[k] for k in log.selection.kept}
        if not kept:  # nothing faithful to imitate: the faithfulness loss alone
            schedule.alpha = 0.0
            schedule.mode = "no_priors"

    explainer = AmortizedExplainer(
        x_train.shape[1:], num_classes, baseline, config.hidden, config.layers, config.multiply_by_input
    )
    optimiser = torch.optim.Adam(explainer.parameters(), lr=config.lr)
    n, d = len(x_train), x_train[0].numel()
    batches = max(1, math.ceil(n / config.batch_size))
    for epoch in range(config.epochs):
        alpha = schedule.alpha
        order = torch.randperm(n, generator=generator)
        sums = {"prior": 0.0, "faith": 0.0}
        explainer.train()
        for start in range(0, n, config.batch_size):
            idx = order[start : start + config.batch_size]
            xb, tb = x_train[idx], targets[idx]
            masks = subset_masks(
                len(idx),
                d,
                config.faith_subsets,
                config.subset_min_fraction,
                config.subset_max_fraction,
                generator,
            )
            drops = output_drops(score, xb, tb, baseline, masks)
            l_faith = faithfulness_loss(explainer(xb, tb), masks, drops)
            l_prior = torch.zeros(())
            if kept:
                pidx = torch.randint(n_prior, (min(config.batch_size, n_prior),), generator=generator)
                a_prior = explainer(x_prior[pidx], t_prior[pidx])
                l_prior = prior_loss(a_prior, {k: v[pidx] for k, v in kept.items()}, log.selection.weights)
            loss = alpha * l_prior + (1 - alpha) * l_faith
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            sums["prior"] += l_prior.item()
            sums["faith"] += l_faith.item()
        log.faith_loss.append(sums["faith"] / batches)
        log.alpha.append(alpha)
        if kept:
            log.prior_loss.append(sums["prior"] / batches)
            schedule.step(log.prior_loss[-1])
        if progress is not None:
            progress(epoch + 1, config.epochs, f"alpha {alpha:.2f}, L_faith {log.faith_loss[-1]:.3f}")
    log.plateau_epoch = schedule.plateau_epoch
    log.seconds = time.perf_counter() - started
    explainer.eval()
    explainer.requires_grad_(False)
    return explainer, log


# ---------------------------------------------------------------------------------------------- use
def explain(
    model: nn.Module,
    x: Tensor,
    *,
    explainer: AmortizedExplainer | None = None,
    method: str = "amortized",
    target: Tensor | int | None = None,
    baseline: Tensor | None = None,
    seed: int = 0,
) -> Tensor:
    """Attributions of ``model``'s output for ``target`` (default: its predicted class) on the batch ``x``.

    ``method="amortized"`` runs the trained ``explainer`` (one forward pass); a name from
    :data:`PRIOR_METHODS` runs that Captum method (``baseline`` needed; the explainer's is used if given).
    """
    if method not in METHODS:
        raise ExplainerError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    if target is None:
        targets = predict(model, x)
    else:
        targets = torch.as_tensor(target, dtype=torch.int64).expand(len(x))
    if method == "amortized":
        if explainer is None:
            raise ExplainerError("method 'amortized' needs a trained explainer (see train_explainer)")
        with torch.no_grad():
            return explainer(x, targets)
    if baseline is None:
        if explainer is None:
            raise ExplainerError(f"method {method!r} needs a baseline (the value of a removed feature)")
        baseline = explainer.baseline
    return prior_attributions(model, x, targets, method, baseline, seed=seed)


def _seconds_per_explanation(run: Callable[[Tensor, Tensor], Tensor], x: Tensor, targets: Tensor) -> float:
    """Median wall-clock seconds of explaining one input alone (after one warm-up call)."""
    run(x[:1], targets[:1])
    times = []
    for i in range(len(x)):
        started = time.perf_counter()
        run(x[i : i + 1], targets[i : i + 1])
        times.append(time.perf_counter() - started)
    return float(sorted(times)[len(times) // 2])


def faithfulness_report(
    model: nn.Module,
    explainer: AmortizedExplainer | None,
    x: Tensor,
    *,
    baseline: Tensor | None = None,
    targets: Tensor | None = None,
    methods: tuple[str, ...] = METHODS,
    timing_samples: int = 20,
    steps: int | None = None,
    subsets: int = 50,
    subset_fraction: float = 0.25,
    seed: int = 0,
    include_random: bool = True,
    explainers: dict[str, AmortizedExplainer] | None = None,
) -> dict[str, Any]:
    """Deletion / insertion AUC and faithfulness correlation (mean, 95 % interval over the inputs ``x``)
    and seconds per explanation of each method, plus a random attribution as a reference.

    The baseline is the explainer's (``baseline`` when there is none). ``explainers`` adds further trained
    explainers (e.g. ablations) as rows under their names.
    Per-input values are in ``values`` so that callers can aggregate over runs.
    """
    if explainer is None and baseline is None:
        raise ExplainerError("faithfulness_report needs an explainer or a baseline")
    baseline = (explainer.baseline if explainer is not None else baseline).float()
    targets = predict(model, x) if targets is None else targets.long()
    score = class_probability(model)
    runs: dict[str, Callable[[Tensor, Tensor], Tensor]] = {}
    for name in methods:
        if name == "amortized":
            if explainer is not None:
                runs[name] = lambda z, t, e=explainer: e(z, t)
        else:
            runs[name] = lambda z, t, m=name: prior_attributions(model, z, t, m, baseline, seed=seed)
    for name, extra in (explainers or {}).items():
        runs[name] = lambda z, t, e=extra: e(z, t)
    if include_random:
        noise = torch.Generator().manual_seed(seed + 1)
        runs["random"] = lambda z, t: torch.randn(z.shape, generator=noise)
    report: dict[str, Any] = {"n": len(x), "methods": {}, "values": {}}
    timed = min(timing_samples, len(x))
    for name, run in runs.items():
        with torch.no_grad():  # the gradient-based priors turn gradients on for themselves
            attribution = run(x, targets).detach()
        values = {
            "deletion_auc": deletion_auc(score, x, attribution, baseline, targets, steps=steps),
            "insertion_auc": insertion_auc(score, x, attribution, baseline, targets, steps=steps),
            "faithfulness_correlation": faithfulness_correlation(
                score,
                x,
                attribution,
                baseline,
                targets,
                subsets=subsets,
                subset_fraction=subset_fraction,
                seed=seed,
            ),
        }
        with torch.no_grad():
            seconds = _seconds_per_explanation(run, x[:timed], targets[:timed]) if timed else float("nan")
        report["values"][name] = {k: v.tolist() for k, v in values.items()}
        report["methods"][name] = {k: mean_interval(v) for k, v in values.items()} | {
            "seconds_per_explanation": seconds
        }
    reference = report["methods"].get("amortized", {}).get("seconds_per_explanation")
    for entry in report["methods"].values():
        entry["time_vs_amortized"] = entry["seconds_per_explanation"] / reference if reference else None
    return report


# ---------------------------------------------------------------------------------------------- files
WEIGHTS, CONFIG, MODEL = "explainer.safetensors", "explainer.json", "model.safetensors"
FORMAT = "embodia-amortized-explainer/1"


def save_explainer(
    folder: str | Path,
    explainer: AmortizedExplainer,
    metadata: dict[str, Any] | None = None,
    model: nn.Module | None = None,
) -> Path:
    """Write ``explainer.safetensors`` + ``explainer.json`` (network config, ``metadata``) into ``folder``,
    and ``model.safetensors`` (the explained model's weights) when ``model`` is given.

    A folder holding anything else is refused: an explainer never overwrites files it did not write.
    """
    from safetensors.torch import save_file

    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise ExplainerError(f"{str(folder)!r} is a file; name a folder for the explainer")
    if folder.is_dir():
        foreign = sorted(p.name for p in folder.iterdir() if p.name not in (WEIGHTS, CONFIG, MODEL))
        if foreign:
            raise ExplainerError(
                f"{str(folder)!r} holds {foreign}, which embodia did not write; choose another folder"
            )
    folder.mkdir(parents=True, exist_ok=True)
    save_file({k: v.contiguous() for k, v in explainer.state_dict().items()}, str(folder / WEIGHTS))
    if model is not None:
        save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(folder / MODEL))
    elif (folder / MODEL).exists():
        (folder / MODEL).unlink()  # a model left from an earlier save would not be this explainer's
    payload = {"format": FORMAT, "network": explainer.config(), "metadata": metadata or {}}
    (folder / CONFIG).write_text(json.dumps(payload, indent=2) + "\n")
    return folder


def load_explainer(
    folder: str | Path, model: nn.Module | None = None
) -> tuple[AmortizedExplainer, dict[str, Any]]:
    """The explainer saved in ``folder`` (eval mode) and its metadata; ``model``, if given, gets the saved
    model weights (an error if none were saved)."""
    from safetensors.torch import load_file

    folder = Path(folder)
    if not (folder / CONFIG).is_file() or not (folder / WEIGHTS).is_file():
        raise ExplainerError(f"{str(folder)!r} holds no saved explainer ({CONFIG} + {WEIGHTS})")
    try:
        payload = json.loads((folder / CONFIG).read_text())
    except json.JSONDecodeError as error:
        raise ExplainerError(f"{folder / CONFIG}: not JSON ({error})") from None
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise ExplainerError(f"{folder / CONFIG}: not an embodia explainer (format {FORMAT} expected)")
    state = load_file(str(folder / WEIGHTS))
    net = payload["network"]
    explainer = AmortizedExplainer(
        tuple(net["shape"]),
        net["num_classes"],
        state["baseline"],
        net["hidden"],
        net["layers"],
        net["multiply_by_input"],
    )
    explainer.load_state_dict(state)
    explainer.eval()
    explainer.requires_grad_(False)
    if model is not None:
        if not (folder / MODEL).is_file():
            raise ExplainerError(f"{str(folder)!r} holds no model weights ({MODEL})")
        model.load_state_dict(load_file(str(folder / MODEL)))
        model.eval()
        model.requires_grad_(False)
    return explainer, payload["metadata"]
