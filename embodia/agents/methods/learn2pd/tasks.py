"""Tasks with checkable answers for the masked-diffusion LM.

Every example is a fixed-length row ``prompt | [SEP] | answer``: the prompt is a digit string of
``min_len`` (default 2) to ``max_len`` digits padded with [EOT], the answer region has ``answer_len``
positions (default ``max_len``) holding the answer followed by [EOT] padding (so End-of-Text Prediction has
something to skip; with ``answer_len`` 48 and 3-10 digits, at least 38 of the 48 positions are padding). Tasks: ``copy`` (the digits),
``reverse`` (reversed), ``sort`` (ascending) and ``shuffle`` (any permutation of the digits: training
answers are random permutations, so the model's distribution over answers has many modes and positions
decoded in the same pass can disagree — e.g. repeat a digit — which is where parallel decoding can fail).
A deterministic task's answer is checked by exact match, ``shuffle``'s by being a permutation (:func:`check`).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Vocab:
    """Token ids: digits 0-9, then [SEP], [EOT], [MASK]."""

    sep: int = 10
    eot: int = 11
    mask: int = 12
    size: int = 13


VOCAB = Vocab()
TASKS = ("copy", "reverse", "sort", "shuffle")


def _answer(task: str, digits: list[int], generator: torch.Generator | None = None) -> list[int]:
    if task == "copy":
        return list(digits)
    if task == "reverse":
        return digits[::-1]
    if task == "sort":
        return sorted(digits)
    if task == "shuffle":
        order = torch.randperm(len(digits), generator=generator).tolist()
        return [digits[i] for i in order]
    raise ValueError(f"unknown task {task!r}; choose from {', '.join(TASKS)}")


def make_batch(
    task: str,
    n: int,
    max_len: int,
    generator: torch.Generator,
    answer_len: int | None = None,
    min_len: int = 2,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` examples: prompts ``[n, max_len + 1]`` (``min_len``-``max_len`` digits, [EOT] padding, [SEP]) and
    answers ``[n, answer_len]`` (``answer_len`` defaults to ``max_len``; it may not be shorter)."""
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}; choose from {', '.join(TASKS)}")
    answer_len = max_len if answer_len is None else answer_len
    if answer_len < max_len or not 1 <= min_len <= max_len:
        raise ValueError(
            f"need 1 <= min_len <= max_len <= answer_len, got {min_len}, {max_len}, {answer_len}"
        )
    prompts = torch.full((n, max_len + 1), VOCAB.eot, dtype=torch.long)
    answers = torch.full((n, answer_len), VOCAB.eot, dtype=torch.long)
    lengths = torch.randint(min_len, max_len + 1, (n,), generator=generator)
    digits = torch.randint(0, 10, (n, max_len), generator=generator)
    for i in range(n):
        k = int(lengths[i])
        d = digits[i, :k].tolist()
        prompts[i, :k] = torch.tensor(d)
        answers[i, :k] = torch.tensor(_answer(task, d, generator))
    prompts[:, max_len] = VOCAB.sep
    return prompts, answers


def check(task: str, prompts: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """Whether each decoded answer ``[B, L]`` is right for its prompt (bool ``[B]``)."""
    width = tokens.shape[1]
    digits = prompts[:, :-1]
    digits = torch.cat([digits, digits.new_full((len(digits), width - digits.shape[1]), VOCAB.eot)], dim=1)
    if task != "shuffle":
        rows = [[d for d in row if d < 10] for row in digits.tolist()]
        want = torch.tensor([_answer(task, d) + [VOCAB.eot] * (tokens.shape[1] - len(d)) for d in rows])
        return (tokens == want).all(dim=1)
    length = (digits < 10).sum(dim=1, keepdim=True)
    in_order = (tokens < 10) == (torch.arange(tokens.shape[1])[None] < length)
    same = (tokens.sort(dim=1).values == digits.sort(dim=1).values).all(dim=1)
    return same & in_order.all(dim=1)
