"""The learner contract and the one registry of training methods.

A learner turns batches of windows from a trajectory store into gradient steps, and ends in an actor that
:mod:`embodia.policies.actor_policy` saves as a policy folder. Every method (BC, IQL, GCIQL, DEAS) is a class
with a config dataclass, registered in :mod:`embodia.policies` by name with ``"module:Class"`` strings, so
that listing the methods (the CLI, the comparison, the tests) imports neither the classes nor torch.

What :func:`embodia.policies.train.train` needs from a learner (defaults in :class:`OfflineLearner`):

- ``window_for(config)``: the window length ``H`` of the batches it learns from;
- ``observation_keys(config)`` and ``fit_normalizer_for(config, sampler)``: the observation keys read from
  the store and the statistics of the keys the networks see (defaults: ``state``; ``fit_normalizer``);
- ``needs_reward``: whether the store must hold a ``reward`` key;
- ``sample(sampler, batch_size)``: a batch (default: uniform windows; GCIQL relabels goals);
- ``update(batch) -> metrics`` (one gradient step), ``modules()`` (networks, for checkpoints),
  ``actor`` and ``normalizer`` (exported as the policy), ``config``.
"""

from __future__ import annotations

import importlib
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, Protocol

from pydantic import Field

from embodia.core.errors import EmbodiaError
from embodia.core.validation import validate

if TYPE_CHECKING:
    import torch

    from embodia.data.sampling import WindowSampler
    from embodia.policies.networks import ObsNormalizer


class Learner(Protocol):
    """What training and export rely on (see the module docstring)."""

    name: ClassVar[str]
    needs_reward: ClassVar[bool]
    obs_keys: ClassVar[tuple[str, ...]]
    config: Any
    normalizer: ObsNormalizer
    actor: torch.nn.Module

    @classmethod
    def window_for(cls, config: Any) -> int: ...

    @classmethod
    def fit_normalizer(cls, sampler: WindowSampler) -> ObsNormalizer: ...

    def sample(self, sampler: WindowSampler, batch_size: int) -> dict[str, Any]: ...

    @classmethod
    def observation_keys(cls, config: Any) -> list[str]: ...

    @classmethod
    def fit_normalizer_for(cls, config: Any, sampler: WindowSampler) -> ObsNormalizer: ...

    def update(self, batch: dict[str, Any]) -> dict[str, float]: ...

    def modules(self) -> dict[str, torch.nn.Module]: ...


@dataclass
class NetworkConfig:
    """What every learner's config has: the size of its MLPs and their learning rate."""

    hidden: tuple[Annotated[int, Field(ge=1)], ...] = (256, 256, 256)
    """Hidden layer sizes (each >= 1) of every network (LayerNorm + GELU)."""
    lr: Annotated[float, Field(gt=0)] = 3e-4
    """Adam learning rate (> 0) of all networks."""
    matmul_precision: Literal["float32", "bfloat16"] = "float32"
    """Precision of the MLPs' matrix products in training: "float32", or "bfloat16" (mixed precision: weights,
    gradients, optimiser state and losses stay float32; about 2x the update rate on CPUs with AVX512-BF16 or
    AMX, see ``benchmarks/bench_deas_throughput.py``; values then differ from float32 training at bfloat16's
    ~3 significant digits). The exported policy runs in float32 either way."""


@dataclass
class ChunkedPolicyConfig:
    """The config of a learner whose actor outputs a chunk of ``chunk_length`` actions."""

    chunk_field: ClassVar[str]
    """The method's field that holds the number of actions per chunk (BC: ``chunk``, DEAS: ``horizon``)."""
    execute_steps: Annotated[int, Field(ge=1)] | None = None
    """Actions of each predicted chunk executed before re-planning, 1..chunk length (default: all of them)."""

    @property
    def chunk_length(self) -> int:
        return int(getattr(self, self.chunk_field))

    def __post_init__(self) -> None:
        if self.execute_steps is not None and self.execute_steps > self.chunk_length:
            raise ValueError(
                f"execute_steps ({self.execute_steps}) cannot exceed {self.chunk_field} ({self.chunk_length}): "
                "a chunk has only that many actions"
            )


class OfflineLearner:
    """The common part of every learner: a validated config, the normalizer, seeding; defaults of
    :class:`Learner` (state observations, uniform windows). Subclasses set ``config_class`` and :meth:`build`."""

    name: ClassVar[str] = ""
    config_class: ClassVar[type]
    """The config dataclass; a config built in Python is validated like one parsed from JSON."""
    needs_reward: ClassVar[bool] = True
    """Whether the store must hold rewards (``embodia train`` refuses a store without ``reward``)."""
    obs_keys: ClassVar[tuple[str, ...]] = ("state",)
    """Observation keys the networks read, concatenated in this order."""
    fused_adam: ClassVar[bool] = True
    """Adam's fused kernel (one pass over all parameters; same update up to float rounding). False: the
    per-parameter loop, kept as the baseline of ``benchmarks/bench_deas_throughput.py``."""

    def __init__(
        self,
        config: Any,
        normalizer: ObsNormalizer,
        action_dim: int,
        reward_range: tuple[float, float] = (0.0, 1.0),
        seed: int = 0,
    ) -> None:
        import torch

        self.config = validate(self.config_class, config, where=f"{self.name} config")
        self.normalizer = normalizer
        self.action_dim = action_dim
        self.reward_range = reward_range
        self.seed = seed
        torch.manual_seed(seed)
        self.build()
        if getattr(self.config, "matmul_precision", "float32") == "bfloat16":
            from embodia.policies.networks import cpu_has_bfloat16, set_matmul_dtype

            if cpu_has_bfloat16() is False:
                warnings.warn(
                    f"{self.name}: matmul_precision 'bfloat16' on a CPU without bfloat16 instructions "
                    "(no avx512_bf16 / amx_bf16 in /proc/cpuinfo): torch emulates it, several times slower "
                    "than float32; use 'float32' on this machine",
                    RuntimeWarning,
                    stacklevel=2,
                )
            for module in self.modules().values():
                set_matmul_dtype(module, torch.bfloat16)

    def build(self) -> None:
        """Create the networks and optimisers (``self.config`` is validated, torch is seeded)."""
        raise NotImplementedError

    def modules(self) -> dict[str, torch.nn.Module]:
        """Every network, for checkpoints."""
        raise NotImplementedError

    def adam(self, params: Any) -> torch.optim.Adam:
        """Adam over ``params`` at the config's learning rate (fused unless :attr:`fused_adam` is False)."""
        import torch

        return torch.optim.Adam(params, lr=self.config.lr, fused=self.fused_adam)

    @classmethod
    def window_for(cls, config: Any) -> int:
        """Window length of the batches."""
        return 1

    @classmethod
    def observation_keys(cls, config: Any) -> list[str]:
        """Observation keys the store must hold and the sampler returns (default: ``state``; GCIQL's goals
        are relabelled states)."""
        return ["state"]

    @classmethod
    def fit_normalizer(cls, sampler: WindowSampler) -> ObsNormalizer:
        from embodia.policies.networks import ObsNormalizer

        return ObsNormalizer.fit(list(cls.obs_keys), sampler.arrays)

    @classmethod
    def fit_normalizer_for(cls, config: Any, sampler: WindowSampler) -> ObsNormalizer:
        """The normalizer for ``config`` (default: :meth:`fit_normalizer`; a learner whose observation keys
        depend on its config overrides this)."""
        return cls.fit_normalizer(sampler)

    def sample(self, sampler: WindowSampler, batch_size: int) -> dict[str, Any]:
        from embodia.data.sampling import to_torch

        return to_torch(sampler.sample(batch_size))


@dataclass(frozen=True)
class LearnerEntry:
    """A registered method: where its learner and config classes live, and what it is."""

    name: str
    learner: str
    """``"module:Class"`` of the learner."""
    config: str
    """``"module:Class"`` of its config dataclass."""
    description: str


_LEARNERS: dict[str, LearnerEntry] = {}


def register_learner(name: str, learner: str, config: str, description: str) -> None:
    """Register a training method by name (classes given as ``"module:Class"``; imported on use)."""
    if name in _LEARNERS and _LEARNERS[name].learner != learner:
        raise ValueError(f"two learners are named {name!r}: {_LEARNERS[name].learner} and {learner}")
    _LEARNERS[name] = LearnerEntry(name, learner, config, description)


def learner_names() -> list[str]:
    """The registered methods, sorted (cheap: nothing is imported)."""
    return sorted(_LEARNERS)


def learner_entry(name: str) -> LearnerEntry:
    if name not in _LEARNERS:
        raise EmbodiaError(f"unknown method {name!r}; choose one of {', '.join(learner_names())}")
    return _LEARNERS[name]


def learner_classes(name: str) -> tuple[type, type]:
    """The learner class and config class of method ``name``."""
    entry = learner_entry(name)
    return _load(entry.learner), _load(entry.config)


def _load(target: str) -> Any:
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)
