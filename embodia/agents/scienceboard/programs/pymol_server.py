"""A headless PyMOL behind a JSON-lines channel (run by Debian's Python, which has the ``pymol`` module).

Started by :class:`embodia.agents.scienceboard.programs.pymol.PyMOL` inside the sandbox (cwd: the workspace):
``/usr/bin/python3 -I pymol_server.py``. It prints ``{"ready": true}`` once PyMOL runs, then answers one JSON
request per stdin line with one JSON line:

- ``{"do": "color red, chain A"}`` runs one PyMOL command (``cmd.do``) and answers
  ``{"ok": true, "output": "<PyMOL's feedback>"}``;
- ``{"query": "count_atoms", "args": {"selection": "chain A"}}`` runs one read-only query of :data:`QUERIES`
  and answers ``{"ok": true, "value": ...}`` (None where a selection or object does not exist);
- a failure answers ``{"ok": false, "error": "<one line>"}``.

PyMOL prints from C and from Python to file descriptor 1; that descriptor is pointed at an unlinked scratch
file (read back after each command as its feedback), and answers go to a private duplicate of the original
stdout, so nothing PyMOL prints can corrupt the channel. Untrusted commands are screened by the parent
(``PyMOL.refuse``) before they get here.

On the gui interface the same file runs inside PyMOL's Qt program (``python3 -m pymol.__init__ -q
pymol_server.py`` with ``EMBODIA_PYMOL_GUI=1``): the channel is served from a thread of the GUI process and
works on the GUI's own ``cmd``, so the task's setup and the checkers' queries see exactly what the agent
sees on the screen. PyMOL's startup lines that precede ``{"ready": true}`` on stdout are not answers.
"""

from __future__ import annotations

import ctypes
import json
import math
import os
import sys
import tempfile
from collections.abc import Callable
from typing import Any

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [entry for entry in sys.path if os.path.abspath(entry or ".") != _HERE]  # our pymol.py != PyMOL

_ANSWERS = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)


def _open_capture() -> int:
    fd, name = tempfile.mkstemp(prefix="pymol-feedback-")
    os.close(fd)
    fd = os.open(name, os.O_RDWR | os.O_APPEND)
    os.unlink(name)
    return fd


_CAPTURE = _open_capture()
os.dup2(_CAPTURE, 1)
sys.stdout = os.fdopen(1, "w", encoding="utf-8", buffering=1, closefd=False)
_LIBC = ctypes.CDLL(None)

GUI = os.environ.get("EMBODIA_PYMOL_GUI") == "1"
"""Whether this runs inside PyMOL's GUI program (else it starts a headless PyMOL of its own)."""

from pymol import CmdException  # noqa: E402 - after the redirection, so that its prints land in the scratch file

if GUI:
    from pymol import cmd  # noqa: E402 - the GUI's own PyMOL
else:
    import pymol2  # noqa: E402

    _PYMOL = pymol2.PyMOL()
    _PYMOL.start()
    cmd = _PYMOL.cmd
SCRATCH = "_embodia_scratch"


def _drain() -> str:
    sys.stdout.flush()
    _LIBC.fflush(None)
    size = os.fstat(_CAPTURE).st_size
    text = os.pread(_CAPTURE, size, 0).decode("utf-8", "replace") if size else ""
    os.ftruncate(_CAPTURE, 0)
    if not GUI:  # the GUI shows PyMOL's queued feedback in its output panel; headless, drop the copy
        cmd._get_feedback()
    return text


def _do(text: str) -> str:
    _drain()
    try:
        cmd.do(text, echo=0)
    except CmdException as error:
        print(f" Error: {error}")
    return _drain().rstrip("\n")


# -------------------------------------------------------------------------------------------------- queries
def _valid(selection: str) -> bool:
    try:
        cmd.count_atoms(selection)
    except CmdException:
        return False
    return True


def _collect(selection: str, expression: str) -> list[Any] | None:
    if not _valid(selection):
        return None
    found: list[Any] = []
    cmd.iterate(selection, f"found.append({expression})", space={"found": found})
    return found


def count_atoms(selection: str = "all") -> int | None:
    return cmd.count_atoms(selection) if _valid(selection) else None


def residue_count(selection: str = "all") -> int | None:
    keys = _collect(selection, "(model, segi, chain, resi)")
    return None if keys is None else len(set(keys))


def chains(object: str = "all") -> list[str] | None:
    return sorted(set(cmd.get_chains(object))) if _valid(object) else None


def sequence(selection: str = "all") -> str | None:
    if not _valid(selection) or not cmd.count_atoms(selection):
        return None
    text = cmd.get_fastastr(selection)
    return "".join(line.strip() for line in text.splitlines() if not line.startswith(">"))


def distance(sel1: str, sel2: str) -> float | None:
    if count_atoms(sel1) != 1 or count_atoms(sel2) != 1:
        return None
    return round(cmd.get_distance(sel1, sel2), 3)


def measurement(name: str) -> float | None:
    """The first distance of measurement object ``name`` (read from its session data: PyMOL 2.5 has no
    ``get_raw_distances``)."""
    if name not in cmd.get_names("objects") or cmd.get_type(name) != "object:measurement":
        return None
    for entry in cmd.get_session(name, partial=1)["names"]:
        if entry and entry[0] == name:
            for state in entry[5][2] or []:
                if state and isinstance(state[1], list) and len(state[1]) >= 6:
                    return round(math.dist(state[1][:3], state[1][3:6]), 3)
    return None


def atom_colors(selection: str = "all") -> list[str] | None:
    indices = _collect(selection, "color")
    if indices is None:
        return None
    names = {index: name for name, index in cmd.get_color_indices()}
    return sorted({names.get(index, str(index)) for index in indices})


def secondary_structure_count(selection: str = "all", ss: str = "H") -> int | None:
    keys = (
        _collect(f"({selection}) and ss {ss or 'L+'}", "(model, segi, chain, resi)")
        if _valid(selection)
        else None
    )
    return None if keys is None else len(set(keys))


def setting(name: str, object: str = "") -> Any:
    try:
        return cmd.get(name, object)
    except CmdException:
        return None


def bfactor_mean(selection: str = "all") -> float | None:
    values = _collect(selection, "b")
    return round(sum(values) / len(values), 3) if values else None


def property_values(selection: str, property: str) -> list[Any] | None:
    if property not in (
        "name",
        "resn",
        "resi",
        "chain",
        "segi",
        "elem",
        "b",
        "q",
        "ss",
        "alt",
        "type",
        "label",
    ):
        return None
    values = _collect(selection, property)
    return None if values is None else sorted(set(values))


def center_of_mass(selection: str = "all") -> list[float] | None:
    if not count_atoms(selection):
        return None
    return [round(value, 3) for value in cmd.centerofmass(selection)]


def visible_atoms(selection: str = "all", rep: str = "cartoon") -> int | None:
    return count_atoms(f"({selection}) and rep {rep}") if _valid(selection) else None


def rms_cur(mobile: str, target: str) -> float | None:
    if not count_atoms(mobile) or not count_atoms(target):
        return None
    try:
        return round(cmd.rms_cur(mobile, target, matchmaker=0), 3)
    except CmdException:
        return None


def selection_names() -> list[str]:
    return sorted(cmd.get_names("selections"))


def object_names() -> list[str]:
    return sorted(name for name in cmd.get_names("objects") if name != SCRATCH)


def saved_file_atoms(file: str, selection: str = "all") -> int | None:
    path = os.path.realpath(file)
    if not path.startswith(os.getcwd() + os.sep) or not os.path.isfile(path):
        return None
    cmd.delete(SCRATCH)
    try:
        cmd.load(path, SCRATCH, quiet=1)
        return count_atoms(f"{SCRATCH} and ({selection})")
    except CmdException:
        return None
    finally:
        cmd.delete(SCRATCH)


QUERIES: dict[str, Callable[..., Any]] = {
    function.__name__: function
    for function in (
        object_names,
        selection_names,
        count_atoms,
        residue_count,
        chains,
        sequence,
        distance,
        measurement,
        atom_colors,
        secondary_structure_count,
        setting,
        bfactor_mean,
        property_values,
        center_of_mass,
        visible_atoms,
        rms_cur,
        saved_file_atoms,
    )
}


def _answer(request: dict[str, Any]) -> dict[str, Any]:
    if "do" in request:
        return {"ok": True, "output": _do(str(request["do"]))}
    if "query" in request:
        function = QUERIES.get(str(request["query"]))
        if function is None:
            return {"ok": False, "error": f"unknown query {request['query']!r}"}
        try:
            value = function(**dict(request.get("args") or {}))
        except TypeError as error:
            return {"ok": False, "error": f"query {request['query']!r}: {error}"}
        finally:
            _drain()
        return {"ok": True, "value": value}
    if "quit" in request:
        return {"ok": True, "quit": True}
    return {"ok": False, "error": "a request needs 'do', 'query' or 'quit'"}


def main() -> None:
    _drain()
    _ANSWERS.write(json.dumps({"ready": True, "version": cmd.get_version()[0]}) + "\n")
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            answer = _answer(json.loads(line))
        except Exception as error:  # noqa: BLE001 - one bad request must not end the session
            _drain()
            answer = {"ok": False, "error": f"{type(error).__name__}: {error}".splitlines()[0]}
        _ANSWERS.write(json.dumps(answer, default=str) + "\n")
        if answer.get("quit"):
            break
    if GUI:
        cmd.quit()


if GUI:  # PyMOL runs this file as a script once its window is up; the channel must not block the GUI
    import threading

    threading.Thread(target=main, name="embodia-channel", daemon=True).start()
elif __name__ == "__main__":
    main()
