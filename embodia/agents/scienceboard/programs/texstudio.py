"""ScienceBoard's document domain: a LaTeX paper ``main.tex`` edited and built as TeXstudio does it.

The state is the workspace's ``main.tex`` and what pdflatex makes of it (``main.pdf``, ``main.aux``,
``main.log``). Two interfaces act on the same file with the same compiler:

**gui** -- TeXstudio 4.3 on the sandbox's display, started as ``texstudio --no-session main.tex`` with a
pre-written ``$HOME/.config/texstudio/texstudio.ini`` (no update check, no LaTeX-configuration check, no
LanguageTool, no session restore; auto-completion, bracket completion and auto-indent off so that typed text
lands as typed; its ``pdflatex`` tool is the command below). The agent clicks into the editor, types, saves
with ``ctrl+s`` and builds with ``F6`` (Compile) or ``F5`` (Build & View, which also opens the embedded
viewer). TeXstudio saves the file before it compiles.

**api** -- TeXstudio has no command-line scripting, so the programmatic interface is the editing and build
operations the editor performs, one command a step:

- ``show``: the source with line numbers;
- ``append TEXT``: insert TEXT as new line(s) just before ``\\end{document}``;
- ``insert N TEXT``: insert TEXT as new line(s) before line N (N = number of lines + 1 appends at the end);
- ``replace OLD ||| NEW``: replace the first exact occurrence of OLD by NEW (an error if OLD is absent);
- ``delete N``: delete line N;
- ``compile``: ``pdflatex -synctex=1 -interaction=nonstopmode -halt-on-error -no-shell-escape main.tex``, run
  again (at most three runs) while the log asks for a rerun (labels, table of contents); the answer is
  ``compiled: N pages`` plus LaTeX's warnings, or the log's error lines.

In TEXT, OLD and NEW, ``\\n`` stands for a line break, except where it begins a LaTeX command whose name
starts with n (``\\newpage``, ``\\newcommand``, ``\\noindent``, ``\\nonumber``, ``\\nu``, ``\\neq``, ...: names
starting with new/no/num or a few math symbols); ``\\\\`` stays LaTeX's line break.

Both interfaces run pdflatex with ``openin_any=p`` and ``openout_any=p`` (TeX reads and writes no file outside
the folder, nor dot files) and without shell escape; :meth:`TeXstudio.refuse` also refuses
text that tries it (``\\write18``, ``\\immediate\\write``, ``\\openout``, piped ``\\input``, shell
``\\special``, paths outside the workspace).

Queries (``QUERIES``): a missing PDF answers None for the PDF queries.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, ClassVar

from embodia.agents.scienceboard.programs.base import Program, QueryError
from embodia.core.errors import EmbodiaError

DOCUMENT = "main.tex"
PDFLATEX = ["pdflatex", "-synctex=1", "-interaction=nonstopmode", "-halt-on-error", "-no-shell-escape"]
TEX_ENV = {"openin_any": "p", "openout_any": "p"}
RERUN = re.compile(r"Rerun to get|Label\(s\) may have changed|No file main\.toc")
MAX_RUNS = 3
INI = """[General]
IniMode=true

[texmaker]
Update\\AutoCheck=false
Startup\\CheckLatexConfiguration=false
Files\\RestoreSession=false
Files\\Autosave=0
Files\\Save%20Files%20Before%20Compiling=2
Editor\\Completion=false
Editor\\Parentheses%20Completion=false
Editor\\Auto%20Indent=false
Editor\\Auto%20Replace%20Commands=false
Editor\\Real-Time%20Spellchecking=false
Editor\\Check%20Grammar=false
Grammar\\Language%20Tool%20Autorun=false
Tools\\Had%20Successful%20Process%20Start=true
Tools\\Commands\\compile=txs:///pdflatex
Tools\\Commands\\quick=txs:///compile | txs:///view
Tools\\Commands\\pdflatex="{pdflatex} %.tex"
Interface\\Config%20Riddled=false
"""
_REFUSED = (
    (
        re.compile(r"\\write\s*18|\\immediate\s*\\write|\\openout", re.I),
        "writes files or runs shell commands",
    ),
    (re.compile(r"\\input\s*\|?\s*[\"{]?\s*\||\|\s*\"", re.I), "pipes a shell command into TeX"),
    (re.compile(r"\\special\s*\{[^}]*(shell|system|`|!)", re.I), "passes a shell command to a \\special"),
    (
        re.compile(r"\\(?:openin|input|include|includegraphics)\b[^\n]*?(?:[{\s=]\s*)(?:/|~|\.\.)"),
        "reads a file outside the workspace",
    ),
)


class TeXstudioError(EmbodiaError):
    """A document edit that cannot be made (bad line number, text not found, unknown command)."""


class TeXstudio(Program):
    """main.tex edited through TeXstudio's GUI or its editing + build commands (see the module docstring)."""

    domain: ClassVar[str] = "texstudio"
    executables: ClassVar[tuple[str, ...]] = ("texstudio", "pdflatex", "pdftotext", "pdfinfo")
    apt_packages: ClassVar[str] = "texstudio texlive-latex-base poppler-utils"
    gui_application: ClassVar[str | None] = "texstudio"
    QUERIES: ClassVar[dict[str, str]] = {
        "pdf_exists": "whether main.pdf exists",
        "pdf_pages": "the number of pages of main.pdf (pdfinfo)",
        "pdf_text": "the text of main.pdf (pdftotext -layout), whitespace collapsed to single spaces",
        "pdf_page_text": "{page}: the text of one page (1-based) of main.pdf, whitespace collapsed",
        "pdf_text_count": "{text}: how often text (whitespace collapsed) occurs in main.pdf's text",
        "source": "the text of main.tex",
        "source_regex": "{pattern}: whether the Python regex (re.MULTILINE) matches somewhere in main.tex",
        "compiled_fresh": "whether main.pdf exists and is at least as new as main.tex",
        "section_titles": "titles of the numbered \\section entries pdflatex wrote to main.aux (None without it)",
        "log_errors": "the error lines ('! ...') of main.log (None without a log)",
    }

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.path = self.sandbox.workspace / DOCUMENT
        self.gui = None

    # ------------------------------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        if not self.path.exists():
            self.path.write_text("\\documentclass{article}\n\\begin{document}\n\n\\end{document}\n")
        if self.interface != "gui":
            return
        config = Path(self.sandbox.env["HOME"]) / ".config" / "texstudio"
        config.mkdir(parents=True, exist_ok=True)
        (config / "texstudio.ini").write_text(INI.replace("{pdflatex}", " ".join(PDFLATEX)), encoding="utf-8")
        self.gui = self.sandbox.spawn(
            ["texstudio", "--no-session", DOCUMENT], stdin=None, stdout=None, env=TEX_ENV
        )
        search = ["xdotool", "search", "--name", DOCUMENT]
        self.wait_for_window(  # then the editor finishes laying out
            self.gui,
            lambda: bool(self.sandbox.run(search, timeout=10, confined=False).stdout.split()),
            "texstudio",
            settle=2.0,
        )

    def close(self) -> None:
        if self.gui is not None and self.gui.poll() is None:
            self.sandbox.kill(self.gui, grace=1.0)
        self.gui = None

    # ----------------------------------------------------------------------------------------- commands
    def refuse(self, text: str) -> str | None:
        for pattern, what in _REFUSED:
            if pattern.search(text):
                return f"refused: this text {what}; the document may only use files in its folder"
        return super().refuse(text)

    def command(self, text: str) -> str:
        """One editing / build command; a command that cannot be carried out answers ``error: ...`` (the
        episode goes on, as in the editor)."""
        try:
            return self._command(text)
        except TeXstudioError as error:
            return f"error: {error}"

    def _command(self, text: str) -> str:
        verb, _, rest = text.strip().partition(" ")
        rest = rest.strip()
        if verb == "show":
            return self._show()
        if verb == "compile":
            return self._compile()
        if verb == "append":
            lines = self._lines()
            ends = [i for i, line in enumerate(lines) if line.strip().startswith("\\end{document}")]
            at = ends[-1] if ends else len(lines)
            return self._insert(at, rest)
        if verb == "insert":
            number, _, body = rest.partition(" ")
            return self._insert(self._line_number(number, extra=1) - 1, body)
        if verb == "delete":
            lines = self._lines()
            index = self._line_number(rest) - 1
            removed = lines.pop(index)
            self._write(lines)
            return f"deleted line {index + 1}: {removed}"
        if verb == "replace":
            old, sep, new = rest.partition("|||")
            old, new = _unescape(old.strip()), _unescape(new.strip())
            if not sep or not old:
                raise TeXstudioError("usage: replace OLD ||| NEW")
            source = self._read()
            if old not in source:
                raise TeXstudioError(f"replace: {old[:60]!r} does not occur in {DOCUMENT}; `show` prints it")
            self.path.write_text(source.replace(old, new, 1), encoding="utf-8")
            return f"replaced 1 occurrence in {DOCUMENT}"
        raise TeXstudioError(
            f"unknown command {verb!r}; use show, append TEXT, insert N TEXT, replace OLD ||| NEW, delete N, "
            "compile"
        )

    def _read(self) -> str:
        try:
            return self.path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return ""

    def _lines(self) -> list[str]:
        source = self._read()
        return source.removesuffix("\n").split("\n") if source else []

    def _write(self, lines: list[str]) -> None:
        self.path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    def _line_number(self, text: str, extra: int = 0) -> int:
        count = len(self._lines())
        if not text.isdigit() or not 1 <= int(text) <= count + extra:
            raise TeXstudioError(f"line number {text!r} must be between 1 and {count + extra}")
        return int(text)

    def _insert(self, index: int, text: str) -> str:
        if not text:
            raise TeXstudioError("nothing to insert; give the text after the command")
        lines = self._lines()
        new = _unescape(text).split("\n")
        lines[index:index] = new
        self._write(lines)
        return f"inserted {len(new)} line(s) at line {index + 1}"

    def _show(self) -> str:
        lines = self._lines()
        width = len(str(len(lines)))
        return "\n".join(f"{i:>{width}}| {line}" for i, line in enumerate(lines, 1))

    def _compile(self) -> str:
        log = self.sandbox.workspace / "main.log"
        for _ in range(MAX_RUNS):
            result = self.sandbox.run([*PDFLATEX, DOCUMENT], timeout=self.timeout, env=TEX_ENV)
            text = log.read_text(errors="replace") if log.exists() else result.stdout
            if result.returncode != 0:
                errors = _errors(text) or [result.stdout.strip()[-500:]]
                return "compile failed:\n" + "\n".join(errors)
            if not RERUN.search(text):
                break
        pages = self.query("pdf_pages", {})
        warnings = re.findall(r"^(?:LaTeX|Package \w+) Warning: .*$", text, re.M)
        return "\n".join([f"compiled: {pages} pages", *warnings[:20]])

    def status(self) -> str:
        pdf = self.sandbox.workspace / "main.pdf"
        lines = len(self._lines())
        if not pdf.exists():
            state = "no main.pdf"
        else:
            state = f"main.pdf {self.query('pdf_pages', {})} pages" + (
                "" if self.query("compiled_fresh", {}) else " (older than main.tex)"
            )
        return f"{DOCUMENT}: {lines} lines; {state}"

    # ------------------------------------------------------------------------------------------- queries
    def query(self, name: str, args: dict[str, Any]) -> Any:
        workspace = self.sandbox.workspace
        pdf = workspace / "main.pdf"
        if name == "source":
            return self._read()
        if name == "source_regex":
            (pattern,) = self.require(name, args, "pattern")
            try:
                return re.search(pattern, self._read(), re.M) is not None
            except re.error as error:
                raise QueryError(f"source_regex: bad pattern {pattern!r} ({error})") from None
        if name == "compiled_fresh":
            return pdf.exists() and self.path.exists() and pdf.stat().st_mtime >= self.path.stat().st_mtime
        if name == "section_titles":
            aux = workspace / "main.aux"
            if not aux.exists():
                return None
            text = aux.read_text(errors="replace")
            return [
                _group(text, match.end())
                for match in re.finditer(r"\\contentsline \{section\}\{\\numberline \{[^}]*\}", text)
            ]
        if name == "log_errors":
            log = workspace / "main.log"
            return _errors(log.read_text(errors="replace")) if log.exists() else None
        if name not in ("pdf_exists", "pdf_pages", "pdf_text", "pdf_page_text", "pdf_text_count"):
            return super().query(name, args)
        if name == "pdf_exists":
            return pdf.exists()
        if not pdf.exists():
            return None
        if name == "pdf_pages":
            info = self.sandbox.run(["pdfinfo", str(pdf)], timeout=self.timeout).stdout
            match = re.search(r"^Pages:\s+(\d+)", info, re.M)
            return int(match.group(1)) if match else None
        page: list[str] = []
        if name == "pdf_page_text":
            (number,) = self.require(name, args, "page")
            page = ["-f", str(int(number)), "-l", str(int(number))]
        result = self.sandbox.run(["pdftotext", "-layout", *page, str(pdf), "-"], timeout=self.timeout)
        if result.returncode != 0:
            return None
        text = " ".join(result.stdout.split())
        if name == "pdf_text_count":
            (needle,) = self.require(name, args, "text")
            return text.count(" ".join(str(needle).split()))
        return text


_N_COMMANDS = {
    "nu",
    "ne",
    "neq",
    "not",
    "notin",
    "nabla",
    "natural",
    "ni",
    "nmid",
    "nleq",
    "ngeq",
    "neg",
    "nexists",
}
_ESCAPE = re.compile(r"\\\\|\\n([A-Za-z]*)")


def _unescape(text: str) -> str:
    """``\\n`` -> a line break, unless it begins a LaTeX command (``\\newpage``, ``\\noindent``, ``\\nu``)."""

    def sub(match: re.Match[str]) -> str:
        if match.group(0) == "\\\\":
            return match.group(0)
        name = "n" + match.group(1)
        if name in _N_COMMANDS or name.startswith(("new", "no", "num", "node")):
            return match.group(0)
        return "\n" + match.group(1)

    return _ESCAPE.sub(sub, text)


def _errors(log: str) -> list[str]:
    """The '! ...' error lines of a TeX log, each with its 'l.N' context line."""
    lines = log.splitlines()
    found = []
    for i, line in enumerate(lines):
        if line.startswith("!"):
            context = next((item for item in lines[i + 1 : i + 12] if re.match(r"l\.\d+", item)), "")
            found.append(f"{line} {context}".strip())
    return found[:10]


def _group(text: str, start: int) -> str:
    """The text of the brace group that ends the title starting at ``start`` (up to the matching brace)."""
    depth, index = 1, start
    while index < len(text) and depth:
        depth += {"{": 1, "}": -1}.get(text[index], 0)
        index += 1
    return text[start : index - 1].strip()
