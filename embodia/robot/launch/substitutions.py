"""ROS 2 launch substitutions: ``$(name arg ...)`` templates, parsed once and evaluated against a scope.

The grammar is that of the ROS 2 launch front ends: text with ``$(name args)`` anywhere; arguments are
separated by spaces and are unquoted runs (which may hold nested substitutions), or ``'...'`` /
``"..."`` templates (which may hold spaces, parentheses and nested substitutions); a backslash escapes
the next character. ``$(env X '')`` therefore has the two arguments ``X`` and the empty string.

Supported: ``var``, ``env``, ``optenv``, ``dirname``, ``filename``, ``find-pkg-share``, ``find-pkg-prefix``,
``find-exec``, ``exec-in-pkg``, ``command``, ``eval`` (see :mod:`.safe_eval`), ``anon``, ``not``, ``and``,
``or``, ``any``, ``all``, ``equals``, ``not-equals``, ``if``, ``file-content``. Refused with a message:
``param`` (needs a running ROS graph), ``launch_log_dir`` / ``log_dir``.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import yaml

from embodia.robot.errors import LaunchFileError
from embodia.robot.launch.safe_eval import EvalRefused, safe_eval

COMMAND_TIMEOUT = 60.0
"""seconds a ``$(command ...)`` may run before the launch file is refused"""

_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
_PLACEHOLDER = 0xF0000  # substituted values stand in a command line as private-use characters while it splits
_PLACEHOLDERS = re.compile("[\U000f0000-\U000ffffd]")


@dataclass(frozen=True)
class Sub:
    """One ``$(name args...)``; every argument is itself a template."""

    name: str
    args: tuple[Template, ...]
    text: str
    """the substitution as written, for messages"""


Template = tuple["str | Sub", ...]


class TemplateSyntaxError(ValueError):
    """A string that is not a valid substitution template (unclosed ``$(``, quote ...)."""


class Scope(Protocol):
    """What evaluating a template needs from the launch being read."""

    file: Path

    def variable(self, name: str) -> str | None:
        """A launch configuration (``arg``, ``let``, include argument), or None."""

    def environ(self, name: str) -> str | None:
        """An environment variable as the launch sees it (``set_env`` included), or None."""

    def anon(self, name: str) -> str:
        """The anonymous name of ``name``, the same for every use within one launch."""

    def fail(self, message: str) -> LaunchFileError:
        """An error that names the file, line and action being read."""

    def runs_commands(self) -> bool:
        """Whether ``$(command ...)`` runs (False in a dry run, which must start nothing)."""

    def unevaluated(self, text: str) -> None:
        """Note a substitution a dry run left as written."""


# ---------------------------------------------------------------------- parsing
class _Parser:
    def __init__(self, text: str) -> None:
        self.s, self.i = text, 0

    def error(self, message: str) -> TemplateSyntaxError:
        return TemplateSyntaxError(f"{message} in {self.s!r} (at character {self.i + 1})")

    def top(self) -> Template:
        parts: list[str | Sub] = []
        buf: list[str] = []
        s = self.s
        while self.i < len(s):
            if s[self.i] == "\\" and self.i + 1 < len(s):
                buf.append(s[self.i + 1])
                self.i += 2
            elif s.startswith("$(", self.i):
                _flush(buf, parts)
                parts.append(self.substitution(None))
            else:
                buf.append(s[self.i])
                self.i += 1
        _flush(buf, parts)
        return tuple(parts)

    def substitution(self, quote: str | None) -> Sub:
        s, start = self.s, self.i
        self.i += 2
        match = _NAME.match(s, self.i)
        if not match:
            raise self.error("expected a substitution name after '$('")
        self.i = match.end()
        args: list[Template] = []
        while True:
            if self.i >= len(s):
                raise self.error(f"unclosed '$({match.group()}'")
            if s[self.i] == ")":
                self.i += 1
                break
            if not s[self.i].isspace():
                raise self.error(f"unexpected {s[self.i]!r} after '$({match.group()}'")
            while self.i < len(s) and s[self.i].isspace():
                self.i += 1
            if self.i < len(s) and s[self.i] != ")":
                args.append(self.value(quote))
        return Sub(match.group(), tuple(args), s[start : self.i])

    def value(self, quote: str | None) -> Template:
        s = self.s
        if s[self.i] in "'\"" and s[self.i] != quote:
            return self.quoted(s[self.i])
        parts: list[str | Sub] = []
        buf: list[str] = []
        while self.i < len(s):
            c = s[self.i]
            if c == "\\" and self.i + 1 < len(s):
                buf.append(s[self.i + 1])
                self.i += 2
            elif s.startswith("$(", self.i):
                _flush(buf, parts)
                parts.append(self.substitution(quote))
            elif c.isspace() or c == ")" or c == quote:
                break
            elif c == "(":
                raise self.error("a '(' in a substitution argument must be quoted ('...') or escaped")
            else:
                buf.append(c)
                self.i += 1
        _flush(buf, parts)
        return tuple(parts)

    def quoted(self, q: str) -> Template:
        s = self.s
        self.i += 1
        parts: list[str | Sub] = []
        buf: list[str] = []
        while True:
            if self.i >= len(s):
                raise self.error(f"unclosed {q}")
            c = s[self.i]
            if c == "\\" and self.i + 1 < len(s):
                buf.append(s[self.i + 1])
                self.i += 2
            elif c == q:
                self.i += 1
                break
            elif s.startswith("$(", self.i):
                _flush(buf, parts)
                parts.append(self.substitution(q))
            else:
                buf.append(c)
                self.i += 1
        _flush(buf, parts)
        return tuple(parts)


def _flush(buf: list[str], parts: list[str | Sub]) -> None:
    if buf:
        parts.append("".join(buf))
        buf.clear()


def parse_template(text: str) -> Template:
    """``"a $(var b) c"`` -> ``("a ", Sub("var", (("b",),), ...), " c")``.

    Raises:
        TemplateSyntaxError: an unclosed ``$(`` or quote, a bad substitution name.
    """
    if "$(" not in text and "\\" not in text:
        return (text,) if text else ()
    return _Parser(text).top()


def has_substitutions(template: Template) -> bool:
    """Whether the template holds at least one ``$(...)``."""
    return any(isinstance(p, Sub) for p in template)


# ---------------------------------------------------------------------- evaluation
def evaluate(template: Template, scope: Scope) -> str:
    """The string a template stands for."""
    return "".join(p if isinstance(p, str) else _perform(p, scope) for p in template)


def split_cmdline(template: Template, scope: Scope) -> list[str]:
    """A command line as ROS 2 splits it: the text splits at spaces (shell quoting), substituted values never.

    ``"$(var a) -x 1"`` with ``a = "p q"`` is ``["p q", "-x", "1"]``; ``"$(dirname)/run.sh x"`` is one path
    and ``x``. Quotes may also enclose substitutions (``"--name '$(var a) b'"``), where ROS 2 refuses.
    """
    values: list[str] = []
    text = []
    for part in template:
        if isinstance(part, Sub):
            text.append(chr(_PLACEHOLDER + len(values)))
            values.append(_perform(part, scope))
        else:
            text.append(part)
    try:
        tokens = shlex.split("".join(text))
    except ValueError as error:
        raise scope.fail(
            f"cannot split the command line {evaluate(template, scope)!r} ({error}); balance the quotes"
        ) from error
    return [_PLACEHOLDERS.sub(lambda m: values[ord(m.group()) - _PLACEHOLDER], t) for t in tokens]


def parse_bool(value: str) -> bool | None:
    """A boolean as ROS 2's typed substitutions read one (YAML rules, ``1``/``0``), or None."""
    text = value.strip()
    if text in ("1", "0"):
        return text == "1"
    try:
        parsed = yaml.safe_load(text)
    except yaml.YAMLError:
        return None
    return parsed if isinstance(parsed, bool) else None


def _bool_arg(sub: Sub, template: Template, scope: Scope) -> bool:
    value = evaluate(template, scope)
    parsed = parse_bool(value)
    if parsed is None:
        raise scope.fail(f"{sub.text}: {value!r} is not a boolean (true/false, 1/0)")
    return parsed


def _arity(sub: Sub, scope: Scope, low: int, high: int) -> None:
    if not low <= len(sub.args) <= high:
        expected = str(low) if low == high else f"{low} to {high}"
        raise scope.fail(f"$({sub.name}) takes {expected} argument(s), got {len(sub.args)} in {sub.text}")


def _var(sub: Sub, scope: Scope) -> str:
    _arity(sub, scope, 1, 2)
    name = evaluate(sub.args[0], scope)
    value = scope.variable(name)
    if value is not None:
        return value
    if len(sub.args) == 2:
        return evaluate(sub.args[1], scope)
    raise scope.fail(f"$(var {name}) is not a declared arg or let; declare it or pass {name}:=VALUE")


def _env(sub: Sub, scope: Scope) -> str:
    _arity(sub, scope, 1, 2)
    name = evaluate(sub.args[0], scope)
    value = scope.environ(name)
    if value is not None:
        return value
    if len(sub.args) == 2:
        return evaluate(sub.args[1], scope)
    if sub.name == "optenv":
        return ""
    raise scope.fail(f"environment variable {name} is not set (and $(env {name}) has no default)")


def _command(sub: Sub, scope: Scope) -> str:
    _arity(sub, scope, 1, 2)
    if not scope.runs_commands():  # a dry run starts nothing: the substitution stays as written
        scope.unevaluated(sub.text)
        return sub.text
    command = evaluate(sub.args[0], scope)
    on_stderr = evaluate(sub.args[1], scope) if len(sub.args) == 2 else "fail"
    if on_stderr not in ("fail", "ignore", "warn", "capture"):
        raise scope.fail(f"{sub.text}: on_stderr must be fail, ignore, warn or capture, got {on_stderr!r}")
    try:
        argv = shlex.split(command)
        result = subprocess.run(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT if on_stderr == "capture" else subprocess.PIPE,
            text=True,
            timeout=COMMAND_TIMEOUT,
            check=False,
        )
    except (OSError, ValueError) as error:
        raise scope.fail(f"$(command {command!r}) could not run: {error}") from error
    except subprocess.TimeoutExpired as error:
        raise scope.fail(f"$(command {command!r}) did not finish in {COMMAND_TIMEOUT:g} s") from error
    stderr = " ".join((result.stderr or "").split())[:300]
    if result.returncode != 0:
        raise scope.fail(
            f"$(command {command!r}) failed with exit status {result.returncode}"
            + (f": {stderr}" if stderr else "")
        )
    if stderr and on_stderr == "fail":
        raise scope.fail(
            f"$(command {command!r}) wrote to stderr ({stderr}); ROS 2 fails on that too: pass "
            "'warn' or 'ignore' as its second argument to accept it"
        )
    return result.stdout


def _eval(sub: Sub, scope: Scope) -> str:
    _arity(sub, scope, 1, 2)
    expression = evaluate(sub.args[0], scope)
    modules = ["math"]
    if len(sub.args) == 2:
        modules = [m.strip() for m in evaluate(sub.args[1], scope).split(",") if m.strip()]
    try:
        return str(safe_eval(expression, modules))
    except EvalRefused as error:
        raise scope.fail(f"$(eval {expression!r}): {error}") from error


def _find_pkg(sub: Sub, scope: Scope) -> str:
    from embodia.robot.launch.plan import find_package_share

    _arity(sub, scope, 1, 1)
    try:
        share = find_package_share(evaluate(sub.args[0], scope))
    except LaunchFileError as error:
        raise scope.fail(f"{sub.text}: {error}") from error
    return str(share if sub.name == "find-pkg-share" else share.parent.parent)


def _find_exec(sub: Sub, scope: Scope) -> str:
    _arity(sub, scope, 1, 1)
    name = evaluate(sub.args[0], scope)
    found = shutil.which(name)
    if found is None:
        raise scope.fail(f"{sub.text}: executable {name!r} not found on PATH")
    return found


def _exec_in_pkg(sub: Sub, scope: Scope) -> str:
    from embodia.robot.launch.plan import resolve_executable

    _arity(sub, scope, 2, 2)
    executable, package = evaluate(sub.args[0], scope), evaluate(sub.args[1], scope)
    try:
        argv = resolve_executable(package, executable)
    except LaunchFileError as error:
        raise scope.fail(f"{sub.text}: {error}") from error
    if len(argv) != 1:
        raise scope.fail(
            f"{sub.text}: {package}/{executable} is a Python module here ({' '.join(argv)}), not one "
            "file; use a node action instead"
        )
    return argv[0]


def _file_content(sub: Sub, scope: Scope) -> str:
    _arity(sub, scope, 1, 1)
    path = Path(evaluate(sub.args[0], scope))
    try:
        return path.read_text()
    except OSError as error:
        raise scope.fail(f"{sub.text}: cannot read {str(path)!r} ({error.strerror or error})") from error


def _not(sub: Sub, scope: Scope) -> str:
    _arity(sub, scope, 1, 1)
    return str(not _bool_arg(sub, sub.args[0], scope)).lower()


def _logic(sub: Sub, scope: Scope) -> str:
    if sub.name in ("and", "or"):
        _arity(sub, scope, 2, 2)
    values = [_bool_arg(sub, a, scope) for a in sub.args]
    combined = all(values) if sub.name in ("and", "all") else any(values)
    return str(combined).lower()


def _equals(sub: Sub, scope: Scope) -> str:
    _arity(sub, scope, 2, 2)
    left, right = (evaluate(a, scope) for a in sub.args)
    booleans = [v.lower() in ("true", "false", "1", "0") for v in (left, right)]
    if all(booleans):
        same = (left.lower() in ("true", "1")) == (right.lower() in ("true", "1"))
    else:
        try:
            import math

            same = math.isclose(float(left), float(right))
        except ValueError:
            same = left == right
    return str(same if sub.name == "equals" else not same).lower()


def _if(sub: Sub, scope: Scope) -> str:
    _arity(sub, scope, 2, 3)
    if _bool_arg(sub, sub.args[0], scope):
        return evaluate(sub.args[1], scope)
    return evaluate(sub.args[2], scope) if len(sub.args) == 3 else ""


def _anon(sub: Sub, scope: Scope) -> str:
    _arity(sub, scope, 1, 1)
    return scope.anon(evaluate(sub.args[0], scope))


def _path(sub: Sub, scope: Scope) -> str:
    _arity(sub, scope, 0, 0)
    return str(scope.file.parent if sub.name == "dirname" else scope.file)


SUBSTITUTIONS: dict[str, Callable[[Sub, Scope], str]] = {
    "var": _var,
    "env": _env,
    "optenv": _env,
    "dirname": _path,
    "filename": _path,
    "find-pkg-share": _find_pkg,
    "find-pkg-prefix": _find_pkg,
    "find-exec": _find_exec,
    "exec-in-pkg": _exec_in_pkg,
    "command": _command,
    "eval": _eval,
    "anon": _anon,
    "not": _not,
    "and": _logic,
    "or": _logic,
    "any": _logic,
    "all": _logic,
    "equals": _equals,
    "not-equals": _equals,
    "if": _if,
    "file-content": _file_content,
}

REFUSED_SUBSTITUTIONS = {
    "param": "reads a parameter of a running node; embodia reads the launch file without a ROS graph",
    "launch_log_dir": "embodia's launch keeps no ROS log directory; pass the folder as an arg",
    "log_dir": "embodia's launch keeps no ROS log directory; pass the folder as an arg",
}


def _perform(sub: Sub, scope: Scope) -> str:
    handler = SUBSTITUTIONS.get(sub.name)
    if handler is not None:
        return handler(sub, scope)
    if sub.name in REFUSED_SUBSTITUTIONS:
        raise scope.fail(f"substitution $({sub.name}) is not supported: {REFUSED_SUBSTITUTIONS[sub.name]}")
    raise scope.fail(
        f"unknown substitution $({sub.name}) in {sub.text}; supported: {', '.join(sorted(SUBSTITUTIONS))}"
    )


def environ_get(overlay: dict[str, str | None], name: str) -> str | None:
    """``name`` in the environment ``overlay`` (None = unset there) over ``os.environ``."""
    if name in overlay:
        return overlay[name]
    return os.environ.get(name)
