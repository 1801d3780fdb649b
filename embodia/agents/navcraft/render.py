"""A top-down picture of a NavCraft episode: who goes where, where items are picked up and delivered, where
robots meet, which doors start closed.

Paper: "CoNavBench: Collaborative Long-Horizon Vision-Language Navigation Benchmark" (ICLR 2026,
OpenReview bMrH2PFMsi; NavCraft is its generation platform) (see
``../shared/PAPERS.md``, "Collaborative VLN"). The picture is the scene's top-down map
(:class:`~embodia.envs.habitat.topdown.TopDownMap`: navigable floor tinted by room category, obstacles grey,
the doors of the episode's start closed) with, drawn in this order so that the coordination points stay
visible:

- per robot (colour :data:`ROBOT_COLORS` ``[k]``) its executed trajectory (``result.trajectories``) or,
  without a result, its planned route: the geodesic shortest paths between the start and the places of its
  plan's ``move`` steps; the primary robot (0) is drawn widest, helpers narrower on top of it;
- each item's pickup (a filled square) and destination (a hollow square) in the item's colour, numbered;
- each door closed at the start (escort) as a bar across the doorway (:data:`CLOSED_DOOR_COLOR`);
- each handoff / rendezvous of ``schedule.events`` as a ring (:data:`MEETING_COLOR`), a door held open as
  a ring in the door colour;
- the primary's end (a dark dot marked ``end``) and each robot's start: a disc with a heading tick and its
  index.

Under the map a caption (PIL, default font) names the episode, its taxonomy type, the planned collaborative
and solo makespans (and the executed one with a result) and a legend. :func:`draw_episode` returns the RGB
image: the map's pixels unchanged in size on top (``TopDownMap.to_pixel`` gives a world point's pixel),
the caption strip below.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from embodia.agents.navcraft.metrics import ExecutionResult
from embodia.agents.navcraft.mission import NavCraftEpisode, Schedule
from embodia.agents.navcraft.travel import Travel
from embodia.envs.habitat.topdown import TopDownMap

#: robot k's colour (the same order as the top-down map's robots)
ROBOT_COLORS = ((30, 90, 210), (210, 60, 40), (30, 160, 60), (160, 60, 190), (220, 150, 20))
#: item k's colour (pickup square filled, destination square hollow)
ITEM_COLORS = ((245, 190, 0), (0, 170, 170), (150, 100, 40), (240, 110, 170))
#: handoff and rendezvous rings
MEETING_COLOR = (225, 0, 150)
#: doors closed at the start, and the ring where a helper holds one open
CLOSED_DOOR_COLOR = (255, 100, 0)
#: outlines and text
INK = (25, 25, 25)
CAPTION_BACKGROUND = (250, 250, 250)


def robot_color(index: int) -> tuple[int, int, int]:
    return ROBOT_COLORS[index % len(ROBOT_COLORS)]


def planned_routes(schedule: Schedule, scene_id: str) -> list[list[tuple[float, float]]]:
    """Per robot, the polyline of its plan: shortest paths from its start through its move places, each in
    the doors' state when the move starts (a door some plan opens is open after that ``open_door`` ends)."""
    openings = [
        (step.door, step.end)
        for plan in schedule.plans
        for step in plan
        if step.kind == "open_door" and step.door
    ]
    routes = []
    for robot, plan in zip(schedule.robots, schedule.plans):
        here = robot.place.position
        points = [tuple(here[:2])]
        for step in plan:
            if step.kind == "move" and step.place is not None:
                opened = {door for door, end in openings if end <= step.start + 1e-6}
                travel = Travel.for_scene(scene_id, sorted(set(schedule.closed_doors) - opened))
                path = travel.path(here, step.place.position)
                points += [tuple(p[:2]) for p in path[1:]] if len(path) else [tuple(step.place.position[:2])]
                here = step.place.position
        routes.append(points)
    return routes


def _square(topdown: TopDownMap, point: Sequence[float], half_m: float, color, hollow: bool = False) -> None:
    row, col = topdown.to_pixel(point)
    half = max(2, int(round(half_m / (topdown.pathfinder.settings.cell_size / topdown.scale))))
    rows, cols = topdown.image.shape[:2]
    r0, r1 = max(0, int(row) - half), min(rows, int(row) + half + 1)
    c0, c1 = max(0, int(col) - half), min(cols, int(col) + half + 1)
    topdown.image[r0:r1, c0:c1] = INK
    inner = 2 if hollow else 1
    topdown.image[r0 + 1 : r1 - 1, c0 + 1 : c1 - 1] = color
    if hollow:
        topdown.image[r0 + inner + 1 : r1 - inner - 1, c0 + inner + 1 : c1 - inner - 1] = (255, 255, 255)


def _ring(topdown: TopDownMap, point: Sequence[float], radius_m: float, color, width_m: float) -> None:
    row, col = topdown.to_pixel(point)
    pixel = topdown.pathfinder.settings.cell_size / topdown.scale
    outer, inner = radius_m / pixel, max(0.0, (radius_m - width_m) / pixel)
    r0, r1 = int(max(0, row - outer - 1)), int(min(topdown.image.shape[0], row + outer + 2))
    c0, c1 = int(max(0, col - outer - 1)), int(min(topdown.image.shape[1], col + outer + 2))
    rr, cc = np.mgrid[r0:r1, c0:c1]
    distance = np.hypot(rr + 0.5 - row, cc + 0.5 - col)
    topdown.image[r0:r1, c0:c1][(distance <= outer) & (distance >= inner)] = color


def _door_bar(topdown: TopDownMap, door) -> None:
    lo, hi = door.interval()
    if door.axis == "x":  # a wall of constant y
        ends = [(lo, door.center[1]), (hi, door.center[1])]
    else:
        ends = [(door.center[0], lo), (door.center[0], hi)]
    topdown.polyline(ends, CLOSED_DOOR_COLOR, width_m=0.16)


def _start(topdown: TopDownMap, position, yaw: float, index: int) -> None:
    color = robot_color(index)
    topdown.disc(position, 0.2, INK)
    topdown.disc(position, 0.16, color)
    tip = np.asarray(position[:2]) + 0.34 * np.array([math.cos(yaw), math.sin(yaw)])
    topdown.polyline([position[:2], tip], INK, width_m=0.06)


def _caption_lines(episode: NavCraftEpisode, result: ExecutionResult | None) -> list[str]:
    taxonomy = episode.info.get("taxonomy", episode.schedule.collaboration)
    solo = float(episode.info.get("solo_makespan", episode.solo.makespan))
    planned = float(episode.info.get("makespan", episode.schedule.makespan))
    lines = [
        f"{episode.episode_id}: {taxonomy.replace('_', ' ')}, {episode.num_robots} robots, "
        f"{len(episode.mission.items)} item(s)",
        f"planned makespan {planned:.1f} s (solo {solo:.1f} s)",
    ]
    if result is not None:
        lines[-1] += f"; executed {result.makespan:.1f} s, " + ("success" if result.success else "failure")
    return lines


def _legend(episode: NavCraftEpisode, result: ExecutionResult | None) -> list[tuple[str, tuple, str]]:
    """(shape, colour, label) entries; shape is ``line``, ``square``, ``hollow``, ``ring`` or ``bar``."""
    what = "trajectory" if result is not None else "route"
    entries = [("line", robot_color(k), f"robot {k} {what}") for k in range(episode.num_robots)]
    for k, item in enumerate(episode.mission.items):
        color = ITEM_COLORS[k % len(ITEM_COLORS)]
        entries += [
            ("square", color, f"pickup {k + 1} ({item.category.replace('_', ' ')})"),
            ("hollow", color, f"destination {k + 1}"),
        ]
    kinds = {event.kind for event in episode.schedule.events}
    if kinds & {"handoff", "rendezvous"}:
        entries.append(("ring", MEETING_COLOR, " / ".join(sorted(kinds - {"door"}))))
    if episode.schedule.closed_doors:
        entries.append(("bar", CLOSED_DOOR_COLOR, "door closed at start"))
    if "door" in kinds:
        entries.append(("ring", CLOSED_DOOR_COLOR, "helper opens / holds door"))
    return entries


def _caption(width: int, lines: list[str], legend: list[tuple[str, tuple, str]]) -> np.ndarray:
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.load_default(size=13)
    line_height, margin, swatch = 17, 6, 14
    placed, x, row = [], margin, 0
    for shape, color, label in legend:  # wrap the legend entries into rows that fit the width
        entry_width = swatch + 4 + int(font.getlength(label)) + 14
        if x + entry_width > width - margin and x > margin:
            x, row = margin, row + 1
        placed.append((x, row, shape, color, label))
        x += entry_width
    height = margin * 2 + line_height * (len(lines) + row + 1)
    canvas = Image.new("RGB", (width, height), CAPTION_BACKGROUND)
    draw = ImageDraw.Draw(canvas)
    for i, text in enumerate(lines):
        draw.text((margin, margin + i * line_height), text, fill=INK, font=font)
    top = margin + len(lines) * line_height
    for x, row, shape, color, label in placed:
        y = top + row * line_height + 1
        box = (x, y, x + swatch, y + swatch)
        if shape == "line":
            draw.line((x, y + swatch // 2, x + swatch, y + swatch // 2), fill=color, width=4)
        elif shape == "square":
            draw.rectangle(box, fill=color, outline=INK)
        elif shape == "hollow":
            draw.rectangle(box, outline=color, width=3)
        elif shape == "ring":
            draw.ellipse(box, outline=color, width=3)
        else:
            draw.line((x + swatch // 2, y, x + swatch // 2, y + swatch), fill=color, width=5)
        draw.text((x + swatch + 4, y), label, fill=INK, font=font)
    return np.asarray(canvas, dtype=np.uint8)


def _labels(image: np.ndarray, labels: list[tuple[float, float, str]]) -> np.ndarray:
    """Small text labels (row, col, text) drawn next to map features."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.load_default(size=12)
    canvas = Image.fromarray(image)
    draw = ImageDraw.Draw(canvas)
    for row, col, text in labels:
        draw.text((col + 7, row - 16), text, fill=INK, font=font, stroke_width=2, stroke_fill=(255, 255, 255))
    return np.asarray(canvas, dtype=np.uint8)


def episode_map(episode: NavCraftEpisode, result: ExecutionResult | None = None, *, scale: int = 3):
    """The map with the episode drawn on it (no caption) and its :class:`TopDownMap` (for ``to_pixel``)."""
    schedule = episode.schedule
    travel = Travel.for_scene(episode.mission.scene_id, schedule.closed_doors)
    topdown = TopDownMap(travel.pathfinder, travel.scene, scale=scale)
    if result is not None and result.trajectories:
        routes = [list(points) for points in result.trajectories]
    else:
        routes = planned_routes(schedule, episode.mission.scene_id)
    for k, route in enumerate(routes):  # the primary widest, helpers narrower on top
        topdown.polyline(route, robot_color(k), width_m=max(0.06, 0.14 - 0.04 * k))
    labels: list[tuple[float, float, str]] = []
    for k, item in enumerate(episode.mission.items):
        color = ITEM_COLORS[k % len(ITEM_COLORS)]
        _square(topdown, item.pickup.position, 0.14, color)
        _square(topdown, item.destination.position, 0.16, color, hollow=True)
        for place in (item.pickup, item.destination):
            labels.append((*topdown.to_pixel(place.position), str(k + 1)))
    doors = {door.id: door for door in travel.scene.doors}
    for door_id in schedule.closed_doors:
        if door_id in doors:
            _door_bar(topdown, doors[door_id])
    for event in schedule.events:
        color = CLOSED_DOOR_COLOR if event.kind == "door" else MEETING_COLOR
        _ring(topdown, event.place.position, 0.3, color, width_m=0.09)
    end = episode.mission.end.position  # where the primary robot finishes
    topdown.disc(end, 0.12, INK)
    topdown.disc(end, 0.06, (255, 255, 255))
    labels.append((*topdown.to_pixel(end), "end"))
    for k, robot in enumerate(schedule.robots):
        _start(topdown, robot.place.position, robot.yaw, k)
        labels.append((*topdown.to_pixel(robot.place.position), f"R{k}"))
    topdown.image = _labels(topdown.image, labels)
    return topdown


def draw_episode(
    episode: NavCraftEpisode, result: ExecutionResult | None = None, *, scale: int = 3
) -> np.ndarray:
    """The episode's picture (RGB uint8, see the module docstring): the map (``scale`` pixels per cell of
    the navigation grid) on top, the caption with the taxonomy type, makespans and legend below."""
    topdown = episode_map(episode, result, scale=scale)
    caption = _caption(topdown.image.shape[1], _caption_lines(episode, result), _legend(episode, result))
    return np.concatenate([topdown.image, caption], axis=0)
