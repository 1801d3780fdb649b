"""NavCraft's agentic generator: a language model writes the base mission (stage 1) and the collaboration
(stage 2) through tool calls, every proposal checked by the scene-graph tools; the rule-based generator is
the fallback.

Paper: "CoNavBench: Collaborative Long-Horizon Vision-Language Navigation Benchmark" (ICLR 2026,
OpenReview bMrH2PFMsi; NavCraft is its generation platform; see ``../shared/PAPERS.md``, "Collaborative
VLN"): "A two-stage hierarchical agent first produces a long-horizon base mission for the primary robot and
then instantiates helper robots, allocates subgoals, and specifies validated handoffs and rendezvous. The
agents operate with a scene graph in the loop ..., which enables reachability checks, travel time, and
interference assessment, and iterative schedule repair via an efficiency tool library." The paper's prompts,
model and tool signatures are not public; embodia's loop:

1. **Stage 1** (:meth:`AgenticGenerator.mission`): the model sees the scene graph as text (rooms, room hops
   between them, portable objects and their rooms) and the number of objects, and calls ``route`` /
   ``propose_mission`` (:class:`~embodia.agents.navcraft.agent_tools.MissionTools`) until a mission with
   at least ``min_room_hops`` hops per leg is built.
2. **Stage 2** (:meth:`AgenticGenerator.collaboration`): with the helpers placed as the rule-based generator
   places them, the model sees the mission, each robot's travel time to each pickup, the doors on the solo
   route and the solo makespan, and calls ``travel_time`` / ``propose_schedule`` / ``check_interference`` /
   ``repair_schedule`` / ``keep_solo`` (:class:`~embodia.agents.navcraft.agent_tools.ScheduleTools`) until
   a proposal passes ``validate`` and beats the solo plan by more than the margin (the paper's acceptance
   rule), or it keeps the mission single-robot.
3. **Fallback**: a stage whose model gives no usable result within ``max_turns`` answers, or whose
   ``max_attempts`` proposals (and repairs) all fail, is done by the rule-based generator
   (:func:`~embodia.agents.navcraft.generate.sample_mission`,
   :func:`~embodia.agents.navcraft.generate.collaborate`); :class:`AgentRecord` says which stage fell back.

A tool call is one JSON object in the answer, ``{"tool": NAME, ...arguments}`` (OpenAI's
``{"name": NAME, "arguments": {...}}`` is read too; :func:`parse_tool_call`), so the same loop drives the
local SmolLM2 and any OpenAI-compatible endpoint (:func:`embodia.agents.llm.load_lm`); each tool result
goes back as the next user message. The language model is anything with ``generate(messages,
max_new_tokens=, temperature=)``.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from embodia.agents.navcraft.agent_tools import MissionTools, ScheduleTools, ToolCallError
from embodia.agents.navcraft.benchmark import episode_info, sample_helpers, single_robot
from embodia.agents.navcraft.generate import Collaboration, GeneratorConfig, collaborate, sample_mission
from embodia.agents.navcraft.mission import Mission, NavCraftEpisode, RobotStart
from embodia.agents.navcraft.timing import TravelFor, travel_for_scene

_DECODER = json.JSONDecoder()


@dataclass
class ToolCall:
    """A tool call read from a model's answer."""

    name: str
    arguments: dict[str, Any]


def parse_tool_call(answer: str) -> ToolCall | None:
    """The first JSON object in ``answer`` that names a tool: ``{"tool": NAME, ...arguments}`` or
    ``{"name": NAME, "arguments": {...}}`` (nested objects allowed, code fences and other text ignored);
    ``None`` when there is none."""
    start = answer.find("{")
    while start != -1:
        try:
            data, _ = _DECODER.raw_decode(answer, start)
        except json.JSONDecodeError:
            data = None
        if isinstance(data, dict):
            name = data.get("tool", data.get("name"))
            if isinstance(name, str) and name:
                nested = data.get("arguments")
                if isinstance(nested, dict):
                    return ToolCall(name, nested)
                return ToolCall(name, {k: v for k, v in data.items() if k not in ("tool", "name")})
        start = answer.find("{", start + 1)
    return None


@dataclass
class AgenticConfig:
    """Settings of :class:`AgenticGenerator`."""

    max_turns: int = 3
    """Model answers per stage before the stage falls back to the rule-based generator."""
    max_attempts: int = 2
    """Proposals (``propose_mission``; ``propose_schedule`` and ``repair_schedule``) that may fail in a
    stage before it falls back."""
    max_new_tokens: int = 64
    """Longest answer per turn (a ``propose_mission`` call with two objects is about 55 tokens)."""
    temperature: float = 0.0
    """0: greedy decoding."""
    prefill: str = '{"tool": "'
    """Text a local model's answer is made to start with (an assistant prefill: the chat template applied,
    this appended, the model continues it); an endpoint, which applies its own template, gets none."""
    max_objects_listed: int = 40
    """Portable objects named in stage 1's prompt (the scene's first ones)."""


@dataclass
class AgentRecord:
    """What the agent did for one episode."""

    mission_by: str = "agent"
    """``agent`` (its proposal was used) or ``rules`` (stage 1 fell back)."""
    schedule_by: str = "agent"
    """``agent`` (its validated collaboration), ``agent_solo`` (it kept the mission single-robot),
    ``rules`` (stage 2 fell back) or ``no_helpers`` (a single-robot episode: no stage 2)."""
    lm_calls: int = 0
    unparsable: int = 0
    """Answers with no tool call in them."""
    tool_errors: int = 0
    """Calls the tool refused (unknown tool, bad arguments)."""
    tools: dict[str, int] = field(default_factory=dict)
    """Tool calls by name."""
    mission_proposals: int = 0
    mission_valid: int = 0
    schedule_proposals: int = 0
    schedule_valid: int = 0
    """Schedule proposals that passed ``validate`` as proposed."""
    repairs: int = 0
    transcript: list[dict[str, str]] = field(default_factory=list)


SYSTEM = (
    "You are NavCraft, an agent that writes navigation missions for robots in a house. Call exactly one tool "
    "per answer: one JSON object on one line, no other text. Tools:\n{tools}"
)
MISSION_TOOLS = (
    '{"tool": "route", "from": ROOM, "to": ROOM} -> room hops and travel seconds between two rooms\n'
    '{"tool": "propose_mission", "start": ROOM, "objects": [OBJECT], "to": [ROOM], "end": ROOM} -> '
    "the mission (start room, each object carried to its room, end room), or what is wrong with it"
)
SCHEDULE_TOOLS = (
    '{"tool": "travel_time", "robot": K, "room": ROOM} -> seconds robot K needs to reach the room\n'
    '{"tool": "propose_schedule", "type": "parallel_fetch", "carriers": {OBJECT: K}} -> robot K fetches '
    "and delivers the object\n"
    '{"tool": "propose_schedule", "type": "relay", "carriers": {OBJECT: K}, "handoffs": [{"item": OBJECT, '
    '"room": ROOM, "to": J}]} -> robot K fetches it and hands it to robot J in ROOM\n'
    '{"tool": "propose_schedule", "type": "rendezvous_swap", "helper": K, "room": ROOM} -> robot 0 and '
    "robot K each carry one object, meet in ROOM and swap\n"
    '{"tool": "propose_schedule", "type": "escort", "helper": K, "door": DOOR} -> robot K opens a closed '
    "door on robot 0's route ahead of it\n"
    '{"tool": "check_interference"} -> doorway conflicts of the last proposal\n'
    '{"tool": "repair_schedule"} -> fix the last proposal\n'
    '{"tool": "keep_solo"} -> robot 0 does the mission alone'
)


class AgenticGenerator:
    """The two-stage agent over one language model (see the module docstring)."""

    def __init__(
        self, lm: Any, config: GeneratorConfig | None = None, agent: AgenticConfig | None = None
    ) -> None:
        self.lm = lm
        self.config = config or GeneratorConfig()
        self.agent = agent or AgenticConfig()

    # ------------------------------------------------------------------ the loop
    def _ask(self, messages: list[dict[str, str]]) -> str:
        """The model's answer; a local model (one with ``chat_text``) continues the prefill."""
        prefill = self.agent.prefill
        if prefill and hasattr(self.lm, "chat_text"):
            text = self.lm.chat_text(messages) + prefill
            return prefill + self.lm.generate(
                text, max_new_tokens=self.agent.max_new_tokens, temperature=self.agent.temperature, chat=False
            )
        return self.lm.generate(
            messages, max_new_tokens=self.agent.max_new_tokens, temperature=self.agent.temperature
        )

    def _stage(
        self, system: str, example: tuple[str, str], user: str, tools: Any, record: AgentRecord
    ) -> bool:
        """Run one stage: ask, call the tool, answer with its result, until a tool says ``done`` (True) or
        the turns or attempts run out (False). ``example``: a question and its tool call, shown as an earlier
        turn (small models copy the format of an example more reliably than they follow a description)."""
        messages = [
            {"role": "system", "content": system},
            {"role": "user", "content": example[0]},
            {"role": "assistant", "content": example[1]},
            {"role": "user", "content": user},
        ]
        failures = 0
        for _ in range(self.agent.max_turns):
            answer = self._ask(messages)
            record.lm_calls += 1
            messages.append({"role": "assistant", "content": answer})
            call = parse_tool_call(answer)
            if call is None:
                record.unparsable += 1
                result: dict[str, Any] = {
                    "error": 'no tool call found; answer with one JSON object {"tool": ...}'
                }
            elif call.name not in tools.tools:
                record.tool_errors += 1
                result = {"error": f"no tool {call.name!r}; tools: {', '.join(tools.tools)}"}
            else:
                record.tools[call.name] = record.tools.get(call.name, 0) + 1
                try:
                    result = tools.tools[call.name](call.arguments)
                except ToolCallError as error:
                    record.tool_errors += 1
                    result = {"error": str(error)}
                if result.get("done"):
                    record.transcript += messages[3:] + [{"role": "tool", "content": json.dumps(result)}]
                    return True
                if result.get("valid") is False or result.get("repaired") is False:
                    failures += 1
            messages.append({"role": "user", "content": "Tool result: " + json.dumps(result)})
            if failures >= self.agent.max_attempts:
                break
        record.transcript += messages[3:]
        return False

    # ------------------------------------------------------------------ stage 1
    def mission_prompt(self, tools: MissionTools, num_items: int) -> str:
        """Stage 1's user message: the scene graph as text and the task."""
        rooms = tools.rooms()
        hops = [
            f"{a}-{b} {tools.route({'from': a, 'to': b})['room_hops']}"
            for i, a in enumerate(rooms)
            for b in rooms[i + 1 :]
        ]
        scene = tools.travel.scene
        objects = [f"{o} ({scene.object(o).room})" for o in tools.objects()[: self.agent.max_objects_listed]]
        return (
            f"Rooms: {', '.join(rooms)}.\nRoom hops between rooms: {'; '.join(hops)}.\n"
            f"Portable objects (room): {', '.join(objects)}.\n"
            f"Write a long mission for robot 0 that carries {num_items} object(s): it starts in a room, takes "
            "each object from its room to another room, and ends in a room. Every leg (start -> first "
            f"object's room -> its new room -> ... -> end) needs at least {self.config.min_room_hops} room hops."
        )

    def mission(
        self,
        travel_for: TravelFor,
        rng: np.random.Generator,
        mission_id: str,
        num_items: int,
        record: AgentRecord,
        scene_id: str | None = None,
    ) -> Mission:
        """Stage 1: the agent's mission, or the rule-based one when it fails (``record.mission_by``)."""
        tools = MissionTools(travel_for, rng, mission_id, num_items, self.config, scene_id)
        system = SYSTEM.format(tools=MISSION_TOOLS)
        rooms = tools.rooms()
        example = (
            f"How many room hops are there from {rooms[0]} to {rooms[-1]}?",
            json.dumps({"tool": "route", "from": rooms[0], "to": rooms[-1]}),
        )
        done = self._stage(system, example, self.mission_prompt(tools, num_items), tools, record)
        record.mission_proposals, record.mission_valid = tools.proposals, int(tools.mission is not None)
        if done and tools.mission is not None:
            return tools.mission
        record.mission_by = "rules"
        return sample_mission(
            tools.travel,
            rng,
            mission_id,
            num_items=num_items,
            min_room_hops=self.config.min_room_hops,
            max_tries=self.config.max_tries,
            scene_id=scene_id,
        )

    # ------------------------------------------------------------------ stage 2
    def schedule_prompt(self, tools: ScheduleTools) -> str:
        """Stage 2's user message: the mission, the robots and their travel times, the solo makespan."""
        travel = tools.travel
        lines = [f"Mission for robot 0: {tools.mission.instruction}"]
        for item in tools.mission.items:
            times = ", ".join(
                f"robot {k} {travel.time(r.place.position, item.pickup.position):.0f} s"
                for k, r in enumerate(tools.robots)
            )
            lines.append(
                f"Object {item.object_id}: from {item.pickup.room} to {item.destination.room}; to reach it: {times}."
            )
        lines.append(
            "Robots: " + "; ".join(f"robot {k} in {r.place.room}" for k, r in enumerate(tools.robots)) + "."
        )
        lines.append(f"Doors on robot 0's route: {', '.join(tools.route_doors()) or 'none'}.")
        lines.append(
            f"Robot 0 alone takes {tools.solo.makespan:.0f} s. Propose how the helpers (robots 1.."
            f"{len(tools.robots) - 1}) make the mission more than {self.config.margin:g} s shorter."
        )
        return "\n".join(lines)

    def collaboration(
        self,
        mission: Mission,
        helpers: list[RobotStart],
        travel_for: TravelFor,
        rng: np.random.Generator,
        record: AgentRecord,
    ) -> Collaboration:
        """Stage 2: the agent's validated collaboration or its ``keep_solo``, else the rule-based stage 2."""
        tools = ScheduleTools(mission, helpers, travel_for, self.config)
        system = SYSTEM.format(tools=SCHEDULE_TOOLS)
        room = mission.items[0].pickup.room
        example = (
            f"How long does robot 1 need to reach {room}?",
            json.dumps({"tool": "travel_time", "robot": 1, "room": room}),
        )
        done = self._stage(system, example, self.schedule_prompt(tools), tools, record)
        record.schedule_proposals, record.schedule_valid = tools.proposals, tools.valid_proposals
        record.repairs = tools.repairs
        if done and tools.schedule is not None:
            collaborative = tools.schedule is not tools.solo
            record.schedule_by = "agent" if collaborative else "agent_solo"
            kind = tools.schedule.collaboration if collaborative else "solo"
            return Collaboration(
                tools.schedule, tools.reference, kind, collaborative, {}, tools.repair_actions
            )
        record.schedule_by = "rules"
        return collaborate(mission, helpers, travel_for, rng, types=self.config.types, config=self.config)

    # ------------------------------------------------------------------ episodes
    def episode(
        self,
        scene: str,
        scene_index: int,
        index: int,
        seed: int,
        helpers: tuple[int, ...] = (1, 2),
        num_items: tuple[int, ...] = (1, 2),
    ) -> tuple[NavCraftEpisode, AgentRecord]:
        """Episode ``index`` of a scene, drawn as :func:`~embodia.agents.navcraft.benchmark.scene_episodes`
        draws it (same generator, item count and single-robot draw), with both stages by the agent."""
        travel_for = travel_for_scene(scene)
        travel = travel_for(())
        rng = np.random.default_rng([seed, scene_index, index])
        record = AgentRecord()
        count = int(rng.choice(list(num_items)))
        episode_id = f"{scene}#{index}"
        mission = self.mission(travel_for, rng, episode_id, count, record, scene_id=scene)
        single = single_robot(seed, scene_index, index, self.config.single_robot_share)
        helper_count = 0 if single else int(rng.choice(list(helpers)))
        starts = sample_helpers(
            travel, rng, [mission.start.position], helper_count, self.config.helper_clearance
        )
        if starts:
            result = self.collaboration(mission, starts, travel_for, rng, record)
        else:
            record.schedule_by = "no_helpers"
            result = collaborate(mission, [], travel_for, rng, config=self.config)
        info = episode_info(result, mission, seed, scene, single, generator="agent")
        if result.taxonomy == "solo" and record.schedule_by == "agent_solo":
            info["single_robot"] = "agent_kept_solo"
        info["agent"] = {k: v for k, v in record.__dict__.items() if k != "transcript"}
        return NavCraftEpisode(episode_id, mission, result.schedule, result.solo, info), record


def tool_counts(records: list[AgentRecord]) -> dict[str, int]:
    """Tool calls by name over ``records``."""
    total: Counter = Counter()
    for record in records:
        total.update(record.tools)
    return dict(sorted(total.items()))
