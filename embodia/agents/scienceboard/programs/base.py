"""What every ScienceBoard domain's program implements, and a line-oriented REPL driver they share.

A :class:`Program` runs one real program inside a :class:`~embodia.agents.scienceboard.sandbox.Sandbox`:

- :meth:`Program.start` launches it (headless for the programmatic interface; on the sandbox's display for
  the GUI interface) and waits until it answers;
- :meth:`Program.command` is the programmatic interface: one command in the program's own language
  (KAlgebra's expressions, a GRASS module, a PyMOL command, a Stellarium script statement, a Coq sentence,
  an edit of the LaTeX document), its output as text;
- :meth:`Program.refuse` names what the sandbox does not run (shell escapes, files outside the workspace);
- :meth:`Program.query` reads the program's *state* for the checkers; ``QUERIES`` documents each query.

Domains register by module path in :data:`PROGRAMS` (imported only when an episode needs them).
"""

from __future__ import annotations

import importlib
import os
import re
import select
import subprocess
import time
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from embodia.agents.scienceboard.sandbox import ProgramCrashedError, ProgramHungError, Sandbox, outside_paths
from embodia.agents.scienceboard.tasks import Task
from embodia.core.errors import EmbodiaError

PROGRAMS = {
    "kalgebra": "embodia.agents.scienceboard.programs.kalgebra:KAlgebra",
    "grass": "embodia.agents.scienceboard.programs.grass:Grass",
    "texstudio": "embodia.agents.scienceboard.programs.texstudio:TeXstudio",
    "stellarium": "embodia.agents.scienceboard.programs.stellarium:Stellarium",
    "pymol": "embodia.agents.scienceboard.programs.pymol:PyMOL",
    "coq": "embodia.agents.scienceboard.programs.coq:Coq",
}


class QueryError(EmbodiaError):
    """A checker asked a query the program does not know, or with bad arguments."""


class Program:
    """One domain's program in a sandbox (see the module docstring)."""

    domain: ClassVar[str] = ""
    executables: ClassVar[tuple[str, ...]] = ()
    """Programs that must be installed (checked before starting)."""
    apt_packages: ClassVar[str] = ""
    """The Debian packages that provide them (for the error message)."""
    gui_application: ClassVar[str | None] = None
    """The program's AT-SPI application name (GUI domains)."""
    needs_display: ClassVar[bool] = False
    """Whether the program needs the virtual display even on the api interface (an OpenGL program)."""
    QUERIES: ClassVar[dict[str, str]] = {}
    """Query name -> what it returns and its arguments."""

    def __init__(self, sandbox: Sandbox, task: Task, interface: str):
        self.sandbox = sandbox
        self.task = task
        self.interface = interface
        self.timeout = task.step_timeout

    # -- to implement ---------------------------------------------------------------------------------
    def start(self) -> None:
        """Launch the program (and wait until it answers)."""
        raise NotImplementedError

    def command(self, text: str) -> str:
        """Run one command of the programmatic interface; its output."""
        raise NotImplementedError

    def query(self, name: str, args: dict[str, Any]) -> Any:
        """Answer a checker's state query."""
        raise QueryError(f"{self.domain}: unknown query {name!r}; known: {', '.join(self.QUERIES)}")

    def refuse(self, text: str) -> str | None:
        """Why ``text`` (a command) is not run, or None. Default: files outside the workspace."""
        if self.task.allow_outside_files:
            return None
        outside = outside_paths(text, self.sandbox.workspace)
        if outside:
            return (
                f"refused: {', '.join(outside[:3])} lies outside the task's workspace; use files in the "
                "current folder"
            )
        return None

    def setup_done(self) -> None:
        """Called once the task's setup actions have run, before the agent's first action (a program may
        mark what the task itself put in place, so that checkers can tell it from the agent's work)."""

    def status(self) -> str:
        """A short text of the program's visible state for API observations (default: nothing)."""
        return ""

    def close(self) -> None:
        """Stop the program politely (the sandbox kills whatever is left)."""

    # -- helpers --------------------------------------------------------------------------------------
    def wait_for_window(
        self, process: Any, shown: Callable[[], bool], what: str, settle: float = 1.0, at_least: float = 40.0
    ) -> None:
        """Until ``shown()`` (the GUI program's window is up), then ``settle`` seconds for its layout; a
        program that exits first, or a window that does not come within the time limit, is an error."""
        deadline = time.monotonic() + max(self.timeout, at_least)
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise ProgramCrashedError(f"{what} exited while starting (status {process.returncode})")
            if shown():
                time.sleep(settle)
                return
            time.sleep(0.5)
        raise ProgramHungError(f"{what} did not show its window within the time limit")

    def require(self, name: str, args: dict[str, Any], *keys: str) -> list[Any]:
        """The values of ``keys`` in a query's ``args``; :class:`QueryError` names a missing one."""
        missing = [key for key in keys if key not in args]
        if missing:
            raise QueryError(f"{self.domain}: query {name!r} needs argument(s) {', '.join(missing)}")
        return [args[key] for key in keys]


def load_program(domain: str) -> type[Program]:
    """The :class:`Program` class of ``domain``."""
    module, _, name = PROGRAMS[domain].partition(":")
    return getattr(importlib.import_module(module), name)


class Repl:
    """A line-oriented interactive program on pipes: send a line, read until its prompt comes back.

    ``prompt`` is a regular expression matched against the end of what the program printed since the line
    was sent; what came before the prompt is the answer. A program that does not print its prompt within
    ``timeout`` seconds is killed (:class:`ProgramHungError`); one that exits raises
    :class:`ProgramCrashedError`.
    """

    def __init__(
        self,
        sandbox: Sandbox,
        argv: Sequence[str],
        prompt: str,
        *,
        name: str,
        env: dict[str, str] | None = None,
    ):
        self.sandbox = sandbox
        self.name = name
        self.prompt = re.compile(prompt)
        self.process = sandbox.spawn(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env
        )

    def read_until_prompt(self, timeout: float) -> str:
        """Everything the program prints up to its next prompt (the prompt removed)."""
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        deadline = time.monotonic() + timeout
        buffer = b""
        while True:
            text = buffer.decode("utf-8", "replace")
            match = self.prompt.search(text)
            if match:
                return text[: match.start()]
            left = deadline - time.monotonic()
            if left <= 0:
                self.sandbox.kill(self.process)
                raise ProgramHungError(f"{self.name} did not answer within {timeout:g} s and was killed")
            ready, _, _ = select.select([fd], [], [], min(left, 0.5))
            if not ready:
                if self.process.poll() is not None:
                    raise ProgramCrashedError(f"{self.name} exited (status {self.process.returncode})")
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                self.process.wait(timeout=5)
                raise ProgramCrashedError(f"{self.name} exited (status {self.process.returncode})")
            buffer += chunk

    def send(self, line: str, timeout: float) -> str:
        """Send ``line`` (newline added) and return the answer."""
        assert self.process.stdin is not None
        if self.process.poll() is not None:
            raise ProgramCrashedError(f"{self.name} is no longer running (status {self.process.returncode})")
        try:
            self.process.stdin.write(line.encode() + b"\n")
            self.process.stdin.flush()
        except BrokenPipeError:
            raise ProgramCrashedError(f"{self.name} exited") from None
        return self.read_until_prompt(timeout)
