"""The shape of the code (ARCHITECTURE.md), checked so that it cannot rot: one-way layers (import-linter),
argparse only in command-line modules, one naming rule for command handlers, modules of readable size."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT

PACKAGE = ROOT / "embodia"
CLI_MODULES = {PACKAGE / "core" / "cli_args.py"} | set((PACKAGE / "cli").glob("*.py"))


def test_import_contracts_hold():
    lint = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run([str(lint)], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "BROKEN" not in result.stdout and result.stdout.count("KEPT") >= 3


def _modules() -> list[tuple[Path, ast.Module]]:
    return [(path, ast.parse(path.read_text())) for path in sorted(PACKAGE.rglob("*.py"))]


def test_argparse_lives_only_in_cli_modules():
    offenders = []
    for path, tree in _modules():
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            if "argparse" in names and path not in CLI_MODULES:
                offenders.append(str(path.relative_to(ROOT)))
    assert not offenders, f"argparse outside embodia/cli: {offenders}"


def test_command_handlers_are_named_cmd_and_set_as_func():
    for path in CLI_MODULES - {PACKAGE / "core" / "cli_args.py"}:
        tree = ast.parse(path.read_text())
        handlers = {
            kw.value.id
            for node in ast.walk(tree)
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "set_defaults"
            for kw in node.keywords
            if kw.arg == "func" and isinstance(kw.value, ast.Name)
        }
        assert all(name.startswith("cmd_") for name in handlers), (path.name, sorted(handlers))
        defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("cmd_")}
        assert defined == handlers, (path.name, sorted(defined ^ handlers))


def test_no_module_is_much_over_600_lines():
    long = {
        str(p.relative_to(ROOT)): n for p, _ in _modules() if (n := len(p.read_text().splitlines())) > 650
    }
    assert not long, long
