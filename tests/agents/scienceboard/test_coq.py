"""The Coq domain of ScienceBoard: coqtop driven sentence by sentence, checked with coqc (real Coq 8.16)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from embodia.agents.scienceboard.checkers import evaluate
from embodia.agents.scienceboard.env import ScienceBoardEnv
from embodia.agents.scienceboard.programs.coq import IncompleteSentence, split_sentences
from embodia.agents.scienceboard.tasks import Rule, Task, load_tasks, parse_task
from tests.agents.scienceboard.conftest import play

SAMPLE = ["coq-add-zero-right", "coq-app-length", "coq-rev-involutive"]


def inline_task(**changes: Any) -> Task:
    data = {
        "id": "coq-inline-test",
        "domain": "coq",
        "difficulty": "easy",
        "instruction": "Prove add_0_r_nat : forall n : nat, n + 0 = n.",
        "evaluate": [{"query": "proof_complete", "args": {"theorem": "add_0_r_nat"}, "op": "true"}],
        "oracle": [{"type": "done"}],
        "wrong": [{"type": "done"}],
    }
    return parse_task({**data, **changes}, "inline")


def run(task: Task, actions: list[Any]) -> tuple[float, dict[str, Any]]:
    reward, info, _ = play(task, actions)
    return reward, info


def test_split_sentences() -> None:
    text = 'Proof. induction n. (* a. "*)" b *) - simpl. 2: { auto. } Check Nat.add. Qed.'
    sentences, blanked = split_sentences(text)
    assert sentences == [
        "Proof.",
        "induction n.",
        '(* a. "*)" b *) -',
        "simpl.",
        "2: {",
        "auto.",
        "}",
        "Check Nat.add.",
        "Qed.",
    ]
    assert blanked[2] == "-"
    for bad in ("intros n", "idtac. (* open", 'Check "x.'):
        with pytest.raises(IncompleteSentence):
            split_sentences(bad)


def test_queries_read_the_real_state() -> None:
    with ScienceBoardEnv("api") as env:
        env.reset(inline_task())
        program = env.program
        assert program is not None and env.sandbox is not None
        program.command("Require Import List.")
        program.command("Theorem add_0_r_nat : forall n : nat, n + 0 = n.")
        program.command("Proof. induction n as [| n IH]. - reflexivity.")
        assert "S n + 0 = S n" in program.status()
        statement = {"theorem": "add_0_r_nat", "statement": "forall m : nat, m + 0 = m"}
        # failing state: the proof is still open
        assert program.query("proof_complete", {"theorem": "add_0_r_nat"}) is False
        assert program.query("statement_is", statement) is False
        assert program.query("defined", {"name": "add_0_r_nat"}) is False
        output = program.command("- simpl. rewrte IH. reflexivity.")
        assert "rewrte was not found" in output and "1 later sentence(s) not run" in output
        program.command("rewrite IH. reflexivity. Qed.")
        # passing state
        assert program.query("proof_complete", {"theorem": "add_0_r_nat"}) is True
        assert program.query("statement_is", statement) is True
        assert program.query("statement_is", {**statement, "statement": "forall m : nat, 0 + m = m"}) is False
        assert program.query("defined", {"name": "add_0_r_nat"}) is True
        assert (
            program.query("compute", {"expression": "List.rev (1 :: 2 :: 3 :: nil)"}) == "3 :: 2 :: 1 :: nil"
        )
        script = (env.sandbox.workspace / "proof.v").read_text()
        assert "rewrte" not in script and script.rstrip().endswith("Qed.")
        rules = [
            Rule(query="proof_complete", op="true", args={"theorem": "add_0_r_nat"}),
            Rule(query="compute", op="equals", args={"expression": "2 + 3"}, value=5),
            Rule(query="compute", op="equals", args={"expression": "2 + 3"}, value="6"),
        ]
        passed, checks = evaluate(rules, program.query)
        assert not passed and [check.passed for check in checks] == [True, True, False]
        # an admitted lemma is not a proof
        program.command("Lemma l : 1 = 2. Admitted.")
        assert program.query("proof_complete", {"theorem": "l"}) is False
        assert "no proof in progress" in program.status()


@pytest.mark.parametrize("task_id", SAMPLE)
def test_oracle_solves_and_wrong_fails(task_id: str) -> None:
    (task,) = load_tasks(ids=[task_id])
    reward, info = run(task, task.oracle)
    assert reward == 1.0 and info["success"] is True, info.get("checks")
    reward, info = run(task, task.wrong)
    assert reward == 0.0 and info["success"] is False


@pytest.mark.parametrize(
    ("task_id", "attack"),
    [
        # '+' made to drop its right operand: the theorem proved is forall n, n = n
        ("coq-add-zero-right", 'Notation "x + y" := (x). Theorem add_0_r_nat : forall n : nat, n + 0 = n.'),
        # a module Nat whose add ignores its second argument, and '+' pointed at it
        (
            "coq-add-zero-right",
            'Module Nat. Definition add (a b : nat) := a. End Nat. Infix "+" := Nat.add : nat_scope. '
            "Theorem add_0_r_nat : forall n : nat, n + 0 = n.",
        ),
        # the setup's double shadowed by one for which the statement holds by computation
        (
            "coq-double-plus",
            "Module Shadow. Definition double (n : nat) := n + n. End Shadow. Import Shadow. "
            "Theorem double_plus : forall n : nat, double n = n + n.",
        ),
        # a statement naming the agent's own function (checked after the agent's sentences): '=' redefined
        (
            "coq-factorial",
            "Fixpoint fact (n : nat) : nat := match n with 0 => 1 | S m => S m * fact m end. "
            'Notation "x = y" := True (at level 70, no associativity) : type_scope. Theorem fact_5 : fact 5 = 120.',
        ),
    ],
)
def test_redefining_the_statements_words_does_not_pass_the_checker(task_id: str, attack: str) -> None:
    """The known loophole: statement_is used to elaborate the statement after the agent's script, so a
    script that redefined nat's '+', a setup function or '=' proved a trivial theorem that matched it."""
    (task,) = load_tasks(ids=[task_id])
    proof = "Proof. exact I. Qed." if "True" in attack else "Proof. reflexivity. Qed."
    with ScienceBoardEnv("api") as env:
        env.reset(task)
        program = env.program
        assert program is not None
        _, _, _, _, info = env.step({"type": "command", "text": f"{attack} {proof}"})
        assert info["refused"] is False, info
        (theorem,) = {rule.args["theorem"] for rule in task.evaluate if rule.query == "statement_is"}
        assert program.query("proof_complete", {"theorem": theorem}) is True  # the trivial proof went through
        _, reward, terminated, _, info = env.step({"type": "done"})
        assert terminated and reward == 0.0
        failed = [check.rule.query for check in env.last_checks if not check.passed]
        assert failed == ["statement_is"], info["checks"]


def test_coqide_on_the_display_the_checker_reads_the_saved_proof() -> None:
    """The gui interface: the setup's sentences open in CoqIDE, the agent types the proof and saves it;
    every query reads the saved proof.v (compiled by coqc); doing nothing scores 0."""
    (task,) = load_tasks(ids=["coq-double-plus"])
    assert "gui" in task.interfaces
    with ScienceBoardEnv("gui", observation="a11y_tree") as env:
        observation = env.reset(task)
        program = env.program
        assert program is not None and "[frame] CoqIDE" in observation["a11y_tree"]
        assert program.query("defined", {"name": "double"}) is True  # the setup's definition, in the file
        assert program.query("proof_complete", {"theorem": "double_plus"}) is False
        for action in task.oracle_gui[:-1]:
            env.step(action)
        saved = env.sandbox.workspace / "proof.v"
        deadline = time.monotonic() + 120  # the save lands when CoqIDE gets to it (later under load)
        while "Qed." not in saved.read_text() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert program.query("compute", {"expression": "double 4"}) == "8"
        _, reward, terminated, _, info = env.step(task.oracle_gui[-1])
        assert terminated and reward == 1.0, info["checks"]
    reward, info, _ = play(task, [{"type": "done"}], interface="gui")
    assert reward == 0.0 and not info["success"]


def test_task_set() -> None:
    tasks = load_tasks(domains=["coq"])
    levels = [task.difficulty for task in tasks]
    assert len(tasks) >= 10 and levels.count("easy") >= 4 and levels.count("medium") >= 4
    assert levels.count("hard") >= 2


def test_refused_commands_and_episode_goes_on() -> None:
    with ScienceBoardEnv("api") as env:
        env.reset(inline_task())
        program = env.program
        assert program is not None
        for text in (
            'Load "/etc/passwd".',
            "Require Import Foo.",
            "From Bar Require Import Baz.",
            'Redirect "out" Check 1.',
            'Extraction "x.ml" nat.',
            'Declare ML Module "evil".',
            'Check 1. (* ok *) Add LoadPath "x" as X.',
        ):
            observation, _, terminated, truncated, info = env.step({"type": "command", "text": text})
            assert info["refused"] is True and observation["output"].startswith("refused:"), text
            assert not (terminated or truncated)
        # Coq's own notations are not file names; the standard library may be required
        for text in ("Goal forall P Q : Prop, ~ P -> P /\\ Q -> ~ P.", "From Coq Require Import Lia."):
            assert program.refuse(text) is None, text
        _, _, _, _, info = env.step({"type": "command", "text": "Require Import Arith List."})
        assert info["refused"] is False
        observation, _, _, _, _ = env.step({"type": "command", "text": "intros n"})
        assert "nothing was sent" in observation["output"]
        _, reward, terminated, _, info = env.step({"type": "done"})
        assert terminated and reward == 0.0


def test_hung_tactic_is_killed() -> None:
    task = inline_task(step_timeout=3)
    env = ScienceBoardEnv("api")
    env.reset(task)
    sandbox = env.sandbox
    assert sandbox is not None and sandbox.marked_processes()
    started = time.monotonic()
    _, reward, _, truncated, info = env.step({"type": "command", "text": "Goal True. do 1000000000 idtac."})
    assert time.monotonic() - started < 10
    assert truncated and reward == 0.0 and "3 s" in info["error"]
    env.close()
    assert sandbox.marked_processes() == []
