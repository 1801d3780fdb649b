"""Tools ``scienceboard_tasks``, ``scienceboard_reset``, ``scienceboard_step``, ``scienceboard_screenshot``,
``scienceboard_close``: the ScienceBoard environment as tools, so that an MCP client can be the agent.

Paper: "ScienceBoard: Evaluating Multimodal Autonomous Agents in Realistic Scientific Workflows"
(ICLR 2026, arXiv 2505.19897). A client lists the tasks, starts one (``scienceboard_reset`` returns a session
id and the first observation), acts (``scienceboard_step`` with one action: a program command on the api
interface, keyboard / mouse on the gui interface, ``done`` when finished) until the episode ends with the
checker's verdict, and may save screenshots (gui) inside the server's workspace. Sessions live in the server
process: at most :data:`MAX_SESSIONS` at once, each closed (programs killed, sandbox removed) by
``scienceboard_close``, when its episode ends, or when the server exits. The agent gets the instruction and
observations only, never the task's solutions or checker rules.
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass, field
from typing import Any, Literal

from embodia.agents.tools.registry import OutputPath, ToolArgumentError, tool

MAX_SESSIONS = 2
"""Episodes open at once in one server (each runs a real program, some with a display)."""

_SESSIONS: dict[str, Any] = {}
_COUNTER = itertools.count(1)
_LOCK = threading.Lock()


@dataclass
class TasksArgs:
    """Arguments of ``scienceboard_tasks``."""

    domain: Literal["kalgebra", "grass", "texstudio", "stellarium", "pymol", "coq"] | None = None
    """Only this domain."""
    difficulty: Literal["easy", "medium", "hard"] | None = None
    """Only this difficulty."""


@tool("scienceboard_tasks")
def scienceboard_tasks(args: TasksArgs) -> dict:
    """List ScienceBoard tasks (id, domain, difficulty, interfaces, step budget, instruction)."""
    from embodia.agents.scienceboard.tasks import load_tasks

    tasks = load_tasks(
        domains=[args.domain] if args.domain else None,
        difficulties=[args.difficulty] if args.difficulty else None,
    )
    return {
        "tasks": [
            {
                "id": task.id,
                "domain": task.domain,
                "difficulty": task.difficulty,
                "interfaces": task.interfaces,
                "max_steps": task.max_steps,
                "instruction": task.instruction,
            }
            for task in tasks
        ]
    }


@dataclass
class ResetArgs:
    """Arguments of ``scienceboard_reset``."""

    task: str
    """A task id from ``scienceboard_tasks``."""
    interface: Literal["api", "gui"] = "api"
    """``api``: one program command per step; ``gui``: keyboard and mouse on a virtual screen."""
    observation: Literal["screenshot", "a11y_tree", "both", "set_of_marks"] = "a11y_tree"
    """What gui observations contain (screenshots are saved with ``scienceboard_screenshot``)."""


def _observation(observation: dict[str, Any]) -> dict[str, Any]:
    shown = {key: value for key, value in observation.items() if key != "screenshot"}
    if observation.get("screenshot") is not None:
        shown["screenshot"] = "taken (save it with scienceboard_screenshot)"
    return shown


@tool("scienceboard_reset")
def scienceboard_reset(args: ResetArgs) -> dict:
    """Start a ScienceBoard task in a fresh sandbox; returns the session id and the first observation."""
    from embodia.agents.scienceboard.env import ScienceBoardEnv
    from embodia.agents.scienceboard.tasks import TaskError, load_tasks

    try:
        (task,) = load_tasks(ids=[args.task])
    except (TaskError, ValueError):
        raise ToolArgumentError(f"no task {args.task!r}; scienceboard_tasks lists them") from None
    with _LOCK:
        if len(_SESSIONS) >= MAX_SESSIONS:
            raise ToolArgumentError(
                f"{len(_SESSIONS)} sessions are open (at most {MAX_SESSIONS}); close one with scienceboard_close"
            )
        session = f"sb{next(_COUNTER)}"
        env = ScienceBoardEnv(args.interface, args.observation)
        _SESSIONS[session] = env
    try:
        observation = env.reset(task)
    except BaseException:
        _close(session)
        raise
    return {"session": session, "task": env.describe(), "observation": _observation(observation)}


@dataclass
class StepArgs:
    """Arguments of ``scienceboard_step``."""

    session: str
    """The session id from ``scienceboard_reset``."""
    action: dict[str, Any] = field(default_factory=dict)
    """One action: {"type": "command", "text": ...} (api), {"type": "type" | "key" | "click" | "move" |
    "scroll", ...} (gui), {"type": "wait", "seconds": 1}, {"type": "done"} or {"type": "fail"}."""


def _env(session: str) -> Any:
    env = _SESSIONS.get(session)
    if env is None:
        raise ToolArgumentError(f"no open session {session!r}; start one with scienceboard_reset")
    return env


def _close(session: str) -> None:
    with _LOCK:
        env = _SESSIONS.pop(session, None)
    if env is not None:
        env.close()


@tool("scienceboard_step")
def scienceboard_step(args: StepArgs) -> dict:
    """Take one action in a ScienceBoard session; returns the observation, reward, whether the episode ended,
    and (at the end) whether the task succeeded. The session closes when the episode ends."""
    from embodia.agents.scienceboard.tasks import Action
    from embodia.core.errors import EmbodiaError
    from embodia.core.validation import validate

    env = _env(args.session)
    action = validate(Action, args.action, where="action", error=ToolArgumentError)
    try:
        observation, reward, terminated, truncated, info = env.step(action)
    except EmbodiaError:
        _close(args.session)
        raise
    if terminated or truncated:
        _close(args.session)
    return {
        "observation": _observation(observation),
        "reward": reward,
        "terminated": terminated,
        "truncated": truncated,
        "info": info,
    }


@dataclass
class ScreenshotArgs:
    """Arguments of ``scienceboard_screenshot``."""

    session: str
    """The session id (gui interface)."""
    out: OutputPath
    """PNG file to write; under `embodia mcp`, inside its workspace."""


@tool("scienceboard_screenshot")
def scienceboard_screenshot(args: ScreenshotArgs) -> dict:
    """Save the current screen of a gui ScienceBoard session as a PNG file."""
    env = _env(args.session)
    if env.sandbox is None or env.sandbox.display is None:
        raise ToolArgumentError(f"session {args.session} has no screen (it runs the api interface)")
    image = env.sandbox.screenshot()
    image.save(args.out, format="PNG")
    return {"path": args.out, "width": image.width, "height": image.height}


@dataclass
class CloseArgs:
    """Arguments of ``scienceboard_close``."""

    session: str
    """The session id."""


@tool("scienceboard_close")
def scienceboard_close(args: CloseArgs) -> dict:
    """Close a ScienceBoard session: its programs are stopped and its sandbox removed."""
    _env(args.session)
    _close(args.session)
    return {"closed": args.session}
