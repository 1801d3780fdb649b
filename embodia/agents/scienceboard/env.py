"""The ScienceBoard episode API: ``reset(task) -> observation``, ``step(action) -> (observation, reward,
terminated, truncated, info)``, as gymnasium shapes it.

Paper: "ScienceBoard: Evaluating Multimodal Autonomous Agents in Realistic Scientific Workflows"
(ICLR 2026, arXiv 2505.19897). An episode runs one task on its domain's real program in a fresh
:class:`~embodia.agents.scienceboard.sandbox.Sandbox`:

1. ``reset``: new workspace (and, for the GUI interface, a new Xvfb display and session bus), the task's
   files written, the program started, the task's setup actions run, the first observation returned;
2. ``step``: one action. The **api** interface takes ``command`` actions (one command in the program's own
   language); the **gui** interface takes ``type`` / ``key`` / ``click`` / ``move`` / ``scroll`` through
   xdotool, and ``click_mark`` with set-of-marks observations. Both take ``wait``, ``done`` and ``fail``. An action the interface does not have, a ``shell``
   action the task does not allow, or a command naming files outside the workspace is *refused*: the
   observation says so and the episode goes on (the step still counts);
3. the episode ends when the agent says ``done`` / ``fail`` (terminated), or at the step budget, the task's
   time limit, or a hung / crashed program (truncated; a hung program is killed at its step limit). The
   checker then reads the program's state: reward 1.0 if every rule holds, else 0.0, and
   ``info["success"]``.

Observations are dicts: ``instruction``, ``interface``, ``step``, ``steps_left``, ``output`` (the program's
answer, or why an action was refused), ``status`` (the program's visible state on the api interface), and on
the gui interface per ``observation``: ``screenshot`` (a PIL image), ``a11y_tree`` (text), both, or
``set_of_marks``: the screenshot with a numbered box on every element one can act on and ``marks``, the list
of those marks as text (:mod:`embodia.agents.scienceboard.marks`), which ``click_mark`` actions name.
"""

from __future__ import annotations

import contextlib
import shlex
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Literal

from embodia.agents.scienceboard.checkers import Check, evaluate
from embodia.agents.scienceboard.marks import Mark, draw_marks, marks_from_tree, marks_text
from embodia.agents.scienceboard.programs.base import Program, load_program
from embodia.agents.scienceboard.sandbox import (
    ProgramCrashedError,
    ProgramHungError,
    Sandbox,
    SandboxError,
    require_programs,
)
from embodia.agents.scienceboard.tasks import GUI_DOMAINS, Action, Task
from embodia.core.errors import EmbodiaError
from embodia.core.validation import validate

Interface = Literal["api", "gui"]
ObservationMode = Literal["screenshot", "a11y_tree", "both", "set_of_marks"]
OBSERVATION_MODES = ("screenshot", "a11y_tree", "both", "set_of_marks")
GUI_ACTIONS = ("type", "key", "click", "click_mark", "move", "scroll")
MAX_OUTPUT = 4000
"""Characters of a program's answer kept in an observation."""


class ScienceBoardEnv:
    """Episodes of ScienceBoard tasks (see the module docstring)."""

    def __init__(
        self,
        interface: Interface = "api",
        observation: ObservationMode = "both",
        *,
        workspace_parent: str | Path | None = None,
        sandboxed: bool = True,
    ):
        if interface not in ("api", "gui"):
            raise EmbodiaError(f"unknown interface {interface!r}; choose api or gui")
        if observation not in OBSERVATION_MODES:
            raise EmbodiaError(
                f"unknown observation mode {observation!r}; choose one of {', '.join(OBSERVATION_MODES)}"
            )
        self.interface = interface
        self.observation_mode = observation
        self.workspace_parent = workspace_parent
        self.sandboxed = sandboxed
        self.task: Task | None = None
        self.sandbox: Sandbox | None = None
        self.program: Program | None = None
        self.steps = 0
        self.started = 0.0
        self.done = True
        self.last_checks: list[Check] = []
        self.marks: list[Mark] = []
        """The marks of the last set-of-marks observation (what ``click_mark`` numbers refer to)."""

    # ------------------------------------------------------------------------------------------- episode
    def reset(self, task: Task) -> dict[str, Any]:
        """Start ``task`` in a fresh sandbox; the first observation."""
        self.close()
        if self.interface == "gui" and task.domain not in GUI_DOMAINS:
            raise EmbodiaError(
                f"task {task.id}: the {task.domain} domain has no GUI interface; use interface='api'"
            )
        program_type = load_program(task.domain)
        require_programs(program_type.executables, program_type.apt_packages)
        self.task = task
        self.sandbox = Sandbox(
            display=self.interface == "gui" or program_type.needs_display,
            parent=self.workspace_parent,
            confine=self.sandboxed,
        )
        try:
            for name, text in task.files.items():
                path = self.sandbox.workspace / name
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
            self.program = program_type(self.sandbox, task, self.interface)
            self.program.start()
            for action in task.setup:
                self.program.command(action.text)
            self.program.setup_done()
        except BaseException:
            self.close()
            raise
        self.steps = 0
        self.started = time.monotonic()
        self.done = False
        self.last_checks = []
        return self._observe("")

    def step(
        self, action: Action | dict[str, Any]
    ) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        """Take one action (see the module docstring)."""
        if self.done or self.task is None or self.program is None or self.sandbox is None:
            raise EmbodiaError("the episode is over; call reset(task) first")
        task, program = self.task, self.program
        if isinstance(action, dict):
            action = validate(Action, action, where="action", error=EmbodiaError)
        self.steps += 1
        info: dict[str, Any] = {"refused": False}
        terminated = truncated = False
        output = ""
        try:
            reason = self._refusal(action)
            if reason:
                info["refused"] = True
                output = reason
            elif action.type in ("done", "fail"):
                terminated = True
            elif action.type == "wait":
                time.sleep(action.seconds)
            elif action.type == "command":
                output = program.command(action.text)
            elif action.type == "shell":
                result = self.sandbox.run(["bash", "-c", action.text], timeout=task.step_timeout)
                output = result.stdout
            else:
                self._gui(action)
        except (ProgramHungError, ProgramCrashedError) as error:
            output = f"error: {error}"
            info["error"] = str(error)
            truncated = True
        except EmbodiaError as error:  # a command the program could not take: the agent sees why
            output = f"error: {error}"
        if not (terminated or truncated):
            if self.steps >= task.max_steps:
                truncated, info["limit"] = True, "step budget"
            elif time.monotonic() - self.started > task.task_timeout:
                truncated, info["limit"] = True, "task time limit"
        reward = 0.0
        if terminated or truncated:
            success = False
            if "error" not in info:
                success, self.last_checks = evaluate(task.evaluate, program.query)
                info["checks"] = [check.message for check in self.last_checks]
            info["success"] = success
            info["gave_up"] = action.type == "fail"
            reward = 1.0 if success else 0.0
            self.done = True
        observation = self._observe(output)
        return observation, reward, terminated, truncated, info

    def evaluate(self) -> tuple[bool, list[Check]]:
        """Run the task's checker on the program's current state (without ending the episode)."""
        if self.task is None or self.program is None:
            raise EmbodiaError("no episode; call reset(task) first")
        return evaluate(self.task.evaluate, self.program.query)

    def close(self) -> None:
        """Stop the program and remove the sandbox (idempotent)."""
        if self.program is not None:
            with contextlib.suppress(EmbodiaError, OSError):
                self.program.close()
            self.program = None
        if self.sandbox is not None:
            self.sandbox.close()
            self.sandbox = None
        self.done = True

    def __enter__(self) -> ScienceBoardEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------------------------------ internals
    def _refusal(self, action: Action) -> str | None:
        assert self.task is not None and self.program is not None
        if action.type == "shell" and not self.task.allow_shell:
            return "refused: this task does not allow shell commands; act through the program"
        if action.type == "command" and self.interface != "api":
            return (
                "refused: the gui interface takes keyboard and mouse actions (type, key, click, move, scroll)"
                + (", and click_mark" if self.observation_mode == "set_of_marks" else "")
            )
        if action.type in GUI_ACTIONS and self.interface != "gui":
            return "refused: the api interface takes command actions (one command of the program)"
        if action.type == "click_mark" and self.observation_mode != "set_of_marks":
            return "refused: click_mark needs set-of-marks observations; click at coordinates instead"
        if action.type in ("command", "shell"):
            return self.program.refuse(action.text)
        if action.type == "type" and not self.task.allow_shell:
            return self.program.refuse(action.text)
        return None

    def _gui(self, action: Action) -> None:
        assert self.sandbox is not None and self.task is not None
        timeout = self.task.step_timeout
        run = self.sandbox.xdotool
        if action.type == "type":
            run("type", "--delay", "12", "--", action.text, timeout=timeout + len(action.text) * 0.05)
        elif action.type == "key":
            chords = shlex.split(action.text)
            if not chords:
                raise SandboxError("key action without keys")
            run("key", "--delay", "40", *chords, timeout=timeout)
        elif action.type == "move":
            run("mousemove", str(action.x), str(action.y), timeout=timeout)
        elif action.type == "click_mark":
            chosen = next((mark for mark in self.marks if mark.number == action.mark), None)
            if chosen is None:
                raise EmbodiaError(
                    f"no mark {action.mark} on the last observation (its marks: 1-{len(self.marks)})"
                    if self.marks
                    else f"no mark {action.mark}: the last observation had no marks"
                )
            x, y = chosen.centre
            where = [str(x), str(y)]
            run(
                "mousemove",
                *where,
                "click",
                "--repeat",
                str(action.clicks),
                str(action.button),
                timeout=timeout,
            )
        elif action.type in ("click", "scroll"):
            button = str(action.button) if action.type == "click" else ("5" if action.down else "4")
            where = [str(action.x), str(action.y)]
            run("mousemove", *where, "click", "--repeat", str(action.clicks), button, timeout=timeout)
        time.sleep(0.4)  # let the program redraw before the next observation

    def _observe(self, output: str) -> dict[str, Any]:
        assert self.task is not None and self.program is not None and self.sandbox is not None
        if len(output) > MAX_OUTPUT:
            output = output[:MAX_OUTPUT] + f"\n... ({len(output) - MAX_OUTPUT} more characters)"
        observation: dict[str, Any] = {
            "instruction": self.task.instruction,
            "interface": self.interface,
            "step": self.steps,
            "steps_left": self.task.max_steps - self.steps,
            "output": output,
        }
        if self.interface == "api":
            with contextlib.suppress(EmbodiaError):
                observation["status"] = self.program.status()
        else:
            with contextlib.suppress(EmbodiaError):
                if self.observation_mode in ("screenshot", "both"):
                    observation["screenshot"] = self.sandbox.screenshot()
                if self.observation_mode in ("a11y_tree", "both"):
                    observation["a11y_tree"] = self.sandbox.a11y_tree(self.program.gui_application)
                if self.observation_mode == "set_of_marks":
                    tree = self.sandbox.a11y_tree(
                        self.program.gui_application, max_lines=1000, showing_only=True
                    )
                    self.marks = marks_from_tree(tree, self.sandbox.screen)
                    observation["screenshot"] = draw_marks(self.sandbox.screenshot(), self.marks)
                    observation["marks"] = marks_text(self.marks)
        return observation

    def describe(self) -> dict[str, Any]:
        """The current task as a dict without its solutions (what an agent may know)."""
        if self.task is None:
            return {}
        data = asdict(self.task)
        for secret in ("oracle", "oracle_gui", "wrong", "evaluate", "setup", "files", "source"):
            data.pop(secret, None)
        return data
