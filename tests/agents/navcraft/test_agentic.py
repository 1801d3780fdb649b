"""NavCraft's agentic generator driven by a scripted tool-calling model on apartment_0: both stages through
the tools, validation of what it proposes, fallback to the rule-based generator."""

from __future__ import annotations

import numpy as np
import pytest

from embodia.agents.navcraft.agentic import AgenticConfig, AgenticGenerator, AgentRecord, parse_tool_call
from embodia.agents.navcraft.mission import Place, RobotStart
from embodia.agents.navcraft.timing import travel_for_scene
from embodia.agents.navcraft.validate import validate

SCENE = "apartment_0"
# apartment_0's room hops: living_room_0 -> office_0 3, office_0 -> kitchen_0 2, kitchen_0 -> living_room_0 3;
# corridor_0 -> office_0 1 (too short); cup_0 stands in office_0
GOOD_MISSION = (
    '{"tool": "propose_mission", "start": "living_room_0", "objects": ["cup_0"], "to": ["kitchen_0"], '
    '"end": "living_room_0"}'
)
SHORT_LEG = GOOD_MISSION.replace('"start": "living_room_0"', '"start": "corridor_0"')
#: a navigable point next to the cup in the office
HELPER = RobotStart(Place("office_0", (1.925, 5.525, 0.0)), 0.0)


class ScriptedModel:
    """Answers with the given texts in order and keeps every chat it was sent."""

    name = "scripted"

    def __init__(self, answers: list[str]) -> None:
        self.answers, self.chats = list(answers), []

    def generate(
        self, messages, *, max_new_tokens: int = 64, temperature: float = 0.0, chat: bool = True
    ) -> str:
        self.chats.append([dict(m) for m in messages])
        return self.answers.pop(0)


@pytest.fixture(scope="module")
def travel_for():
    return travel_for_scene(SCENE)


def test_tool_calls_are_read_from_json_objects_in_the_answer():
    call = parse_tool_call('Sure.\n```json\n{"tool": "route", "from": "a", "to": "b"}\n```')
    assert (call.name, call.arguments) == ("route", {"from": "a", "to": "b"})
    nested = parse_tool_call('{"tool": "propose_schedule", "type": "relay", "carriers": {"cup_0": 1}}')
    assert nested.arguments == {"type": "relay", "carriers": {"cup_0": 1}}
    openai = parse_tool_call('{"name": "keep_solo", "arguments": {}} trailing')
    assert (openai.name, openai.arguments) == ("keep_solo", {})
    # a JSON object without a tool name is skipped for the next one; none at all -> None
    assert parse_tool_call('{"a": 1} then {"tool": "keep_solo"}').name == "keep_solo"
    assert parse_tool_call("I would send the helper to the office.") is None
    assert parse_tool_call('{"tool": "route", "from": ') is None


def test_scripted_agent_writes_both_stages_through_the_tools(travel_for):
    model = ScriptedModel(
        [
            SHORT_LEG,  # refused: the first leg has 1 room hop
            '{"tool": "route", "from": "living_room_0", "to": "office_0"}',
            GOOD_MISSION,
            '{"tool": "propose_schedule", "type": "parallel_fetch", "carriers": {"cup_0": 1}}',
        ]
    )
    generator = AgenticGenerator(model, agent=AgenticConfig(max_turns=3, max_attempts=2))
    record = AgentRecord()
    mission = generator.mission(travel_for, np.random.default_rng(0), "m", 1, record, scene_id=SCENE)
    assert record.mission_by == "agent" and record.mission_proposals == 2 and record.mission_valid == 1
    assert [i.object_id for i in mission.items] == ["cup_0"] and mission.start.room == "living_room_0"
    assert mission.items[0].destination.room == "kitchen_0" and mission.end.room == "living_room_0"
    assert min(leg.room_hops for leg in mission.legs) >= 2
    # the refusal and the route came back to the model as tool results, naming the short leg
    third_chat = model.chats[2]
    assert "corridor_0 -> office_0" in third_chat[5]["content"]
    assert '"room_hops": 3' in third_chat[7]["content"]
    # the example turn shows the tool-call format with a query, not a proposal
    assert third_chat[2] == {
        "role": "assistant",
        "content": '{"tool": "route", "from": "living_room_0", "to": "corridor_0"}',
    }

    result = generator.collaboration(mission, [HELPER], travel_for, np.random.default_rng(0), record)
    assert record.schedule_by == "agent" and result.accepted and result.taxonomy == "parallel_fetch"
    assert validate(mission, result.schedule, travel_for) == []
    assert result.schedule.makespan < result.solo.makespan - 1.0
    assert any(s.kind == "pick" and s.item == "cup_0" for s in result.schedule.plans[1])
    # stage 2 was told each robot's travel time to the cup and the solo makespan
    prompt = model.chats[3][3]["content"]
    assert "robot 1 1 s" in prompt and f"alone takes {result.solo.makespan:.0f} s" in prompt
    assert record.lm_calls == 4 and record.tools == {"propose_mission": 2, "route": 1, "propose_schedule": 1}


def test_unusable_proposals_fall_back_to_the_rule_based_generator(travel_for):
    model = ScriptedModel(
        [
            SHORT_LEG,
            SHORT_LEG,  # second failed proposal: stage 1 gives up (max_attempts 2)
            "The helper should go to the office.",  # no tool call
            '{"tool": "propose_schedule", "type": "relay", "carriers": {"cup_0": 7}}',  # no robot 7
            '{"tool": "repair_schedule"}',  # nothing proposed yet
        ]
    )
    generator = AgenticGenerator(model, agent=AgenticConfig(max_turns=3, max_attempts=2))
    record = AgentRecord()
    mission = generator.mission(travel_for, np.random.default_rng(1), "m", 1, record, scene_id=SCENE)
    assert record.mission_by == "rules" and record.mission_valid == 0 and len(model.chats) == 2
    assert min(leg.room_hops for leg in mission.legs) >= 2
    result = generator.collaboration(mission, [HELPER], travel_for, np.random.default_rng(1), record)
    assert record.schedule_by == "rules" and record.unparsable == 1 and record.tool_errors == 2
    assert validate(mission, result.schedule, travel_for) == []
    if result.accepted:
        assert result.schedule.makespan < result.solo.makespan - 1.0


def test_keep_solo_makes_a_single_robot_episode(travel_for):
    model = ScriptedModel([GOOD_MISSION, '{"tool": "keep_solo"}'])
    generator = AgenticGenerator(model)
    record = AgentRecord()
    mission = generator.mission(travel_for, np.random.default_rng(0), "m", 1, record, scene_id=SCENE)
    result = generator.collaboration(mission, [HELPER], travel_for, np.random.default_rng(0), record)
    assert record.schedule_by == "agent_solo" and result.taxonomy == "solo" and not result.accepted
    assert result.schedule is result.solo and not any(result.schedule.plans[1:])


class PrefillModel(ScriptedModel):
    """A local model: it has a chat template, and continues the text it is given."""

    def chat_text(self, messages) -> str:
        return "".join(f"<{m['role']}>{m['content']}" for m in messages) + "<assistant>"

    def generate(
        self, prompt, *, max_new_tokens: int = 64, temperature: float = 0.0, chat: bool = True
    ) -> str:
        assert isinstance(prompt, str) and not chat and prompt.endswith('<assistant>{"tool": "')
        return super().generate([{"role": "user", "content": prompt}])


def test_a_local_model_continues_the_tool_call_prefill(travel_for):
    # the model writes only what follows '{"tool": "'; the answer it is credited with starts with it
    model = PrefillModel([GOOD_MISSION.removeprefix('{"tool": "')])
    record = AgentRecord()
    mission = AgenticGenerator(model).mission(travel_for, np.random.default_rng(0), "m", 1, record)
    assert record.mission_by == "agent" and mission.end.room == "living_room_0"
    assert record.transcript[1] == {"role": "assistant", "content": GOOD_MISSION}
