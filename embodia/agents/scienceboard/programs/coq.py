"""Theorem proving with the Coq proof assistant (stands in for the paper's Lean 4).

ScienceBoard's theorem-proving domain asks an agent to state and prove lemmas. Here the program is Coq 8.16
(Debian package ``coq``): a persistent ``coqtop -emacs`` process (its prompt comes wrapped in
``<prompt>...</prompt>``, so each answer's end is unambiguous on pipes), plus ``coqc`` for the checkers.

Programmatic interface: a command is one or more Coq *sentences* -- vernacular commands or tactics, each
ending with ``.`` (bullets ``-`` ``+`` ``*`` and braces ``{`` ``}`` count as sentences too), e.g.
``Theorem t : forall n : nat, n + 0 = n.`` or ``induction n as [| n IH]. - reflexivity.``. The sentences are
sent to coqtop one at a time; the first one Coq rejects stops the command (later ones are not run). Every
*accepted* sentence is kept: together they are the proof script, written to ``<workspace>/proof.v`` after each
step. An incomplete sentence (no final ``.``, an open comment or string) is answered with an error and not
sent. The observation's status shows the current goals.

Refused: sentences that touch files or the system (``Load``, ``Cd``, ``Add [Rec] LoadPath``, ``Redirect``,
``Extraction`` into files, ``Declare ML Module``, ``Drop``, ``Quit``, the navigation commands ``Back`` /
``BackTo`` that scripts cannot replay) and ``Require`` of anything but Coq's standard library; file names in
string literals must stay inside the workspace.

GUI interface: CoqIDE (Debian package ``coqide``) on the sandbox's display, opened on ``proof.v`` holding the
task's setup sentences; the agent edits the script, steps through it with CoqIDE's navigation (``ctrl+Down``,
``ctrl+End``...) and saves it (``ctrl+s``). The checkers read the *saved* file: an unsaved proof does not
count, and the setup's sentences must be left as they were.

Queries (``QUERIES``): ``proof_complete`` and ``statement_is`` compile ``proof.v`` with ``coqc`` (so the script
must compile: no proof left open); ``defined`` and ``compute`` ask the live coqtop (api) or coqc after the
saved script (gui).
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any, ClassVar

from embodia.agents.scienceboard.programs.base import Program, QueryError, Repl

SCRIPT = "proof.v"
"""The accepted sentences, in the workspace."""
CHECK_DIR = ".check"
"""Workspace folder where the checkers compile their copies of the script."""
MAX_STATUS = 1500
_IDENT = re.compile(r"^[A-Za-z_][\w']*(?:\.[A-Za-z_][\w']*)*$")
_SENTENCE_START = re.compile(r"([-+*])\1*|[{}]|(?:\d+|\[\s*[\w']+\s*\])\s*:\s*\{")
"""Sentences without a final '.': bullets, braces, a goal selector with a brace (``2: {``)."""
_IMPORT = re.compile(r"^\s*(?:From\s+\S+\s+)?(?:Require|Import|Export|Open\s+Scope)\b")
"""Setup sentences that the fallback statement check issues again inside its fresh module."""
ANSWER_MARK = "embodia-answer-follows"
"""Printed before a query's sentence when coqc answers it (gui), so the script's own output is skipped."""
GUI_WINDOW = (1280, 800)
"""CoqIDE's window size on the sandbox's display (its default is 800x600)."""
EXPECTED = "embodia_expected_statement"
"""The constant that holds a task's statement, elaborated before the agent's sentences."""
_WARNING = re.compile(r'File "[^"\n]*", line \d+, characters \d+-\d+:\nWarning:.*?\n\[[\w,.-]+\]\n?', re.S)
"""One of coqc's warnings (on stderr, merged into its output)."""
_TAGS = re.compile(r"</?(?:infomsg|warning)>")
_FORBIDDEN = [  # (what, pattern on the sentence without comments and string contents, why)
    ("Load", r"\bLoad\b", "it reads files"),
    ("Cd", r"\bCd\b", "it changes the working directory"),
    ("LoadPath", r"\b(?:Add|Remove)\s+(?:Rec\s+)?(?:LoadPath|ML\s+Path)\b", "load paths are fixed"),
    ("Redirect", r"\bRedirect\b", "it writes files"),
    ("Declare ML Module", r"\bDeclare\s+ML\s+Module\b", "it loads native code"),
    (
        "extraction to files",
        r"\b(?:Separate\s+Extraction|Extraction\s+(?:Library|TestCompile))\b",
        "it writes files",
    ),
    ("extraction to files", r"\bRecursive\s+Extraction\s+Library\b", "it writes files"),
    ("extraction to files", r"\bExtraction\b[^.]*\"", "it writes files; Extraction name. prints instead"),
    ("Extraction Output Directory", r"\b(?:Set|Unset)\s+Extraction\s+Output\b", "it names folders"),
    ("Write/Restore State", r"\b(?:Write|Restore)\s+State\b", "states are files"),
    ("Drop/Quit", r"\b(?:Drop|Quit)\b", "it would stop coqtop"),
    ("Back/BackTo", r"\bBack(?:To)?\b", "a script cannot replay it; use Undo, Restart or Abort"),
]
QUERIES: dict[str, str] = {
    "proof_complete": "{theorem}: True if proof.v compiles with coqc and `Print Assumptions theorem.` says "
    "'Closed under the global context' (an Admitted proof or an Axiom makes it False)",
    "statement_is": "{theorem, statement}: True if proof.v compiles and the theorem's type is syntactically "
    "the statement (Ltac constr_eq, up to bound-variable names), the statement read as the task's setup left "
    "Coq (the agent's redefinitions of nat, +, or a setup function do not change what it means)",
    "defined": "{name}: True if coqtop knows a constant, inductive or constructor of that name",
    "compute": "{expression}: the value printed by `Eval compute in (expression).` (whitespace-normalised, "
    "without its type), e.g. '120'",
}


class IncompleteSentence(ValueError):
    """Text that does not end a sentence (no final '.', an open comment or string)."""


def split_sentences(text: str) -> tuple[list[str], list[str]]:
    """Coq sentences of ``text`` as (raw sentences, the same with comments removed and strings emptied).

    Follows Coq's lexer: nested ``(* *)`` comments with strings inside them, ``""`` escapes in strings, a
    ``.`` ends a sentence when followed by white space or the end, bullets and braces at the start of a
    sentence are sentences of their own. Raises :class:`IncompleteSentence` for an unfinished one.
    """
    sentences: list[str] = []
    blanked: list[str] = []
    start, i, n = 0, 0, len(text)
    code: list[str] = []

    def skip_string(j: int) -> int:  # j just after the opening quote; returns the index after the closing one
        while True:
            k = text.find('"', j)
            if k < 0:
                raise IncompleteSentence("unterminated string")
            if text.startswith('""', k):
                j = k + 2
                continue
            return k + 1

    def emit(end: int) -> None:
        nonlocal start
        sentences.append(text[start:end].strip())
        blanked.append("".join(code).strip())
        code.clear()
        start = end

    while i < n:
        if text.startswith("(*", i):
            depth, i = 1, i + 2
            while depth:
                if i >= n:
                    raise IncompleteSentence("unterminated comment")
                if text.startswith("(*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*)", i):
                    depth, i = depth - 1, i + 2
                elif text[i] == '"':
                    i = skip_string(i + 1)
                else:
                    i += 1
            code.append(" ")
            continue
        char = text[i]
        if not "".join(code).strip():  # at the start of a sentence: bullets, braces, `2: {`
            if char.isspace():
                code.append(char)
                i += 1
                continue
            match = _SENTENCE_START.match(text, i)
            if match:
                code.append(match.group())
                emit(match.end())
                i = match.end()
                continue
        if char == '"':
            j = skip_string(i + 1)
            code.append('""')
            i = j
            continue
        code.append(char)
        i += 1
        if char == "." and (i >= n or text[i].isspace()) and not text.startswith("..", i - 2):
            emit(i)
    if "".join(code).strip():
        raise IncompleteSentence("the last sentence does not end with '.'")
    return sentences, blanked


def _strings(text: str) -> list[str]:
    """The string literals of ``text`` (outside comments, quotes kept) for the workspace check."""
    return re.findall(r'"(?:[^"]|"")*"', re.sub(r"\(\*.*?\*\)", " ", text, flags=re.S))


class Coq(Program):
    """coqtop driven sentence by sentence (see the module docstring)."""

    domain: ClassVar[str] = "coq"
    executables: ClassVar[tuple[str, ...]] = ("coqtop", "coqc", "coqide")
    apt_packages: ClassVar[str] = "coq coqide"
    gui_application: ClassVar[str | None] = "coqide"
    QUERIES: ClassVar[dict[str, str]] = QUERIES
    _stdlib: ClassVar[set[tuple[str, ...]] | None] = None

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.repl: Repl | None = None
        self.script: list[str] = []
        self.prompt = ""
        self._checks = 0
        self.trusted = 0
        """Sentences of the script that the task's setup put there (the agent's come after them)."""
        self.setup: list[str] = []
        """Those sentences (on the gui interface the agent edits the file, so they are kept apart)."""
        self.gui: Any = None

    # --------------------------------------------------------------------------------------------- life
    def start(self) -> None:
        if Coq._stdlib is None:
            where = self.sandbox.run(["coqc", "-where"], timeout=self.timeout).stdout.strip()
            theories = Path(where) / "theories"
            Coq._stdlib = {
                path.relative_to(theories).with_suffix("").parts for path in theories.rglob("*.vo")
            }
        if self.interface == "gui":
            return  # CoqIDE opens proof.v once the setup's sentences are in it (setup_done)
        self.repl = Repl(self.sandbox, ["coqtop", "-emacs", "-q"], r"</prompt>", name="coqtop")
        self.prompt = self._prompt(self.repl.read_until_prompt(self.timeout))
        self._write()

    def setup_done(self) -> None:
        self.trusted = len(self.script)
        self.setup = list(self.script)
        if self.interface == "gui":
            self._write()
            self._start_gui()

    def _start_gui(self) -> None:
        self.gui = self.sandbox.spawn(["coqide", SCRIPT], stdin=None, stdout=None)
        self.wait_for_window(
            self.gui,
            lambda: "[frame] CoqIDE" in self.sandbox.a11y_tree(self.gui_application, max_lines=5),
            "coqide",
            settle=0.0,
        )
        size = map(str, GUI_WINDOW)
        self.sandbox.xdotool("search", "--name", "CoqIDE", "windowsize", *size, timeout=self.timeout)
        time.sleep(1.0)  # let the editor lay out at its new size

    def close(self) -> None:
        if self.repl is not None and self.repl.process.poll() is None:
            self.sandbox.kill(self.repl.process, grace=1.0)
        if self.gui is not None and self.gui.poll() is None:
            self.sandbox.kill(self.gui, grace=1.0)

    # ---------------------------------------------------------------------------------------- interface
    def command(self, text: str) -> str:
        try:
            sentences, _ = split_sentences(text)
        except IncompleteSentence as error:
            return f"error: {error}; nothing was sent (every sentence ends with '.')"
        if not sentences:
            return "error: no Coq sentence in the command"
        if self.interface == "gui":  # only the task's setup sends commands here: they open proof.v
            self.script.extend(sentences)
            return ""
        outputs = []
        for index, sentence in enumerate(sentences):
            answer, accepted = self._send(sentence)
            outputs.append(answer)
            if accepted:
                self.script.append(sentence)
            else:
                left = len(sentences) - index - 1
                if left:
                    outputs.append(f"({left} later sentence(s) not run after this error)")
                break
        self._write()
        return "\n".join(output for output in outputs if output)

    def refuse(self, text: str) -> str | None:
        for literal in _strings(text):
            reason = super().refuse(literal)
            if reason:
                return reason
        try:
            _, blanked = split_sentences(text)
        except IncompleteSentence:
            blanked = [re.sub(r'"(?:[^"]|"")*"', '""', re.sub(r"\(\*.*?\*\)", " ", text, flags=re.S))]
        for code in blanked:
            for what, pattern, why in _FORBIDDEN:
                if re.search(pattern, code):
                    return f"refused: {what} is not allowed here ({why})"
            reason = self._refuse_require(code)
            if reason:
                return reason
        return None

    def status(self) -> str:
        answer, _ = self._send("Show.")
        if re.search(r"^Error:", answer, re.M):
            shown = "no proof in progress"
        else:
            shown = re.sub(r" \(ID \d+\)", "", answer).strip()
        if len(shown) > MAX_STATUS:
            shown = shown[:MAX_STATUS] + " ..."
        return f"{SCRIPT}: {len(self.script)} sentence(s). {shown}"

    # ------------------------------------------------------------------------------------------ queries
    def query(self, name: str, args: dict[str, Any]) -> Any:
        if self.interface == "gui":
            self._read_saved()
        if name == "proof_complete":
            (theorem,) = self.require(name, args, "theorem")
            result = self._compile(f"Print Assumptions {self._ident(theorem)}.")
            answer = _WARNING.sub("", result.stdout).strip()  # coqc's warnings interleave with its answer
            return result.returncode == 0 and answer.endswith("Closed under the global context")
        if name == "statement_is":
            theorem, statement = self.require(name, args, "theorem", "statement")
            return self._statement_is(self._ident(theorem), statement)
        if name == "defined":
            (ident,) = self.require(name, args, "name")
            answer, _ = self._ask(f"Locate {self._ident(ident)}.")
            return re.search(r"^(?:Constant|Inductive|Constructor)\s", answer, re.M) is not None
        if name == "compute":
            (expression,) = self.require(name, args, "expression")
            try:
                sentences, _ = split_sentences(f"Eval compute in ({expression}).")
            except IncompleteSentence as error:
                raise QueryError(f"coq: compute: bad expression {expression!r} ({error})") from None
            if len(sentences) != 1:
                raise QueryError(f"coq: compute: {expression!r} must be one term")
            answer, accepted = self._ask(sentences[0])
            if not accepted:
                raise QueryError(f"coq: compute {expression!r} failed: {' '.join(answer.split())[-200:]}")
            value = re.split(r"\n\s*: ", answer.strip())[0]
            return " ".join(value.removeprefix("=").split())
        return super().query(name, args)

    # ---------------------------------------------------------------------------------------- internals
    def _read_saved(self) -> None:
        """gui: the script is the proof.v the agent saved from CoqIDE (a sentence left unfinished keeps
        the whole text, which then does not compile)."""
        text = (self.sandbox.workspace / SCRIPT).read_text(encoding="utf-8", errors="replace")
        try:
            self.script, _ = split_sentences(text)
        except IncompleteSentence:
            self.script = [text]

    def _ask(self, sentence: str) -> tuple[str, bool]:
        """One sentence's answer after the script: from the live coqtop (api), or from coqc compiling
        the saved script followed by it (gui)."""
        if self.interface != "gui":
            return self._send(sentence)
        result = self._compile(f'Goal True. idtac "{ANSWER_MARK}". Abort.\n{sentence}')
        answer = _WARNING.sub("", result.stdout).rsplit(ANSWER_MARK, 1)[-1]
        return answer.strip("\n"), result.returncode == 0

    def _send(self, sentence: str) -> tuple[str, bool]:
        """Send one sentence; (its answer, whether Coq accepted it: the prompt's state number moved)."""
        if self.repl is None:
            raise QueryError("coq: coqtop is not started")
        raw = self.repl.send(sentence, self.timeout)
        prompt = self._prompt(raw)
        answer = raw[: raw.rfind("<prompt>")] if "<prompt>" in raw else raw
        accepted = prompt != self.prompt and not re.search(r"^Error:", answer, re.M)
        self.prompt = prompt
        answer = "\n".join(
            line for line in _TAGS.sub("", answer).splitlines() if not line.startswith("[Loading ML file")
        )
        return answer.strip("\n"), accepted

    @staticmethod
    def _prompt(raw: str) -> str:
        at = raw.rfind("<prompt>")
        return raw[at + len("<prompt>") :] if at >= 0 else ""

    def _write(self) -> None:
        (self.sandbox.workspace / SCRIPT).write_text("\n".join(self.script) + "\n", encoding="utf-8")

    def _statement_is(self, theorem: str, statement: str) -> bool:
        """Whether ``theorem``'s type is ``statement`` as the *task* means it, not as the agent's script
        may have redefined its words.

        The statement is elaborated right after the task's setup, before any sentence of the agent
        (``Definition embodia_expected_statement : Prop := statement.``), and compared with the theorem's
        type at the end: a script that shadows ``nat``, ``+``, ``length`` or a setup definition proves
        something else, and the comparison sees different constants. A statement that names what the
        agent was asked to define (``fact 5 = 120``) cannot be elaborated before the agent's sentences;
        it is elaborated after them inside a fresh module that imports Coq's prelude and the setup's
        libraries again, so standard names and notations mean their standard constants there.
        """
        expected = f"Definition {EXPECTED} : Prop := ({statement})."
        compare = (
            f"Goal True.\nlet T := type of {theorem} in "
            f"let S := eval cbv delta [{EXPECTED}] in {EXPECTED} in constr_eq T S.\nAbort."
        )
        setup, agent = self.script[: self.trusted], self.script[self.trusted :]
        if setup != self.setup:
            return False  # the agent edited the task's own sentences (gui): the statement's context is gone
        if self._compile(compare, before=[*setup, expected], after=agent).returncode == 0:
            return True
        if self._compile("", before=[*setup, expected], after=[]).returncode == 0:
            return False  # the statement means something at the setup's end, and the theorem is not it
        reimports = [s for s in setup if _IMPORT.match(s)]
        fresh = "\n".join(
            [
                f"Module {EXPECTED}_module.",
                "From Coq Require Import Init.Prelude.",
                *reimports,
                f"Goal True.\nlet T := type of {theorem} in let S := constr:({statement}) in "
                "constr_eq T S.\nAbort.",
                f"End {EXPECTED}_module.",
            ]
        )
        return self._compile(fresh).returncode == 0

    def _compile(self, extra: str, before: list[str] | None = None, after: list[str] | None = None) -> Any:
        """Compile a copy of the script followed by ``extra`` with coqc (output: stdout, stderr merged);
        ``before`` + ``after`` replace the script (to insert a sentence inside it)."""
        folder = self.sandbox.workspace / CHECK_DIR
        folder.mkdir(exist_ok=True)
        self._checks += 1
        name = f"check{self._checks}.v"
        body = self.script if before is None else [*before, *(after or [])]
        (folder / name).write_text("\n".join([*body, extra]) + "\n", encoding="utf-8")
        return self.sandbox.run(["coqc", "-q", name], timeout=self.timeout, cwd=folder)

    @staticmethod
    def _ident(name: Any) -> str:
        if not isinstance(name, str) or not _IDENT.match(name):
            raise QueryError(f"coq: {name!r} is not a Coq identifier")
        return name

    def _refuse_require(self, code: str) -> str | None:
        match = re.search(r"(?:\bFrom\s+([\w'.]+)\s+)?\bRequire\b(.*)", code, re.S)
        if not match:
            return None
        prefix, rest = match.group(1), match.group(2)
        if '"' in rest or (prefix and prefix != "Coq" and not prefix.startswith("Coq.")):
            return "refused: only Coq's standard library can be required (e.g. From Coq Require Import Lia.)"
        rest = re.sub(r"\([^)]*\)", " ", rest.rstrip().removesuffix("."))
        for word in re.findall(r"[A-Za-z_][\w'.]*", rest):
            if word in ("Import", "Export"):
                continue
            parts = tuple(f"{prefix}.{word}".split(".") if prefix else word.split("."))
            if parts[0] == "Coq":
                parts = parts[1:]
            stdlib = Coq._stdlib or set()
            if not any(path[len(path) - len(parts) :] == parts for path in stdlib if len(path) >= len(parts)):
                return f"refused: {word} is not a module of Coq's standard library"
        return None
