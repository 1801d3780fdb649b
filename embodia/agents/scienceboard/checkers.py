"""ScienceBoard's state-based evaluation: every rule of a task asks the program a query and compares.

A task succeeds when all of its rules hold (:func:`evaluate`). Answers are whatever the program's query
returned (a number, text, a list, a bool, or None when the state does not exist, e.g. an undefined
variable); a rule whose query fails counts as not holding, with the reason in the check's message.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from embodia.agents.scienceboard.tasks import Rule
from embodia.core.errors import EmbodiaError


@dataclass
class Check:
    """The outcome of one rule."""

    rule: Rule
    passed: bool
    answer: Any
    message: str


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


def _normal(value: Any) -> Any:
    return " ".join(value.split()) if isinstance(value, str) else value


def compare(answer: Any, rule: Rule) -> bool:
    """Whether ``answer`` satisfies ``rule`` (see :class:`~embodia.agents.scienceboard.tasks.Rule`)."""
    op, value = rule.op, rule.value
    if op == "true":
        return bool(answer)
    if op == "false":
        return not answer
    if answer is None:
        return False
    if op == "equals":
        if isinstance(value, int | float) and not isinstance(value, bool):
            number = _number(answer)
            return number is not None and number == float(value)
        return _normal(answer) == _normal(value)
    if op == "approx":
        if isinstance(value, list):
            if not isinstance(answer, list | tuple) or len(answer) != len(value):
                return False
            return all(_close(a, v, rule.tolerance) for a, v in zip(answer, value, strict=True))
        return _close(answer, value, rule.tolerance)
    if op in ("contains", "not_contains"):
        if isinstance(answer, list | tuple | set):
            found = any(_normal(str(item)).lower() == _normal(str(value)).lower() for item in answer)
        else:
            found = _normal(str(value)).lower() in _normal(str(answer)).lower()
        return found if op == "contains" else not found
    if op == "regex":
        return re.search(str(value), str(answer)) is not None
    if op in ("gte", "lte"):
        number, bound = _number(answer), _number(value)
        if number is None or bound is None:
            return False
        return number >= bound if op == "gte" else number <= bound
    if op == "in":
        return isinstance(value, list) and any(_normal(answer) == _normal(item) for item in value)
    raise ValueError(f"unknown comparison {op!r}")


def _close(answer: Any, value: Any, tolerance: float) -> bool:
    a, v = _number(answer), _number(value)
    return a is not None and v is not None and math.isfinite(a) and abs(a - v) <= tolerance


def evaluate(rules: list[Rule], query: Callable[[str, dict[str, Any]], Any]) -> tuple[bool, list[Check]]:
    """Run every rule through ``query``; (all passed, the checks)."""
    checks = []
    for rule in rules:
        try:
            answer = query(rule.query, rule.args)
        except EmbodiaError as error:
            checks.append(Check(rule, False, None, f"{rule.query}: could not read the state ({error})"))
            continue
        passed = compare(answer, rule)
        shown = repr(answer)
        if len(shown) > 200:
            shown = shown[:200] + "..."
        expected = "" if rule.op in ("true", "false") else f" {rule.value!r}"
        checks.append(
            Check(
                rule,
                passed,
                answer,
                f"{rule.query}{rule.args or ''} = {shown}: {rule.op}{expected} -> {passed}",
            )
        )
    return all(check.passed for check in checks), checks
