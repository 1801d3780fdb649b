"""Habitat's metrics on constructed trajectories with hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from embodia.envs.habitat.metrics import (
    SLACK_REWARD,
    SUCCESS_REWARD,
    EpisodeMetrics,
    path_length,
    soft_spl,
    spl,
    success,
)


def test_spl_on_constructed_trajectories():
    # shortest path 4 m; an agent that walks it exactly, one that detours to 8 m, one that fails
    straight = [(0, 0), (2, 0), (4, 0)]
    detour = [(0, 0), (0, 2), (4, 2), (4, 0)]
    assert path_length(straight) == pytest.approx(4.0) and path_length(detour) == pytest.approx(8.0)
    assert spl(True, 4.0, path_length(straight)) == pytest.approx(1.0)
    assert spl(True, 4.0, path_length(detour)) == pytest.approx(0.5)
    assert spl(False, 4.0, path_length(straight)) == 0.0
    # a path shorter than the geodesic (stopping inside the success radius) is capped at 1
    assert spl(True, 4.0, 3.9) == pytest.approx(1.0)


def test_success_needs_stop_inside_the_radius():
    assert success(True, 0.19, 0.2) and not success(True, 0.2, 0.2)
    assert not success(False, 0.0, 0.2)


def test_soft_spl_rewards_progress():
    # 10 m episode: stop 2.5 m short after walking 9 m; and walk 12 m but end on the goal
    assert soft_spl(2.5, 10.0, 9.0) == pytest.approx(0.75 * 10 / 10)
    assert soft_spl(0.0, 10.0, 12.0) == pytest.approx(10 / 12)
    assert soft_spl(15.0, 10.0, 3.0) == 0.0  # farther than at the start: no progress


def test_episode_metrics_accumulate_steps_collisions_and_reward():
    metrics = EpisodeMetrics(success_distance=0.2)
    metrics.reset((0.0, 0.0, 0.0), 1.0)
    rewards = [
        metrics.update((0.25, 0.0, 0.0), 0.75, collided=False, stop_called=False),
        metrics.update((0.40, 0.0, 0.0), 0.60, collided=True, stop_called=False),  # cut short by a wall
        metrics.update((0.65, 0.0, 0.0), 0.35, collided=False, stop_called=False),
        metrics.update((0.90, 0.0, 0.0), 0.10, collided=False, stop_called=False),
        metrics.update((0.90, 0.0, 0.0), 0.10, collided=False, stop_called=True),
    ]
    np.testing.assert_allclose(
        rewards[:4], [0.25 + SLACK_REWARD, 0.15 + SLACK_REWARD, 0.25 + SLACK_REWARD, 0.25 + SLACK_REWARD]
    )
    assert rewards[4] == pytest.approx(SLACK_REWARD + SUCCESS_REWARD)
    assert metrics.success and metrics.collisions == 1
    assert metrics.path_length == pytest.approx(0.9)
    assert metrics.spl == pytest.approx(1.0 / 1.0)  # l = 1.0, p = 0.9 -> capped
    assert metrics.soft_spl == pytest.approx(0.9)
    restored = EpisodeMetrics(0.2)
    restored.from_array(metrics.to_array())
    assert restored.as_dict() == metrics.as_dict()
    assert math.isinf(EpisodeMetrics(0.2).distance_to_goal)


def _habitat_lab_spl(success: float, shortest, agent):
    """habitat-lab's ``SPL.update_metric`` expression verbatim, on NumPy scalars (nav.py)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return success * (shortest / max(shortest, agent))


def _habitat_lab_soft_spl(final, shortest, agent):
    """habitat-lab's ``SoftSPL.update_metric`` expression verbatim, on NumPy scalars (nav.py)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return max(0, (1 - final / shortest)) * (shortest / max(shortest, agent))


@pytest.mark.parametrize(
    ("is_success", "shortest", "agent", "final"),
    [
        (True, 0.0, 0.0, 0.0),  # start on the goal, STOP at once: no SPL (not a perfect 1.0)
        (False, 0.0, 0.0, 0.0),  # ... and without success: 0 * NaN is still NaN
        (True, 0.0, 0.5, 0.1),  # start on the goal, wander, come back: 0 even on success
        (False, math.inf, 0.0, math.inf),  # unreachable goal: inf / inf
        (True, 4.0, 8.0, 0.1),  # an ordinary episode, for comparison
    ],
)
def test_degenerate_episodes_match_habitat_lab(is_success, shortest, agent, final):
    f64 = np.float64
    expected_spl = _habitat_lab_spl(f64(float(is_success)), f64(shortest), f64(agent))
    expected_soft = _habitat_lab_soft_spl(f64(final), f64(shortest), f64(agent))
    np.testing.assert_equal(spl(is_success, shortest, agent), expected_spl)
    np.testing.assert_equal(soft_spl(final, shortest, agent), expected_soft)


def test_zero_length_episode_has_no_spl():
    """The case embodia used to score 1.0: shortest path 0, agent path 0, STOP inside the radius."""
    assert math.isnan(spl(True, 0.0, 0.0)) and math.isnan(spl(False, 0.0, 0.0))
    assert spl(True, 0.0, 0.5) == 0.0
    metrics = EpisodeMetrics(success_distance=0.2)
    metrics.reset((1.0, 0.0, 2.0), 0.0)
    assert math.isnan(metrics.as_dict()["spl"])  # already at reset, as habitat-lab's reset_metric
    metrics.update((1.0, 0.0, 2.0), 0.0, collided=False, stop_called=True)  # turn-free STOP on the goal
    assert metrics.success and math.isnan(metrics.spl) and math.isnan(metrics.soft_spl)
