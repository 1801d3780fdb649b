"""Set-of-marks observations: marks from the accessibility tree, drawn on the screenshot, clicked by number."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
from PIL import Image

from embodia.agents.scienceboard.agents import LMAgent
from embodia.agents.scienceboard.env import ScienceBoardEnv
from embodia.agents.scienceboard.marks import draw_marks, marks_from_tree, marks_text
from embodia.agents.scienceboard.run import run_episode
from embodia.agents.scienceboard.tasks import load_tasks

TREE = """[application] kalgebra
  [frame] KAlgebra (0,0 900x500)
    [page tab] Calculator (0,22 92x29)
    [page tab] Dictionary (268,22 92x29)
    [label] Information (10,60 80x20)
    [text] | x:=3 (635,73 256x25)
      [text] | x:=3 (635,73 256x25)
    [push button] Float (886,24 13x15)
    [push button] Tiny (10,10 2x30)
    [list item] off the screen (1500,10 50x20)
    [list item] half on the screen (1260,700 100x200)
    [menu item] no box here
"""


def test_marks_are_the_interactive_elements_on_screen_numbered_in_tree_order():
    marks = marks_from_tree(TREE, (1280, 800))
    assert [(m.number, m.role, m.label) for m in marks] == [
        (1, "page tab", "Calculator"),
        (2, "page tab", "Dictionary"),
        (3, "text", "x:=3"),  # its child with the same box is not marked again
        (4, "push button", "Float"),
        (5, "list item", "half on the screen"),  # clipped to the screen
    ]
    assert (marks[4].x, marks[4].y, marks[4].width, marks[4].height) == (1260, 700, 20, 100)
    assert marks[1].centre == (314, 36)
    assert marks_text(marks).splitlines()[1] == "[2] page tab 'Dictionary' at (268,22 92x29)"
    assert "no marks" in marks_text([])


def test_drawn_marks_outline_each_box_and_leave_the_rest():
    screen = Image.new("RGB", (400, 100), (255, 255, 255))
    marks = marks_from_tree(TREE, screen.size)
    drawn = np.asarray(draw_marks(screen, marks))
    assert tuple(drawn[22, 0]) != (255, 255, 255)  # the first tab's corner is outlined
    assert tuple(drawn[90, 200]) == (255, 255, 255)  # nothing drawn away from the marks
    assert np.asarray(screen).min() == 255  # the screenshot itself is not changed


def test_clicking_a_mark_acts_on_that_element_of_the_real_program():
    (task,) = load_tasks(ids=["kalgebra-define-variable"])
    with ScienceBoardEnv("gui", "set_of_marks") as env:
        first = env.reset(task)
        assert "page tab 'Dictionary'" in first["marks"] and "a11y_tree" not in first
        assert "list item 'abs'" not in first["marks"]  # the Dictionary page is not showing
        dictionary = next(m for m in env.marks if m.role == "page tab" and m.label == "Dictionary")
        shown, *_ = env.step({"type": "click_mark", "mark": dictionary.number})
        assert "list item 'abs'" in shown["marks"]  # now it is, with its search field
        before, after = np.asarray(first["screenshot"]), np.asarray(shown["screenshot"])
        assert (np.abs(before.astype(int) - after.astype(int)).sum(axis=2) > 30).sum() > 500
        missing, *_ = env.step({"type": "click_mark", "mark": 999})
        assert missing["output"].startswith("error: no mark 999")
    with ScienceBoardEnv("gui", "a11y_tree") as env:
        env.reset(task)
        refused, _, _, _, info = env.step({"type": "click_mark", "mark": 1})
        assert info["refused"] and "set-of-marks" in refused["output"]


def test_smollm2_reads_the_marks_and_acts_on_the_real_program(smol, tmp_path):
    (task,) = load_tasks(ids=["kalgebra-define-variable"])
    task = dataclasses.replace(task, max_steps=3)  # what it achieves is measured by the sweep, not here
    agent = LMAgent(smol, observation="set_of_marks", max_new_tokens=48)
    agent.reset(task, "gui")
    assert "click_mark" in agent.system_prompt()
    record = run_episode(task, agent, interface="gui", observation="set_of_marks", log_dir=tmp_path)
    steps = [json.loads(line) for line in (tmp_path / "steps.jsonl").read_text().splitlines()]
    assert len(steps) == record["steps"] + 1 and "page tab 'Calculator'" in steps[0]["marks"]
    assert (tmp_path / "step_000.png").is_file()
    assert isinstance(record["success"], bool)
