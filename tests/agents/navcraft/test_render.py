"""The episode picture: map size, robot colours along the trajectories, rings at the meetings, closed doors."""

from __future__ import annotations

import numpy as np
import pytest

from embodia.agents.navcraft.benchmark import generate
from embodia.agents.navcraft.executor import execute
from embodia.agents.navcraft.render import (
    CLOSED_DOOR_COLOR,
    MEETING_COLOR,
    draw_episode,
    planned_routes,
    robot_color,
)
from embodia.agents.navcraft.travel import Travel
from embodia.envs.habitat.topdown import TopDownMap


@pytest.fixture(scope="module")
def episodes():
    """apartment_0, seed 0: #0 parallel_fetch, #1 rendezvous_swap, #2 escort (the generator is seeded)."""
    found = {ep.info["taxonomy"]: ep for ep in generate(["apartment_0"], 3, 0).episodes}
    assert {"rendezvous_swap", "escort"} <= set(found), sorted(found)
    return found


def _map(episode) -> TopDownMap:
    travel = Travel.for_scene(episode.mission.scene_id, episode.schedule.closed_doors)
    return TopDownMap(travel.pathfinder, travel.scene, scale=3)


def _near(image: np.ndarray, row: float, col: float, color, radius: int = 3) -> bool:
    r, c = int(row), int(col)
    patch = image[max(0, r - radius) : r + radius + 1, max(0, c - radius) : c + radius + 1]
    return bool(np.all(patch == np.array(color, np.uint8), axis=-1).any())


def _mask(image: np.ndarray, color) -> np.ndarray:
    return np.all(image == np.array(color, np.uint8), axis=-1)


def test_executed_picture_has_the_map_size_and_each_robot_colour_along_its_trajectory(episodes):
    episode = episodes["rendezvous_swap"]
    result = execute(episode)
    image = draw_episode(episode, result)
    topdown = _map(episode)
    rows, cols = topdown.base.shape[:2]
    assert image.dtype == np.uint8 and image.ndim == 3 and image.shape[2] == 3
    assert image.shape[1] == cols and image.shape[0] > rows  # the map on top, the caption strip below
    caption = image[rows:]
    assert (caption != caption[0, 0]).any()  # text was drawn
    for k, trajectory in enumerate(result.trajectories):
        points = np.unique(np.round(np.asarray(trajectory), 2), axis=0)
        if len(points) < 5:
            continue
        hits = [_near(image[:rows], *topdown.to_pixel(p), robot_color(k)) for p in points]
        assert np.mean(hits) > 0.8, (k, np.mean(hits))
    # the colours of robots are not sprinkled everywhere: robot 0's colour covers a thin band only
    assert _mask(image[:rows], robot_color(0)).mean() < 0.1


def test_meeting_ring_is_at_the_event_pixel_and_absent_without_events(episodes):
    episode = episodes["rendezvous_swap"]
    image = draw_episode(episode)
    topdown = _map(episode)
    meetings = [e for e in episode.schedule.events if e.kind in ("handoff", "rendezvous")]
    assert meetings
    ring = _mask(image[: topdown.base.shape[0]], MEETING_COLOR)
    rr, cc = np.mgrid[: ring.shape[0], : ring.shape[1]]
    radius_px = 0.3 / (topdown.pathfinder.settings.cell_size / 3)
    for event in meetings:
        row, col = topdown.to_pixel(event.place.position)
        distance = np.hypot(rr + 0.5 - row, cc + 0.5 - col)
        annulus = (distance <= radius_px) & (distance >= radius_px - 4)
        assert ring[annulus].mean() > 0.6
        assert not ring[distance < radius_px - 7].any()  # a ring, hollow
        assert not ring[distance > radius_px + 2].any()  # only one meeting here
    parallel = episodes["parallel_fetch"]
    assert not parallel.schedule.events
    assert not _mask(draw_episode(parallel), MEETING_COLOR).any()


def test_planned_routes_go_through_the_plan_and_the_closed_door_is_marked(episodes):
    episode = episodes["escort"]
    assert episode.schedule.closed_doors
    image = draw_episode(episode)  # no result: planned routes
    topdown = _map(episode)
    routes = planned_routes(episode.schedule, episode.mission.scene_id)
    assert len(routes) == episode.num_robots
    for k, plan in enumerate(episode.schedule.plans):
        moves = [s.place.position for s in plan if s.kind == "move"]
        assert np.allclose(routes[k][-1], moves[-1][:2], atol=0.05)  # ends at the last move's place
        start = episode.schedule.robots[k].place.position
        assert np.allclose(routes[k][0], start[:2])
        points = np.asarray(routes[k])
        longest = int(np.argmax(np.linalg.norm(np.diff(points, axis=0), axis=1)))
        middle = (points[longest] + points[longest + 1]) / 2  # mid-segment, away from the markers
        assert _near(image, *topdown.to_pixel(middle), robot_color(k))
    scene = Travel.for_scene(episode.mission.scene_id).scene
    door = next(d for d in scene.doors if d.id == episode.schedule.closed_doors[0])
    assert _near(image, *topdown.to_pixel(door.center), CLOSED_DOOR_COLOR, radius=1)
    # the primary's route goes through the door the helper opens (planned in the door's state at that time)
    row, col = topdown.to_pixel(door.center)
    half_door_px = int(door.width / 2 / (topdown.pathfinder.settings.cell_size / 3))
    assert _near(image, row, col, robot_color(0), radius=half_door_px)
    assert not _near(draw_episode(episodes["parallel_fetch"]), row, col, CLOSED_DOOR_COLOR, radius=20)
