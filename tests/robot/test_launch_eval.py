"""``$(eval ...)`` in embodia: the restricted evaluator (literals, arithmetic, comparisons, logic, strings,
math) and what it refuses."""

from __future__ import annotations

import pytest

from embodia.robot.launch.safe_eval import EvalRefused, safe_eval


@pytest.mark.parametrize(
    ("expression", "value"),
    [
        ("1 + 2 * 3 - 4 / 2", 5.0),
        ("7 // 2, 7 % 2, 2 ** 10, -3, +3, ~0", (3, 1, 1024, -3, 3, -1)),
        ("'sim' == 'sim' and not 1 > 2 or False", True),
        ("1 < 2 <= 2 != 3", True),
        ("'a' in ['a', 'b'] and 'c' not in {'a': 1} and None is None", True),
        ("'x' if 0.5 >= 1 else 'y'", "y"),
        ("'robot_' + str(int('3') + 1) + '_' + 'ARM'.lower()", "robot_4_arm"),
        ("'a,b,c'.split(',')[1:] + [f'{2.5:.1f}m']", ["b", "c", "2.5m"]),
        ("' x '.strip().upper().zfill(3)", "00X"),
        ("{'kp': 1.5}.get('kp', 0) * 2", 3.0),
        ("round(math.sqrt(2) * pi, 3), degrees(math.pi), math.floor(2.7)", (4.443, 180.0, 2)),
        (
            "max(1, 5), min([3, 2]), abs(-2), len('abc'), sum(range(4)), sorted({3, 1})",
            (5, 2, 2, 3, 6, [1, 3]),
        ),
        ("float('1e3') + bool('x') + True", 1002.0),
    ],
)
def test_eval_covers_what_launch_files_compute(expression, value):
    assert safe_eval(expression) == value


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("__import__('os').system('true')", "name '__import__' is not defined"),
        ("open('/etc/passwd')", "name 'open' is not defined"),
        ("eval('1')", "name 'eval' is not defined"),
        ("(1).__class__.__bases__", "attribute .__class__ of a int is not supported"),
        ("'{0.__class__}'.format(1)", "method .format() of a str is not supported"),
        ("math.__loader__", "math.__loader__ is not available"),
        ("[c for c in 'ab']", "a comprehension is not supported"),
        ("(lambda: 1)()", "lambda is not supported"),
        ("(x := 1)", "':=' is not supported"),
        ("10 ** 100000", "is too large"),
        ("'x' * 10 ** 8", "is too large"),
        ("'ab'.center(10 ** 9)", "is too large"),
        ("math.factorial(100000)", "is too large"),
        ("1 / 0", "ZeroDivisionError: division by zero"),
        ("[1][3]", "IndexError"),
        ("1 +", "not a Python expression"),
        ("true", "name 'true' is not defined (quote strings"),
    ],
)
def test_eval_refuses_everything_else(expression, message):
    with pytest.raises(EvalRefused) as info:
        safe_eval(expression)
    assert message in str(info.value)


def test_eval_offers_only_math():
    assert safe_eval("sqrt(4)", ["math"]) == 2.0
    with pytest.raises(EvalRefused, match="module 'os' is not available"):
        safe_eval("1", ["math", "os"])
    with pytest.raises(EvalRefused, match="name 'sqrt' is not defined"):
        safe_eval("sqrt(4)", [])
