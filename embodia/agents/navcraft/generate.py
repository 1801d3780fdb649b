"""NavCraft's two-stage episode generator: base missions (stage 1) and collaboration schedules (stage 2).

Paper: "CoNavBench: Collaborative Long-Horizon Vision-Language Navigation Benchmark" (ICLR 2026,
OpenReview bMrH2PFMsi; NavCraft is its generation platform) (see
``../shared/PAPERS.md``, "Collaborative VLN"). The method, as NavCraft builds its benchmark:

1. **Base mission** (:func:`sample_mission`): the primary robot starts at a random navigable point of a
   room, picks up each item (a portable object of the scene, reached at a navigable point within 1 m of
   it), delivers it to another room (next to a receptacle such as a table or counter when the room has
   one) and finishes in an end room. Every leg has at least ``min_room_hops`` room hops on the scene
   graph's fastest room route, so missions are long-horizon; legs, subgoals and a templated instruction
   (:mod:`.instructions`) are recorded.
2. **Solo plan** (:func:`solo_schedule`): the primary alone, items in the order with the least makespan.
3. **Collaboration** (:func:`collaborate`): with helper robots, candidate schedules of each taxonomy type
   (:data:`~embodia.agents.navcraft.mission.TAXONOMY`) are built - *relay* (handoff at a room anchor on
   the item's route, either direction), *parallel_fetch* (items split between robots), *rendezvous_swap*
   (two robots each carry an item and exchange them at a rendezvous), *escort* (a door on the primary's
   route starts closed; a helper opens it, compared with the solo detour in that same world) - timed
   (:func:`~embodia.agents.navcraft.timing.retime`), checked (``validate``), repaired when needed
   (``repair``), and the one with the largest gain is kept only if it beats its solo plan by more than a
   margin (:func:`accept`); otherwise the episode stays solo. This keeps only collaboration that pays.
4. :func:`embodia.agents.navcraft.benchmark.generate` makes episodes over scenes, reproducibly: one generator
   per (seed, scene, episode); a share of the missions is posed without helpers (single-robot episodes,
   ``GeneratorConfig.single_robot_share``).

This is the rule-based generator. The paper's NavCraft is an agent that proposes missions and schedules
through tools (:mod:`.agentic`); its proposals are built with :func:`mission_to_rooms` and the candidate
builders here (:func:`relay_candidates`, :func:`parallel_candidates`, :func:`swap_candidates`,
:func:`escort_candidates`), and this generator is its fallback.
"""

from __future__ import annotations

import copy
import itertools
import math
import weakref
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from embodia.agents.navcraft.instructions import (
    PORTABLE_CATEGORIES,
    ItemPhrase,
    landmark_category,
    mission_instruction,
)
from embodia.agents.navcraft.mission import (
    TAXONOMY,
    Event,
    Item,
    Leg,
    Mission,
    Place,
    RobotStart,
    Schedule,
    Step,
    Subgoal,
)
from embodia.agents.navcraft.timing import ScheduleError, TravelFor, retime
from embodia.agents.navcraft.travel import Travel
from embodia.core.errors import EmbodiaError
from embodia.envs.habitat.episodes import object_view_points

#: furniture an item can be delivered to
RECEPTACLE_CATEGORIES = ("table", "counter", "desk", "cabinet", "chest_of_drawers", "bookshelf")


class NavCraftError(EmbodiaError):
    """A mission or collaboration that cannot be generated as asked."""


@dataclass
class GeneratorConfig:
    """Settings of :func:`~embodia.agents.navcraft.benchmark.generate` (and of :func:`sample_mission` / :func:`collaborate` it calls)."""

    min_room_hops: int = 2
    """Fewest room hops on every leg of a base mission (start -> pickup -> destination -> ... -> end)."""
    margin: float = 1.0
    """Seconds a collaborative schedule must beat the solo one by to be accepted."""
    window_before: float = 5.0
    """A handoff / rendezvous window opens this many seconds before the planned meeting time."""
    window_after: float = 15.0
    """... and closes this many seconds after it."""
    max_tries: int = 200
    """Missions (or helper starts) sampled before giving up with :class:`NavCraftError`."""
    helper_clearance: float = 0.6
    """Least distance (m) between any two robots' starts."""
    repair_rounds: int = 10
    """``max_rounds`` of the repair of a candidate schedule that fails validation."""
    types: tuple[str, ...] = TAXONOMY[1:]
    """Collaboration types tried in stage 2."""
    single_robot_share: float = 0.25
    """Share of missions posed without helpers (CoNavBench's single-robot episodes; the paper does not give
    its split, 0.25 is embodia's choice). Missions with helpers whose collaboration does not beat the solo
    plan become single-robot episodes too (:func:`accept`)."""


@dataclass
class Collaboration:
    """Stage 2's outcome for one mission."""

    schedule: Schedule
    """The accepted collaborative schedule, or the solo one."""
    solo: Schedule
    """The solo schedule it is compared with (for escort: the solo plan with the same door closed)."""
    taxonomy: str
    accepted: bool
    rejected: dict[str, int] = field(default_factory=dict)
    """Candidates dropped, by reason (``no_gain``, ``infeasible``, ``solo_infeasible``, a repair reason)."""
    repairs: list[str] = field(default_factory=list)
    validated: int = 0
    """Candidates that reached validation (the best-gain ones, until one was kept)."""
    valid_as_built: int = 0
    """... of which passed ``validate`` before any repair."""


# ---------------------------------------------------------------------- scene helpers (cached per Travel)
_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _route(travel: Travel, a: str, b: str) -> list[str]:
    routes = _CACHE.setdefault(travel, {}).setdefault("routes", {})
    if (a, b) not in routes:
        routes[(a, b)] = travel.graph.route(a, b)
    return list(routes[(a, b)])


def room_hops(travel: Travel, a: str, b: str) -> int:
    """Room hops from room ``a`` to room ``b`` on the fastest room route (-1 when unreachable)."""
    return len(_route(travel, a, b)) - 1


def _view_points(travel: Travel, object_id: str) -> np.ndarray:
    """Navigable points within 1 m of the object, in its own room, nearest first."""
    points = _CACHE.setdefault(travel, {}).setdefault("view_points", {})
    if object_id not in points:
        obj = travel.scene.object(object_id)
        found = object_view_points(travel.pathfinder, obj)
        found = np.array([p for p in found if travel.room_of(p) == obj.room]).reshape(-1, 3)
        order = np.argsort(np.linalg.norm(found[:, :2] - np.asarray(obj.position[:2]), axis=1))
        points[object_id] = found[order]
    return points[object_id]


def _place_near(travel: Travel, object_id: str, rng: np.random.Generator) -> Place | None:
    points = _view_points(travel, object_id)
    if not len(points):
        return None
    p = points[int(rng.integers(min(5, len(points))))]
    return Place(travel.scene.object(object_id).room, (float(p[0]), float(p[1]), 0.0), object_id)


def _anchor_place(travel: Travel, room: str) -> Place:
    return Place(room, tuple(float(v) for v in travel.graph.room(room).anchor))


def random_place(travel: Travel, rng: np.random.Generator) -> Place | None:
    p = travel.pathfinder.get_random_navigable_point(island_index=0, rng=rng)
    room = travel.room_of(p)
    if room is None or not np.isfinite(p).all():
        return None
    return Place(room, (float(p[0]), float(p[1]), 0.0))


# ---------------------------------------------------------------------- stage 1
def build_mission(
    travel: Travel,
    mission_id: str,
    start: Place,
    items: list[Item],
    end: Place,
    rng: np.random.Generator,
    *,
    scene_id: str | None = None,
) -> Mission:
    """The mission delivering ``items`` in order from ``start`` and finishing at ``end``: its legs, subgoals,
    instruction (phrasing and start heading drawn from ``rng``)."""
    stops = [start] + [p for item in items for p in (item.pickup, item.destination)] + [end]
    legs = []
    for a, b in zip(stops[:-1], stops[1:]):
        route = _route(travel, a.room, b.room)
        legs.append(Leg(a, b, route, len(route) - 1, travel.distance(a.position, b.position)))
    subgoals = [
        Subgoal(f"{kind}:{item.object_id}", kind, place, item.object_id)
        for item in items
        for kind, place in (("pick", item.pickup), ("deliver", item.destination))
    ] + [Subgoal("arrive", "arrive", end)]
    landmarks = [landmark_category(travel.scene, i.object_id) for i in items]
    phrases = [ItemPhrase(i.category, i.pickup.room, i.destination.room, m) for i, m in zip(items, landmarks)]
    rooms = [r.id for r in travel.graph.rooms]
    text = mission_instruction(phrases, end.room, rooms, rng)
    yaw = float(rng.uniform(-math.pi, math.pi))
    return Mission(mission_id, scene_id or travel.graph.scene, text, start, yaw, items, end, legs, subgoals)


def portable_objects(travel: Travel) -> list[str]:
    """Objects a robot can carry (on a support, or of a portable category) with a navigable point beside them."""
    return [
        o.id
        for o in travel.graph.objects
        if (o.support is not None or o.category in PORTABLE_CATEGORIES) and len(_view_points(travel, o.id))
    ]


def _item(travel: Travel, object_id: str, pickup: Place, room: str, rng: np.random.Generator) -> Item:
    """The item ``object_id`` picked up at ``pickup`` and delivered in ``room``, next to a receptacle of the
    room when it has one (one drawn by ``rng``), else at the room's anchor."""
    shelves = [o.id for o in travel.graph.objects_in(room) if o.category in RECEPTACLE_CATEGORIES]
    destination = _place_near(travel, shelves[int(rng.integers(len(shelves)))], rng) if shelves else None
    destination = destination or _anchor_place(travel, room)
    return Item(object_id, travel.scene.object(object_id).category, pickup, destination)


def mission_to_rooms(
    travel: Travel,
    mission_id: str,
    start_room: str,
    objects: Sequence[str],
    destination_rooms: Sequence[str],
    end_room: str,
    rng: np.random.Generator,
    *,
    min_room_hops: int = 2,
    scene_id: str | None = None,
) -> Mission:
    """Stage 1 from room-level choices (what the agentic generator proposes): start at a navigable point of
    ``start_room``, carry each object to its room of ``destination_rooms`` (as :func:`sample_mission` places
    pickups and destinations), finish at ``end_room``'s anchor. Raises :class:`NavCraftError` naming what is
    wrong: an unknown room or object, an object that cannot be carried, a leg with fewer than
    ``min_room_hops`` room hops."""
    graph = travel.graph
    rooms = {r.id for r in graph.rooms if r.anchor is not None}
    portable = set(portable_objects(travel))
    objects, destination_rooms = list(objects), list(destination_rooms)
    if not objects or len(objects) != len(destination_rooms):
        raise NavCraftError("give one destination room per object (at least one object)")
    if len(set(objects)) != len(objects):
        raise NavCraftError("an object is named twice")
    for room in [start_room, end_room, *destination_rooms]:
        if room not in rooms:
            raise NavCraftError(f"no room {room!r}; rooms: {', '.join(sorted(rooms))}")
    for object_id in objects:
        if object_id not in portable:
            raise NavCraftError(f"{object_id!r} is not a portable object of the scene")
    stops = [start_room]
    for object_id, room in zip(objects, destination_rooms):
        stops += [travel.scene.object(object_id).room, room]
    stops.append(end_room)
    short = [f"{a} -> {b}" for a, b in zip(stops[:-1], stops[1:]) if room_hops(travel, a, b) < min_room_hops]
    if short:
        raise NavCraftError(f"legs with fewer than {min_room_hops} room hops: {'; '.join(short)}")
    start = None
    for _ in range(50):
        start = random_place(travel, rng)
        if start is not None and start.room == start_room:
            break
    if start is None or start.room != start_room:
        start = _anchor_place(travel, start_room)
    items = [
        _item(travel, o, _place_near(travel, o, rng), r, rng) for o, r in zip(objects, destination_rooms)
    ]
    mission = build_mission(
        travel, mission_id, start, items, _anchor_place(travel, end_room), rng, scene_id=scene_id
    )
    if not all(math.isfinite(leg.distance) for leg in mission.legs):
        raise NavCraftError("a leg cannot be travelled (no path between its places)")
    return mission


def sample_mission(
    travel: Travel,
    rng: np.random.Generator,
    mission_id: str,
    *,
    num_items: int = 1,
    min_room_hops: int = 2,
    max_tries: int = 200,
    scene_id: str | None = None,
) -> Mission:
    """A base mission in ``travel``'s scene: start -> (pickup -> destination) per item -> end, every leg
    with at least ``min_room_hops`` room hops (see the module docstring). ``scene_id``: the scene reference
    to record (default the scene's name)."""
    graph = travel.graph
    rooms = [r.id for r in graph.rooms if r.anchor is not None]
    portable = portable_objects(travel)
    if len(portable) < num_items:
        raise NavCraftError(f"scene {graph.scene!r} has {len(portable)} portable objects, not {num_items}")

    def far(a: str, candidates: Sequence[str]) -> list[str]:
        return [b for b in candidates if room_hops(travel, a, b) >= min_room_hops]

    for _ in range(max_tries):
        start = random_place(travel, rng)
        if start is None:
            continue
        chosen = [portable[int(k)] for k in rng.permutation(len(portable))[:num_items]]
        here, items, ok = start.room, [], True
        for object_id in chosen:
            pickup = _place_near(travel, object_id, rng)
            targets = far(pickup.room, rooms)
            if room_hops(travel, here, pickup.room) < min_room_hops or not targets:
                ok = False
                break
            room = targets[int(rng.integers(len(targets)))]
            items.append(_item(travel, object_id, pickup, room, rng))
            here = room
        ends = far(here, rooms) if ok else []
        if not ends:
            continue
        end = _anchor_place(travel, ends[int(rng.integers(len(ends)))])
        mission = build_mission(travel, mission_id, start, items, end, rng, scene_id=scene_id)
        if all(math.isfinite(leg.distance) for leg in mission.legs):
            return mission
    raise NavCraftError(
        f"no mission with {num_items} item(s) and >= {min_room_hops} room hops per leg found in scene "
        f"{graph.scene!r} after {max_tries} tries; lower min_room_hops or num_items"
    )


# ---------------------------------------------------------------------- plans
def _fetch(item: Item) -> list[Step]:
    """Move to the item, pick it up, carry it to its destination and put it down."""
    return [
        Step("move", place=item.pickup),
        Step("pick", place=item.pickup, item=item.object_id, subgoal=f"pick:{item.object_id}"),
        Step("move", place=item.destination),
        Step("drop", place=item.destination, item=item.object_id, subgoal=f"deliver:{item.object_id}"),
    ]


def _arrive(mission: Mission) -> Step:
    return Step("move", place=mission.end, subgoal="arrive")


def solo_schedule(mission: Mission, travel_for: TravelFor, *, closed_doors: Sequence[str] = ()) -> Schedule:
    """Robot 0 alone: each item fetched and delivered, then the end; the item order (all orders of up to
    3 items) with the least makespan, timed. Raises :class:`ScheduleError` when no order can be carried out
    (e.g. a closed door leaves no detour)."""
    best, error, primary = None, None, RobotStart(mission.start, mission.start_yaw)
    orders = itertools.permutations(mission.items) if len(mission.items) <= 3 else [mission.items]
    for order in orders:
        plan = [step for item in order for step in _fetch(item)] + [_arrive(mission)]
        try:
            timed = retime(Schedule("solo", [primary], [plan], closed_doors=list(closed_doors)), travel_for)
        except ScheduleError as caught:
            error = caught
            continue
        if best is None or timed.makespan < best.makespan:
            best = timed
    if best is None:
        raise ScheduleError(f"mission {mission.mission_id!r} cannot be carried out alone ({error})")
    return best


def _handoff(giver: int, taker: int, item: str, place: Place) -> tuple[list[Step], list[Step]]:
    """The giver's and the taker's steps of a handoff at ``place``."""
    return (
        [Step("move", place=place), Step("give", place=place, item=item, partner=taker)],
        [Step("move", place=place), Step("take", place=place, item=item, partner=giver)],
    )


def relay_candidates(mission: Mission, robots: list[RobotStart], order: list[Item], travel: Travel):
    """Per item, helper and handoff point: the helper fetches it and hands it to the primary, or the primary
    fetches it and hands it to the helper, who delivers it."""
    for k, item in enumerate(order):
        points = [_anchor_place(travel, r) for r in _route(travel, item.pickup.room, item.destination.room)]
        for helper, point in itertools.product(range(1, len(robots)), points):
            before = [s for i in order[:k] for s in _fetch(i)]
            after = [s for i in order[k + 1 :] for s in _fetch(i)] + [_arrive(mission)]
            give, take = _handoff(helper, 0, item.object_id, point)
            plans: list[list[Step]] = [[] for _ in robots]
            plans[helper] = _fetch(item)[:2] + give
            plans[0] = before + take + _fetch(item)[2:] + after
            yield Schedule("relay", robots, plans)
            give, take = _handoff(0, helper, item.object_id, point)
            plans = [[] for _ in robots]
            plans[0] = before + _fetch(item)[:2] + give + after
            plans[helper] = take + _fetch(item)[2:]
            yield Schedule("relay", robots, plans)


def parallel_candidates(mission: Mission, robots: list[RobotStart], order: list[Item]):
    """Every split of the items between the robots that gives at least one item to a helper."""
    if len(order) < 2:
        return
    for owners in itertools.product(range(len(robots)), repeat=len(order)):
        if all(owner == 0 for owner in owners):
            continue
        plans: list[list[Step]] = [[] for _ in robots]
        for item, owner in zip(order, owners):
            plans[owner] += _fetch(item)
        plans[0].append(_arrive(mission))
        yield Schedule("parallel_fetch", robots, plans)


def swap_candidates(mission: Mission, robots: list[RobotStart], order: list[Item], travel: Travel):
    """The primary and a helper each pick one of two items, meet at a room anchor between the pickups or the
    destinations, exchange them and deliver what they now carry. A robot carries :data:`CAPACITY` (one)
    item, so the exchange is: the helper puts its item down, takes the primary's from it, and the primary
    picks the helper's up."""
    if len(order) < 2:
        return
    for (a, b), helper in itertools.product(itertools.permutations(order[:2]), range(1, len(robots))):
        rooms = _route(travel, a.pickup.room, b.pickup.room)
        rooms += _route(travel, a.destination.room, b.destination.room)
        for room in dict.fromkeys(rooms):
            point = _anchor_place(travel, room)
            give, take = _handoff(0, helper, a.object_id, point)
            plans: list[list[Step]] = [[] for _ in robots]
            plans[helper] = (
                _fetch(b)[:2] + take[:1] + [Step("drop", place=point, item=b.object_id)] + take[1:]
            )
            plans[helper] += _fetch(a)[2:]
            plans[0] = _fetch(a)[:2] + give + [Step("pick", place=point, item=b.object_id)] + _fetch(b)[2:]
            plans[0] += [s for i in order[2:] for s in _fetch(i)] + [_arrive(mission)]
            yield Schedule("rendezvous_swap", robots, plans)


def door_side_places(travel: Travel, door_id: str) -> list[Place]:
    """Navigable points 0.5 m either side of the door's centre (snapped, kept within 1 m of it)."""
    door = travel.scene.door(door_id)
    normal = np.array([0.0, 0.5]) if door.axis == "x" else np.array([0.5, 0.0])
    out = []
    for side in (np.asarray(door.center) + normal, np.asarray(door.center) - normal):
        point = travel.pathfinder.snap_point([side[0], side[1], 0.0], island_index=0)
        room = travel.room_of(point)
        if room is not None and np.isfinite(point).all() and math.dist(point[:2], door.center) <= 1.0:
            out.append(Place(room, (float(point[0]), float(point[1]), 0.0)))
    return out


def escort_candidates(mission, robots, solo: Schedule, travel_for: TravelFor, solos: dict):
    """For each door the primary's solo plan goes through: that door starts closed, a helper walks to the
    side of it it reaches first, opens it, and the primary keeps its solo route. ``solos[door]`` gets the
    solo plan with that door closed (``None`` when there is no detour)."""
    travel = travel_for(())
    position, doors = mission.start.position, []
    for step in solo.plans[0]:
        if step.kind == "move":
            doors += [d for d, _ in travel.door_crossings(position, step.place.position) if d not in doors]
            position = step.place.position
    for door in doors:
        try:
            solos[door] = solo_schedule(mission, travel_for, closed_doors=(door,))
        except ScheduleError:
            solos[door] = None
            continue
        closed = travel_for((door,))
        for helper in range(1, len(robots)):
            start = robots[helper].place.position
            sides = [p for p in door_side_places(travel, door) if closed.reachable(start, p.position)]
            if not sides:
                continue
            place = min(sides, key=lambda p: closed.distance(start, p.position))
            plans: list[list[Step]] = [[] for _ in robots]
            plans[0] = copy.deepcopy(solo.plans[0])
            plans[helper] = [Step("move", place=place), Step("open_door", place=place, door=door)]
            yield Schedule("escort", robots, plans, closed_doors=[door])


def annotate(schedule: Schedule, config: GeneratorConfig) -> Schedule:
    """Windows ``[t - window_before, t + window_after]`` around each planned handoff time ``t``, and the
    coordination :class:`Event` s: ``handoff``, ``rendezvous`` (a swap's exchange, both items) and ``door``
    (in place; returns ``schedule``)."""
    schedule.events = []
    for robot, plan in enumerate(schedule.plans):
        for step in plan:
            if step.kind == "open_door":
                window = (step.start, step.end + config.window_after)
                schedule.events.append(Event("door", [robot, 0], step.place, window, door=step.door))
            if step.kind != "give":
                continue
            window = (max(0.0, step.start - config.window_before), step.start + config.window_after)
            taker = schedule.plans[step.partner]
            step.window = next(s for s in taker if s.kind == "take" and s.item == step.item).window = window
            items = [step.item]
            if schedule.collaboration == "rendezvous_swap":
                items += [
                    s.item for s in taker if s.kind == "drop" and s.place.position == step.place.position
                ]
            kind = "rendezvous" if len(items) > 1 else "handoff"
            schedule.events.append(Event(kind, [robot, step.partner], step.place, window, items))
    return schedule


# ---------------------------------------------------------------------- stage 2
def accept(solo_makespan: float, candidate_makespan: float, margin: float) -> bool:
    """A collaborative schedule is kept only when it finishes more than ``margin`` seconds before the solo one."""
    return candidate_makespan < solo_makespan - margin


def _checked(mission: Mission, timed: Schedule, travel_for: TravelFor, rounds: int):
    """``(schedule or None, repair actions, reason)``: ``timed`` if valid, else its repair."""
    try:
        from embodia.agents.navcraft.validate import validate
    except ImportError:  # no validator: the timing model alone decides
        return timed, [], None
    violations = validate(mission, timed, travel_for)
    if not violations:
        return timed, [], None
    try:
        from embodia.agents.navcraft.repair import repair
    except ImportError:
        return None, [], "invalid:" + ",".join(sorted({v.kind for v in violations}))
    result = repair(mission, timed, travel_for, max_rounds=rounds)
    return result.schedule, list(result.actions), result.reason or "unrepairable"


def collaborate(
    mission: Mission,
    helpers: list[RobotStart],
    travel_for: TravelFor,
    rng: np.random.Generator,
    *,
    types: Sequence[str] = TAXONOMY[1:],
    config: GeneratorConfig | None = None,
) -> Collaboration:
    """Stage 2: the best collaborative schedule of ``types`` with robots ``[primary] + helpers``, if it beats
    its solo plan by more than ``config.margin``; else the solo plan (see the module docstring). ``rng``
    breaks ties between equally good candidates."""
    config = config or GeneratorConfig()
    solo = solo_schedule(mission, travel_for)
    robots = [RobotStart(mission.start, mission.start_yaw)] + list(helpers)
    by_id = {item.object_id: item for item in mission.items}
    order = [by_id[s.item] for s in solo.plans[0] if s.kind == "pick"]
    travel = travel_for(())
    closed_solos: dict[str, Schedule | None] = {}
    builders = {
        "relay": lambda: relay_candidates(mission, robots, order, travel),
        "parallel_fetch": lambda: parallel_candidates(mission, robots, order),
        "rendezvous_swap": lambda: swap_candidates(mission, robots, order, travel),
        "escort": lambda: escort_candidates(mission, robots, solo, travel_for, closed_solos),
    }
    rejected: Counter = Counter()
    pool = []
    for kind in types if helpers else ():
        for candidate in builders[kind]():
            reference = solo if kind != "escort" else closed_solos[candidate.closed_doors[0]]
            try:
                timed = annotate(retime(candidate, travel_for), config)
            except ScheduleError:
                rejected["infeasible"] += 1
                continue
            if not accept(reference.makespan, timed.makespan, config.margin):
                rejected["no_gain"] += 1
                continue
            pool.append((reference.makespan - timed.makespan, float(rng.random()), timed, reference))
    rejected["solo_infeasible"] += sum(1 for s in closed_solos.values() if s is None)
    pool.sort(key=lambda c: (-c[0], c[1]))
    validated = valid_as_built = 0
    for _, _, timed, reference in pool:
        checked, actions, reason = _checked(mission, timed, travel_for, config.repair_rounds)
        validated += 1
        valid_as_built += int(checked is not None and not actions)
        if checked is None:
            rejected[reason] += 1
        elif not accept(reference.makespan, checked.makespan, config.margin):
            rejected["no_gain"] += 1
        else:
            kind = checked.collaboration
            return Collaboration(
                checked, reference, kind, True, _counts(rejected), actions, validated, valid_as_built
            )
    return Collaboration(solo, solo, "solo", False, _counts(rejected), [], validated, valid_as_built)


def _counts(counter: Counter) -> dict[str, int]:
    return {k: int(v) for k, v in sorted(counter.items()) if v}
