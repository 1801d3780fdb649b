"""ScienceBoard tasks: the JSON format, its validation, and the shipped task set.

Paper: "ScienceBoard: Evaluating Multimodal Autonomous Agents in Realistic Scientific Workflows"
(ICLR 2026, arXiv 2505.19897). Each task is one JSON file, close to the paper's format::

    {
      "id": "kalgebra-define-variable",
      "domain": "kalgebra",
      "difficulty": "easy",
      "instruction": "Define a variable x whose value is 42.",
      "max_steps": 8,
      "setup": [{"type": "command", "text": "y:=2"}],
      "evaluate": [{"query": "variable", "args": {"name": "x"}, "op": "approx", "value": 42}],
      "oracle": [{"type": "command", "text": "x:=42"}, {"type": "done"}],
      "wrong": [{"type": "command", "text": "x:=41"}, {"type": "done"}]
    }

- ``setup``: actions run through the programmatic interface before the agent's first observation (loading a
  structure, defining variables, writing a half-finished document); ``files`` (name -> text) are written into
  the episode's workspace first.
- ``evaluate``: rules, all of which must hold (reward 1, else 0). Each rule asks the domain's program a
  ``query`` (with ``args``) about its *state* -- a variable's value, a map's statistics, the compiled PDF's
  text, the sky's selected object, whether Coq accepts a proof -- and compares the answer with ``op`` and
  ``value`` (:mod:`embodia.agents.scienceboard.checkers`).
- ``oracle``: a scripted action sequence that solves the task (it proves the task solvable and the checker
  right); ``oracle_gui`` the same through the GUI where the domain has one; ``wrong``: a plausible but wrong
  sequence that must score 0 on the same checker. Agents never see these three.
- ``allow_shell`` / ``allow_outside_files``: off unless the task needs them (isolation, see
  :mod:`embodia.agents.scienceboard.sandbox`).

Tasks ship under ``embodia/agents/scienceboard/tasks/<domain>/*.json``; :func:`load_tasks` reads them (or a
user's folder or file) and :func:`validate_task_file` says, in one line per problem, what is wrong with one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field

from embodia.core.errors import ConfigError
from embodia.core.validation import validate

DOMAINS = ("kalgebra", "grass", "texstudio", "stellarium", "pymol", "coq")
"""The six domains: ScienceBoard's algebra (KAlgebra), GIS (GRASS), documents (TeXstudio), astronomy
(Stellarium for the paper's Celestia), biochemistry (PyMOL for ChimeraX), theorem proving (Coq for Lean 4)."""
GUI_DOMAINS = ("kalgebra", "grass", "texstudio", "stellarium", "pymol", "coq")
"""Domains with a GUI interface (Qt programs driven with xdotool on Xvfb, read through AT-SPI)."""
DIFFICULTIES = ("easy", "medium", "hard")
TASKS_DIR = Path(__file__).parent / "tasks"

Domain = Literal["kalgebra", "grass", "texstudio", "stellarium", "pymol", "coq"]
Difficulty = Literal["easy", "medium", "hard"]
ActionType = Literal[
    "command", "type", "key", "click", "click_mark", "move", "scroll", "wait", "shell", "done", "fail"
]


class TaskError(ConfigError):
    """A task file that is missing, not JSON, or does not follow the task format."""


@dataclass
class Action:
    """One agent action (the same format for oracles, LM agents and MCP clients)."""

    type: ActionType
    """``command`` (programmatic interface: one command of the program), ``type`` / ``key`` / ``click`` /
    ``move`` / ``scroll`` (GUI interface), ``click_mark`` (GUI interface with set-of-marks observations: click
    the centre of a numbered mark), ``wait``, ``shell`` (refused unless the task allows it), ``done``
    (the agent thinks the task is solved), ``fail`` (the agent gives up)."""
    text: str = ""
    """The command (``command``, ``shell``), the text to type (``type``), or the keys (``key``: xdotool key
    names joined by ``+``, several chords separated by spaces, e.g. ``ctrl+s Return``). A newline inside
    ``type`` text is not a line break in most editors: press ``Return`` with a ``key`` action."""
    x: Annotated[int, Field(ge=0, le=10_000)] = 0
    """Screen x in pixels (``click``, ``move``, ``scroll``)."""
    y: Annotated[int, Field(ge=0, le=10_000)] = 0
    """Screen y in pixels (``click``, ``move``, ``scroll``)."""
    button: Annotated[int, Field(ge=1, le=3)] = 1
    """Mouse button (``click``): 1 left, 2 middle, 3 right."""
    clicks: Annotated[int, Field(ge=1, le=3)] = 1
    """How many clicks (``click``; 2 = double click), or scroll notches (``scroll``)."""
    down: bool = True
    """Scroll direction (``scroll``): True = down."""
    seconds: Annotated[float, Field(ge=0, le=30)] = 1.0
    """How long to wait (``wait``)."""
    mark: Annotated[int, Field(ge=0, le=10_000)] = 0
    """The number of a mark of the last set-of-marks observation (``click_mark``; clicked with ``button``
    and ``clicks``)."""


@dataclass
class Rule:
    """One evaluation rule: ask the program ``query(args)`` and compare the answer with ``value``."""

    query: str
    """A state query of the domain's program (each domain lists its queries in its module docstring)."""
    op: Literal["equals", "approx", "contains", "not_contains", "regex", "gte", "lte", "true", "false", "in"]
    """Comparison: ``equals`` (after normalising whitespace for text), ``approx`` (|a - v| <= tolerance, per
    element for lists), ``contains`` / ``not_contains`` (substring, case-insensitive; or list membership),
    ``regex`` (Python ``re.search``), ``gte`` / ``lte`` (numbers), ``true`` / ``false`` (the answer's truth),
    ``in`` (the answer is one of ``value``)."""
    args: dict[str, Any] = field(default_factory=dict)
    """Arguments of the query (a variable's name, a map's name, a selection)."""
    value: Any = None
    """What the answer is compared with (not used by ``true`` / ``false``)."""
    tolerance: Annotated[float, Field(ge=0)] = 1e-6
    """Absolute tolerance of ``approx``."""


@dataclass
class Task:
    """A ScienceBoard task (see the module docstring for the JSON format)."""

    id: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9_-]{2,80}$")]
    """Unique id, lowercase, e.g. ``kalgebra-define-variable``."""
    domain: Domain
    """Which program the task runs on."""
    difficulty: Difficulty
    """easy / medium / hard, as the paper grades its tasks."""
    instruction: Annotated[str, Field(min_length=10, max_length=2000)]
    """What the agent is asked to do, in plain language."""
    evaluate: Annotated[list[Rule], Field(min_length=1)]
    """Rules that read the program's state; all must hold for success."""
    oracle: Annotated[list[Action], Field(min_length=1)]
    """A programmatic action sequence that solves the task (not shown to agents)."""
    wrong: Annotated[list[Action], Field(min_length=1)]
    """A plausible wrong action sequence that must fail the checker (not shown to agents)."""
    max_steps: Annotated[int, Field(ge=1, le=100)] = 15
    """Step budget: the episode is truncated after this many actions."""
    setup: list[Action] = field(default_factory=list)
    """Programmatic actions run before the agent starts (their output is not shown)."""
    files: dict[str, str] = field(default_factory=dict)
    """Files written into the workspace before setup (relative name -> text)."""
    oracle_gui: list[Action] | None = None
    """The GUI-interface solution, for domains with a GUI."""
    interfaces: list[Literal["api", "gui"]] = field(default_factory=lambda: ["api"])
    """Interfaces the task can run on (``gui`` only for the GUI domains)."""
    allow_shell: bool = False
    """Whether ``shell`` actions are run (in the workspace) instead of refused."""
    allow_outside_files: bool = False
    """Whether commands may name files outside the workspace."""
    step_timeout: Annotated[float, Field(gt=0, le=600)] = 30.0
    """Seconds one action may take before the program is declared hung and killed."""
    task_timeout: Annotated[float, Field(gt=0, le=3600)] = 300.0
    """Seconds the whole episode may take."""
    source: str = ""
    """Where the task was read from (filled by the loader)."""

    def __post_init__(self) -> None:
        if "gui" in self.interfaces and self.domain not in GUI_DOMAINS:
            raise ValueError(f"interface 'gui' is only available for {', '.join(GUI_DOMAINS)}")
        if "gui" in self.interfaces and not self.oracle_gui:
            raise ValueError("a task with the 'gui' interface needs an 'oracle_gui' solution")
        for name in self.files:
            path = Path(name)
            if path.is_absolute() or ".." in path.parts or not name:
                raise ValueError(f"files: {name!r} must be a relative path inside the workspace")


def parse_task(data: Any, where: str) -> Task:
    """A :class:`Task` from parsed JSON; :class:`TaskError` names every problem and ``where``."""
    if not isinstance(data, dict):
        raise TaskError(f"{where}: a task must be a JSON object, got {type(data).__name__}")
    task = validate(Task, {**data, "source": where}, where=where, error=TaskError)
    return task


def read_task_file(path: str | Path) -> Task:
    """Read and validate one task file."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise TaskError(
            f"{path}: no such task file; `embodia scienceboard tasks` lists the shipped ones"
        ) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise TaskError(f"{path}: not a JSON task file ({error}); fix the file or remove it") from None
    return parse_task(data, str(path))


def validate_task_file(path: str | Path) -> list[str]:
    """Problems of one task file (empty if it is valid)."""
    try:
        read_task_file(path)
    except TaskError as error:
        return [str(error)]
    return []


def load_tasks(
    source: str | Path | None = None,
    *,
    domains: list[str] | None = None,
    difficulties: list[str] | None = None,
    ids: list[str] | None = None,
    interface: str | None = None,
) -> list[Task]:
    """Tasks from ``source`` (a task file, a folder of them searched recursively; default: the shipped
    set), filtered by domain, difficulty, id (exact or glob) and interface; sorted by domain then id.

    Raises :class:`TaskError` for unreadable files, duplicate ids, unknown filters, or an empty selection.
    """
    import fnmatch

    root = Path(source) if source is not None else TASKS_DIR
    if not root.exists():
        raise TaskError(f"{root}: no such task file or folder")
    files = [root] if root.is_file() else sorted(root.rglob("*.json"))
    tasks: dict[str, Task] = {}
    for path in files:
        task = read_task_file(path)
        if task.id in tasks:
            raise TaskError(f"{path}: task id {task.id!r} is also used by {tasks[task.id].source}")
        tasks[task.id] = task
    for name, wanted, known in (("domain", domains, DOMAINS), ("difficulty", difficulties, DIFFICULTIES)):
        for value in wanted or []:
            if value not in known:
                raise TaskError(f"unknown {name} {value!r}; choose from {', '.join(known)}")
    selected = [
        task
        for task in tasks.values()
        if (not domains or task.domain in domains)
        and (not difficulties or task.difficulty in difficulties)
        and (not ids or any(fnmatch.fnmatchcase(task.id, pattern) for pattern in ids))
        and (interface is None or interface in task.interfaces)
    ]
    if not selected:
        raise TaskError(f"no task in {root} matches the selection; `embodia scienceboard tasks` lists them")
    return sorted(selected, key=lambda task: (DOMAINS.index(task.domain), task.id))


def task_counts(tasks: list[Task]) -> dict[str, dict[str, int]]:
    """``{domain: {difficulty: count, "total": n}}``."""
    counts: dict[str, dict[str, int]] = {}
    for task in tasks:
        row = counts.setdefault(task.domain, dict.fromkeys(DIFFICULTIES, 0) | {"total": 0})
        row[task.difficulty] += 1
        row["total"] += 1
    return counts
