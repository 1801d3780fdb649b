"""ScienceBoard's biochemistry domain: PyMOL (standing in for the paper's ChimeraX), driven headless.

PyMOL 2.5 from Debian (``pymol``, ``python3-pymol``) runs inside the sandbox under Debian's Python as
``pymol_server.py``, a JSON-lines server (see that module): the agent's commands and the checkers' queries
travel on its stdin/stdout, PyMOL's own prints are captured separately as each command's feedback.

Programmatic interface: a **command** is one line of PyMOL's command language, e.g.
``remove resn HOH``, ``color red, chain A``, ``create site, byres (1hpv within 5 of resn 478)``,
``fab ACDEFG, pep``, ``distance d1, /1hpv//A/25/CA, /1hpv//B/25/CA``, ``align moved, ref``,
``save chainA.pdb, 1tii and chain A``, ``alter resn 478, resn='LIG'``. The output is PyMOL's feedback text.

Refused (:meth:`PyMOL.refuse`): anything that is not one whitelisted command (:data:`COMMANDS`): Python
(``python`` blocks, ``/`` lines, bare Python, ``cmd.``, ``import``, ``__``), ``run`` / ``@`` scripts,
``system`` / ``shell`` / ``spawn``, ``fetch`` (network), ``alias`` / ``extend``, ``cd``, several commands in
one line (``;`` or line breaks), ``load`` / ``save`` of anything but a structure file inside the workspace,
and ``alter`` / ``label`` expressions that use more than atom properties, literals and arithmetic.

GUI interface: PyMOL's own Qt program (Debian's ``pymol``) on the sandbox's display; the agent types PyMOL
commands into the ``PyMOL>`` command line (it has the focus at start) and presses Return, or uses the menus,
buttons and the object panel. The same channel is served from inside that program (see
:mod:`~embodia.agents.scienceboard.programs.pymol_server`), so the setup and the checkers work on the state the
agent sees. Text the agent types meets the same text rules as api commands, but keys pressed one at a time and
the menus (File > Run Script, the plugin manager) do not, and the command line takes Python: on this
interface the sandbox is the boundary.

Queries (:data:`QUERIES`) read PyMOL's state; a selection or object that does not exist answers None.
"""

from __future__ import annotations

import io
import json
import os
import re
import select
import subprocess
import time
import tokenize
from pathlib import Path
from typing import Any, ClassVar

from embodia.agents.scienceboard.programs.base import Program, QueryError
from embodia.agents.scienceboard.sandbox import SYSTEM_PYTHON, ProgramCrashedError, ProgramHungError

SERVER = Path(__file__).with_name("pymol_server.py")
START_TIMEOUT = 60.0
PYMOL_DATA = "/usr/share/pymol/data"
"""Debian's PyMOL data (demo structures, fragments), as its ``pymol`` wrapper sets it."""
GUI_SETTLE = 1.0
"""Seconds the GUI gets to redraw after the task's setup, before the agent's first screenshot."""
GUI_WINDOW = ("-W", "1000", "-H", "560")
"""The GUI window's viewer size in pixels: with the command line, menus and the object panel it fits the
sandbox's display."""

QUERIES: dict[str, str] = {
    "object_names": "sorted names of the loaded objects (molecules, measurements); no args",
    "selection_names": "sorted names of the named selections; no args",
    "count_atoms": "number of atoms in {selection}",
    "residue_count": "number of distinct residues (object, segment, chain, residue number) in {selection}",
    "chains": "sorted chain ids of {object} (a selection works too)",
    "sequence": "one-letter sequence of {selection} (all chains concatenated, as get_fastastr lists them)",
    "distance": "distance in Å between the single atoms {sel1} and {sel2} (None unless each is one atom)",
    "measurement": "the (first) distance in Å of the measurement object {name}",
    "atom_colors": "sorted colour names of the atoms in {selection}",
    "secondary_structure_count": "residues of {selection} whose secondary structure is {ss} (H, S or L)",
    "setting": "the value of setting {name}, globally or for {object}",
    "bfactor_mean": "mean B-factor of {selection}",
    "property_values": "sorted distinct values of atom {property} (name, resn, resi, chain, segi, elem, b, q, "
    "ss, alt, type, label) in {selection}",
    "center_of_mass": "[x, y, z] centre of mass of {selection}",
    "visible_atoms": "atoms of {selection} shown as representation {rep} (cartoon, sticks, lines, spheres...)",
    "rms_cur": "RMSD in Å between {mobile} and {target} in place (no fitting; atoms matched by identifiers)",
    "saved_file_atoms": "atoms in the workspace file {file} (optionally only those matching {selection}); "
    "None if the file does not exist or PyMOL cannot read it",
}


def _words(text: str) -> list[str]:
    return text.split()


COMMANDS = frozenset(
    _words(
        """
    load save remove select deselect create extract delete color bg_color set_color show hide show_as as
    cartoon h_add h_fill fab alter alter_state label distance angle dihedral get_distance get_angle
    get_dihedral align super cealign fit rms rms_cur pair_fit intra_fit count_atoms get_chains get_area
    get_title dss rename set_name set unset get spectrum zoom orient center reset turn rotate translate move
    clip enable disable group ungroup order split_states symexp bond unbond sort rebuild refresh
    fix_chemistry util.cbc util.cbag util.cbac util.cbay util.cbas util.cbap util.cbak util.cbaw util.cbab
    util.cnc util.ss util.rainbow util.chainbow
    """
    )
)
"""The PyMOL commands an agent may run (everything else, including bare Python, is refused)."""

FORBIDDEN = {
    "python": "Python blocks",
    "run": "running scripts",
    "spawn": "running scripts",
    "system": "shell commands",
    "shell": "shell commands",
    "fetch": "downloads (the sandbox is offline)",
    "alias": "aliases",
    "extend": "new commands",
    "cd": "changing the folder",
    "ls": "listing folders",
    "import": "Python imports",
    "exec": "Python code",
    "eval": "Python code",
}

EXPRESSION_COMMANDS = frozenset({"alter", "alter_state", "label"})
EXPRESSION_NAMES = frozenset(
    _words(
        """
    name resn resi resv chain segi alt elem b q type formal_charge partial_charge vdw ss label text_type
    color ID index rank x y z str int float round abs min max len and or not in if else True False None
    """
    )
)
STRUCTURE_FILES = (
    ".pdb",
    ".ent",
    ".cif",
    ".mmcif",
    ".mol",
    ".mol2",
    ".sdf",
    ".mae",
    ".xyz",
    ".pqr",
    ".fasta",
)
FILE_KEYWORDS = frozenset({"filename", "object", "selection", "state", "quiet", "discrete", "zoom"})
_SAFE_NAME = re.compile(r"^(?!\.)[\w][\w.+-]*(/[\w][\w.+-]*)*$")


def _split_arguments(text: str) -> list[str]:
    """PyMOL's top-level comma split (commas inside brackets or quotes do not split)."""
    parts, depth, quote, current = [], 0, "", []
    for char in text:
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
            continue
        current.append(char)
    parts.append("".join(current).strip())
    return parts


def _unsafe_expression(expression: str) -> str | None:
    """Why an ``alter`` / ``label`` expression is refused (or None): names beyond atom properties."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(expression).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return "the expression is not valid Python"
    fstring_start = getattr(tokenize, "FSTRING_START", None)  # Python >= 3.12 splits f-strings into tokens
    for token in tokens:
        if fstring_start is not None and token.type == fstring_start:
            return "f-strings are not allowed in expressions"
        if token.type == tokenize.NAME and token.string not in EXPRESSION_NAMES:
            return (
                f"{token.string!r} is not an atom property (expressions may use atom properties and literals)"
            )
        if token.type == tokenize.STRING and "f" in token.string.split(token.string[-1], 1)[0].lower():
            return "f-strings are not allowed in expressions"
        if token.type == tokenize.OP and token.string in (".", ":=", "**", "@", "lambda"):
            return f"operator {token.string!r} is not allowed in expressions"
    return None


class PyMOL(Program):
    """PyMOL 2.5, headless, behind ``pymol_server.py`` (see the module docstring)."""

    domain: ClassVar[str] = "pymol"
    executables: ClassVar[tuple[str, ...]] = ("pymol",)
    apt_packages: ClassVar[str] = "pymol"
    gui_application: ClassVar[str | None] = "PyMOL"
    QUERIES: ClassVar[dict[str, str]] = QUERIES

    process: subprocess.Popen | None = None
    _buffer = b""

    def start(self) -> None:
        env = {"OMP_NUM_THREADS": "1", "PYMOL_NO_SPLASH": "1"}
        if self.interface == "gui":  # PyMOL's Qt program, the channel served from inside it
            # run in a namespace of its own: a script given to PyMOL runs in PyMOL's, where its names
            # (setting, distance, ...) would replace PyMOL's own and break the command line's Python
            start = f"/import runpy; runpy.run_path({str(SERVER)!r}, run_name='embodia_pymol_channel')"
            argv = [SYSTEM_PYTHON, "-I", "-m", "pymol.__init__", "-q", *GUI_WINDOW, "-d", start]
            env |= {"EMBODIA_PYMOL_GUI": "1", "PYMOL_DATA": PYMOL_DATA}
        else:
            argv = [SYSTEM_PYTHON, "-I", str(SERVER)]
        self.process = self.sandbox.spawn(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        ready = self._read_answer(max(START_TIMEOUT, self.timeout), startup=True)
        if not ready.get("ready"):
            raise ProgramCrashedError(f"pymol: unexpected first answer {ready!r}")
        if self.interface == "gui":
            self._wait_for_window()

    def _wait_for_window(self) -> None:
        """Until the command line is on screen (PyMOL runs the channel's script before it maps its
        window; keys sent earlier go nowhere)."""
        deadline = time.monotonic() + max(START_TIMEOUT, self.timeout)
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise ProgramCrashedError(f"pymol exited at start (status {self.process.returncode})")
            found = re.search(
                r"\[label\] PyMOL> \((\d+),(\d+) (\d+)x(\d+)\)",
                self.sandbox.a11y_tree(self.gui_application, max_lines=80),
            )
            if found:  # give the command line the keyboard focus, as a user's first click would
                x, y, width, height = map(int, found.groups())
                where = [str(x + width + 200), str(y + height // 2)]
                self.sandbox.xdotool("mousemove", *where, "click", "1", timeout=self.timeout)
                return
            time.sleep(0.5)
        raise ProgramHungError("pymol's window did not come up on the display in time")

    def setup_done(self) -> None:
        if self.interface == "gui":
            time.sleep(GUI_SETTLE)  # the setup's objects reach the viewer and the object panel on a redraw

    # ------------------------------------------------------------------------------------------ channel
    def _read_answer(self, timeout: float, startup: bool = False) -> dict[str, Any]:
        """The next answer line; at ``startup``, the lines the GUI program prints before it are skipped."""
        assert self.process is not None and self.process.stdout is not None
        fd = self.process.stdout.fileno()
        deadline = time.monotonic() + timeout
        while startup and b"\n" in self._buffer and not self._buffer.startswith(b"{"):
            self._buffer = self._buffer.split(b"\n", 1)[1]
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                self.sandbox.kill(self.process)
                raise ProgramHungError(f"pymol did not answer within {timeout:g} s and was killed")
            ready, _, _ = select.select([fd], [], [], min(left, 0.5))
            if not ready:
                if self.process.poll() is not None:
                    raise ProgramCrashedError(f"pymol exited (status {self.process.returncode})")
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                self.process.wait(timeout=5)
                raise ProgramCrashedError(f"pymol exited (status {self.process.returncode})")
            self._buffer += chunk
            while startup and b"\n" in self._buffer and not self._buffer.startswith(b"{"):
                self._buffer = self._buffer.split(b"\n", 1)[1]
        line, self._buffer = self._buffer.split(b"\n", 1)
        try:
            return json.loads(line)
        except json.JSONDecodeError:
            raise ProgramCrashedError(f"pymol: unreadable answer {line[:200]!r}") from None

    def _request(self, request: dict[str, Any]) -> dict[str, Any]:
        if self.process is None or self.process.stdin is None:
            raise ProgramCrashedError("pymol is not running")
        if self.process.poll() is not None:
            raise ProgramCrashedError(f"pymol is no longer running (status {self.process.returncode})")
        try:
            self.process.stdin.write(json.dumps(request).encode() + b"\n")
            self.process.stdin.flush()
        except BrokenPipeError:
            raise ProgramCrashedError("pymol exited") from None
        return self._read_answer(self.timeout)

    # ---------------------------------------------------------------------------------------- interface
    def command(self, text: str) -> str:
        answer = self._request({"do": text})
        if not answer.get("ok"):
            return f"Error: {answer.get('error', 'unknown error')}"
        return str(answer.get("output", ""))

    def query(self, name: str, args: dict[str, Any]) -> Any:
        if name not in QUERIES:
            return super().query(name, args)
        answer = self._request({"query": name, "args": args})
        if not answer.get("ok"):
            raise QueryError(f"pymol: query {name!r} failed: {answer.get('error')}")
        return answer.get("value")

    def refuse(self, text: str) -> str | None:
        if "\n" in text or "\r" in text or ";" in text:
            return "refused: one PyMOL command per action (no ';' or line breaks)"
        line = text.strip()
        if not line:
            return "refused: empty command"
        if line.startswith(("/", "@")):
            return "refused: Python lines ('/') and scripts ('@') are not available; use PyMOL commands"
        if "__" in line or re.search(r"\bcmd\s*\.", line):
            return "refused: Python code is not available; use PyMOL commands"
        match = re.match(r"([A-Za-z_][\w.]*)(\s+|$)", line)
        keyword = match.group(1) if match else re.split(r"\W", line, maxsplit=1)[0]
        if keyword in FORBIDDEN:
            return f"refused: {keyword!r} ({FORBIDDEN[keyword]}) is not available in this sandbox; use PyMOL commands"
        if match is None or keyword not in COMMANDS:
            return f"refused: {keyword or line[:20]!r} is not an available PyMOL command"
        arguments = _split_arguments(line[match.end() :]) if line[match.end() :].strip() else []
        for argument in arguments:
            key = re.match(r"\s*(\w+)\s*=(?!=)", argument)
            if key and key.group(1).startswith("_"):
                return "refused: private arguments are not available"
        if keyword in ("load", "save"):
            reason = self._refuse_file(keyword, arguments)
            if reason:
                return reason
        if keyword in EXPRESSION_COMMANDS:
            if len(arguments) != 2 or re.search(r"['\"\\]", arguments[0]):
                return f"refused: use '{keyword} selection, expression' (two arguments, no quotes in the selection)"
            reason = _unsafe_expression(arguments[1])
            if reason:
                return f"refused: {reason}"
        return None  # PyMOL's /object/segi/chain/resi/name macros look like paths: only files are checked

    def _refuse_file(self, keyword: str, arguments: list[str]) -> str | None:
        filename = None
        for position, argument in enumerate(arguments):
            key = re.match(r"\s*(\w+)\s*=(?!=)", argument)
            if key:
                if key.group(1) not in FILE_KEYWORDS:
                    return f"refused: {keyword} takes no {key.group(1)!r} argument here"
                if key.group(1) == "filename":
                    filename = argument[key.end() :].strip()
            elif position == 0:
                filename = argument
            elif position >= 3:
                return f"refused: {keyword} takes at most 3 positional arguments here (the format is implied)"
        if not filename:
            return f"refused: {keyword} needs a file name"
        filename = filename.strip("'\"")
        if not _SAFE_NAME.match(filename) or ".." in filename.split("/"):
            return f"refused: {filename!r} must be a plain file name inside the workspace"
        if not filename.lower().endswith(STRUCTURE_FILES):
            return f"refused: {keyword} only handles structure files ({', '.join(STRUCTURE_FILES)})"
        return super().refuse(filename)

    def status(self) -> str:
        try:
            names = self.query("object_names", {})
        except (QueryError, ProgramCrashedError, ProgramHungError):
            return ""
        return f"objects: {', '.join(names) if names else '(none)'}"

    def close(self) -> None:
        if self.process is not None and self.process.poll() is None:
            try:
                self.process.stdin.write(b'{"quit": true}\n')  # type: ignore[union-attr]
                self.process.stdin.flush()  # type: ignore[union-attr]
                self.process.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                self.sandbox.kill(self.process)
        self.process = None
