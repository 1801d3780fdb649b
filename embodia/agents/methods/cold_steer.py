"""COLD-Steer: activation steering from a few in-context examples, without training.

Paper: K. Sharma and R. Trivedi, "COLD-Steer: Steering Large Language Models via In-Context One-step
Learning Dynamics", ICLR 2026, arXiv:2603.06495 (authors' code: github.com/Ksartik/cold-steer).

Given N examples (x_i, y_i) and Z(x) the output of decoder block l (the residual stream) at the positions
of an input x, COLD-Steer adds to Z(x) the change one gradient-descent step on the examples' loss would
cause, without updating any weight:

    Delta Z*(x) = -(eta / N) * grad_theta Z(x; theta) . sum_i grad_theta L(M(x_i), y_i)        (one-step dynamics)

L_i is the cross-entropy of the continuation y_i given x_i, averaged over its tokens (the reference code's
``labels`` loss); the examples are averaged. Two approximations avoid the Jacobian:

- unit kernel (``unit_kernel``, COLD-Kernel-Steer with kappa = 1):

      Delta Z(x) = -(eta / N) * sum_i kappa(Z(x), Z(x_i)) * dL_i / dZ(x_i)[t_i],   kappa = 1

  where t_i is the LAST PROMPT TOKEN of example i (the position just before its continuation; the
  reference code takes ``labels`` index of the first target token - 1). The direction is therefore
  v = mean_i dL_i/dZ_i[t_i] (one backward pass over the examples), and every query position is shifted by
  -v. (The gradient reaches Z_i[t_i] through the first target token's prediction and, by attention,
  through the later ones; positions other than t_i are not summed in.)
- finite difference (``finite_difference``, COLD-FD-Steer): with g = mean_i grad_theta L_i over the weights
  that feed Z (embeddings and blocks 0..l),

      Delta Z(x) = -eta * [Z(x; theta + eps g) - Z(x; theta)] / eps                       (paper: forward)
      Delta Z(x) = -eta * [Z(x; theta + eps g) - Z(x; theta - eps g)] / (2 eps)           (embodia: central)

- baseline (``mean_difference``, contrastive activation addition / DiffMean): v = mean_i [Z(x_i + y_i^+) -
  Z(x_i + y_i^-)] at the last token; Delta Z = +eta v.

Where embodia deliberately differs from the paper and the reference code:

- **central difference**: the reference code uses a forward difference with an absolute eps = 1e-6 on GPU
  (``configs/steerer/cold_fd.yaml``). In float32 on CPU a one-sided difference is either too coarse or
  drowned in round-off (cosine 0.91 between eps and eps/2 here, against > 0.93 for the central one), so
  embodia uses the central difference (O(eps^2) truncation) with eps relative to the weight norm; it costs
  one more forward pass per query.
- **one shared strength**: the paper tunes eta per method (grid {0.1, 1, 2}; the reference configs use
  eta = 1 for the kernel and 0.01 for FD). embodia rescales every method's shift so its median norm over
  positions is ``alpha`` times the median norm of Z at that layer, one knob shared by the three methods,
  so the comparison is of directions at equal strength, not of tuned step sizes.
- **steered positions**: as the reference code (``steer_masking=all``, ``gen_masking=prompt``), every
  prompt position of a query is shifted and generated tokens are not (they see the steered prompt through
  attention); :func:`steered_generate` can also shift generated tokens (``steer_generated=True``: the mean
  prompt shift for ``finite_difference``), which the paper does not do.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch

from embodia.agents.llm import LocalLM

METHODS = ("unit_kernel", "finite_difference", "mean_difference")


@dataclass(frozen=True)
class SteeringExample:
    """A prompt with the continuation showing the target behaviour and (optionally) one that does not."""

    prompt: str
    target: str
    other: str = ""


# ---------------------------------------------------------------------------------------------- built-in data
_POSITIVE = [
    "wonderful",
    "great",
    "amazing",
    "excellent",
    "lovely",
    "fantastic",
    "perfect",
    "beautiful",
    "brilliant",
    "superb",
    "delightful",
    "pleasant",
    "nice",
    "awesome",
    "incredible",
    "outstanding",
]
_NEGATIVE = [
    "terrible",
    "awful",
    "horrible",
    "dreadful",
    "miserable",
    "disappointing",
    "bad",
    "poor",
    "boring",
    "ugly",
    "unpleasant",
    "sad",
    "annoying",
    "painful",
    "nasty",
    "gloomy",
]
_SUBJECTS = [
    "The movie we saw last night was",
    "The food at the new restaurant was",
    "My first day at the job was",
    "The weather during our holiday was",
    "The hotel room we booked was",
    "The concert on Saturday was",
    "Honestly, the book I just finished was",
    "The service at the bank today was",
    "The view from the top of the hill was",
    "Our trip to the coast was",
    "The new phone I bought is",
    "The lecture this morning was",
    "The coffee in this cafe is",
    "The game last weekend was",
    "The garden behind the house is",
    "My neighbour's new car is",
    "The museum exhibition was",
    "The flight back home was",
    "The pizza we ordered was",
    "The park near my school is",
    "The song on the radio was",
    "The meeting with my manager was",
    "The painting in the hall is",
    "The train ride to the city was",
    "The apartment we visited was",
    "The class I took online was",
    "The play at the theatre was",
    "The soup my friend made was",
    "The festival in town was",
    "The bike I rented was",
    "The sunset this evening was",
    "The party at Anna's house was",
    "The road to the village was",
    "The workshop on Friday was",
    "The hiking trail was",
    "The new album from the band is",
    "The dinner at my aunt's was",
    "The beach this morning was",
    "The presentation by the team was",
    "The dessert at the wedding was",
]


def positivity_examples(
    n: int, seed: int = 0, split: str = "train", behaviour: str = "positive"
) -> list[SteeringExample]:
    """Opinion prompts whose target continuation is a positive word and ``other`` a negative one
    (``behaviour="negative"`` swaps them: SmolLM2's prior already favours the positive word).

    ``train`` and ``heldout`` use disjoint prompts and disjoint word pairs.
    """
    if behaviour not in ("positive", "negative"):
        raise ValueError(f"behaviour must be 'positive' or 'negative', got {behaviour!r}")
    half = len(_SUBJECTS) // 2
    subjects = _SUBJECTS[:half] if split == "train" else _SUBJECTS[half:]
    words = slice(0, 8) if split == "train" else slice(8, 16)
    pos, neg = _POSITIVE[words], _NEGATIVE[words]
    rng = random.Random(seed + (0 if split == "train" else 1000))
    order = list(range(len(subjects)))
    rng.shuffle(order)
    if n > len(order):
        raise ValueError(f"only {len(order)} {split} examples exist, asked {n}")
    pairs = [(" " + pos[k % len(pos)], " " + neg[k % len(neg)]) for k in range(n)]
    if behaviour == "negative":
        pairs = [(b, a) for a, b in pairs]
    return [SteeringExample(subjects[i], t, o) for i, (t, o) in zip(order[:n], pairs)]


# ---------------------------------------------------------------------------------------------- steering
@dataclass
class Steering:
    """A steering edit for one layer: a fixed vector, or a per-query function of the query's ids."""

    layer: int
    method: str
    vector: torch.Tensor | None = None
    """(hidden,) shift for ``unit_kernel`` / ``mean_difference`` (already scaled)."""
    per_query: Callable[[list[int]], torch.Tensor] | None = None
    """ids -> (tokens, hidden) shift for ``finite_difference`` (already scaled)."""

    def shift_for(self, ids: list[int]) -> torch.Tensor:
        if self.vector is not None:
            return self.vector.expand(len(ids), -1)
        assert self.per_query is not None
        return self.per_query(ids)


def _layer_output(
    lm: LocalLM,
    layer: int,
    ids: torch.Tensor,
    mask: torch.Tensor | None = None,
    params: dict[str, torch.Tensor] | None = None,
) -> torch.Tensor:
    """Output of decoder block ``layer`` (B, T, d), optionally with some parameters replaced."""
    captured: list[torch.Tensor] = []

    def grab(hidden: torch.Tensor) -> None:
        captured.append(hidden)
        raise _StopForward

    with lm.hook(layer, grab):
        try:
            if params is None:
                lm.model(ids, attention_mask=mask)
            else:
                torch.func.functional_call(lm.model, params, (ids,), {"attention_mask": mask}, strict=False)
        except _StopForward:
            pass
    return captured[0]


class _StopForward(Exception):
    """Raised inside a hook to stop the forward pass once the wanted activation is captured."""


def _example_batch(lm: LocalLM, examples: Sequence[SteeringExample], field_name: str = "target"):
    """Right-padded prompt+continuation ids, a mask of continuation positions to score, and the labels."""
    sequences, spans = [], []
    for ex in examples:
        p, c = lm.encode(ex.prompt), lm.encode(getattr(ex, field_name))
        sequences.append(p + c)
        spans.append((len(p), len(p) + len(c)))
    ids, mask = lm.batch_ids(sequences)
    return ids, mask, spans


def _example_loss(
    lm: LocalLM, logits: torch.Tensor, ids: torch.Tensor, spans: list[tuple[int, int]]
) -> torch.Tensor:
    """mean_i L_i with L_i = -mean_t log p(continuation token t): the reference code's per-example
    ``labels`` cross-entropy (a mean over the continuation's tokens), averaged over the examples."""
    losses = []
    logp = torch.log_softmax(logits.float(), dim=-1)
    for row, (start, end) in enumerate(spans):
        positions = torch.arange(start - 1, end - 1)
        losses.append(-logp[row, positions, ids[row, start:end]].mean())
    return torch.stack(losses).mean()


def _median_norm(lm: LocalLM, layer: int, examples: Sequence[SteeringExample]) -> float:
    ids, mask, _ = _example_batch(lm, examples)
    with torch.no_grad():
        z = _layer_output(lm, layer, ids, mask)
    return float(z[mask.bool()].norm(dim=-1).median())


def unit_kernel_vector(lm: LocalLM, layer: int, examples: Sequence[SteeringExample]) -> torch.Tensor:
    """-mean_i dL_i / dZ_i[t_i]: the unit-kernel descent direction, t_i the last prompt token of example i.

    One forward and one backward pass over the right-padded batch: with loss = mean_i L_i, row i of
    dloss/dZ is dL_i/dZ_i / N (rows do not interact), so summing the rows at t_i gives the mean.
    """
    ids, mask, spans = _example_batch(lm, examples)
    captured: list[torch.Tensor] = []

    def as_leaf(hidden: torch.Tensor) -> torch.Tensor:
        z = hidden.detach().requires_grad_(True)  # the block's output itself; nothing below it is needed
        captured.append(z)
        return z

    with torch.enable_grad(), lm.hook(layer, as_leaf):
        logits = lm.model(ids, attention_mask=mask).logits
        loss = _example_loss(lm, logits, ids, spans)
        (grad,) = torch.autograd.grad(loss, captured[0])
    last_prompt = torch.tensor([start - 1 for start, _ in spans])
    return -grad[torch.arange(len(spans)), last_prompt].sum(0).detach()


def mean_difference_vector(lm: LocalLM, layer: int, examples: Sequence[SteeringExample]) -> torch.Tensor:
    """mean_i [z(prompt_i + target_i) - z(prompt_i + other_i)] at each sequence's last token."""
    if any(not ex.other for ex in examples):
        raise ValueError("mean_difference needs an `other` continuation in every example")
    diffs = []
    with torch.no_grad():
        for name in ("target", "other"):
            ids, mask, spans = _example_batch(lm, examples, name)
            z = _layer_output(lm, layer, ids, mask)
            diffs.append(torch.stack([z[row, end - 1] for row, (_, end) in enumerate(spans)]))
    return (diffs[0] - diffs[1]).mean(0)


def _feeding_parameters(lm: LocalLM, layer: int) -> dict[str, torch.nn.Parameter]:
    """Weights that influence the output of block ``layer``: embeddings and blocks 0..layer."""
    names = {}
    for name, param in lm.model.named_parameters():
        parts = name.split(".")
        if "embed_tokens" in parts or ("layers" in parts and int(parts[parts.index("layers") + 1]) <= layer):
            names[name] = param
    return names


def finite_difference_fn(
    lm: LocalLM, layer: int, examples: Sequence[SteeringExample], rel_eps: float = 1e-4
) -> Callable[[list[int]], torch.Tensor]:
    """ids -> (z_{theta - eps g}(ids) - z_{theta + eps g}(ids)) / 2 eps, g = grad_theta mean_i L_i.

    One backward pass over the examples, then two forward passes per query; the central difference has
    O(eps^2) truncation error, which float32 needs (a one-sided difference is either too coarse or
    drowned in round-off).
    """
    params = _feeding_parameters(lm, layer)
    ids, mask, spans = _example_batch(lm, examples)
    logits = lm.model(ids, attention_mask=mask).logits
    loss = _example_loss(lm, logits, ids, spans)
    grads = torch.autograd.grad(loss, list(params.values()), allow_unused=True)
    grad_norm = torch.sqrt(sum((g.float() ** 2).sum() for g in grads if g is not None))
    weight_norm = torch.sqrt(sum((p.detach().float() ** 2).sum() for p in params.values()))
    eps = float(rel_eps * weight_norm / grad_norm.clamp_min(1e-12))
    minus = {name: (p.detach() - eps * g) for (name, p), g in zip(params.items(), grads) if g is not None}
    plus = {name: (p.detach() + eps * g) for (name, p), g in zip(params.items(), grads) if g is not None}

    def shift(query_ids: list[int]) -> torch.Tensor:
        x = torch.tensor([query_ids])
        with torch.no_grad():
            z_minus = _layer_output(lm, layer, x, params=minus)
            z_plus = _layer_output(lm, layer, x, params=plus)
        return ((z_minus - z_plus) / (2 * eps))[0]

    return shift


def build_steering(
    lm: LocalLM, method: str, layer: int, examples: Sequence[SteeringExample], alpha: float
) -> Steering:
    """A :class:`Steering` of strength ``alpha`` (shift norm / median activation norm) from ``examples``."""
    if method not in METHODS:
        raise ValueError(f"unknown steering method {method!r}; choose one of {', '.join(METHODS)}")
    if not examples:
        raise ValueError("steering needs at least one example")
    scale = alpha * _median_norm(lm, layer, examples)
    if method == "unit_kernel":
        v = unit_kernel_vector(lm, layer, examples)
        return Steering(layer, method, vector=scale * v / v.norm().clamp_min(1e-12))
    if method == "mean_difference":
        v = mean_difference_vector(lm, layer, examples)
        return Steering(layer, method, vector=scale * v / v.norm().clamp_min(1e-12))
    raw = finite_difference_fn(lm, layer, examples)

    def per_query(ids: list[int]) -> torch.Tensor:
        dz = raw(ids)
        return scale * dz / dz.norm(dim=-1).median().clamp_min(1e-12)

    return Steering(layer, method, per_query=per_query)


# ---------------------------------------------------------------------------------------------- measuring
def target_probability(
    lm: LocalLM, queries: Sequence[SteeringExample], steering: Steering | None = None
) -> list[float]:
    """p(target) / (p(target) + p(other)) for each query, with ``steering`` on the prompt positions."""
    probs = []
    for q in queries:
        prompt_ids = lm.encode(q.prompt)
        seqs = [prompt_ids + lm.encode(q.target), prompt_ids + lm.encode(q.other)]
        ids, mask = lm.batch_ids(seqs)
        n = len(prompt_ids)
        edit = None
        if steering is not None:
            shift = steering.shift_for(prompt_ids)

            def edit(hidden: torch.Tensor, shift: torch.Tensor = shift, n: int = n) -> torch.Tensor:
                hidden = hidden.clone()
                hidden[:, :n] += shift
                return hidden

        with torch.no_grad():
            if edit is None:
                logits = lm.model(ids, attention_mask=mask).logits
            else:
                with lm.hook(steering.layer, edit):
                    logits = lm.model(ids, attention_mask=mask).logits
        logp = torch.log_softmax(logits.float(), dim=-1)
        scores = []
        for row, seq in enumerate(seqs):
            pos = torch.arange(n - 1, len(seq) - 1)
            scores.append(float(logp[row, pos, ids[row, n : len(seq)]].sum()))
        probs.append(float(torch.softmax(torch.tensor(scores), 0)[0]))
    return probs


def steered_generate(
    lm: LocalLM,
    prompt: str,
    steering: Steering | None,
    max_new_tokens: int = 20,
    *,
    steer_generated: bool = False,
) -> str:
    """Greedy plain-text continuation of ``prompt`` with the steering on the prompt's positions.

    As the reference code (``gen_masking=prompt``), generated tokens are not shifted; they see the steered
    prompt through attention. ``steer_generated=True`` also shifts every generated token (by the mean of
    the prompt's shifts for a per-position ``finite_difference`` edit).
    """
    ids = lm.encode(prompt)
    if steering is None:
        return lm.generate(prompt, max_new_tokens=max_new_tokens, chat=False)
    shift = steering.shift_for(ids)
    tail = shift.mean(0)
    passes = [0]

    def edit(hidden: torch.Tensor) -> torch.Tensor | None:
        passes[0] += 1
        if passes[0] == 1:  # the prompt pass (later passes see one new token each, with the KV cache)
            return hidden + shift
        return hidden + tail if steer_generated else None

    with lm.hook(steering.layer, edit):
        return lm.generate(prompt, max_new_tokens=max_new_tokens, chat=False)


@dataclass
class SteeringPoint:
    method: str
    n_examples: int
    mean_target_probability: float
    flipped_fraction: float
    """Share of held-out prompts with p(target) > 0.5 after steering."""


@dataclass
class ColdSteerResult:
    layer: int
    alpha: float
    before_mean: float
    before_flipped: float
    points: list[SteeringPoint] = field(default_factory=list)


def run_cold_steer(
    lm: LocalLM,
    *,
    layer: int,
    alpha: float,
    example_counts: Sequence[int] = (1, 2, 4, 8, 16),
    methods: Sequence[str] = METHODS,
    heldout: int = 20,
    behaviour: str = "negative",
    seed: int = 0,
    progress: Callable[[int, int, str], None] | None = None,
) -> ColdSteerResult:
    """p(target) on held-out prompts before and after steering built from n examples, per method."""
    queries = positivity_examples(heldout, seed=seed, split="heldout", behaviour=behaviour)
    before = target_probability(lm, queries)
    result = ColdSteerResult(
        layer, alpha, sum(before) / len(before), sum(p > 0.5 for p in before) / len(before)
    )
    total, done = len(example_counts) * len(methods), 0
    for n in example_counts:
        examples = positivity_examples(n, seed=seed, split="train", behaviour=behaviour)
        for method in methods:
            steering = build_steering(lm, method, layer, examples, alpha)
            after = target_probability(lm, queries, steering)
            point = SteeringPoint(
                method, n, sum(after) / len(after), sum(p > 0.5 for p in after) / len(after)
            )
            result.points.append(point)
            done += 1
            if progress is not None:
                progress(done, total, f"{method} n={n}: p(target) {point.mean_target_probability:.2f}")
    return result
