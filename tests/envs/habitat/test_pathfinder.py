"""The navigation mesh: geodesic distances on hand-built scenes with known answers, and habitat-sim's
PathFinder semantics (navigability, snapping, sampling, sliding) checked against MuJoCo's own geometry."""

from __future__ import annotations

import math

import numpy as np
import pytest

from embodia.envs.habitat.mujoco_backend import MuJoCoBackend
from embodia.envs.habitat.pathfinder import MultiGoalShortestPath, ShortestPath
from embodia.envs.habitat.scene import Door, Room, Scene

R = 0.18  # robot radius (the default RobotSpec)


def around_disc(a, b, center, r, clockwise: bool) -> float:
    """Length of the shortest path from a to b that wraps around the disc (center, r): two tangents and an arc."""
    a, b, c = (np.asarray(v, dtype=float) for v in (a, b, center))
    da, db = np.linalg.norm(a - c), np.linalg.norm(b - c)
    alpha, beta = math.atan2(*(a - c)[::-1]), math.atan2(*(b - c)[::-1])
    sweep = (alpha - beta) % (2 * math.pi) if clockwise else (beta - alpha) % (2 * math.pi)
    arc = sweep - math.acos(min(1.0, r / da)) - math.acos(min(1.0, r / db))
    return math.sqrt(max(da**2 - r**2, 0.0)) + math.sqrt(max(db**2 - r**2, 0.0)) + r * max(arc, 0.0)


@pytest.fixture(scope="module")
def l_corridor():
    # an L: a 4.8 m x 1.2 m corridor opening into a 1.2 m x 6 m corridor (no wall between them)
    scene = Scene(
        "l_corridor",
        rooms=[Room("a", "corridor", (0.0, 0.0, 4.8, 1.2)), Room("b", "corridor", (4.8, 0.0, 6.0, 6.0))],
        doors=[Door("opening", ("a", "b"), (4.8, 0.6), "y", 1.2, True, 1)],
    )
    backend = MuJoCoBackend(scene)
    yield backend
    backend.close()


@pytest.fixture(scope="module")
def two_doors():
    # two 4 x 6 m rooms side by side; the shared wall has a door near each end
    scene = Scene(
        "two_doors",
        rooms=[Room("west", "office", (0.0, 0.0, 4.0, 6.0)), Room("east", "office", (4.0, 0.0, 8.0, 6.0))],
        doors=[
            Door("south_door", ("west", "east"), (4.0, 1.0), "y", 1.0, True, 1),
            Door("north_door", ("west", "east"), (4.0, 5.0), "y", 1.0, True, -1),
        ],
    )
    backend = MuJoCoBackend(scene)
    yield backend
    backend.set_door_open("south_door", True)
    backend.set_door_open("north_door", True)
    backend.close()


def test_l_corridor_geodesic_wraps_the_inner_corner(l_corridor):
    pathfinder = l_corridor.pathfinder
    start, goal = np.array([1.0, 0.6, 0.0]), np.array([5.4, 5.0, 0.0])
    # the inner corner of the L is the corner of the corridor's north wall box: (4.8 + t/2, 1.2 - t/2)
    corner = (4.85, 1.15)
    expected = around_disc(start[:2], goal[:2], corner, R, clockwise=False)
    path = ShortestPath(start, goal)
    assert pathfinder.find_path(path)
    assert path.geodesic_distance == pytest.approx(expected, abs=0.02)
    assert path.geodesic_distance > np.linalg.norm(goal - start) + 0.5  # the straight line is blocked
    points = np.array(path.points)
    np.testing.assert_allclose(points[0], start)
    np.testing.assert_allclose(points[-1], goal)
    assert np.linalg.norm(np.diff(points, axis=0), axis=1).sum() == pytest.approx(path.geodesic_distance)
    assert all(pathfinder.is_navigable(p) for p in points)
    # the bend hugs the corner: every interior waypoint is about one robot radius from it
    for p in points[1:-1]:
        assert np.linalg.norm(p[:2] - corner) == pytest.approx(R, abs=0.03)


def test_l_corridor_straight_segment_is_euclidean(l_corridor):
    a, b = np.array([0.5, 0.4, 0.0]), np.array([4.5, 0.9, 0.0])
    assert l_corridor.pathfinder.geodesic_distance(a, b) == pytest.approx(np.linalg.norm(b - a), abs=1e-9)


def test_closing_a_door_reroutes_and_closing_both_disconnects(two_doors):
    start, goal = np.array([2.0, 1.0, 0.0]), np.array([6.0, 1.0, 0.0])
    pathfinder = two_doors.pathfinder
    assert pathfinder.geodesic_distance(start, goal) == pytest.approx(
        4.0, abs=1e-9
    )  # straight through the south door

    two_doors.set_door_open("south_door", False)
    pathfinder = two_doors.pathfinder
    # around the north door's southern jamb: wall end corners at (4 -+ t/2, 4.5), the 0.1 m wall end between
    half = around_disc(start[:2], (3.95, 4.5 + R), (3.95, 4.5), R, clockwise=True)
    path = ShortestPath(start, goal)
    assert pathfinder.find_path(path)
    assert path.geodesic_distance == pytest.approx(2 * half + 0.1, abs=0.02)
    assert max(p[1] for p in path.points) > 4.5  # it goes through the north door

    two_doors.set_door_open("north_door", False)
    path = ShortestPath(start, goal)
    assert not two_doors.pathfinder.find_path(path)
    assert math.isinf(path.geodesic_distance) and path.points == []
    assert two_doors.pathfinder.num_islands == 2

    two_doors.set_door_open("south_door", True)
    assert two_doors.pathfinder.geodesic_distance(start, goal) == pytest.approx(4.0, abs=1e-9)


def test_multi_goal_path_reaches_the_geodesically_closest_goal(two_doors):
    two_doors.set_door_open("south_door", True)
    two_doors.set_door_open("north_door", True)
    pathfinder = two_doors.pathfinder
    start = np.array([1.0, 3.0, 0.0])
    # the east goal is closer in a straight line (through the wall) but farther to walk
    goals = [np.array([4.6, 3.0, 0.0]), np.array([1.0, 5.5, 0.0])]
    path = MultiGoalShortestPath(start, goals)
    assert pathfinder.find_path(path)
    assert path.closest_end_point_index == 1
    assert path.geodesic_distance == pytest.approx(2.5, abs=1e-9)
    assert pathfinder.geodesic_distance(start, goals[0]) > 2.5


def test_navigability_matches_mujoco_collisions(two_doors):
    """is_navigable(p) iff the robot's collision hull at p touches nothing in MuJoCo."""
    pathfinder = two_doors.pathfinder
    rng = np.random.default_rng(0)
    points = rng.uniform([0.0, 0.0], [8.0, 6.0], size=(300, 2))
    clearance = pathfinder.obstacles.clearance(points)
    points = points[np.abs(clearance - R) > 2e-3]  # leave out grazing contacts
    agree = 0
    for x, y in points:
        two_doors.set_pose(0, np.array([x, y, 0.0]), 0.0)
        agree += pathfinder.is_navigable((x, y)) == (two_doors.robot_contacts(0) == 0)
    assert agree == len(points)


def test_snap_sample_and_islands_follow_habitat_semantics(l_corridor):
    pathfinder = l_corridor.pathfinder
    inside_wall = np.array([2.0, 1.2, 0.0])
    assert not pathfinder.is_navigable(inside_wall)
    snapped = pathfinder.snap_point(inside_wall)
    assert pathfinder.is_navigable(snapped) and np.linalg.norm(snapped - inside_wall) < R + 0.1
    free = np.array([2.0, 0.6, 0.0])
    np.testing.assert_array_equal(pathfinder.snap_point(free), free)
    assert not pathfinder.is_navigable([2.0, 0.6, 1.0])  # off the floor (height)
    pathfinder.seed(3)
    first = [pathfinder.get_random_navigable_point() for _ in range(20)]
    pathfinder.seed(3)
    again = [pathfinder.get_random_navigable_point() for _ in range(20)]
    np.testing.assert_array_equal(first, again)
    assert all(pathfinder.is_navigable(p) for p in first)
    assert pathfinder.num_islands == 1 and pathfinder.get_island(free) == 0
    # the navigable area: the floor shrunk by half a wall and a robot radius (a 5 cm grid counts a bit less)
    width = 1.2 - 0.1 - 2 * R
    expected = (6.0 - 0.1 - 2 * R) * width + width * (6.0 - 0.05 - R - (1.15 - R))
    assert pathfinder.island_area(0) == pytest.approx(expected, rel=0.08)


def test_try_step_slides_along_walls_and_no_sliding_stops(l_corridor):
    pathfinder = l_corridor.pathfinder
    start = np.array([1.0, 0.6, 0.0])
    # 45 degrees into the corridor's north wall: the robot stops at the wall and slides east
    end = start + np.array([0.5, 0.5, 0.0])
    slid = pathfinder.try_step(start, end)
    wall_limit = 1.15 - R
    assert slid[1] == pytest.approx(wall_limit, abs=2e-3)
    assert slid[0] > start[0] + 0.45
    stopped = pathfinder.try_step_no_sliding(start, end)
    assert stopped[1] == pytest.approx(wall_limit, abs=2e-3)
    assert stopped[0] == pytest.approx(start[0] + (wall_limit - start[1]), abs=2e-3)
    free_end = start + np.array([0.25, 0.0, 0.0])
    np.testing.assert_allclose(pathfinder.try_step(start, free_end), free_end)
