"""Run agents on ScienceBoard tasks and write what happened: per-task logs and a results table per domain.

``run_tasks(tasks, agent, interface=..., out=DIR)`` plays one episode per task and writes::

    DIR/
      results.json        one record per task (domain, difficulty, success, steps, seconds, error)
      results.md          success per domain and difficulty, as a table
      <task-id>/steps.jsonl   one line per step: action, output, reward, info (and the a11y tree, gui)
      <task-id>/step_000.png  the screenshot after each step (gui interface)

Episodes are independent, so a sweep can run on Ray (``workers`` > 1, :func:`embodia.runner.parallel.map_tasks`);
each worker runs whole episodes, the driver writes the table. Ctrl-C stops after closing the episode's
sandbox (programs killed, workspace removed).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from embodia.agents.scienceboard.agents import Agent, make_agent
from embodia.agents.scienceboard.env import ScienceBoardEnv
from embodia.agents.scienceboard.sandbox import SandboxError, boundary_problem
from embodia.agents.scienceboard.tasks import DIFFICULTIES, DOMAINS, Task
from embodia.core.results import Column, Table


def run_episode(
    task: Task,
    agent: Agent,
    *,
    interface: str = "api",
    observation: str = "both",
    log_dir: Path | None = None,
    sandboxed: bool = True,
) -> dict[str, Any]:
    """One episode of ``task`` with ``agent``; its result record (and the step log under ``log_dir``).

    ``sandboxed=False`` runs the programs without the operating-system boundary (``--unsafe-no-sandbox``)."""
    started = time.monotonic()
    record: dict[str, Any] = {
        "task": task.id,
        "domain": task.domain,
        "difficulty": task.difficulty,
        "interface": interface,
        "observation": observation,
        "agent": agent.name,
        "success": False,
        "steps": 0,
        "error": None,
    }
    log = None
    if log_dir is not None:
        log_dir.mkdir(parents=True, exist_ok=True)
        log = (log_dir / "steps.jsonl").open("w", encoding="utf-8")
    env = ScienceBoardEnv(interface, observation, sandboxed=sandboxed)  # type: ignore[arg-type]
    try:
        obs = env.reset(task)
        agent.reset(task, interface)
        _log_step(log, log_dir, 0, None, obs, 0.0, {})
        while True:
            action = agent.act(obs)
            obs, reward, terminated, truncated, info = env.step(action)
            record["steps"] += 1
            _log_step(log, log_dir, record["steps"], action, obs, reward, info)
            if terminated or truncated:
                record["success"] = bool(info.get("success"))
                record["checks"] = info.get("checks", [])
                record["error"] = info.get("error") or info.get("limit")
                break
    except SandboxError as error:
        record["error"] = str(error)
    finally:
        env.close()
        if log is not None:
            log.close()
    record["seconds"] = round(time.monotonic() - started, 2)
    return record


def _log_step(
    log: Any, folder: Path | None, step: int, action: Any, obs: dict, reward: float, info: dict
) -> None:
    if log is None or folder is None:
        return
    entry: dict[str, Any] = {
        "step": step,
        "action": None if action is None else {k: v for k, v in vars(action).items()},
        "output": obs.get("output", ""),
        "status": obs.get("status"),
        "reward": reward,
        "info": info,
    }
    if obs.get("a11y_tree") is not None:
        entry["a11y_tree"] = obs["a11y_tree"]
    if obs.get("marks") is not None:
        entry["marks"] = obs["marks"]
    if obs.get("screenshot") is not None:
        name = f"step_{step:03d}.png"
        obs["screenshot"].save(folder / name)
        entry["screenshot"] = name
    log.write(json.dumps(entry) + "\n")
    log.flush()


def _episode_task(
    task: Task, agent_spec: str, interface: str, observation: str, log_dir: str | None, sandboxed: bool
) -> dict:
    """One episode on a Ray worker (the agent is built there: models are not shipped between processes)."""
    agent = make_agent(agent_spec, observation)
    return run_episode(
        task,
        agent,
        interface=interface,
        observation=observation,
        log_dir=Path(log_dir) if log_dir else None,
        sandboxed=sandboxed,
    )


def run_tasks(
    tasks: list[Task],
    agent: str,
    *,
    interface: str = "api",
    observation: str = "both",
    out: str | Path | None = None,
    workers: int = 1,
    ray_address: str | None = None,
    on_result: Callable[[dict[str, Any]], None] | None = None,
    sandboxed: bool = True,
) -> list[dict[str, Any]]:
    """Run ``agent`` (see :func:`~embodia.agents.scienceboard.agents.make_agent`) on every task; records.

    Raises:
        SandboxError: ``sandboxed`` and bubblewrap cannot build the boundary on this machine (before any
            episode starts; ``sandboxed=False`` is ``--unsafe-no-sandbox``).
    """
    if sandboxed and (problem := boundary_problem()):
        raise SandboxError(problem)
    out_dir = Path(out) if out is not None else None
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
    records: list[dict[str, Any]] = []
    if workers > 1 or ray_address:
        from embodia.runner.parallel import map_tasks

        arguments = [
            (task, agent, interface, observation, str(out_dir / task.id) if out_dir else None, sandboxed)
            for task in tasks
        ]
        records = map_tasks(
            _episode_task, arguments, workers, ray_address, on_result=lambda i, r: on_result and on_result(r)
        )
    else:
        built = make_agent(agent, observation)
        for task in tasks:
            record = run_episode(
                task,
                built,
                interface=interface,
                observation=observation,
                log_dir=out_dir / task.id if out_dir else None,
                sandboxed=sandboxed,
            )
            records.append(record)
            if on_result is not None:
                on_result(record)
            if out_dir is not None:
                write_results(records, out_dir)
    if out_dir is not None:
        write_results(records, out_dir)
    return records


def summarise(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``{domain: {difficulty: [successes, episodes], ..., "total": [s, n]}}`` plus an ``"all"`` row."""
    table: dict[str, dict[str, Any]] = {}
    for record in records:
        for domain in (record["domain"], "all"):
            row = table.setdefault(domain, {key: [0, 0] for key in (*DIFFICULTIES, "total")})
            for key in (record["difficulty"], "total"):
                row[key][0] += int(record["success"])
                row[key][1] += 1
    order = [d for d in (*DOMAINS, "all") if d in table]
    return {domain: table[domain] for domain in order}


def results_markdown(records: list[dict[str, Any]]) -> str:
    """The success table per domain and difficulty (successes/episodes and percent)."""
    lines = ["| domain | easy | medium | hard | total |", "|---|---|---|---|---|"]
    for domain, row in summarise(records).items():
        cells = []
        for key in (*DIFFICULTIES, "total"):
            done, count = row[key]
            cells.append(f"{done}/{count} ({100 * done / count:.0f} %)" if count else "-")
        lines.append(f"| {domain} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def success_table(records: list[dict[str, Any]]) -> Table:
    """The success table per domain and difficulty as a results table (success rates as fractions)."""
    table = Table(
        [
            Column("domain", "domain"),
            Column("tasks", "tasks (easy, medium, hard)"),
            *(Column(key, key, ".0%") for key in DIFFICULTIES),
            Column("solved", "solved"),
            Column("total", "total", ".0%"),
        ]
    )
    for domain, row in summarise(records).items():
        rates = {key: row[key][0] / row[key][1] if row[key][1] else None for key in (*DIFFICULTIES, "total")}
        table.add(domain=domain, tasks=[row[key][1] for key in DIFFICULTIES], solved=row["total"][0], **rates)
    return table


def write_results(records: list[dict[str, Any]], out_dir: Path) -> None:
    """``results.json`` and ``results.md`` in ``out_dir``."""
    (out_dir / "results.json").write_text(json.dumps(records, indent=2, default=str) + "\n")
    (out_dir / "results.md").write_text(results_markdown(records))
