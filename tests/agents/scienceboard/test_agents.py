"""The agents: action parsing, the prompt per interface and observation mode, and the real SmolLM2 as the
LM agent (what it achieves is measured by scripts/scienceboard_sweep.py, not asserted here)."""

from __future__ import annotations

import dataclasses
import json

from embodia.agents.llm import OpenAICompatibleLM
from embodia.agents.scienceboard.agents import (
    LMAgent,
    ModularAgent,
    ScriptedAgent,
    make_agent,
    modular_spec,
    parse_action,
)
from embodia.agents.scienceboard.run import run_episode
from embodia.agents.scienceboard.tasks import Action, load_tasks
from tests.agents.scienceboard.conftest import make_task


def test_parse_action_takes_the_first_valid_json_object():
    assert parse_action('I will do {"type": "command", "text": "x:=3"} now', "api") == Action(
        "command", "x:=3"
    )
    assert parse_action('{"type": "teleport"} {"type": "done"}', "gui") == Action("done")
    assert parse_action("```\nx:=42\n```", "api") == Action("command", "x:=42")
    assert parse_action("The answer is forty-two.", "api") is None
    assert parse_action("click the button", "gui") is None
    assert parse_action('{"type": "click", "x": 5, "y": 7, "button": 3}', "gui") == Action(
        "click", x=5, y=7, button=3
    )


def test_the_prompt_says_what_the_interface_and_observation_give():
    task = make_task(interfaces=["api", "gui"], oracle_gui=[{"type": "done"}])
    agent = LMAgent(model=object())
    agent.reset(task, "api")
    system, example, answer, user = agent.messages({"output": "42", "status": "", "steps_left": 4})
    assert example["role"] == "user" and json.loads(answer["content"]) == {
        "type": "command",
        "text": "y:=2+3",
    }
    assert "x:=3" in system["content"] and '"type": "command"' in system["content"]
    assert "Define a variable x" in user["content"] and "Last output: 42" in user["content"]
    from PIL import Image

    screen = Image.new("RGB", (8, 8))
    agent = LMAgent(model=object(), observation="screenshot")
    agent.reset(task, "gui")
    *_, user = agent.messages({"screenshot": screen, "a11y_tree": "[frame] KAlgebra", "steps_left": 3})
    assert "reads text only" in user["content"] and "[frame]" not in user["content"]
    endpoint = LMAgent(model=OpenAICompatibleLM("http://127.0.0.1:9/v1", "m"), observation="both")
    endpoint.reset(task, "gui")
    *_, user = endpoint.messages({"screenshot": screen, "a11y_tree": "[frame] KAlgebra", "steps_left": 3})
    kinds = [part["type"] for part in user["content"]]
    assert kinds == ["text", "image_url"] and user["content"][1]["image_url"]["url"].startswith(
        "data:image/png"
    )
    assert "[frame] KAlgebra" in user["content"][0]["text"]


def test_the_scripted_agent_replays_oracle_or_wrong():
    task = make_task()
    agent = ScriptedAgent("wrong")
    agent.reset(task, "api")
    assert agent.act({}).text == "x:=41" and agent.act({}).type == "done" and agent.act({}).type == "done"


def test_smollm2_acts_through_the_real_program(smol, tmp_path):
    (task,) = load_tasks(ids=["kalgebra-define-variable"])
    agent = LMAgent(smol, max_new_tokens=48)
    record = run_episode(task, agent, log_dir=tmp_path)
    assert 1 <= record["steps"] <= task.max_steps
    steps = [json.loads(line) for line in (tmp_path / "steps.jsonl").read_text().splitlines()]
    assert len(steps) == record["steps"] + 1
    acted = [s for s in steps[1:] if s["action"]["type"] == "command"]
    # every command the model sent reached calgebra and came back with calgebra's answer
    assert all(s["output"] or s["info"].get("refused") for s in acted)
    assert isinstance(record["success"], bool)


def test_the_modular_agent_plans_with_one_endpoint_and_grounds_with_another(chat_server, tmp_path):
    (task,) = load_tasks(ids=["kalgebra-define-variable"])
    task = dataclasses.replace(task, max_steps=3)  # what it achieves is measured by the sweep, not here
    agent = make_agent(modular_spec(f"{chat_server.url}#planner", f"{chat_server.url}#grounder"))
    assert isinstance(agent, ModularAgent)
    before = len(chat_server.requests)
    record = run_episode(task, agent, log_dir=tmp_path)
    asked = chat_server.requests[before:]
    planner = [r for r in asked if r["model"] == "planner"]
    grounder = [r for r in asked if r["model"] == "grounder"]
    assert planner and "You plan the work" in planner[0]["messages"][0]["content"]
    assert task.instruction in planner[0]["messages"][-1]["content"]
    # every step the planner did not end was grounded into an action by the other model
    planned = [step for step in agent.steps if step["plan"] not in ("DONE", "FAIL")]
    assert len(grounder) == len(planned) and all(
        "You turn one step" in r["messages"][0]["content"] for r in grounder
    )
    assert all(
        r["messages"][-1]["content"].startswith(f"Step: {s['plan']}") for r, s in zip(grounder, planned)
    )
    assert 1 <= record["steps"] <= task.max_steps and isinstance(record["success"], bool)
