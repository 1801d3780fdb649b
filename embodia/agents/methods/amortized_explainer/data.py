"""The tasks the explainer is measured on: data, a baseline, and a target model trained here.

Tables: scikit-learn's bundled ``breast_cancer`` (30 features, 2 classes), ``wine`` (13, 3) and ``iris``
(4, 3), or any CSV file with a header, numeric feature columns and a target column; features are
standardised with the training split's mean and deviation, and the baseline is the training mean (the
zero vector after standardising). Images: scikit-learn's bundled ``digits`` (8x8 grey levels 0-16, scaled
to [0, 1]; 10 classes), baseline black (zero). Target models: a two-layer MLP for tables, a small CNN for
the digits, trained with Adam on the training split.
"""

from __future__ import annotations

import csv
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import Tensor, nn

from embodia.agents.methods.amortized_explainer import DATASETS
from embodia.core.errors import EmbodiaError

Scorer = Callable[[Tensor, Tensor], Tensor]
"""``score(inputs, targets) -> (N,)``: the model output a metric tracks (here the class probability)."""


class ExplainerError(EmbodiaError, ValueError):
    """A data set, CSV file, explainer folder or argument the explainer cannot use."""


@dataclass
class ExplainTask:
    """A data set split for explaining, with its baseline."""

    name: str
    x_train: Tensor
    """Training inputs, (N, *shape), float32."""
    y_train: Tensor
    """Training labels, (N,), int64."""
    x_test: Tensor
    y_test: Tensor
    baseline: Tensor
    """The 'feature removed' value, of shape ``shape``."""
    num_classes: int
    feature_names: list[str]
    class_names: list[str]
    kind: str = "tabular"
    """``tabular`` or ``image``."""
    baseline_kind: str = "training mean"

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.x_train.shape[1:])

    @property
    def num_features(self) -> int:
        return int(np.prod(self.shape))


def _split(x: np.ndarray, y: np.ndarray, seed: int, test_fraction: float) -> tuple[np.ndarray, ...]:
    from sklearn.model_selection import train_test_split

    counts = np.bincount(y)
    stratify = y if counts.min() >= 2 else None
    return train_test_split(x, y, test_size=test_fraction, random_state=seed, stratify=stratify)


def _tabular(
    name: str,
    x: np.ndarray,
    y: np.ndarray,
    features: list[str],
    classes: list[str],
    seed: int,
    test_fraction: float,
) -> ExplainTask:
    from sklearn.preprocessing import StandardScaler

    x_tr, x_te, y_tr, y_te = _split(x, y, seed, test_fraction)
    scaler = StandardScaler().fit(x_tr)
    x_tr, x_te = scaler.transform(x_tr), scaler.transform(x_te)
    as_x = lambda a: torch.as_tensor(a, dtype=torch.float32)  # noqa: E731
    as_y = lambda a: torch.as_tensor(a, dtype=torch.int64)  # noqa: E731
    return ExplainTask(
        name=name,
        x_train=as_x(x_tr),
        y_train=as_y(y_tr),
        x_test=as_x(x_te),
        y_test=as_y(y_te),
        baseline=as_x(x_tr.mean(axis=0)),
        num_classes=len(classes),
        feature_names=features,
        class_names=classes,
    )


def read_csv_table(
    path: str | Path, target: str = "target"
) -> tuple[np.ndarray, np.ndarray, list[str], list[str]]:
    """Features, integer labels, feature names and class names from a CSV file with a header row.

    Every column except ``target`` must be numeric; target values may be any strings (each distinct value
    is a class, in sorted order).
    """
    path = Path(path)
    if not path.is_file():
        raise ExplainerError(f"CSV file {str(path)!r} does not exist")
    with path.open(newline="") as handle:
        rows = list(csv.reader(handle))
    if len(rows) < 3:
        raise ExplainerError(f"{path}: needs a header row and at least two data rows")
    header, body = [h.strip() for h in rows[0]], [r for r in rows[1:] if r]
    if target not in header:
        raise ExplainerError(f"{path}: no target column {target!r} (columns: {', '.join(header)})")
    t = header.index(target)
    features = [h for i, h in enumerate(header) if i != t]
    if not features:
        raise ExplainerError(f"{path}: no feature columns besides {target!r}")
    x = np.empty((len(body), len(features)), dtype=np.float64)
    labels = []
    for line, row in enumerate(body, start=2):
        if len(row) != len(header):
            raise ExplainerError(f"{path}:{line}: {len(row)} values for {len(header)} columns")
        values = [v for i, v in enumerate(row) if i != t]
        try:
            x[line - 2] = [float(v) for v in values]
        except ValueError:
            raise ExplainerError(f"{path}:{line}: a feature value is not a number") from None
        labels.append(row[t].strip())
    if not np.isfinite(x).all():
        raise ExplainerError(f"{path}: features must be finite numbers")
    classes = sorted(set(labels))
    if len(classes) < 2:
        raise ExplainerError(f"{path}: the target column has a single class")
    y = np.array([classes.index(v) for v in labels], dtype=np.int64)
    return x, y, features, classes


def load_task(
    dataset: str = "breast_cancer",
    *,
    csv_path: str | Path | None = None,
    target_column: str = "target",
    seed: int = 0,
    test_fraction: float = 0.25,
) -> ExplainTask:
    """A bundled data set by name (:data:`DATASETS`), or a CSV table when ``csv_path`` is given."""
    if csv_path is not None:
        x, y, features, classes = read_csv_table(csv_path, target_column)
        return _tabular(Path(csv_path).stem, x, y, features, classes, seed, test_fraction)
    if dataset not in DATASETS:
        raise ExplainerError(f"unknown data set {dataset!r}; choose one of {', '.join(DATASETS)}")
    from sklearn import datasets

    bunch = getattr(datasets, f"load_{dataset}")()
    classes = [str(c) for c in bunch.target_names]
    if dataset != "digits":
        features = [str(f) for f in bunch.feature_names]
        return _tabular(dataset, bunch.data, bunch.target, features, classes, seed, test_fraction)
    x = bunch.images.astype(np.float32)[:, None] / 16.0  # (N, 1, 8, 8) in [0, 1]
    x_tr, x_te, y_tr, y_te = _split(x, bunch.target, seed, test_fraction)
    return ExplainTask(
        name=dataset,
        x_train=torch.as_tensor(x_tr),
        y_train=torch.as_tensor(y_tr, dtype=torch.int64),
        x_test=torch.as_tensor(x_te),
        y_test=torch.as_tensor(y_te, dtype=torch.int64),
        baseline=torch.zeros(1, 8, 8),
        num_classes=10,
        feature_names=[f"pixel_{r}_{c}" for r in range(8) for c in range(8)],
        class_names=classes,
        kind="image",
        baseline_kind="zero (black)",
    )


# ---------------------------------------------------------------------------------------------- models
class TabularMLP(nn.Module):
    """Features -> class logits: two hidden ReLU layers."""

    def __init__(self, num_features: int, num_classes: int, hidden: int = 64) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(num_features, hidden),
            nn.ReLU(),
            nn.Linear(hidden, hidden),
            nn.ReLU(),
            nn.Linear(hidden, num_classes),
        )

    def forward(self, x: Tensor) -> Tensor:
        return self.net(x)


class DigitsCNN(nn.Module):
    """(N, 1, 8, 8) images -> 10 class logits: two 3x3 convolutions, a 2x2 pooling, a linear layer."""

    def __init__(self, num_classes: int = 10, channels: int = 16) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(1, channels, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(channels, 2 * channels, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Flatten(),
            nn.Linear(2 * channels * 16, num_classes),
        )

    def forward(self, x: Tensor) -> Tensor:
        return self.net(x)


def make_target_model(task: ExplainTask) -> nn.Module:
    """An untrained model of the kind used for ``task``."""
    if task.kind == "image":
        return DigitsCNN(task.num_classes)
    return TabularMLP(task.num_features, task.num_classes)


@dataclass
class TargetTraining:
    """How a target model was trained and how well it does."""

    epochs: int
    train_accuracy: float
    test_accuracy: float
    seconds: float
    losses: list[float] = field(default_factory=list)


def train_target_model(
    task: ExplainTask, *, seed: int = 0, epochs: int | None = None, lr: float = 3e-3, batch_size: int = 64
) -> tuple[nn.Module, TargetTraining]:
    """Train the task's model (cross-entropy, Adam); returns it in eval mode with frozen parameters."""
    import time

    started = time.perf_counter()
    torch.manual_seed(seed)
    model = make_target_model(task)
    epochs = epochs if epochs is not None else (15 if task.kind == "image" else 60)
    optimiser = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=1e-4)
    generator = torch.Generator().manual_seed(seed)
    n = len(task.x_train)
    losses = []
    model.train()
    for _ in range(epochs):
        order = torch.randperm(n, generator=generator)
        total = 0.0
        for start in range(0, n, batch_size):
            idx = order[start : start + batch_size]
            loss = nn.functional.cross_entropy(model(task.x_train[idx]), task.y_train[idx])
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            total += loss.item() * len(idx)
        losses.append(total / n)
    model.eval()
    model.requires_grad_(False)
    accuracy = lambda x, y: float((predict(model, x) == y).float().mean())  # noqa: E731
    report = TargetTraining(
        epochs=epochs,
        train_accuracy=accuracy(task.x_train, task.y_train),
        test_accuracy=accuracy(task.x_test, task.y_test),
        seconds=time.perf_counter() - started,
        losses=losses,
    )
    return model, report


def predict(model: nn.Module, x: Tensor) -> Tensor:
    """The model's predicted classes, (N,)."""
    with torch.no_grad():
        return model(x).argmax(dim=-1)


def class_probability(model: nn.Module) -> Scorer:
    """The scorer ``(x, c) -> softmax(model(x))[c]``: what the metrics and the faithfulness loss track."""

    def score(x: Tensor, targets: Tensor) -> Tensor:
        probabilities = torch.softmax(model(x), dim=-1)
        return probabilities.gather(1, targets.view(-1, 1)).squeeze(1)

    return score
