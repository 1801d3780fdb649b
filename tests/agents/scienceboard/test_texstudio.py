"""TeXstudio domain: the editing/build commands, the checker on real pdflatex output, oracles, wrong sequences,
refusals, and the GUI (TeXstudio on Xvfb driven with xdotool)."""

from __future__ import annotations

import time

import pytest

from embodia.agents.scienceboard.checkers import evaluate
from embodia.agents.scienceboard.env import ScienceBoardEnv
from embodia.agents.scienceboard.programs.texstudio import TeXstudio
from embodia.agents.scienceboard.sandbox import Sandbox
from embodia.agents.scienceboard.tasks import Rule, load_tasks

SAMPLE = ["texstudio-add-section", "texstudio-table", "texstudio-cross-references"]


def task(task_id: str):
    return load_tasks(domains=["texstudio"], ids=[task_id])[0]


def run(env: ScienceBoardEnv, actions) -> tuple[float, dict]:
    reward, info = 0.0, {}
    for action in actions:
        _, reward, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break
    return reward, info


def test_commands_and_checker_on_real_pdf() -> None:
    with Sandbox() as sandbox:
        sample = task("texstudio-add-section")
        (sandbox.workspace / "main.tex").write_text(sample.files["main.tex"])
        program = TeXstudio(sandbox, sample, "api")
        program.start()
        rules = [
            Rule(query="pdf_text", op="contains", value="2 Methods We measured each sample twice."),
            Rule(query="section_titles", op="equals", value=["Introduction", "Methods"]),
            Rule(query="compiled_fresh", op="true"),
        ]
        # failing state: no PDF yet, then the section appended but not compiled
        assert program.query("pdf_exists", {}) is False and program.query("pdf_text", {}) is None
        assert evaluate(rules, program.query)[0] is False
        assert program.command("append \\section{Methods}\\nWe measured each sample twice.").startswith(
            "inserted 2"
        )
        assert "4| We study" in program.command("show")
        assert evaluate(rules, program.query)[0] is False
        assert program.command("compile").startswith("compiled: 1 pages")
        passed, checks = evaluate(rules, program.query)
        assert passed, [check.message for check in checks]
        assert program.query("pdf_text_count", {"text": "Methods"}) == 1
        assert program.query("source_regex", {"pattern": r"^\\section\{Methods\}$"}) is True
        # an edit makes the PDF stale; a broken document reports LaTeX's error and leaves no fresh PDF
        assert program.command("replace Methods} ||| Methods") == "replaced 1 occurrence in main.tex"
        assert program.query("compiled_fresh", {}) is False
        output = program.command("compile")
        assert output.startswith("compile failed:") and "!" in output
        assert program.query("log_errors", {})
        assert program.command("replace nowhere ||| x").startswith("error: replace:")
        assert program.command("delete 99").startswith("error: line number")
        assert program.command("frobnicate").startswith("error: unknown command")


@pytest.mark.parametrize("task_id", SAMPLE)
def test_oracle_solves_and_wrong_fails(task_id: str) -> None:
    sample = task(task_id)
    with ScienceBoardEnv("api") as env:
        env.reset(sample)
        reward, info = run(env, sample.oracle)
        assert reward == 1.0 and info["success"] is True, info.get("checks")
        env.reset(sample)
        reward, info = run(env, sample.wrong)
        assert reward == 0.0 and info["success"] is False, info.get("checks")


def test_refused_escapes_and_episode_continues() -> None:
    sample = task("texstudio-add-section")
    with ScienceBoardEnv("api") as env:
        env.reset(sample)
        for text in (
            "append \\immediate\\write18{touch pwned}",
            "append \\input{/etc/passwd}",
            'append \\input|"ls"',
            "append \\openout3=notes.txt",
            "append \\includegraphics{../secret.png}",
        ):
            observation, reward, terminated, truncated, info = env.step({"type": "command", "text": text})
            assert info["refused"] is True and observation["output"].startswith("refused:")
            assert not (terminated or truncated)
        assert "\\input" not in env.program.query("source", {})
        reward, info = run(env, sample.oracle)
        assert reward == 1.0, info.get("checks")


def test_gui_typing_saving_and_building() -> None:
    sample = task("texstudio-add-section")
    with ScienceBoardEnv("gui", observation="screenshot") as env:
        before = env.reset(sample)["screenshot"]
        workspace = env.sandbox.workspace
        env.step({"type": "click", "x": 760, "y": 300})
        env.step({"type": "key", "text": "ctrl+End Up Home"})
        for line in ("\\section{Methods}", "We measured each sample twice."):
            env.step({"type": "type", "text": line})
            env.step({"type": "key", "text": "Return"})
        after = env.step({"type": "key", "text": "ctrl+s"})[0]["screenshot"]
        changed = sum(a != b for a, b in zip(before.getdata(), after.getdata(), strict=True))
        assert changed > 500, f"only {changed} pixels changed"
        saved = "\\section{Methods}\nWe measured each sample twice.\n"
        deadline = time.monotonic() + 120  # the save lands when TeXstudio gets to it (later under load)
        while saved not in (workspace / "main.tex").read_text() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert saved in (workspace / "main.tex").read_text()
        env.step({"type": "key", "text": "F6"})
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if env.program.query("compiled_fresh", {}) and env.program.query("section_titles", {}) == [
                "Introduction",
                "Methods",
            ]:
                break
            time.sleep(0.25)
        assert "2 Methods We measured each sample twice." in env.program.query("pdf_text", {})
        reward, info = run(env, [{"type": "done"}])
        assert reward == 1.0, info.get("checks")
