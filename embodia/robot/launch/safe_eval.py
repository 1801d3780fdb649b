"""A restricted evaluator for ``$(eval EXPR)``: ROS 2 runs Python's ``eval``; embodia evaluates a safe subset.

What ``$(eval)`` is used for in launch files is covered: literals (numbers, strings, lists, tuples, dicts,
sets, ``True``/``False``/``None``), arithmetic, comparisons (``in`` included), ``and``/``or``/``not``,
``x if c else y``, indexing and slicing, f-strings, the ``math`` module (``math.pi``, ``math.sqrt(2)``,
and, as in ROS 2, the bare names ``pi``, ``sqrt`` ...), a few pure builtins (:data:`BUILTINS`) and the
read-only methods of strings, lists and dicts (:data:`METHODS`). Anything else (other names, attributes,
imports, lambdas, comprehensions, other modules) raises :class:`EvalRefused` saying what was refused;
results are kept small (no ``9**9**9``, no ``'x' * 10**9``).
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from typing import Any

MAX_SIZE = 1_000_000
"""the longest string / sequence an expression may build"""
MAX_INT_BITS = 100_000
"""the largest integer (in bits) an expression may build"""


class EvalRefused(ValueError):
    """An expression embodia will not evaluate (outside the subset), or one that failed."""


class _Module:
    """A module an expression may name (``math``): attributes are looked up in a whitelist."""

    def __init__(self, name: str, members: dict[str, Any]) -> None:
        self.name, self.members = name, members


def _checked_factorial(n: Any) -> Any:
    if isinstance(n, int) and n > 5000:
        raise EvalRefused(f"math.factorial({n}) is too large")
    return math.factorial(n)


def _checked_comb(name: str) -> Callable[..., Any]:
    function = getattr(math, name)

    def call(n: Any, *rest: Any) -> Any:
        if isinstance(n, int) and n > 100_000:
            raise EvalRefused(f"math.{name}({n}, ...) is too large")
        return function(n, *rest)

    return call


MATH = {name: getattr(math, name) for name in dir(math) if not name.startswith("_")}
MATH.update(factorial=_checked_factorial, comb=_checked_comb("comb"), perm=_checked_comb("perm"))


def _range(*args: int) -> list[int]:
    values = range(*args)
    if len(values) > MAX_SIZE:
        raise EvalRefused(f"range of {len(values)} items is too large")
    return list(values)


BUILTINS: dict[str, Callable[..., Any]] = {
    f.__name__: f
    for f in (abs, all, any, bool, chr, divmod, float, int, len, list, max, min, ord, round, sorted, str, sum)
} | {
    "tuple": tuple,
    "dict": dict,
    "set": set,
    "hex": hex,
    "oct": oct,
    "bin": bin,
    "repr": repr,
    "range": _range,
}

METHODS: dict[type, frozenset[str]] = {
    str: frozenset(
        [
            "capitalize",
            "casefold",
            "count",
            "endswith",
            "find",
            "index",
            "isalnum",
            "isalpha",
            "isdecimal",
            "isdigit",
            "islower",
            "isnumeric",
            "isspace",
            "istitle",
            "isupper",
            "join",
            "lower",
            "lstrip",
            "partition",
            "removeprefix",
            "removesuffix",
            "replace",
            "rfind",
            "rindex",
            "rpartition",
            "rsplit",
            "rstrip",
            "split",
            "splitlines",
            "startswith",
            "strip",
            "swapcase",
            "title",
            "upper",
            "zfill",
            "center",
            "ljust",
            "rjust",
        ]
    ),
    list: frozenset({"count", "index"}),
    tuple: frozenset({"count", "index"}),
    dict: frozenset({"get", "keys", "values", "items"}),
}

_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
    ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_,
    ast.BitXor: operator.xor,
}
_UNARY: dict[type, Callable[[Any], Any]] = {
    ast.Not: operator.not_,
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
    ast.Invert: operator.invert,
}
_COMPARE: dict[type, Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
    ast.Is: operator.is_,
    ast.IsNot: operator.is_not,
}
_SIZED = (str, bytes, list, tuple, dict, set)


def _size_of(value: Any) -> int:
    return len(value) if isinstance(value, _SIZED) else 1


def _check_binary(op: ast.operator, left: Any, right: Any) -> None:
    """Refuse operations whose result would be huge, before computing them."""
    power = isinstance(op, ast.Pow) and isinstance(left, int) and isinstance(right, int) and right > 0
    if power and max(abs(left), 2).bit_length() * right > MAX_INT_BITS:
        raise EvalRefused(f"{left} ** {right} is too large")
    if isinstance(op, ast.LShift) and isinstance(right, int) and right > MAX_INT_BITS:
        raise EvalRefused(f"<< {right} is too large")
    if isinstance(op, ast.Mult):
        for seq, count in ((left, right), (right, left)):
            if isinstance(seq, _SIZED) and isinstance(count, int) and len(seq) * count > MAX_SIZE:
                raise EvalRefused(f"a sequence of {len(seq) * count} items is too large")


def _check_method(value: Any, name: str, args: list[Any]) -> None:
    if (
        name in ("center", "ljust", "rjust", "zfill")
        and args
        and isinstance(args[0], int)
        and args[0] > MAX_SIZE
    ):
        raise EvalRefused(f"str.{name}({args[0]}) is too large")
    replace = name == "replace" and isinstance(value, str) and len(args) >= 2 and isinstance(args[1], str)
    if replace and (len(value) + 1) * max(len(args[1]), 1) > MAX_SIZE:
        raise EvalRefused("str.replace result is too large")


class _Evaluator:
    def __init__(self, names: dict[str, Any]) -> None:
        self.names = names

    def __call__(self, node: ast.AST) -> Any:
        method = getattr(self, f"_{type(node).__name__}", None)
        if method is None:
            raise EvalRefused(f"{_describe(node)} is not supported")
        result = method(node)
        if isinstance(result, int) and not isinstance(result, bool) and result.bit_length() > MAX_INT_BITS:
            raise EvalRefused("the result is too large")
        if _size_of(result) > MAX_SIZE:
            raise EvalRefused("the result is too large")
        return result

    def _Expression(self, node: ast.Expression) -> Any:
        return self(node.body)

    def _Constant(self, node: ast.Constant) -> Any:
        return node.value

    def _Name(self, node: ast.Name) -> Any:
        if node.id in self.names:
            return self.names[node.id]
        raise EvalRefused(
            f"name {node.id!r} is not defined (quote strings: '$(var x)' == 'on'; available: math and its "
            "names, True, False, None and the builtins str, int, float, bool, len, min, max, abs, round ...)"
        )

    def _List(self, node: ast.List) -> Any:
        return [self(e) for e in node.elts]

    def _Tuple(self, node: ast.Tuple) -> Any:
        return tuple(self(e) for e in node.elts)

    def _Set(self, node: ast.Set) -> Any:
        return {self(e) for e in node.elts}

    def _Dict(self, node: ast.Dict) -> Any:
        if any(k is None for k in node.keys):
            raise EvalRefused("dict unpacking (**) is not supported")
        return {self(k): self(v) for k, v in zip(node.keys, node.values, strict=True)}  # type: ignore[arg-type]

    def _BinOp(self, node: ast.BinOp) -> Any:
        function = _BINARY.get(type(node.op))
        if function is None:
            raise EvalRefused(f"operator {type(node.op).__name__} is not supported")
        left, right = self(node.left), self(node.right)
        _check_binary(node.op, left, right)
        return function(left, right)

    def _UnaryOp(self, node: ast.UnaryOp) -> Any:
        return _UNARY[type(node.op)](self(node.operand))

    def _BoolOp(self, node: ast.BoolOp) -> Any:
        value: Any = None
        for operand in node.values:
            value = self(operand)
            if isinstance(node.op, ast.And) and not value:
                return value
            if isinstance(node.op, ast.Or) and value:
                return value
        return value

    def _Compare(self, node: ast.Compare) -> Any:
        left = self(node.left)
        for op, comparator in zip(node.ops, node.comparators, strict=True):
            right = self(comparator)
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True

    def _IfExp(self, node: ast.IfExp) -> Any:
        return self(node.body) if self(node.test) else self(node.orelse)

    def _Subscript(self, node: ast.Subscript) -> Any:
        value = self(node.value)
        if not isinstance(value, _SIZED):
            raise EvalRefused(f"indexing a {type(value).__name__} is not supported")
        return value[self(node.slice)]

    def _Slice(self, node: ast.Slice) -> Any:
        return slice(*(None if p is None else self(p) for p in (node.lower, node.upper, node.step)))

    def _JoinedStr(self, node: ast.JoinedStr) -> Any:
        return "".join(str(self(v)) for v in node.values)

    def _FormattedValue(self, node: ast.FormattedValue) -> Any:
        value = self(node.value)
        if node.conversion == ord("r"):
            value = repr(value)
        elif node.conversion == ord("s"):
            value = str(value)
        spec = self(node.format_spec) if node.format_spec is not None else ""
        if any(c.isdigit() for c in spec) and max(int(d) for d in _digits(spec)) > MAX_SIZE:
            raise EvalRefused(f"format spec {spec!r} is too large")
        if not isinstance(value, (int, float, str, bool)) and spec:
            raise EvalRefused(f"formatting a {type(value).__name__} with a spec is not supported")
        return format(value, spec)

    def _Attribute(self, node: ast.Attribute) -> Any:
        owner = self(node.value)
        if isinstance(owner, _Module):
            if node.attr in owner.members:
                return owner.members[node.attr]
            raise EvalRefused(f"{owner.name}.{node.attr} is not available")
        raise EvalRefused(
            f"attribute .{node.attr} of a {type(owner).__name__} is not supported (only module members "
            "and string / list / dict methods that are called)"
        )

    def _Call(self, node: ast.Call) -> Any:
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            raise EvalRefused("* and ** in calls are not supported")
        args = [self(a) for a in node.args]
        kwargs = {k.arg: self(k.value) for k in node.keywords if k.arg is not None}
        if isinstance(node.func, ast.Attribute):
            owner = self(node.func.value)
            if not isinstance(owner, _Module):
                allowed = METHODS.get(type(owner), frozenset())
                if node.func.attr not in allowed:
                    raise EvalRefused(
                        f"method .{node.func.attr}() of a {type(owner).__name__} is not supported"
                    )
                _check_method(owner, node.func.attr, args)
                result = getattr(owner, node.func.attr)(*args, **kwargs)
                return list(result) if node.func.attr in ("keys", "values", "items") else result
            function = self._Attribute(node.func)
        else:
            function = self(node.func)
        if not callable(function):
            raise EvalRefused(f"{_describe(node.func)} is not callable")
        return function(*args, **kwargs)


def _digits(spec: str) -> list[str]:
    out, run = [], ""
    for c in spec + " ":
        if c.isdigit():
            run += c
        elif run:
            out.append(run)
            run = ""
    return out


def _describe(node: ast.AST) -> str:
    kinds = {
        "Lambda": "lambda",
        "ListComp": "a comprehension",
        "SetComp": "a comprehension",
        "DictComp": "a comprehension",
        "GeneratorExp": "a generator expression",
        "NamedExpr": "':='",
        "Await": "await",
        "Yield": "yield",
        "Starred": "'*'",
    }
    name = type(node).__name__
    return kinds.get(name, f"'{ast.unparse(node)}'" if isinstance(node, ast.expr) else name)


def safe_eval(expression: str, modules: list[str] | None = None) -> Any:
    """Evaluate ``expression`` as ROS 2's ``$(eval)`` does, within the subset described in the module docstring.

    ``modules`` are the modules the expression may name (ROS 2's second ``eval`` argument); only
    ``math`` is available.

    Raises:
        EvalRefused: a construct outside the subset, a name that is not defined, a result that would be
            too large, or an error while evaluating (``1/0``), with what it was.
    """
    modules = ["math"] if modules is None else modules
    names: dict[str, Any] = dict(BUILTINS)
    for module in modules:
        if module != "math":
            raise EvalRefused(f"module {module!r} is not available to $(eval) in embodia (only math)")
        names.update(MATH)
        names["math"] = _Module("math", MATH)
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as error:
        raise EvalRefused(f"not a Python expression ({error.msg})") from error
    try:
        return _Evaluator(names)(tree)
    except EvalRefused:
        raise
    except (ArithmeticError, ValueError, TypeError, LookupError) as error:
        raise EvalRefused(f"{type(error).__name__}: {error}") from error
