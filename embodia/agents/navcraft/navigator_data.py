"""What NavCraft's learned navigator sees and imitates: step instructions, observations, and expert
demonstrations rolled out on generated episodes.

Paper: "CoNavBench: Collaborative Long-Horizon Vision-Language Navigation Benchmark" (ICLR 2026,
OpenReview bMrH2PFMsi; NavCraft is its generation platform) (see ``../shared/PAPERS.md``, "Collaborative
VLN"). The paper's navigator is a fine-tuned vision-language model that reads the instruction and the
robot's views and acts; here a small policy (:mod:`.learned_navigator`) reads

- **the instruction of its current move step**, as words: ``"scene apartment_0 go to the vase next to the
  counter in the kitchen"`` (:func:`move_instruction`): the room (humanised as in the mission instruction),
  the object with its landmark, or the door it must open; the scene's name is a word too, because the
  policy has no camera and knows a scene's layout only from its training episodes (the *seen scenes*
  setting of VLN). Tokens are lower-cased words (:func:`words`); a :class:`Vocabulary` built from the
  training instructions maps them to ids (``<unk>`` for the others). Which step comes next is the
  schedule's decision, as in NavCraft's hierarchical agent; the navigator only moves.
- **its observations** (:func:`observe`): its pose in the scene frame (a GPS + compass in map coordinates,
  with sine/cosine features of the position at several frequencies), an egocentric 9 x 9 map of the
  navigable cells around it (0.25 m apart, rotated with its heading; other robots' cells count as blocked)
  read from the navigation mesh, and its previous action.

Actions are habitat-lab's discrete ones (:data:`ACTIONS`: stop, forward 0.25 m, turn 30 degrees left or
right), sent to the velocity-controlled environment the executor runs as the velocity command that does
exactly that in one 0.5 s control period (:func:`velocity_command`); stop sends the no-op.

**The expert** (:func:`expert_action`) is the geodesic shortest-path follower the executor drives robots
with (:mod:`embodia.envs.habitat.expert`), in its discrete form: habitat-lab's greedy rule on the geodesic
path (turn toward the first path point more than 10 cm away when it is more than half a turn off, else
forward; stop within the executor's ``arrive_distance``). :func:`collect` rolls it out along every
robot's plan of an episode's schedule, with DART noise (Laskey et al., "DART: Noise Injection for Robust
Imitation Learning", CoRL 2017, arXiv 1703.09327): with probability ``noise`` a random move is executed
while the expert's action is recorded, so the data covers the states a learner drifts into.

**Canonical targets** (:func:`canonical_episode`): the generator picks an object's place at random among
the navigable points next to it, which an instruction cannot say; here every place at an object is its
nearest navigable view point in the object's room (room anchors and door sides already are one point per
name), and both schedules are re-timed and must pass ``validate`` again (episodes that do not are dropped).
"""

from __future__ import annotations

import copy
import dataclasses
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from embodia.agents.navcraft.instructions import humanise_room, landmark_category
from embodia.agents.navcraft.mission import NavCraftEpisode, Place, Schedule, Step
from embodia.agents.navcraft.timing import ScheduleError, retime, travel_for_scene
from embodia.agents.navcraft.travel import Travel
from embodia.envs.habitat.coords import wrap_angle
from embodia.envs.habitat.episodes import object_view_points
from embodia.envs.habitat.instructions import object_name
from embodia.envs.habitat.pathfinder import ShortestPath

#: discrete actions (habitat-lab's ids)
ACTIONS = ("stop", "forward", "left", "right")
STOP, FORWARD, LEFT, RIGHT = range(4)
PAD, UNKNOWN = 0, 1


# ---------------------------------------------------------------------- instructions
def words(text: str) -> list[str]:
    """Lower-cased words of ``text`` (letters, digits and underscores)."""
    return re.findall(r"[a-z0-9_]+", text.lower())


@dataclass
class Vocabulary:
    """Word ids: 0 pads, 1 is ``<unk>``, the rest are the words of the training instructions."""

    ids: dict[str, int] = field(default_factory=dict)

    @classmethod
    def build(cls, texts: Iterable[str]) -> Vocabulary:
        found = sorted({w for text in texts for w in words(text)})
        return cls({w: k + 2 for k, w in enumerate(found)})

    def __len__(self) -> int:
        return len(self.ids) + 2

    def encode(self, text: str, length: int) -> np.ndarray:
        """The first ``length`` word ids of ``text``, zero padded."""
        out = np.zeros(length, dtype=np.int64)
        ids = [self.ids.get(w, UNKNOWN) for w in words(text)][:length]
        out[: len(ids)] = ids
        return out


def move_instruction(scene, scene_ref: str, step: Step, following: Step | None = None) -> str:
    """The instruction of one move step (see the module docstring); ``following``: the plan's next step
    (a move before ``open_door`` goes to that door)."""
    room_ids = [r.id for r in scene.rooms]
    room = humanise_room(step.place.room, room_ids)
    if following is not None and following.kind == "open_door" and following.door:
        door = scene.door(following.door)
        other = next((r for r in door.rooms if r != step.place.room), door.rooms[0])
        target = f"go to the door to {humanise_room(other, room_ids)} in {room}"
    elif step.place.object_id:
        obj = scene.object(step.place.object_id)
        landmark = landmark_category(scene, obj.id)
        near = f" next to the {object_name(landmark)}" if landmark and landmark != obj.category else ""
        target = f"go to the {object_name(obj.category)}{near} in {room}"
    else:
        target = f"go to {room}"
    return f"scene {scene_ref} {target}"


# ---------------------------------------------------------------------- canonical targets
def _places(value: Any) -> Iterable[Place]:
    """Every :class:`Place` in a dataclass tree."""
    if isinstance(value, Place):
        yield value
    elif dataclasses.is_dataclass(value):
        for f in dataclasses.fields(value):
            yield from _places(getattr(value, f.name))
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _places(v)


def canonical_point(travel: Travel, object_id: str) -> tuple[float, float, float] | None:
    """The navigable view point nearest to the object, in its room (``None`` when there is none)."""
    obj = travel.scene.object(object_id)
    points = object_view_points(travel.pathfinder, obj)
    points = np.array([p for p in points if travel.room_of(p) == obj.room]).reshape(-1, 3)
    if not len(points):
        return None
    p = points[int(np.argmin(np.linalg.norm(points[:, :2] - np.asarray(obj.position[:2]), axis=1)))]
    return (float(p[0]), float(p[1]), 0.0)


def canonical_episode(episode: NavCraftEpisode) -> NavCraftEpisode | None:
    """``episode`` with every object place at its canonical point, both schedules re-timed and validated
    (``None`` when one no longer validates)."""
    from embodia.agents.navcraft.validate import validate

    out = copy.deepcopy(episode)
    travel_for = travel_for_scene(out.mission.scene_id)
    travel = travel_for(())
    for place in _places([out.mission, out.schedule, out.solo]):
        if place.object_id is not None:
            point = canonical_point(travel, place.object_id)
            if point is None:
                return None
            place.position = point
    try:
        out.schedule, out.solo = retime(out.schedule, travel_for), retime(out.solo, travel_for)
    except ScheduleError:
        return None
    if validate(out.mission, out.schedule, travel_for) or validate(out.mission, out.solo, travel_for):
        return None
    out.info = {**out.info, "makespan": out.schedule.makespan, "solo_makespan": out.solo.makespan}
    return out


# ---------------------------------------------------------------------- observations and actions
@dataclass
class ObservationConfig:
    """What :func:`observe` returns."""

    patch_cells: int = 9
    """The egocentric map is ``patch_cells`` x ``patch_cells`` cells (odd: the robot in the middle)."""
    patch_spacing: float = 0.25
    """Distance (m) between the map's cells."""
    frequencies: int = 5
    """Sine/cosine features of the normalised position at ``pi * 2**k``, k < ``frequencies``."""
    previous_action: bool = True
    """Include the previous action (one-hot); ``False`` leaves those entries zero (behaviour cloning with
    the previous action as input can learn to copy it: the "copycat" problem, Wen et al., NeurIPS 2020,
    arXiv 2010.14876)."""

    @property
    def size(self) -> int:
        return 4 + 4 * self.frequencies + self.patch_cells**2 + len(ACTIONS)


def observe(env, robot: int, previous: int, config: ObservationConfig) -> np.ndarray:
    """The robot's observation vector (see the module docstring): normalised position and its Fourier
    features, heading (cos, sin), the egocentric navigable map, the previous action (one-hot)."""
    position, yaw = env.backend.get_pose(robot)
    x0, y0, x1, y1 = env.scene.bounds
    centre, half = np.array([x0 + x1, y0 + y1]) / 2, max(x1 - x0, y1 - y0) / 2
    xy = (position[:2] - centre) / half
    scaled = np.pi * xy[None] * (2.0 ** np.arange(config.frequencies))[:, None]
    n, s = config.patch_cells, config.patch_spacing
    offsets = (np.arange(n) - n // 2) * s
    forward, left = np.meshgrid(offsets, offsets, indexing="ij")
    c, sn = math.cos(yaw), math.sin(yaw)
    points = np.stack(
        [position[0] + c * forward - sn * left, position[1] + sn * forward + c * left], axis=-1
    ).reshape(-1, 2)
    pathfinder = env.pathfinder
    rows, cols = pathfinder.world_to_cell(points)
    free = pathfinder.strict[rows, cols].astype(np.float32)
    for other in range(env.config.num_robots):
        if other != robot:
            there = env.backend.get_pose(other)[0][:2]
            free[np.linalg.norm(points - there, axis=1) < 2 * env.config.robot.radius] = 0.0
    onehot = np.zeros(len(ACTIONS), np.float32)
    if config.previous_action:
        onehot[previous] = 1.0
    return np.concatenate([xy, [c, sn], np.sin(scaled).ravel(), np.cos(scaled).ravel(), free, onehot]).astype(
        np.float32
    )


def velocity_command(env, action: int) -> np.ndarray:
    """The ``[linear, angular, stop]`` command doing discrete ``action`` in one control period of
    ``env`` (velocity mode); stop is the no-op (zero speed, no turn, no STOP call)."""
    c = env.config
    dt = c.control_period
    if action == FORWARD:
        return np.array([2 * min(1.0, c.forward_step / (c.max_linear_speed * dt)) - 1, 0.0, -1.0], np.float32)
    if action in (LEFT, RIGHT):
        rate = min(1.0, c.turn_angle / (c.max_angular_speed * dt))
        return np.array([-1.0, rate if action == LEFT else -rate, -1.0], np.float32)
    return np.array([-1.0, 0.0, -1.0], np.float32)


def expert_action(env, robot: int, goal: Sequence[float], arrive_distance: float) -> int:
    """The discrete geodesic follower's action toward ``goal`` (see the module docstring)."""
    position, yaw = env.backend.get_pose(robot)
    path = ShortestPath(np.asarray(position, float), np.asarray(goal, float))
    if not env.pathfinder.find_path(path) or path.geodesic_distance <= arrive_distance:
        return STOP
    points = np.asarray(path.points, float).reshape(-1, 3)
    target = next((p for p in points[1:] if np.linalg.norm(p[:2] - position[:2]) > 0.1), points[-1])
    error = wrap_angle(math.atan2(target[1] - position[1], target[0] - position[0]) - yaw)
    if abs(error) > 0.5 * math.radians(env.config.turn_angle) + 1e-6:
        return LEFT if error > 0 else RIGHT
    return FORWARD


# ---------------------------------------------------------------------- demonstrations
@dataclass
class Demonstrations:
    """Expert-labelled samples: observation vectors, instructions and expert actions."""

    observations: np.ndarray
    """``(N, D)`` float32 (:func:`observe`)."""
    actions: np.ndarray
    """``(N,)`` the expert's discrete actions."""
    texts: list[str]
    """The instruction of each sample (the policy's vocabulary is built from them)."""
    reached: list[bool] = field(default_factory=list)
    """Per move step demonstrated: whether the executed actions ended within ``arrive_distance``."""


@dataclass
class DemonstrationConfig:
    """How :func:`collect` rolls the expert out."""

    noise: float = 0.2
    """DART: probability of executing a random move (forward / left / right) instead of the expert's."""
    arrive_distance: float = 0.3
    """The expert stops within this geodesic distance (m): the executor's ``arrive_distance``."""
    repeats: int = 1
    """Roll-outs of every plan (each with its own noise)."""
    max_move_steps: int = 600
    """Steps a move may take before the roll-out gives it up."""
    observation: ObservationConfig = field(default_factory=ObservationConfig)
    """What the samples record."""


def _env_for(scene_ref: str, cache: dict):
    from embodia.envs.habitat.env import NavEnv

    if scene_ref not in cache:
        cache[scene_ref] = NavEnv(
            task="pointnav", sensors="none", action_mode="velocity", scenes=(scene_ref,)
        )
    return cache[scene_ref]


def _roll_out(
    episodes: Sequence[NavCraftEpisode],
    config: DemonstrationConfig,
    rng: np.random.Generator,
    schedules: Sequence[str],
) -> tuple[list[tuple[np.ndarray, str, int]], list[bool]]:
    """Expert samples ``(observation, instruction, action)`` along every robot's plan of each episode's
    ``schedules``, one robot at a time; the doors any plan opens are open (the collaboration opens them),
    the others as the schedule starts; and per move step whether it was reached."""
    from embodia.envs.habitat.episodes import NavEpisode

    envs: dict[str, Any] = {}
    samples: list[tuple[np.ndarray, str, int]] = []
    reached: list[bool] = []
    for episode in episodes:
        scene_ref = episode.mission.scene_id
        env = _env_for(scene_ref, envs)
        for name in schedules:
            schedule: Schedule = getattr(episode, name)
            opened = {s.door for plan in schedule.plans for s in plan if s.kind == "open_door"}
            closed = set(schedule.closed_doors) - opened
            for start, plan in [p for p in zip(schedule.robots, schedule.plans)] * config.repeats:
                moves = [i for i, s in enumerate(plan) if s.kind == "move"]
                if not moves:
                    continue
                goal = np.asarray(plan[moves[0]].place.position, float)
                env.reset(
                    seed=0,
                    options={
                        "episode": NavEpisode(
                            "demo", scene_ref, "pointnav", [np.asarray(start.place.position, float)],
                            [float(start.yaw)], [goal[None]], [0.0],
                        )
                    },
                )  # fmt: skip
                for door in env.scene.doors:
                    if env.backend.door_open(door.id) != (door.id not in closed):
                        env.backend.set_door_open(door.id, door.id not in closed)
                env.set_goals(0, goal)
                previous = STOP
                for i in moves:
                    step = plan[i]
                    text = move_instruction(
                        env.scene, scene_ref, step, plan[i + 1] if i + 1 < len(plan) else None
                    )
                    goal = np.asarray(step.place.position, float)
                    done = False
                    for _ in range(config.max_move_steps):
                        action = expert_action(env, 0, goal, config.arrive_distance)
                        samples.append((observe(env, 0, previous, config.observation), text, action))
                        if action == STOP:
                            done = True
                            break
                        if rng.random() < config.noise:
                            action = int(rng.choice([FORWARD, LEFT, RIGHT]))
                        env.step(velocity_command(env, action))
                        previous = action
                    reached.append(done)
    for env in envs.values():
        env.close()
    return samples, reached


def collect(
    episodes: Sequence[NavCraftEpisode],
    config: DemonstrationConfig,
    seed: int = 0,
    schedules: Sequence[str] = ("schedule", "solo"),
) -> Demonstrations:
    """Expert demonstrations along the plans of ``episodes`` (their ``schedules``: the collaborative and
    the solo one), with DART noise drawn from ``seed``, as arrays."""
    samples, reached = _roll_out(episodes, config, np.random.default_rng(seed), schedules)
    if not samples:
        empty = np.zeros((0, config.observation.size), np.float32)
        return Demonstrations(empty, np.zeros(0, np.int64), [], reached)
    return Demonstrations(
        np.stack([s[0] for s in samples]),
        np.array([s[2] for s in samples], np.int64),
        [s[1] for s in samples],
        reached,
    )
