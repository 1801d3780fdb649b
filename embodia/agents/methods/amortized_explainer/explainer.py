"""The amortised explainer: the network, its training loop, :func:`explain`, :func:`faithfulness_report`.

The losses and the alpha schedule are the authors' (:mod:`.losses`), the prior pool and its per-input
selection too (:mod:`.priors`); :func:`train_explainer` is the authors' training loop
(``src/main/train_explainer.py``): its data set is the (input, kept prior) pairs, one pair per example, and
each batch's loss is alpha * L_prior(pairs) + (1 - alpha) * L_faith(the batch's inputs).

The network: h_theta(x, c) = g_theta([x - b, onehot(c)]), an MLP g_theta on the flattened input (centred on
the baseline b) and the class. The authors' explainer is a transformer on image patches
(``src/explainer/model/transformer.py``); an MLP is the small-scale stand-in. ``multiply_by_input`` (off by
default, embodia's option, not the authors') multiplies the output feature-wise by x - b.
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
    class_probability,
    predict,
)
from embodia.agents.methods.amortized_explainer.losses import (
    AlphaSchedule,
    faithful_loss,
    supervise_loss,
)
from embodia.agents.methods.amortized_explainer.metrics import (
    deletion_auc,
    faithfulness_correlation,
    infidelity,
    insertion_auc,
    mean_interval,
    region_perturbation,
)
from embodia.agents.methods.amortized_explainer.priors import (
    PriorSelection,
    compute_priors,
    prior_attributions,
    select_priors,
)

Fraction = Annotated[float, Field(ge=0, le=1)]


@dataclass
class ExplainerConfig:
    """How the amortised explainer is trained (authors' values in parentheses where they differ)."""

    epochs: Annotated[int, Field(ge=1, le=10_000)] = 60
    """Passes over the (input, prior) pairs (authors: 1000 at lr 1e-5)."""
    batch_size: Annotated[int, Field(ge=1, le=4096)] = 32
    """(input, prior) pairs per step (authors: 32)."""
    lr: Annotated[float, Field(gt=0, le=1)] = 1e-3
    """Adam learning rate (authors: 1e-5 for 1000 epochs of a transformer; a small MLP here, fewer epochs)."""
    weight_decay: Annotated[float, Field(ge=0, le=1)] = 1e-5
    """Adam weight decay (authors: 1e-5)."""
    hidden: Annotated[int, Field(ge=1, le=4096)] = 128
    """Width of the explainer MLP."""
    layers: Annotated[int, Field(ge=1, le=8)] = 2
    """Hidden layers of the explainer MLP."""
    multiply_by_input: bool = False
    """embodia's option: attribution = network output * (x - baseline); the authors output the map directly."""
    alpha_mode: Literal["dynamic", "prior_only", "faith_only"] = "dynamic"
    """``dynamic``: the authors' variance trigger and sigmoid decay; ``prior_only``: alpha = 1;
    ``faith_only``: alpha = 0 (no prior method is run)."""
    variance_eps: Annotated[float, Field(gt=0, le=1)] = 1e-5
    """Trigger: var of the last 5 epochs' L_prior at most this (authors' ``eps``)."""
    divider: Annotated[float, Field(gt=0, le=1000)] = 10.0
    """Sigmoid decay's time scale in epochs, and the reset factor (var > divider * eps resets alpha to 1)."""
    faith_runs: Annotated[int, Field(ge=2, le=1000)] = 100
    """Bernoulli masks per input in L_faith (``FaithfulLoss``'s default 100; the training script's 10)."""
    mask_keeps: bool = True
    """True: mask 1 keeps the feature (the authors' ``perturb_by_mask``); False: mask 1 removes it."""
    fill: Literal["noise", "baseline"] = "noise"
    """What replaces a masked feature in L_faith: N(0, 1) noise (authors) or the task's baseline."""
    priors: list[Literal[PRIOR_METHODS]] = field(default_factory=lambda: list(PRIOR_METHODS))
    """The prior pool (default: the authors' eight)."""
    prior_samples: Annotated[int, Field(ge=1, le=100_000)] = 256
    """Training inputs the priors explain; the explainer trains on their (input, kept prior) pairs."""
    dedup_threshold: Annotated[float, Field(ge=-1, le=1)] = 0.9
    """Cosine at or above which two priors of one input are duplicates (authors' default 0.9)."""
    filter_p: Annotated[float, Field(gt=0, lt=1)] = 0.2
    """A prior is dropped for an input where it is in the worst ``filter_p`` of a filter metric (0.2)."""
    seed: Annotated[int, Field(ge=0)] = 0
    """Seeds the network, the batches and the masks."""


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
        multiply_by_input: bool = False,
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


# ---------------------------------------------------------------------------------------------- training
@dataclass
class TrainingLog:
    """What happened while an explainer was trained."""

    prior_loss: list[float] = field(default_factory=list)
    """Mean L_prior per epoch (empty when no prior supervises the explainer)."""
    faith_loss: list[float] = field(default_factory=list)
    """Mean L_faith per epoch (0 in epochs with alpha = 1, where the authors skip it)."""
    alpha: list[float] = field(default_factory=list)
    """alpha used in each epoch."""
    plateau_epoch: int | None = None
    """First epoch at which the variance trigger turned on (None: never)."""
    triggers: list[int] = field(default_factory=list)
    """Every epoch at which it turned on (it turns off again when L_prior moves)."""
    pairs: int = 0
    """(input, prior) training pairs."""
    selection: PriorSelection | None = None
    """The per-input prior selection (None without priors)."""
    prior_seconds: float = 0.0
    """Time spent running and selecting the prior methods."""
    seconds: float = 0.0
    """Total training time, priors included."""


def train_explainer(
    model: nn.Module,
    x_train: Tensor,
    baseline: Tensor,
    num_classes: int,
    config: ExplainerConfig | None = None,
    *,
    targets: Tensor | None = None,
    priors: dict[str, Tensor] | None = None,
    selection: PriorSelection | None = None,
    progress: Callable[[int, int, str], None] | None = None,
) -> tuple[AmortizedExplainer, TrainingLog]:
    """Train an explainer of ``model`` on ``x_train[:config.prior_samples]`` (targets: the model's
    predictions unless given).

    ``priors`` / ``selection``: precomputed attributions of those inputs by method and their selection (to
    share them between runs); otherwise they are computed here. Returns the explainer in eval mode.
    """
    config = config or ExplainerConfig()
    started = time.perf_counter()
    torch.manual_seed(config.seed)
    generator = torch.Generator().manual_seed(config.seed)
    model.eval()
    model.requires_grad_(False)
    baseline = baseline.float().reshape(x_train.shape[1:])
    n_prior = min(config.prior_samples, len(x_train))
    x = x_train[:n_prior]
    targets = predict(model, x) if targets is None else targets[:n_prior].long()
    log = TrainingLog()
    schedule = AlphaSchedule(config.alpha_mode, config.variance_eps, config.divider)
    if config.alpha_mode == "faith_only":
        index, prior_stack = torch.arange(n_prior), None
    else:
        if priors is None:
            priors = compute_priors(model, x, targets, baseline, list(config.priors), config.seed)
        priors = {k: v[:n_prior] for k, v in priors.items() if k in config.priors}
        if selection is None:
            selection = select_priors(
                model,
                x,
                targets,
                priors,
                baseline,
                dedup_threshold=config.dedup_threshold,
                p=config.filter_p,
                seed=config.seed,
            )
        log.selection = selection
        log.prior_seconds = time.perf_counter() - started
        pairs = selection.keep.nonzero()  # (P, 2): input, method
        prior_stack = torch.stack([priors[m] for m in selection.methods], 1)  # (N, K, *shape)
        index = pairs
        if len(pairs) == 0:  # nothing survived the filter: the faithfulness loss alone
            index, prior_stack = torch.arange(n_prior), None
            schedule = AlphaSchedule("faith_only")
    log.pairs = len(index)

    explainer = AmortizedExplainer(
        x.shape[1:], num_classes, baseline, config.hidden, config.layers, config.multiply_by_input
    )
    optimiser = torch.optim.Adam(explainer.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    for epoch in range(config.epochs):
        alpha = schedule.alpha
        order = torch.randperm(len(index), generator=generator)
        sums, steps = {"prior": 0.0, "faith": 0.0}, 0
        explainer.train()
        for start in range(0, len(index), config.batch_size):
            rows = index[order[start : start + config.batch_size]]
            i = rows[:, 0] if rows.dim() == 2 else rows
            xb, tb = x[i], targets[i]
            s = explainer(xb, tb)
            l_prior = l_faith = torch.zeros(())
            if prior_stack is not None and alpha > 0:
                l_prior = supervise_loss(s, prior_stack[i, rows[:, 1]])
            if alpha < 1:
                l_faith = faithful_loss(
                    model,
                    xb,
                    s,
                    runs=config.faith_runs,
                    mask_keeps=config.mask_keeps,
                    fill=config.fill,
                    baseline=baseline,
                    generator=generator,
                )
            loss = alpha * l_prior + (1 - alpha) * l_faith
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            sums["prior"] += l_prior.item()
            sums["faith"] += l_faith.item()
            steps += 1
        log.faith_loss.append(sums["faith"] / max(steps, 1))
        log.alpha.append(alpha)
        if prior_stack is not None:
            log.prior_loss.append(sums["prior"] / max(steps, 1))
            schedule.step(log.prior_loss[-1])
        if progress is not None:
            progress(epoch + 1, config.epochs, f"alpha {alpha:.2f}, L_faith {log.faith_loss[-1]:.3f}")
    log.triggers = list(schedule.triggered)
    log.plateau_epoch = log.triggers[0] if log.triggers else None
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
    low: Tensor | float | None = None,
    high: Tensor | float | None = None,
) -> dict[str, Any]:
    """Each method's held-out metrics (deletion / insertion AUC, infidelity, region perturbation AOPC) and
    faithfulness correlation (a filter metric, close to L_faith), as mean and 95 % interval over the inputs
    ``x``, and seconds per explanation, plus a random attribution as a reference.

    The baseline is the explainer's (``baseline`` when there is none). ``explainers`` adds further trained
    explainers (e.g. ablations) as rows under their names. ``low`` / ``high``: the range of region
    perturbation's uniform fill (default: the per-feature range of ``x``).
    Per-input values are in ``values`` so that callers can aggregate over runs.
    """
    if explainer is None and baseline is None:
        raise ExplainerError("faithfulness_report needs an explainer or a baseline")
    baseline = (explainer.baseline if explainer is not None else baseline).float()
    targets = predict(model, x) if targets is None else targets.long()
    score = class_probability(model)
    low = x.min(0).values if low is None else low
    high = x.max(0).values if high is None else high
    patch = 2 if x.dim() == 4 else 1
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
            "infidelity": infidelity(model, x, attribution, targets, seed=seed),
            "region_perturbation": region_perturbation(
                score, x, attribution, targets, low, high, patch=patch, seed=seed
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
