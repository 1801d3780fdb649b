"""Results as plain JSON values (what tools return, what reports and result files hold)."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any


def to_jsonable(value: Any) -> Any:
    """``value`` as plain JSON types: dataclasses and mappings to dicts, arrays to lists, NaN/inf to None."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Path):
        return str(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_jsonable(v) for v in value]
    if hasattr(value, "tolist"):  # numpy arrays and scalars, torch tensors
        return to_jsonable(value.tolist())
    if hasattr(value, "model_dump"):  # pydantic models
        return to_jsonable(value.model_dump())
    raise TypeError(f"cannot convert {type(value).__name__} to JSON")
