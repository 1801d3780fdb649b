"""NavCraft's hierarchical agent, execution: every robot's plan carried out in the multi-robot navigation
environment, with disturbances and re-planning.

Paper: "CoNavBench: Collaborative Long-Horizon Vision-Language Navigation Benchmark" (ICLR 2026,
OpenReview bMrH2PFMsi; NavCraft is its generation platform) (see
``../shared/PAPERS.md``, "Collaborative VLN"). The planner (:mod:`.planner`) says who does what; here each
robot follows its steps in :class:`~embodia.envs.habitat.env.NavEnv` (``multirobot``, velocity actions, no
rendering; one step = ``control_period`` = 0.5 s). ``move``: the robot's goal is set to the place
(:meth:`NavEnv.set_goals`), the shortest-path follower drives it, and it is done within ``arrive_distance``
(geodesic); before a handoff whose partner already stands there it approaches the partner instead (robots
keep two radii apart). ``pick`` / ``drop`` / ``open_door`` stand still ``ceil(DURATIONS / 0.5)`` steps (a
drop within ``item_reach`` of the destination delivers; an opened door rebuilds the navigation mesh and
every goal is set again). ``give`` / ``take`` happen together when both robots are at their matching steps
within ``handoff_distance`` (a *handoff event*); a partner not there by the window's end (or the step's
planned start) plus ``handoff_grace`` is a *handoff error*. Waiting sends the no-op ``[-1, 0, -1]`` (zero
speed, no turn, no stop); STOP is never sent, the episode ends when every plan is done or nothing can
progress. A robot that has not moved for 5 s next to another makes one of them step aside off the other's
path (and come back if it was standing for a step).

Disturbances: :class:`Delay` freezes a robot, :class:`CloseDoor` shuts a door mid-episode. With
``replan=True`` a disturbance, an unreachable target or a handoff window that will be missed makes the
executor re-plan from the current :class:`~.planner.ExecutionState` (:func:`~.planner.plan_from_state`);
with ``replan=False`` the old plans go on (an unreachable target leaves its robot stuck; after a missed
window the waiting robot gives up). Interference events: two robots within ``interference_gap`` of each
other, both within ``interference_door_radius`` of one door's centre (consecutive steps are one event).
"""

from __future__ import annotations

import copy
import itertools
import math
import time as wallclock
from dataclasses import dataclass, field

import numpy as np

from embodia.agents.navcraft.metrics import (
    CloseDoor,
    Delay,
    Disturbance,
    ExecutionResult,
    HandoffRecord,
    InterferenceRecord,
    ReplanRecord,
)
from embodia.agents.navcraft.mission import (
    DURATIONS,
    Mission,
    NavCraftEpisode,
    Place,
    RobotStart,
    Schedule,
    Step,
)
from embodia.agents.navcraft.passing import aside_point
from embodia.agents.navcraft.planner import ExecutionState, Planner, plan_from_state
from embodia.agents.navcraft.timing import ScheduleError, travel_for_scene
from embodia.core.errors import EmbodiaError
from embodia.envs.habitat.metrics import path_length

__all__ = ["CloseDoor", "Delay", "Disturbance", "ExecutionResult", "ExecutorConfig", "execute"]
NOOP = np.array([-1.0, 0.0, -1.0], dtype=np.float32)


class ExecutionError(EmbodiaError):
    """A mission or schedule that cannot be executed (no robots, schedule for another number of robots)."""


@dataclass
class ExecutorConfig:
    """Thresholds of the executor (see the module docstring)."""

    arrive_distance: float = 0.3
    """A move is done within this geodesic distance (m) of its place."""
    handoff_distance: float = 0.5
    """Give/take need the two robots this close (m)."""
    handoff_grace: float = 30.0
    """Seconds a robot waits for its handoff partner past the window's end."""
    item_reach: float = 1.0
    """Pick/drop act on items this close (m); a drop this close to the destination delivers."""
    interference_gap: float = 1.0
    """Two robots this close (m) ..."""
    interference_door_radius: float = 0.8
    """... both this close to one door's centre (m) interfere."""
    max_replans: int = 6
    """Re-planning stops after this many re-plans."""


@dataclass
class _Robot:
    plan: list[Step]
    index: int = 0
    counter: int | None = None
    frozen_until: float = 0.0
    carrying: list[str] = field(default_factory=list)
    goal: tuple[float, float, float] | None = None
    plan_start: tuple[float, float, float] = (0.0, 0.0, 0.0)
    route_before: float = 0.0
    blocked: bool = False
    finished_at: float | None = None
    detour: list = field(default_factory=list)
    """Points to visit before the plan goes on (stepping aside for a blocked robot, then back)."""
    detour_until: float = 0.0
    calm_until: float = 0.0

    @property
    def step(self) -> Step | None:
        return self.plan[self.index] if self.index < len(self.plan) else None


def _unpack(task) -> tuple[Mission, Schedule]:
    if isinstance(task, NavCraftEpisode):
        return task.mission, task.schedule
    mission, second = task
    return (
        (mission, second) if isinstance(second, Schedule) else (mission, Schedule("solo", list(second), []))
    )


class _Execution:
    """The execution loop's state (one call of :func:`execute`)."""

    def __init__(
        self, mission, schedule, planner, disturbances, replan, seed, config, navigator=None
    ) -> None:
        from embodia.envs.habitat.env import NavEnv
        from embodia.envs.habitat.episodes import NavEpisode

        self.mission, self.config, self.replan_enabled, self.planner = mission, config, replan, planner
        self.travel_for = travel_for_scene(mission.scene_id)
        n = len(schedule.robots)
        if n < 1 or len(schedule.plans) != n:
            raise ExecutionError(f"schedule has {n} robots and {len(schedule.plans)} plans")
        self.n = n
        task = "multirobot" if n > 1 else "pointnav"
        self.env = NavEnv(
            task=task, num_robots=n, sensors="none", action_mode="velocity", scenes=(mission.scene_id,)
        )
        self.dt = self.env.config.control_period
        starts = [np.asarray(r.place.position, dtype=np.float64) for r in schedule.robots]
        moves = [next((s.place.position for s in plan if s.kind == "move"), None) for plan in schedule.plans]
        goals = [np.asarray(m if m else p, dtype=np.float64)[None] for m, p in zip(moves, starts)]
        yaws = [float(r.yaw) for r in schedule.robots]
        episode = NavEpisode(
            f"navcraft-{mission.mission_id}", mission.scene_id, task, starts, yaws, goals, [0.0] * n
        )
        self.env.reset(seed=seed, options={"episode": episode})
        self.closed = set(schedule.closed_doors)
        for door in self.closed:
            self.env.backend.set_door_open(door, False)
        self.follower = navigator(self.env) if navigator is not None else self.env.make_expert()
        self.follower.reset(seed)
        self.robots = [_Robot(copy.deepcopy(plan)) for plan in schedule.plans]
        for k, robot in enumerate(self.robots):
            robot.plan_start = tuple(self._pos(k))
        self.t = 0.0
        self.achieved: dict[str, float] = {}
        self.achieved_by: dict[str, int] = {}
        self.item_at = {i.object_id: np.asarray(i.pickup.position, dtype=np.float64) for i in mission.items}
        self.item_places: dict[str, Place] = {}
        self.pending = sorted(disturbances, key=lambda d: d.at_time)
        self.applied: list[tuple[float, Disturbance]] = []
        self.reasons: list[str] = []
        self.warned: set = set()
        self.active: dict[tuple[int, int, str], int] = {}
        self.result = ExecutionResult(
            mission.mission_id, schedule.collaboration, getattr(planner, "name", "scheduled"), {}, False, 0.0,
            schedule.makespan,
        )  # fmt: skip
        self.trajectories = [[tuple(self._pos(k)[:2])] for k in range(n)]
        self._open_interference: dict[tuple[str, int, int], InterferenceRecord] = {}

    # ------------------------------------------------------------------ helpers
    def _pos(self, k: int) -> np.ndarray:
        return self.env.backend.get_pose(k)[0]

    def _geodesic(self, a, b) -> float:
        return float(self.env.pathfinder.geodesic_distance(np.asarray(a, float), np.asarray(b, float)[None]))

    def _set_goal(self, k: int, point) -> None:
        point = tuple(float(v) for v in point)
        if self.robots[k].goal != point:
            self.robots[k].goal = point
            self.env.set_goals(k, np.array(point))

    def _refresh_goals(self) -> None:
        for k, robot in enumerate(self.robots):
            self.env.set_goals(k, np.array(robot.goal if robot.goal else self._pos(k)))

    def _subgoal(self, kind: str, item: str | None) -> str | None:
        return next((s.id for s in self.mission.subgoals if s.kind == kind and s.item == item), None)

    def _achieve(self, subgoal: str | None, robot: int) -> None:
        if subgoal is not None and subgoal not in self.achieved:
            self.achieved[subgoal] = self.t
            self.achieved_by[subgoal] = robot

    def _matching(self, k: int, step: Step) -> int | None:
        """Index of the partner's matching take/give step."""
        want = "take" if step.kind == "give" else "give"
        if step.partner is None or not 0 <= step.partner < self.n:
            return None
        for j, other in enumerate(self.robots[step.partner].plan):
            if other.kind == want and other.item == step.item and other.partner == k:
                return j
        return None

    def _deadline(self, step: Step) -> float:
        latest = step.window[1] if step.window else step.start
        return max(latest, step.start) + self.config.handoff_grace

    def _eta(self, p: int, until: int) -> float:
        """Estimated time robot ``p`` reaches its step ``until``."""
        robot, where, speed = self.robots[p], self._pos(p), self.travel_for(()).speed
        eta = max(self.t, robot.frozen_until)
        for step in robot.plan[robot.index : until]:
            moving = step.kind == "move"
            eta += (
                self._geodesic(where, step.place.position) / speed
                if moving
                else DURATIONS.get(step.kind, 0.0)
            )
            where = step.place.position if moving else where
        return eta

    # ------------------------------------------------------------------ one robot's decision
    def _decide(self, k: int) -> str:
        """``follow`` (the follower drives it) or ``noop``; advances through finished steps."""
        robot = self.robots[k]
        for _ in range(len(robot.plan) + 1):
            if self.t < robot.frozen_until:
                return "noop"
            if robot.detour:
                if (
                    np.linalg.norm(self._pos(k)[:2] - robot.detour[0][:2]) > 0.25
                    and self.t < robot.detour_until
                ):
                    self._set_goal(k, robot.detour[0])
                    return "follow"
                robot.detour.pop(0)
                continue
            step = robot.step
            if step is None:
                if robot.finished_at is None:
                    robot.finished_at = self.t
                    if k == 0 and self._geodesic(self._pos(0), self.mission.end.position) <= 0.5:
                        self._achieve(self._subgoal("arrive", None), 0)
                return "noop"
            outcome = self._do(k, robot, step)
            if outcome != "next":
                return outcome
            robot.index += 1
            robot.counter = None
        return "noop"

    def _do(self, k: int, robot: _Robot, step: Step) -> str:
        c = self.config
        position = self._pos(k)
        if step.kind == "move":
            target = np.asarray(step.place.position, dtype=np.float64)
            following = robot.plan[robot.index + 1] if robot.index + 1 < len(robot.plan) else None
            if following is not None and following.kind in ("give", "take"):
                j = self._matching(k, following)
                p = following.partner
                if j is not None and self.robots[p].index == j:  # the partner is there: approach it
                    partner = self._pos(p)
                    if np.linalg.norm(position[:2] - partner[:2]) <= c.handoff_distance:
                        return "next"
                    away = position[:2] - partner[:2]
                    away = away / max(np.linalg.norm(away), 1e-9)
                    gap = 2 * self.env.config.robot.radius + 0.02
                    near = self.env.pathfinder.snap_point(np.array([*(partner[:2] + gap * away), 0.0]))
                    if np.isfinite(near).all() and math.isfinite(self._geodesic(position, near)):
                        target = near
            distance = self._geodesic(position, target)
            if (
                distance <= c.arrive_distance
                and target is not None
                and np.allclose(target, step.place.position)
            ):
                return "next"
            if not math.isfinite(distance):
                key = ("unreachable", k, robot.index, id(robot.plan))
                if key not in self.warned:
                    self.warned.add(key)
                    self.reasons.append(f"robot {k} cannot reach {step.place.room}")
                robot.blocked = True
                return "noop"
            robot.blocked = False
            self._set_goal(k, target)
            return "follow"
        if step.kind in ("give", "take"):
            return self._handoff(k, robot, step)
        if step.kind == "wait":
            return "next" if self.t >= step.end else "noop"
        if robot.counter is None:
            robot.counter = math.ceil(DURATIONS[step.kind] / self.dt - 1e-9)
        if robot.counter > 0:
            robot.counter -= 1
            return "noop"
        self._finish_action(k, robot, step, position)
        return "next"

    def _finish_action(self, k: int, robot: _Robot, step: Step, position: np.ndarray) -> None:
        reach = self.config.item_reach
        if step.kind == "open_door" and step.door:
            self.env.backend.set_door_open(step.door, True)
            self.closed.discard(step.door)
            self._refresh_goals()
        elif step.kind == "pick" and step.item:
            where = self.item_at.get(step.item)
            if step.item in robot.carrying:
                return
            if where is not None and np.linalg.norm(where[:2] - position[:2]) <= reach:
                robot.carrying.append(step.item)
                self.item_at[step.item] = None
                self.item_places.pop(step.item, None)
                self._achieve(self._subgoal("pick", step.item), k)
        elif step.kind == "drop" and step.item in robot.carrying:
            robot.carrying.remove(step.item)
            item = next(i for i in self.mission.items if i.object_id == step.item)
            if np.linalg.norm(np.asarray(item.destination.position)[:2] - position[:2]) <= reach:
                self._achieve(self._subgoal("deliver", step.item), k)
            else:
                self.item_at[step.item] = position.copy()
                room = self.env.scene.room_at(float(position[0]), float(position[1])) or ""
                self.item_places[step.item] = Place(room, tuple(position), step.item)

    def _handoff(self, k: int, robot: _Robot, step: Step) -> str:
        giver, taker = (k, step.partner) if step.kind == "give" else (step.partner, k)
        key = (giver, taker, step.item)
        if key in self.active:
            if self.active[key] > 0:
                return "noop"
            del self.active[key]
            if step.item in self.robots[giver].carrying:
                self.robots[giver].carrying.remove(step.item)
                self.robots[taker].carrying.append(step.item)
            self.result.handoffs.append(HandoffRecord(self.t, giver, taker, step.item, step.place.room))
            partner = self.robots[step.partner]
            partner.index += 1
            partner.counter = None
            return "next"
        j = self._matching(k, step)
        partner = self.robots[step.partner] if j is not None else None
        gap = np.linalg.norm(self._pos(k)[:2] - self._pos(step.partner)[:2])
        both_there = partner is not None and partner.index == j and self.t >= partner.frozen_until
        if both_there and gap <= self.config.handoff_distance:
            self.active[key] = math.ceil(DURATIONS["give"] / self.dt - 1e-9)
            return "noop"
        deadline = self._deadline(step)
        if self.t > deadline:
            if not any(
                e.item == step.item and (e.giver, e.taker) == (giver, taker)
                for e in self.result.handoff_errors
            ):
                why = f"robot {step.partner} did not come to {step.place.room} by {deadline:.1f} s"
                self.result.handoff_errors.append(
                    HandoffRecord(self.t, giver, taker, step.item, step.place.room, why)
                )
            if self._may_replan() and ("missed", key, id(robot.plan)) not in self.warned:
                self.warned.add(("missed", key, id(robot.plan)))
                self.reasons.append(f"handoff of {step.item} missed its window")
                return "noop"
            return "next"  # give up
        late = ("late", key, id(robot.plan))
        watch = self._may_replan() and partner is not None and late not in self.warned and partner.index < j
        if watch and self._eta(step.partner, j) > deadline:
            self.warned.add(late)
            self.reasons.append(f"robot {step.partner} will miss the handoff of {step.item}")
        return "noop"

    # ------------------------------------------------------------------ disturbances and re-planning
    def _may_replan(self) -> bool:
        return self.replan_enabled and len(self.result.replans) < self.config.max_replans

    def _disturb(self) -> None:
        while self.pending and self.pending[0].at_time <= self.t + 1e-9:
            event = self.pending.pop(0)
            self.applied.append((self.t, event))
            if isinstance(event, Delay):
                robot = self.robots[event.robot]
                robot.frozen_until = max(robot.frozen_until, self.t + event.seconds)
                self.reasons.append(f"robot {event.robot} delayed {event.seconds:.0f} s")
            else:
                self.env.backend.set_door_open(event.door, False)
                self.closed.add(event.door)
                self._refresh_goals()
                self.reasons.append(f"door {event.door} closed")

    def _chain(self, start, points) -> float:
        travel = self.travel_for(tuple(sorted(self.closed)))
        total, where = 0.0, start
        for point in points:
            d = travel.distance(where, point)
            total += d if math.isfinite(d) else 0.0
            where = point
        return total

    def _replan(self) -> bool:
        reason = "; ".join(self.reasons)
        self.reasons = []
        if not self._may_replan():
            return False
        state = ExecutionState(
            time=self.t,
            positions=[tuple(float(v) for v in self._pos(k)) for k in range(self.n)],
            yaws=[float(self.env.backend.get_pose(k)[1]) for k in range(self.n)],
            carrying=[list(r.carrying) for r in self.robots],
            achieved=dict(self.achieved),
            closed_doors=tuple(sorted(self.closed)),
            busy_until=[r.frozen_until for r in self.robots],
            item_places=dict(self.item_places),
        )
        try:
            outcome = plan_from_state(
                self.mission,
                state,
                self.travel_for,
                self.planner,
                room_of=lambda p: self.env.scene.room_at(p[0], p[1]),
            )
        except ScheduleError as error:  # nothing left that the robots can reach: the old plans go on
            self.result.replans.append(
                ReplanRecord(self.t, reason, True, f"no feasible plan: {error}", "none", math.inf)
            )
            return False
        for k, robot in enumerate(self.robots):
            done = [s.place.position for s in robot.plan[: robot.index] if s.kind == "move"]
            robot.route_before += self._chain(robot.plan_start, [*done, state.positions[k]])
            robot.plan_start = state.positions[k]
            robot.plan, robot.index, robot.counter = outcome.schedule.plans[k], 0, None
            robot.blocked, robot.finished_at = False, None
        self.active.clear()
        self.result.replans.append(
            ReplanRecord(
                self.t, reason, outcome.fallback, outcome.reason,
                outcome.schedule.collaboration, outcome.schedule.makespan,
            )
        )  # fmt: skip
        return True

    # ------------------------------------------------------------------ robots in each other's way
    def _unblock(self, decisions: list[str]) -> None:
        """A following robot that has made no headway for 5 s next to another robot (it stood still, or went
        back and forth within 0.8 m: the follower retrying around a robot parked in a passage): the other one
        (if it is not following, else the one of higher index) steps aside off the blocked robot's path, then
        comes back when it was standing for a step of its plan."""
        span = 10
        for k, robot in enumerate(self.robots):
            recent = np.asarray(self.trajectories[k][-span:])
            if decisions[k] != "follow" or robot.detour or len(recent) < span or self.t < robot.calm_until:
                continue
            if np.linalg.norm(recent - recent.mean(axis=0), axis=1).max() > 0.8:
                continue
            gaps = [(np.linalg.norm(self._pos(j)[:2] - self._pos(k)[:2]), j) for j in range(self.n) if j != k]
            gap, j = min(gaps, default=(math.inf, -1))
            if gap > 1.5:
                continue
            robot.calm_until = self.t + 5.0
            mover, other = (j, k) if decisions[j] != "follow" or j > k else (k, j)
            aside = None if self.t < self.robots[mover].frozen_until else self._aside(mover, other)
            if aside is None:  # the other way round
                mover, other = other, mover
                aside = None if self.t < self.robots[mover].frozen_until else self._aside(mover, other)
            if aside is not None:
                step = self.robots[mover].step
                back = [] if step is None or step.kind == "move" else [self._pos(mover).copy()]
                self.robots[mover].detour = [aside, *back]
                self.robots[mover].detour_until = self.t + 15.0
                decisions[mover] = self._decide(mover)

    def _aside(self, mover: int, other: int) -> np.ndarray | None:
        there = self._pos(other)
        return aside_point(self.env.pathfinder, self._pos(mover), there, self.robots[other].goal or there)

    # ------------------------------------------------------------------ the loop
    def _interference(self) -> None:
        c, xy = self.config, [self._pos(k)[:2] for k in range(self.n)]
        now = {
            (door.id, a, b)
            for door in self.env.scene.doors
            for a, b in itertools.combinations(range(self.n), 2)
            if max(np.linalg.norm(xy[a] - door.center[:2]), np.linalg.norm(xy[b] - door.center[:2]))
            <= c.interference_door_radius
            and np.linalg.norm(xy[a] - xy[b]) <= c.interference_gap
        }
        for key in now - set(self._open_interference):
            record = InterferenceRecord(key[0], (key[1], key[2]), self.t, self.t)
            self._open_interference[key] = record
            self.result.interference.append(record)
        self._open_interference = {key: self._open_interference[key] for key in now}
        for record in self._open_interference.values():
            record.end = self.t

    def run(self, max_steps: int) -> ExecutionResult:
        began = wallclock.perf_counter()
        steps = 0
        while steps < max_steps:
            self.t = steps * self.dt
            self._disturb()
            if self.reasons:
                self._replan()
            decisions = [self._decide(k) for k in range(self.n)]
            if self.reasons and self._replan():
                decisions = [self._decide(k) for k in range(self.n)]
            if all(r.step is None or (r.blocked and self.t >= r.frozen_until) for r in self.robots) and not (
                self.pending and any(r.step is not None for r in self.robots)
            ):
                break
            self._unblock(decisions)
            remaining = [None if r.detour else r.plan[r.index :] for r in self.robots]  # a navigator's input
            expert = np.asarray(self.follower.act(remaining), dtype=np.float32).reshape(self.n, 3)
            actions = np.stack([expert[k] if d == "follow" else NOOP for k, d in enumerate(decisions)])
            actions[:, 2] = -1.0  # never STOP
            self.env.step(actions if self.n > 1 else actions[0])
            for key in self.active:
                self.active[key] -= 1
            steps += 1
            self.t = steps * self.dt
            for k in range(self.n):
                self.trajectories[k].append(tuple(float(v) for v in self._pos(k)[:2]))
            self._interference()
        self.t = steps * self.dt
        for k in range(self.n):  # a plan that finished in the last step
            self._decide(k)
        return self._result(steps, wallclock.perf_counter() - began)

    def _result(self, steps: int, wall: float) -> ExecutionResult:
        result = self.result
        result.subgoal_times = {s.id: self.achieved.get(s.id) for s in self.mission.subgoals}
        result.success = all(v is not None for v in result.subgoal_times.values())
        finished = [r.finished_at for r in self.robots]
        result.makespan = max(finished) if all(f is not None for f in finished) else self.t
        result.steps, result.wall_seconds = steps, wall
        result.trajectories = self.trajectories
        result.path_lengths = [path_length(tr) for tr in self.trajectories]
        result.route_lengths = [
            r.route_before + self._chain(r.plan_start, [s.place.position for s in r.plan if s.kind == "move"])
            for r in self.robots
        ]
        result.robot_subgoals = [self._responsibilities(k) for k in range(self.n)]
        result.disturbances = self.applied
        result.final_plans = [r.plan for r in self.robots]
        self.env.close()
        return result

    def _responsibilities(self, k: int) -> list[str]:
        """Subgoals robot ``k`` achieved, and those its final plan would achieve (robot 0: the arrival)."""
        mine = [s for s, who in self.achieved_by.items() if who == k]
        ends = {i.object_id: np.asarray(i.destination.position) for i in self.mission.items}
        for step in self.robots[k].plan + ([Step("arrive")] if k == 0 else []):
            sg = self._subgoal(step.kind, step.item if step.kind == "pick" else None)
            if step.kind == "drop" and step.item in ends:
                near = np.linalg.norm(ends[step.item][:2] - step.place.position[:2]) <= self.config.item_reach
                sg = self._subgoal("deliver", step.item) if near else None
            if sg is not None and sg not in self.achieved_by and sg not in mine:
                mine.append(sg)
        return mine


def execute(
    task: NavCraftEpisode | tuple[Mission, Schedule] | tuple[Mission, list[RobotStart]],
    *,
    planner: Planner | None = None,
    disturbances: list[Disturbance] | tuple = (),
    replan: bool = True,
    max_steps: int = 3000,
    seed: int = 0,
    config: ExecutorConfig | None = None,
    navigator=None,
) -> ExecutionResult:
    """Execute a mission in the multi-robot environment (see the module docstring).

    ``task``: an episode, or ``(mission, schedule)``, or ``(mission, robots)`` (then ``planner`` makes the
    initial plan). With ``planner`` the initial plan is ``planner.plan(...)`` and re-planning uses it;
    without, the given schedule runs and re-planning uses the reachability fallback of
    :func:`~embodia.agents.navcraft.planner.plan_from_state`. ``navigator``: a callable ``navigator(env)``
    returning what drives the robots instead of the shortest-path follower (``reset(seed)``, and
    ``act(remaining)`` with each robot's plan from its current step on, ``None`` while it steps aside; the
    learned navigator of :mod:`~embodia.agents.navcraft.learned_navigator`).
    """
    mission, schedule = _unpack(task)
    if planner is not None:  # the world's doors are the episode's: a door closed at the start stays closed
        world = tuple(sorted(schedule.closed_doors))
        scene_travel = travel_for_scene(mission.scene_id)
        planned = planner.plan(
            mission,
            list(schedule.robots),
            lambda closed: scene_travel(tuple(sorted(set(closed) | set(world)))),
        )
        planned.plans = list(planned.plans) + [[] for _ in range(len(schedule.robots) - len(planned.plans))]
        planned.robots = list(schedule.robots)
        planned.closed_doors = sorted(set(planned.closed_doors) | set(world))
        schedule = planned
    run = _Execution(
        mission, schedule, planner, list(disturbances), replan, seed, config or ExecutorConfig(), navigator
    )
    return run.run(max_steps)
