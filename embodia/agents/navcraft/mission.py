"""NavCraft's data model: missions (stage 1), collaborative schedules (stage 2) and episodes.

Paper: "CoNavBench: Collaborative Long-Horizon Vision-Language Navigation Benchmark" (ICLR 2026,
OpenReview bMrH2PFMsi; NavCraft is its generation platform) (see
``../shared/PAPERS.md``, "Collaborative VLN"). A *mission* is a long-horizon task for one primary robot:
start -> pick up each item -> deliver it -> end, every leg at least a few room hops. A *schedule* says, per
robot, the ordered :class:`Step` s that carry the mission out, with planned start and end times (seconds);
``collaboration`` is the taxonomy type (:data:`TAXONOMY`). An :class:`NavCraftEpisode` is a mission, its
schedule (the collaborative one, or the solo one when collaboration was not accepted), the solo schedule for
comparison, and graph-level annotations; it is written as JSON in habitat-lab's episode conventions extended
for several robots (:mod:`embodia.agents.navcraft.episode_io`).

Time model (shared by the generator, the validator and the planner): a robot moves along the geodesic
shortest path at ``speed`` m/s (:class:`embodia.agents.navcraft.travel.Travel`); acting takes
:data:`DURATIONS` seconds (pick, drop, give/take in a handoff, open a door). A robot carries at most
:data:`CAPACITY` items.

Positions are in embodia's navigation frame (x, y on the floor, z up; the scene graph's frame).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

#: collaboration taxonomy (``solo``: the primary robot does everything)
TAXONOMY = ("solo", "relay", "parallel_fetch", "rendezvous_swap", "escort")
TAXONOMY_DESCRIPTIONS = {
    "solo": "the primary robot carries out the whole mission alone",
    "relay": "a robot carries an item part of the way and hands it to another robot at a handoff point",
    "parallel_fetch": "robots fetch different items of the mission at the same time and deliver them",
    "rendezvous_swap": "two robots each carry an item, meet at a rendezvous point and swap items",
    "escort": "a helper goes ahead to open a closed door on the primary's shortest route and holds it",
}
#: kinds of :class:`Step`
STEP_KINDS = ("move", "pick", "drop", "give", "take", "open_door", "wait")
#: seconds an action takes
DURATIONS = {"pick": 2.0, "drop": 2.0, "give": 3.0, "take": 3.0, "open_door": 2.0}
#: items a robot can carry at once
CAPACITY = 1


@dataclass
class Place:
    """A navigable point: its room and position; ``object_id`` when it is where an object is reached."""

    room: str
    position: tuple[float, float, float]
    object_id: str | None = None


@dataclass
class Item:
    """An object of the mission: picked up at ``pickup`` (near the object), delivered to ``destination``."""

    object_id: str
    category: str
    pickup: Place
    destination: Place


@dataclass
class Leg:
    """One leg of the base mission (graph-level annotation): rooms on the fastest route and its cost."""

    start: Place
    end: Place
    rooms: list[str]
    """Rooms visited along the fastest route, first and last included."""
    room_hops: int
    """``len(rooms) - 1``."""
    distance: float
    """Geodesic distance (m)."""


@dataclass
class Subgoal:
    """What step-level success counts: ``pick`` an item, ``deliver`` it, or ``arrive`` at the end."""

    id: str
    kind: str
    """``pick``, ``deliver`` or ``arrive``."""
    place: Place
    item: str | None = None


@dataclass
class Mission:
    """Stage 1: the base mission of the primary robot (robot 0)."""

    mission_id: str
    scene_id: str
    instruction: str
    start: Place
    start_yaw: float
    items: list[Item]
    end: Place
    """Where the primary robot finishes."""
    legs: list[Leg]
    subgoals: list[Subgoal]


@dataclass
class Step:
    """One step of one robot's plan.

    ``move``: go to ``place``. ``pick`` / ``drop``: pick up / put down ``item`` at ``place`` (a drop at an
    item's destination delivers it). ``give`` / ``take``: hand ``item`` to / receive it from robot
    ``partner`` at ``place``; the two steps happen together, inside ``window``. ``open_door``: open ``door``
    (at ``place``, next to it) and keep it open. ``wait``: stay until ``end``. ``subgoal``: the mission
    subgoal this step achieves, if any.
    """

    kind: str
    place: Place | None = None
    item: str | None = None
    partner: int | None = None
    door: str | None = None
    window: tuple[float, float] | None = None
    """Allowed time (s) for a handoff / rendezvous: earliest and latest start."""
    start: float = 0.0
    """Planned start (s from the episode's start)."""
    end: float = 0.0
    """Planned end (s)."""
    subgoal: str | None = None


@dataclass
class Event:
    """A coordination point between robots (annotation): a handoff, a rendezvous or a door held open."""

    kind: str
    """``handoff``, ``rendezvous`` or ``door``."""
    robots: list[int]
    place: Place
    window: tuple[float, float]
    items: list[str] = field(default_factory=list)
    door: str | None = None


@dataclass
class RobotStart:
    place: Place
    yaw: float


@dataclass
class Schedule:
    """Stage 2: the plan of every robot (robot 0 is the primary)."""

    collaboration: str
    """A :data:`TAXONOMY` type."""
    robots: list[RobotStart]
    plans: list[list[Step]]
    """``plans[r]``: robot r's steps in order (an idle helper has an empty plan)."""
    events: list[Event] = field(default_factory=list)
    closed_doors: list[str] = field(default_factory=list)
    """Doors closed at the start (escort opens one of them)."""

    @property
    def makespan(self) -> float:
        """Planned time (s) when the last robot finishes its last step."""
        return max((plan[-1].end for plan in self.plans if plan), default=0.0)


@dataclass
class NavCraftEpisode:
    """A mission with its schedule, the solo schedule of the same mission, and annotations."""

    episode_id: str
    mission: Mission
    schedule: Schedule
    solo: Schedule
    info: dict[str, Any] = field(default_factory=dict)
    """Annotations: ``taxonomy``, ``makespan``, ``solo_makespan``, ``repairs`` (list of repair actions),
    ``room_hops`` per leg, generation seed."""

    @property
    def num_robots(self) -> int:
        return len(self.schedule.robots)


# ---------------------------------------------------------------------- plain dicts (JSON)
def to_plain(value: Any) -> Any:
    """A dataclass tree as JSON-ready dicts and lists (tuples become lists)."""
    if hasattr(value, "__dataclass_fields__"):
        value = asdict(value)
    if isinstance(value, dict):
        return {k: to_plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_plain(v) for v in value]
    return value


def _place(data: dict[str, Any] | None) -> Place | None:
    if data is None:
        return None
    return Place(data["room"], tuple(float(v) for v in data["position"]), data.get("object_id"))


def _step(data: dict[str, Any]) -> Step:
    window = data.get("window")
    return Step(
        kind=data["kind"],
        place=_place(data.get("place")),
        item=data.get("item"),
        partner=data.get("partner"),
        door=data.get("door"),
        window=None if window is None else (float(window[0]), float(window[1])),
        start=float(data.get("start", 0.0)),
        end=float(data.get("end", 0.0)),
        subgoal=data.get("subgoal"),
    )


def schedule_from_plain(data: dict[str, Any]) -> Schedule:
    return Schedule(
        collaboration=data["collaboration"],
        robots=[RobotStart(_place(r["place"]), float(r["yaw"])) for r in data["robots"]],
        plans=[[_step(s) for s in plan] for plan in data["plans"]],
        events=[
            Event(
                e["kind"],
                list(e["robots"]),
                _place(e["place"]),
                tuple(e["window"]),
                list(e.get("items", [])),
                e.get("door"),
            )
            for e in data.get("events", [])
        ],
        closed_doors=list(data.get("closed_doors", [])),
    )


def mission_from_plain(data: dict[str, Any]) -> Mission:
    return Mission(
        mission_id=data["mission_id"],
        scene_id=data["scene_id"],
        instruction=data["instruction"],
        start=_place(data["start"]),
        start_yaw=float(data["start_yaw"]),
        items=[
            Item(i["object_id"], i["category"], _place(i["pickup"]), _place(i["destination"]))
            for i in data["items"]
        ],
        end=_place(data["end"]),
        legs=[
            Leg(
                _place(g["start"]),
                _place(g["end"]),
                list(g["rooms"]),
                int(g["room_hops"]),
                float(g["distance"]),
            )
            for g in data["legs"]
        ],
        subgoals=[Subgoal(s["id"], s["kind"], _place(s["place"]), s.get("item")) for s in data["subgoals"]],
    )


def episode_from_plain(data: dict[str, Any]) -> NavCraftEpisode:
    return NavCraftEpisode(
        episode_id=str(data["episode_id"]),
        mission=mission_from_plain(data["mission"]),
        schedule=schedule_from_plain(data["schedule"]),
        solo=schedule_from_plain(data["solo"]),
        info=dict(data.get("info", {})),
    )
