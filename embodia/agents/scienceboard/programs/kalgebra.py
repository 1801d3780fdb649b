"""KAlgebra: ScienceBoard's algebra domain, on KDE's calculator and its math engine, Analitza.

Interfaces:

- **api**: ``calgebra``, KAlgebra's console front end on the same Analitza engine, as a REPL: a command is one
  expression in KAlgebra's language, e.g. ``x:=3``, ``f:=t->t^2+1``, ``f(4)``, ``diff(x^2:x)``,
  ``sum(k^2 : k=1..10)``, ``vector{1,2}``; the answer is what the console prints.
- **gui**: the ``kalgebra`` program on the sandbox's display; the agent types expressions into the
  Calculator tab's input line (it has focus at start; clicking it at about (310, 455) also works) and presses
  Return. The *Variables* panel lists every variable with its value, and it is what the checker reads, through
  the accessibility tree (AT-SPI table cells).

Queries:

- ``variable {name}``: the value of a variable, as a number where it is one, else the printed text; None when
  it is not defined. api: asks calgebra; gui: the Variables panel.
- ``evaluate {expression}`` (api only): what an expression evaluates to in the current session (a number
  where it is one), e.g. to test a defined function at a point.
- ``variables``: every user-defined variable's name (built-ins such as ``pi`` left out).
"""

from __future__ import annotations

import re
import time
from typing import Any, ClassVar

from embodia.agents.scienceboard.programs.base import Program, QueryError, Repl
from embodia.agents.scienceboard.sandbox import ProgramCrashedError, ProgramHungError

#: variables KAlgebra defines itself (left out of the ``variables`` query)
BUILTINS = frozenset({"euler", "true", "pi", "i", "e", "false", "ans"})
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_NUMBER = re.compile(r"^-?\d+(\.\d+)?(e[-+]?\d+)?$")


def _value(text: str) -> Any:
    """A printed KAlgebra value: a float where it is a plain number, else the text."""
    text = text.strip()
    return float(text) if _NUMBER.match(text) else text


class KAlgebra(Program):
    """KAlgebra through calgebra (api) or its Qt GUI (gui); see the module docstring."""

    domain = "kalgebra"
    executables = ("calgebra", "kalgebra")
    apt_packages = "kalgebra"
    gui_application = "kalgebra"
    QUERIES: ClassVar[dict[str, str]] = {
        "variable": "{name}: a variable's value (number or text), None if undefined",
        "evaluate": "{expression}: the value of an expression in the session (api interface)",
        "variables": "names of the user-defined variables",
    }

    repl: Repl | None = None

    def start(self) -> None:
        if self.interface == "gui":
            self._start_gui()
            return
        self.repl = Repl(self.sandbox, ["calgebra"], r">>> $", name="calgebra")
        self.repl.read_until_prompt(self.timeout)

    def _start_gui(self) -> None:
        process = self.sandbox.spawn(["kalgebra"], stdin=None, stdout=None)
        deadline = time.monotonic() + 60.0
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise ProgramCrashedError(f"kalgebra exited at start (status {process.returncode})")
            if "Calculator" in self.sandbox.a11y_tree(self.gui_application, max_lines=60):
                time.sleep(1.0)  # the console's web view finishes loading after the widgets register
                return
            time.sleep(0.5)
        self.sandbox.kill(process)
        raise ProgramHungError("kalgebra did not come up on the display within 60 s")

    def command(self, text: str) -> str:
        if self.repl is None:  # gui: a task's setup line is typed into the console like a user would
            self.sandbox.xdotool("type", "--delay", "12", "--", text, timeout=self.timeout)
            self.sandbox.xdotool("key", "Return", timeout=self.timeout)
            time.sleep(0.5)
            return ""
        answer = self.repl.send(text, self.timeout)
        lines = answer.splitlines()
        if lines and lines[0].strip() == text.strip():  # the console echoes the line it read
            lines = lines[1:]
        return "\n".join(lines).strip()

    def refuse(self, text: str) -> str | None:
        if "\n" in text.strip():
            return "refused: one expression per command"
        depth = 0
        for char in text:
            depth += {"(": 1, ")": -1, "{": 1, "}": -1}.get(char, 0)
            if depth < 0:
                break
        if depth != 0:  # the console would wait for the rest of the expression
            return "refused: unbalanced parentheses or braces; send one complete expression"
        return super().refuse(text)

    def query(self, name: str, args: dict[str, Any]) -> Any:
        if name == "variable":
            (variable,) = self.require(name, args, "name")
            if not _NAME.match(str(variable)):
                raise QueryError(f"kalgebra: {variable!r} is not a variable name")
            if self.interface == "gui":
                return self._gui_variables().get(variable)
            answer = self.command(variable)
            # Analitza is symbolic: an undefined name evaluates to itself
            return None if answer.startswith("Error") or answer == variable else _value(answer)
        if name == "evaluate":
            (expression,) = self.require(name, args, "expression")
            if self.interface == "gui":
                raise QueryError(
                    "kalgebra: 'evaluate' reads the console, which the gui interface does not have"
                )
            answer = self.command(str(expression))
            return None if answer.startswith("Error") else _value(answer)
        if name == "variables":
            if self.interface == "gui":
                return sorted(set(self._gui_variables()) - BUILTINS)
            raise QueryError("kalgebra: 'variables' is read from the GUI's Variables panel (gui interface)")
        return super().query(name, args)

    def _gui_variables(self) -> dict[str, Any]:
        """The Variables panel (name -> value), read from the accessibility tree."""
        tree = self.sandbox.a11y_tree(self.gui_application, max_lines=2000)
        cells = []
        seen_value_header = False
        for line in tree.splitlines():
            stripped = line.strip()
            if stripped.startswith("[table column header] Value"):
                seen_value_header = True
                continue
            if seen_value_header and stripped.startswith("[table cell]"):
                cell = re.sub(r"\s*\(\d+,\d+ \d+x\d+\)$", "", stripped[len("[table cell]") :]).strip()
                cells.append(cell)
        return {cells[i]: _value(cells[i + 1]) for i in range(0, len(cells) - 1, 2)}

    def close(self) -> None:
        if self.repl is not None and self.repl.process.poll() is None:
            self.sandbox.kill(self.repl.process, grace=0.5)
