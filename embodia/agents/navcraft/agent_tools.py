"""The tool library of NavCraft's agentic generator: what the language model calls in each stage.

Paper: "CoNavBench: Collaborative Long-Horizon Vision-Language Navigation Benchmark" (ICLR 2026,
OpenReview bMrH2PFMsi): NavCraft's two-stage agent works "with a scene graph in the loop ... which enables
reachability checks, travel time, and interference assessment, and iterative schedule repair via an
efficiency tool library". The paper does not publish the tools' names or signatures; these are embodia's,
each backed by the module that already computes it:

- stage 1 (base mission): ``route`` (room hops and travel time between two rooms: the scene graph's
  reachability and travel time), ``propose_mission`` (rooms and objects ->
  :func:`~embodia.agents.navcraft.generate.mission_to_rooms`, which checks every leg's room hops);
- stage 2 (helpers, subgoal allocation, handoffs / rendezvous): ``travel_time`` (a robot to a room,
  :class:`~embodia.agents.navcraft.travel.Travel`), ``propose_schedule`` (an allocation with optional
  handoffs -> :func:`~embodia.agents.navcraft.planner.allocation_schedule`; a rendezvous swap or an escort
  -> the matching candidate of :mod:`~embodia.agents.navcraft.generate`; then timed, annotated and
  checked by :func:`~embodia.agents.navcraft.validate.validate`), ``check_interference``
  (:func:`~embodia.agents.navcraft.validate.interference_events` of the last proposal), ``repair_schedule``
  (:func:`~embodia.agents.navcraft.repair.repair` of the last proposal) and ``keep_solo`` (the mission stays
  a single-robot episode).

A tool returns a JSON-ready dict; ``"done": True`` ends its stage with :attr:`MissionTools.mission` or
:attr:`ScheduleTools.schedule` set. Bad arguments raise :class:`ToolCallError`, whose message goes back to
the model. Every schedule a stage ends with has passed ``validate`` and beats its solo plan by more than the
margin (:func:`~embodia.agents.navcraft.generate.accept`), or is the solo plan.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from embodia.agents.navcraft.generate import (
    GeneratorConfig,
    NavCraftError,
    accept,
    annotate,
    escort_candidates,
    mission_to_rooms,
    portable_objects,
    room_hops,
    solo_schedule,
    swap_candidates,
)
from embodia.agents.navcraft.mission import Mission, RobotStart, Schedule
from embodia.agents.navcraft.planner import Allocation, allocation_schedule
from embodia.agents.navcraft.repair import repair
from embodia.agents.navcraft.timing import ScheduleError, TravelFor, retime
from embodia.agents.navcraft.validate import interference_events, validate
from embodia.core.errors import EmbodiaError

#: violations reported back to the model per proposal
MAX_REPORTED = 4


class ToolCallError(EmbodiaError):
    """A tool call the tool cannot run (unknown name, missing or bad argument); the model reads the message."""


def _text(arguments: dict[str, Any], key: str) -> str:
    value = arguments.get(key)
    if not isinstance(value, str) or not value:
        raise ToolCallError(f"argument {key!r} must be a name (a string)")
    return value


def _names(arguments: dict[str, Any], key: str) -> list[str]:
    value = arguments.get(key)
    value = [value] if isinstance(value, str) else value
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise ToolCallError(f"argument {key!r} must be a list of names")
    return value


def _robot(arguments: dict[str, Any], key: str, count: int) -> int:
    value = arguments.get(key)
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < count:
        raise ToolCallError(f"argument {key!r} must be a robot number 0..{count - 1}")
    return value


class MissionTools:
    """Stage 1's tools in one scene: ``route`` and ``propose_mission``."""

    def __init__(
        self,
        travel_for: TravelFor,
        rng: np.random.Generator,
        mission_id: str,
        num_items: int,
        config: GeneratorConfig,
        scene_id: str | None = None,
    ) -> None:
        self.travel = travel_for(())
        self.rng, self.mission_id, self.num_items = rng, mission_id, num_items
        self.config, self.scene_id = config, scene_id
        self.mission: Mission | None = None
        self.proposals = 0
        """``propose_mission`` calls that reached the mission builder."""
        self.tools: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
            "route": self.route,
            "propose_mission": self.propose_mission,
        }

    def rooms(self) -> list[str]:
        return [r.id for r in self.travel.graph.rooms if r.anchor is not None]

    def objects(self) -> list[str]:
        return portable_objects(self.travel)

    def route(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Room hops and travel time (s) between two rooms' anchors; ``reachable`` false when none."""
        a, b = _text(arguments, "from"), _text(arguments, "to")
        for room in (a, b):
            if room not in self.rooms():
                raise ToolCallError(f"no room {room!r}; rooms: {', '.join(self.rooms())}")
        seconds = self.travel.graph.travel_time(a, b)
        return {
            "from": a,
            "to": b,
            "reachable": math.isfinite(seconds),
            "room_hops": room_hops(self.travel, a, b),
            "seconds": round(float(seconds), 1) if math.isfinite(seconds) else None,
        }

    def propose_mission(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Build the mission; ``done`` when every leg has enough room hops, else what is wrong."""
        start, end = _text(arguments, "start"), _text(arguments, "end")
        objects, rooms = _names(arguments, "objects"), _names(arguments, "to")
        if len(objects) != self.num_items:
            raise ToolCallError(f"the mission carries {self.num_items} object(s), not {len(objects)}")
        self.proposals += 1
        try:
            mission = mission_to_rooms(
                self.travel,
                self.mission_id,
                start,
                objects,
                rooms,
                end,
                self.rng,
                min_room_hops=self.config.min_room_hops,
                scene_id=self.scene_id,
            )
        except NavCraftError as error:
            return {"valid": False, "error": str(error)}
        self.mission = mission
        return {"valid": True, "done": True, "instruction": mission.instruction}


class ScheduleTools:
    """Stage 2's tools for one mission and its robots (robot 0 the primary)."""

    def __init__(
        self, mission: Mission, helpers: list[RobotStart], travel_for: TravelFor, config: GeneratorConfig
    ) -> None:
        self.mission, self.travel_for, self.config = mission, travel_for, config
        self.robots = [RobotStart(mission.start, mission.start_yaw)] + list(helpers)
        self.travel = travel_for(())
        self.solo = solo_schedule(mission, travel_for)
        self.proposal: tuple[Schedule, Schedule] | None = None
        """The last timed proposal and the solo plan it is compared with."""
        self.schedule: Schedule | None = None
        """The schedule the stage ended with (collaborative, or the solo plan after ``keep_solo``)."""
        self.reference: Schedule | None = None
        self.proposals = self.valid_proposals = self.repairs = 0
        self.repair_actions: list[str] = []
        self.tools: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
            "travel_time": self.travel_time,
            "propose_schedule": self.propose_schedule,
            "check_interference": self.check_interference,
            "repair_schedule": self.repair_schedule,
            "keep_solo": self.keep_solo,
        }

    def route_doors(self) -> list[str]:
        """Doors the primary's solo plan goes through (what an escort can open ahead)."""
        position, doors = self.mission.start.position, []
        for step in self.solo.plans[0]:
            if step.kind == "move":
                crossed = self.travel.door_crossings(position, step.place.position)
                doors += [d for d, _ in crossed if d not in doors]
                position = step.place.position
        return doors

    def travel_time(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Seconds robot ``robot`` needs to reach room ``room``'s anchor (null when it cannot)."""
        robot = _robot(arguments, "robot", len(self.robots))
        room = _text(arguments, "room")
        node = next((r for r in self.travel.graph.rooms if r.id == room and r.anchor is not None), None)
        if node is None:
            raise ToolCallError(f"no room {room!r}")
        seconds = self.travel.time(self.robots[robot].place.position, node.anchor)
        return {
            "robot": robot,
            "room": room,
            "seconds": round(seconds, 1) if math.isfinite(seconds) else None,
        }

    def _candidate(self, arguments: dict[str, Any]) -> tuple[Schedule, Schedule]:
        """The proposal as a timed schedule and its solo reference (raises ToolCallError / ScheduleError)."""
        kind = arguments.get("type")
        items = {i.object_id: i for i in self.mission.items}
        order = [items[s.item] for s in self.solo.plans[0] if s.kind == "pick"]
        if kind in ("parallel_fetch", "relay"):
            carriers = arguments.get("carriers") or {}
            if not isinstance(carriers, dict) or not set(carriers) <= set(items):
                raise ToolCallError(f"'carriers' maps objects ({', '.join(items)}) to robot numbers")
            assignment = {o: _robot(carriers, o, len(self.robots)) for o in carriers}
            handoffs: dict[str, tuple[str, int]] = {}
            for entry in arguments.get("handoffs") or []:
                if not isinstance(entry, dict) or entry.get("item") not in items:
                    raise ToolCallError('each handoff is {"item": OBJECT, "room": ROOM, "to": K}')
                room = _text(entry, "room")
                if room not in [r.id for r in self.travel.graph.rooms]:
                    raise ToolCallError(f"no room {room!r}")
                handoffs[entry["item"]] = (room, _robot(entry, "to", len(self.robots)))
            timed = allocation_schedule(
                self.mission, self.robots, Allocation(assignment, handoffs), self.travel_for
            )
            return annotate(timed, self.config), self.solo
        if kind == "rendezvous_swap":
            helper = _robot(arguments, "helper", len(self.robots))
            room = _text(arguments, "room")
            rooms = []
            for candidate in swap_candidates(self.mission, self.robots, order, self.travel):
                meeting = next(s.place.room for s in candidate.plans[0] if s.kind == "give")
                rooms.append(meeting)
                if candidate.plans[helper] and meeting == room:
                    return annotate(retime(candidate, self.travel_for), self.config), self.solo
            if not rooms:
                raise ToolCallError("a rendezvous swap needs two objects in the mission")
            raise ToolCallError(
                f"robot {helper} cannot swap in {room!r}; swap rooms: {', '.join(dict.fromkeys(rooms))}"
            )
        if kind == "escort":
            helper = _robot(arguments, "helper", len(self.robots))
            door = _text(arguments, "door")
            solos: dict[str, Schedule | None] = {}
            for candidate in escort_candidates(self.mission, self.robots, self.solo, self.travel_for, solos):
                if candidate.closed_doors == [door] and candidate.plans[helper]:
                    reference = solos[door]
                    return annotate(retime(candidate, self.travel_for), self.config), reference
            doors = ", ".join(d for d, s in solos.items() if s is not None) or "none"
            raise ToolCallError(f"robot {helper} cannot open {door!r} ahead; doors with a detour: {doors}")
        raise ToolCallError("'type' is one of parallel_fetch, relay, rendezvous_swap, escort")

    def _outcome(self, schedule: Schedule, reference: Schedule) -> dict[str, Any]:
        gain = reference.makespan - schedule.makespan
        beats = accept(reference.makespan, schedule.makespan, self.config.margin)
        return {
            "makespan": round(schedule.makespan, 1),
            "solo_makespan": round(reference.makespan, 1),
            "gain": round(gain, 1),
            "beats_solo": beats,
        }

    def _finish(self, schedule: Schedule, reference: Schedule) -> None:
        self.schedule, self.reference = schedule, reference

    def propose_schedule(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Time, annotate and validate a proposal; ``done`` when it is valid and beats its solo plan."""
        self.proposal = None
        self.proposals += 1
        try:
            timed, reference = self._candidate(arguments)
        except ScheduleError as error:
            return {"valid": False, "error": f"cannot be timed: {error}"}
        self.proposal = (timed, reference)
        violations = validate(self.mission, timed, self.travel_for)
        result = {"type": timed.collaboration, "valid": not violations, **self._outcome(timed, reference)}
        if violations:
            result["violations"] = [f"{v.kind}: {v.message}" for v in violations[:MAX_REPORTED]]
            result["hint"] = "call repair_schedule, or propose another schedule"
            return result
        self.valid_proposals += 1
        if result["beats_solo"]:
            self._finish(timed, reference)
            result["done"] = True
        else:
            result["hint"] = f"valid, but not {self.config.margin:g} s faster than the solo plan"
        return result

    def check_interference(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Doorway conflicts (two robots in one doorway at once) of the last proposal."""
        if self.proposal is None:
            raise ToolCallError("no timed proposal yet: call propose_schedule first")
        events = interference_events(self.proposal[0], self.travel_for)
        return {
            "conflicts": [
                {"door": e["door"], "robots": list(e["robots"]), "overlap_s": round(e["overlap"], 1)}
                for e in events[:MAX_REPORTED]
            ]
        }

    def repair_schedule(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Repair the last proposal (retime, wait, reorder, reassign); ``done`` when the result beats solo."""
        if self.proposal is None:
            raise ToolCallError("no timed proposal yet: call propose_schedule first")
        schedule, reference = self.proposal
        self.repairs += 1
        result = repair(self.mission, schedule, self.travel_for, max_rounds=self.config.repair_rounds)
        if result.schedule is None:
            self.proposal = None
            return {"repaired": False, "reason": result.reason, "hint": "propose another schedule"}
        self.proposal = (result.schedule, reference)
        out = {
            "repaired": True,
            "actions": result.actions[:MAX_REPORTED],
            **self._outcome(result.schedule, reference),
        }
        if out["beats_solo"]:
            self.repair_actions = list(result.actions)
            self._finish(result.schedule, reference)
            out["done"] = True
        return out

    def keep_solo(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """End stage 2 with the solo plan: a single-robot episode."""
        self._finish(self.solo, self.solo)
        return {"done": True, "makespan": round(self.solo.makespan, 1)}
