"""ScienceBoard agents: the scripted oracle (and its deliberate counterexample) and a language-model agent.

Paper: "ScienceBoard: Evaluating Multimodal Autonomous Agents in Realistic Scientific Workflows"
(ICLR 2026, arXiv 2505.19897), section 4: one model acts at each step from the instruction, the history of
its actions and the current observation (screenshot, accessibility tree, or both), and answers with one
action in a fixed format; ``done`` ends the episode.

- :class:`ScriptedAgent` replays a task's ``oracle`` (``oracle_gui`` on the gui interface) or its ``wrong``
  sequence: the oracle must score 1 and the wrong one 0, which checks both the task and its checker.
- :class:`ModularAgent` is the paper's planner + grounding-model pair: one model says the next step in
  words, another turns it into an action; each can be its own endpoint.
- :class:`LMAgent` prompts any embodia language model (:func:`embodia.agents.llm.load_lm`: an
  OpenAI-compatible endpoint, or the local SmolLM2 as a weak baseline) with the instruction, the domain's
  command language, the last ``history`` steps and the observation, and parses one JSON action from the
  answer (:func:`parse_action`). A text-only model cannot see screenshots: in "screenshot" mode it is told
  so, and an endpoint gets the screenshot as an image part of the message.
"""

from __future__ import annotations

import base64
import io
import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from embodia.agents.scienceboard.tasks import Action, Task
from embodia.core.errors import EmbodiaError
from embodia.core.validation import validate

#: the command language of each domain's api interface, as the LM agent is told it
COMMAND_LANGUAGES = {
    "kalgebra": "one KAlgebra expression per command, e.g. x:=3, f:=t->t^2+1, f(4), diff(x^3:x), "
    "sum(k^2 : k=1..10), piecewise { x<0 ? -x, ? x }, factorial(5)",
    "grass": 'one GRASS GIS module call per command, e.g. g.region raster=elev, r.mapcalc expression="b = a * 2", '
    "r.slope.aspect elevation=elev slope=slope, r.univar map=slope, v.buffer input=pts output=buf distance=10",
    "texstudio": "one edit of main.tex or a build per command: show | append TEXT | insert N TEXT | "
    "replace OLD ||| NEW | delete N | compile",
    "stellarium": 'Stellarium script statements per command, e.g. core.setDate("2024-04-08T18:00:00", "utc"); '
    'core.selectObjectByName("Mars", true); core.setObserverLocation(-96.8, 32.78, 140, 0, "Dallas", "Earth"); '
    "StelMovementMgr.zoomTo(10, 0)",
    "pymol": "one PyMOL command per command, e.g. remove resn HOH, select site, byres all within 5 of organic, "
    "create chainA, chain A, color red, chain B, distance d1, /obj//A/10/CA, /obj//A/20/CA, save out.pdb, chainA",
    "coq": "one or more Coq sentences per command, each ending with a period, e.g. "
    "Theorem t : forall n : nat, n + 0 = n. Proof. intros n. induction n. reflexivity. simpl. rewrite IHn. "
    "reflexivity. Qed.",
}
#: one worked example per domain (a task and the command that does it), shown as a previous turn: small
#: models copy the format of an example far more reliably than they follow a description of it
EXAMPLES = {
    "kalgebra": ("Store 2+3 in a variable named y.", "y:=2+3"),
    "grass": ("Set the computational region to the raster map dem.", "g.region raster=dem"),
    "texstudio": ("Show the document with line numbers.", "show"),
    "stellarium": ("Show the equatorial grid.", "GridLinesMgr.setFlagEquatorGrid(true)"),
    "pymol": ("Hide the lines representation everywhere.", "hide lines"),
    "coq": ("Prove the theorem named t stating True.", "Theorem t : True. Proof. exact I. Qed."),
}
GUI_EXAMPLE = ("Open the File menu.", {"type": "key", "text": "alt+f"})
MARK_ACTION_HELP = '{"type": "click_mark", "mark": 3} (click the element numbered 3 on the screenshot) | '
GUI_ACTIONS_HELP = (
    '{"type": "click", "x": 100, "y": 200} | {"type": "type", "text": "hello"} | '
    '{"type": "key", "text": "ctrl+s"} (xdotool key names; "Return" for Enter) | '
    '{"type": "scroll", "x": 100, "y": 200, "down": true} | {"type": "move", "x": 10, "y": 10}'
)


class Agent(Protocol):
    """What the episode loop asks of an agent."""

    name: str

    def reset(self, task: Task, interface: str) -> None: ...

    def act(self, observation: dict[str, Any]) -> Action: ...


class ScriptedAgent:
    """Replays a task's oracle (``which="oracle"``) or its wrong sequence (``which="wrong"``)."""

    def __init__(self, which: Literal["oracle", "wrong"] = "oracle"):
        self.which = which
        self.name = which
        self._queue: list[Action] = []

    def reset(self, task: Task, interface: str) -> None:
        if self.which == "wrong":
            actions = task.wrong
        elif interface == "gui":
            if not task.oracle_gui:
                raise EmbodiaError(f"task {task.id} has no gui oracle (oracle_gui)")
            actions = task.oracle_gui
        else:
            actions = task.oracle
        self._queue = list(actions)

    def act(self, observation: dict[str, Any]) -> Action:
        return self._queue.pop(0) if self._queue else Action(type="done")


_JSON_OBJECT = re.compile(r"\{[^{}]*\}", re.DOTALL)


def parse_action(answer: str, interface: str) -> Action | None:
    """The first JSON action object in a model's answer; None if there is none.

    A bare line on the api interface (the model forgot the JSON) is taken as a command when it is not
    prose: a model that writes ``x:=3`` meant that command.
    """
    for match in _JSON_OBJECT.finditer(answer):
        try:
            data = json.loads(match.group(0))
        except json.JSONDecodeError:
            continue
        if not isinstance(data, dict) or "type" not in data:
            continue
        try:
            return validate(Action, data, where="action", error=EmbodiaError)
        except EmbodiaError:
            continue
    if interface == "api":
        for line in answer.strip().strip("`").splitlines():
            line = line.strip().strip("`").strip()
            if line and not line.lower().startswith(("action", "the ", "i ", "to ", "here", "json")):
                return Action(type="command", text=line)
    return None


@dataclass
class LMAgent:
    """A language-model agent (see the module docstring)."""

    model: Any
    """A loaded language model (``load_lm(...)``): anything with ``generate(messages, max_new_tokens=...)``."""
    observation: Literal["screenshot", "a11y_tree", "both", "set_of_marks"] = "both"
    """What the gui interface shows the model (the api interface always shows the program's output);
    ``set_of_marks``: the marked screenshot and the list of marks, and the ``click_mark`` action."""
    history: int = 4
    """Past steps (action and output) repeated in each prompt."""
    max_new_tokens: int = 160
    """Longest answer."""
    max_tree_characters: int = 6000
    """Accessibility-tree text kept in a prompt."""
    name: str = "lm"
    steps: list[dict[str, str]] = field(default_factory=list)
    parse_failures: int = 0
    _task: Task | None = None
    _interface: str = "api"

    def reset(self, task: Task, interface: str) -> None:
        self._task, self._interface = task, interface
        self.steps, self.parse_failures = [], 0

    def system_prompt(self) -> str:
        assert self._task is not None
        domain = self._task.domain
        if self._interface == "api":
            how = f"You act through the program's command interface: {COMMAND_LANGUAGES[domain]}."
            formats = '{"type": "command", "text": "<one command>"}'
        else:
            how = "You act through the mouse and keyboard on a 1280x800 screen."
            formats = GUI_ACTIONS_HELP
            if self.observation == "set_of_marks":
                how += " The screenshot has a numbered box on every element you can act on; the list of marks says what each is."
                formats = MARK_ACTION_HELP + GUI_ACTIONS_HELP
        return (
            f"You are an agent operating the scientific program of the '{domain}' domain to complete a task. {how} "
            f"Answer with exactly one action as a JSON object on one line: {formats}, "
            '{"type": "done"} when the task is complete, or {"type": "fail"} if it cannot be done. No other text.'
        )

    def messages(self, observation: dict[str, Any]) -> list[dict[str, Any]]:
        """The chat sent to the model for ``observation``."""
        assert self._task is not None
        parts = [f"Task: {self._task.instruction}", f"Steps left: {observation.get('steps_left')}"]
        if self.steps:
            parts.append("Previous steps:")
            for step in self.steps[-self.history :]:
                parts.append(f"- action {step['action']} -> {step['output'][:300]}")
        if observation.get("output"):
            parts.append(f"Last output: {observation['output'][:800]}")
        if observation.get("status"):
            parts.append(f"Program state: {str(observation['status'])[:800]}")
        image = None
        if self._interface == "gui":
            image = gui_observation_parts(
                parts, observation, self.observation, self.model, self.max_tree_characters
            )
        parts.append("Your next action (one JSON object):")
        content = message_content("\n".join(parts), image)
        if self._interface == "api":
            example_task, command = EXAMPLES[self._task.domain]
            example = {"type": "command", "text": command}
        else:
            example_task, example = GUI_EXAMPLE
        return [
            {"role": "system", "content": self.system_prompt()},
            {"role": "user", "content": f"Task: {example_task}\nYour next action (one JSON object):"},
            {"role": "assistant", "content": json.dumps(example)},
            {"role": "user", "content": content},
        ]

    def act(self, observation: dict[str, Any]) -> Action:
        if self.steps:
            self.steps[-1]["output"] = str(observation.get("output", ""))
        answer = self.model.generate(self.messages(observation), max_new_tokens=self.max_new_tokens)
        action = parse_action(answer, self._interface)
        if action is None:
            self.parse_failures += 1
            action = Action(type="wait", seconds=0)
            self.steps.append({"action": "(unparsable answer)", "output": answer[:200]})
        else:
            self.steps.append({"action": json.dumps(_compact(action)), "output": ""})
        return action


def modular_spec(planner: str, grounder: str) -> str:
    """The agent spec of :class:`ModularAgent` with these two models (each a spec :func:`load_lm` takes)."""
    return MODULAR_PREFIX + json.dumps({"planner": planner, "grounder": grounder})


MODULAR_PREFIX = "modular:"


@dataclass
class ModularAgent:
    """The paper's modular agent: a planner model says the next step in words, a grounding model turns that
    step into one action (a GUI action, or a command of the program's language on the api interface).

    ScienceBoard (arXiv 2505.19897) evaluates such planner + grounding-model pairs beside single models: a
    strong planner that cannot locate elements on a screen is paired with a model trained to ground. The
    planner sees the task, the history of (step, action, output) and the observation; it answers with one
    short instruction, ``DONE`` or ``FAIL``. The grounder sees that instruction and the observation and answers
    with one JSON action, as :class:`LMAgent` does. Either model can be an OpenAI-compatible endpoint
    (``http://host/v1#model``) or the local SmolLM2.
    """

    planner: Any
    """The planning model (anything with ``generate(messages, max_new_tokens=...)``)."""
    grounder: Any
    """The grounding model."""
    observation: Literal["screenshot", "a11y_tree", "both", "set_of_marks"] = "both"
    """What the gui interface shows both models (the api interface shows the program's output)."""
    history: int = 4
    """Past steps repeated in the planner's prompt."""
    max_plan_tokens: int = 48
    """Longest plan."""
    max_new_tokens: int = 96
    """Longest grounding answer."""
    max_tree_characters: int = 6000
    """Accessibility-tree (or marks) text kept in a prompt."""
    name: str = "modular"
    steps: list[dict[str, str]] = field(default_factory=list)
    parse_failures: int = 0
    _task: Task | None = None
    _interface: str = "api"

    def reset(self, task: Task, interface: str) -> None:
        self._task, self._interface = task, interface
        self.steps, self.parse_failures = [], 0

    def _how(self) -> str:
        assert self._task is not None
        if self._interface == "api":
            return f"The agent acts through the program's command interface: {COMMAND_LANGUAGES[self._task.domain]}."
        marks = " Numbered marks show what can be clicked." if self.observation == "set_of_marks" else ""
        return f"The agent acts through the mouse and keyboard on a 1280x800 screen.{marks}"

    def _observation(self, parts: list[str], observation: dict[str, Any], model: Any) -> str | None:
        if observation.get("output"):
            parts.append(f"Last output: {observation['output'][:800]}")
        if observation.get("status"):
            parts.append(f"Program state: {str(observation['status'])[:800]}")
        if self._interface != "gui":
            return None
        return gui_observation_parts(parts, observation, self.observation, model, self.max_tree_characters)

    def planner_messages(self, observation: dict[str, Any]) -> list[dict[str, Any]]:
        """The chat the planner gets: the task, the history and the observation; it answers with one step."""
        assert self._task is not None
        system = (
            f"You plan the work of an agent operating the scientific program of the '{self._task.domain}' "
            f"domain. {self._how()} Each turn, say in one short sentence what the agent should do next (one "
            "step), or answer DONE when the task is complete, or FAIL if it cannot be done. No other text."
        )
        parts = [f"Task: {self._task.instruction}", f"Steps left: {observation.get('steps_left')}"]
        if self.steps:
            parts.append("Previous steps:")
            for step in self.steps[-self.history :]:
                parts.append(f"- {step['plan']} -> action {step['action']} -> {step['output'][:300]}")
        image = self._observation(parts, observation, self.planner)
        parts.append("The next step (one sentence, DONE or FAIL):")
        return [
            {"role": "system", "content": system},
            {"role": "user", "content": message_content("\n".join(parts), image)},
        ]

    def grounder_messages(self, plan: str, observation: dict[str, Any]) -> list[dict[str, Any]]:
        """The chat the grounder gets: the planner's step and the observation; it answers with one action."""
        assert self._task is not None
        if self._interface == "api":
            formats = '{"type": "command", "text": "<one command>"}'
            example_task, command = EXAMPLES[self._task.domain]
            example: dict[str, Any] = {"type": "command", "text": command}
        else:
            formats = (MARK_ACTION_HELP if self.observation == "set_of_marks" else "") + GUI_ACTIONS_HELP
            example_task, example = GUI_EXAMPLE
        system = (
            f"You turn one step of a plan into exactly one action of an agent. {self._how()} Answer with the "
            f"action as a JSON object on one line: {formats}. No other text."
        )
        parts = [f"Step: {plan}"]
        image = self._observation(parts, observation, self.grounder)
        parts.append("The action (one JSON object):")
        return [
            {"role": "system", "content": system},
            {"role": "user", "content": f"Step: {example_task}\nThe action (one JSON object):"},
            {"role": "assistant", "content": json.dumps(example)},
            {"role": "user", "content": message_content("\n".join(parts), image)},
        ]

    def act(self, observation: dict[str, Any]) -> Action:
        if self.steps:
            self.steps[-1]["output"] = str(observation.get("output", ""))
        answer = self.planner.generate(
            self.planner_messages(observation), max_new_tokens=self.max_plan_tokens
        )
        plan = next((line.strip() for line in answer.strip().splitlines() if line.strip()), "")
        verdict = plan.strip(" .!*`\"'").upper()
        if verdict in ("DONE", "FAIL"):
            action = Action(type="done" if verdict == "DONE" else "fail")
            self.steps.append({"plan": verdict, "action": json.dumps(_compact(action)), "output": ""})
            return action
        grounded = self.grounder.generate(
            self.grounder_messages(plan, observation), max_new_tokens=self.max_new_tokens
        )
        parsed = parse_action(grounded, self._interface)
        if parsed is None:
            self.parse_failures += 1
            parsed = Action(type="wait", seconds=0)
            self.steps.append({"plan": plan[:200], "action": "(unparsable answer)", "output": grounded[:200]})
        else:
            self.steps.append({"plan": plan[:200], "action": json.dumps(_compact(parsed)), "output": ""})
        return parsed


def gui_observation_parts(
    parts: list[str], observation: dict[str, Any], mode: str, model: Any, max_tree_characters: int
) -> str | None:
    """Append what a gui observation shows in ``mode`` to ``parts``; the screenshot as a data URL when
    ``model`` reads images (else a line that says it was taken), or None."""
    if mode in ("a11y_tree", "both") and observation.get("a11y_tree"):
        parts.append("Accessibility tree:\n" + observation["a11y_tree"][:max_tree_characters])
    if mode == "set_of_marks" and observation.get("marks"):
        parts.append("Marks on the screenshot:\n" + observation["marks"][:max_tree_characters])
    if mode in ("screenshot", "both", "set_of_marks") and observation.get("screenshot") is not None:
        if _reads_images(model):
            return _data_url(observation["screenshot"])
        parts.append("(A screenshot was taken, but this model reads text only.)")
    return None


def message_content(text: str, image: str | None) -> Any:
    """A user message's content: the text, with the image as a second part when there is one."""
    if image is None:
        return text
    return [{"type": "text", "text": text}, {"type": "image_url", "image_url": {"url": image}}]


def _compact(action: Action) -> dict[str, Any]:
    defaults = Action(type=action.type)
    return {
        key: value for key, value in vars(action).items() if key == "type" or value != getattr(defaults, key)
    }


def _reads_images(model: Any) -> bool:
    """Whether the back end takes image parts (HTTP endpoints may; the local text model does not)."""
    return type(model).__name__ == "OpenAICompatibleLM"


def _data_url(image: Any) -> str:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


def make_agent(spec: str, observation: str = "both") -> Agent:
    """``oracle``, ``wrong``, ``smollm2``, a local model folder, an endpoint URL (``http://host/v1#model``), or
    a planner + grounder pair (:func:`modular_spec`)."""
    if spec in ("oracle", "wrong"):
        return ScriptedAgent(spec)  # type: ignore[arg-type]
    from embodia.agents.llm import load_lm

    if spec.startswith(MODULAR_PREFIX):
        roles = json.loads(spec[len(MODULAR_PREFIX) :])
        planner = load_lm(roles["planner"])
        grounder = planner if roles["grounder"] == roles["planner"] else load_lm(roles["grounder"])
        name = f"modular:{getattr(planner, 'name', roles['planner'])}+{getattr(grounder, 'name', roles['grounder'])}"
        return ModularAgent(planner, grounder, observation=observation, name=name)  # type: ignore[arg-type]

    model = load_lm(spec)
    return LMAgent(model, observation=observation, name=f"lm:{getattr(model, 'name', spec)}")  # type: ignore[arg-type]
