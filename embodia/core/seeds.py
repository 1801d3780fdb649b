"""Seeds: episode ``i`` of a run seeded ``s`` uses ``s + i``; every seed must be a valid NumPy seed."""

from __future__ import annotations

from embodia.core.errors import EmbodiaError

MAX_SEED = 2**32 - 1
"""Largest seed NumPy accepts."""


def check_seeds(first: int, count: int = 1) -> None:
    """Refuse ``first .. first + count - 1`` unless every one lies in ``[0, MAX_SEED]``."""
    if (
        isinstance(first, bool)
        or not isinstance(first, int)
        or not 0 <= first <= MAX_SEED - max(count, 1) + 1
    ):
        last = f"..{first + count - 1}" if count > 1 and isinstance(first, int) else ""
        raise EmbodiaError(f"seed {first}{last} is outside [0, {MAX_SEED}] (NumPy's seeds)")
