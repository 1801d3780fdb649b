"""Helpers for the ScienceBoard tests: tasks built inline, episodes played to the end."""

from __future__ import annotations

from typing import Any

from embodia.agents.scienceboard.env import ScienceBoardEnv
from embodia.agents.scienceboard.tasks import Task, parse_task


def make_task(**fields: Any) -> Task:
    """A KAlgebra task with sensible defaults, overridden by ``fields``."""
    data: dict[str, Any] = {
        "id": "kalgebra-test-task",
        "domain": "kalgebra",
        "difficulty": "easy",
        "instruction": "Define a variable x whose value is 42.",
        "evaluate": [{"query": "variable", "args": {"name": "x"}, "op": "approx", "value": 42}],
        "oracle": [{"type": "command", "text": "x:=42"}, {"type": "done"}],
        "wrong": [{"type": "command", "text": "x:=41"}, {"type": "done"}],
    }
    data.update(fields)
    return parse_task(data, "test")


def play(task: Task, actions: list, interface: str = "api") -> tuple[float, dict, list[dict]]:
    """Run ``actions`` on ``task`` until the episode ends; (last reward, last info, observations)."""
    observations = []
    with ScienceBoardEnv(interface) as env:
        observations.append(env.reset(task))
        reward, info = 0.0, {}
        for action in actions:
            observation, reward, terminated, truncated, info = env.step(action)
            observations.append(observation)
            if terminated or truncated:
                break
    return reward, info, observations
