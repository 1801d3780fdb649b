"""One action-chunk runner: a chunk policy acts the same in simulation (the episode runner) and on the robot
(the ROS 2 policy node's controller), given the same observations."""

from __future__ import annotations

import numpy as np
import pytest

from embodia.core.chunks import ActionChunker
from embodia.core.errors import ActionError
from embodia.robot.config import node_config_from_dict
from embodia.robot.controller import PolicyController
from embodia.robot.convert import make_float64_multi_array
from embodia.runner import EpisodeHook, rollout


class GoalSeekingChunks:
    """Chunks of 4 actions toward the goal, each a little different (so the step inside a chunk matters)."""

    chunk_size = 4

    def __init__(self, execute_steps: int | None = None) -> None:
        if execute_steps is not None:
            self.execute_steps = execute_steps
        self.queries = 0

    def reset(self, seed: int | None = None) -> None:
        self.queries = 0

    def act(self, obs) -> np.ndarray:
        self.queries += 1
        direction = np.tanh(
            2.0 * (np.asarray(obs["goal"], np.float32) - np.asarray(obs["state"], np.float32))
        )
        scale = np.array([0.9, 0.7, 0.5, 0.3], dtype=np.float32)[:, None]
        return (direction[None] * scale + 0.001 * self.queries).astype(np.float32)


class Transitions(EpisodeHook):
    def __init__(self) -> None:
        self.rows: list[tuple[dict, np.ndarray]] = []

    def step(self, env, step) -> None:
        self.rows.append(({k: np.array(v) for k, v in step.obs.items()}, np.array(step.action)))


NODE_CONFIG = {
    "trigger": "observation",
    "observations": [
        {"topic": "obs/state", "type": "Float64MultiArray", "key": "state", "size": 2},
        {"topic": "obs/goal", "type": "Float64MultiArray", "key": "goal", "size": 2},
    ],
    "command": {"topic": "cmd", "type": "Float64MultiArray", "low": [-1, -1], "high": [1, 1]},
}


@pytest.mark.parametrize("execute_steps", [None, 1, 3])
def test_a_chunk_policy_gives_the_same_actions_in_simulation_and_through_the_ros_node(execute_steps):
    recorded = Transitions()
    result = rollout(
        "embodia/PointMaze-Medium-v0",
        GoalSeekingChunks(execute_steps),
        episodes=2,
        seed=3,
        max_steps=23,
        hooks=[recorded],
    )
    assert [e.length for e in result.episodes] == [23, 23]
    controller = PolicyController(GoalSeekingChunks(execute_steps), node_config_from_dict(NODE_CONFIG))
    commands = []
    for i, (obs, _) in enumerate(recorded.rows):
        if i % 23 == 0:
            controller.reset(seed=3 + i // 23)  # the bridge's episode event
        now = 0.02 * i
        controller.observe(0, make_float64_multi_array(obs["state"]), now)
        controller.observe(1, make_float64_multi_array(obs["goal"]), now)
        tick = controller.tick(now)
        assert tick.reason == "policy", tick
        commands.append(tick.command)
    actions = np.array([action for _, action in recorded.rows])
    np.testing.assert_allclose(np.array(commands), actions, rtol=0, atol=1e-6)
    # and the chunks really were chunks: the policy was asked once per chunk (or per executed part)
    per_chunk = {None: 4, 1: 1, 3: 3}[execute_steps]
    assert len({tuple(a) for a in actions[:per_chunk]}) == per_chunk


def test_what_counts_as_a_chunk():
    class Fixed:
        def __init__(self, out):
            self.out = np.asarray(out, dtype=np.float32)

        def reset(self, seed=None):
            pass

        def act(self, obs):
            return self.out

    single = ActionChunker(Fixed([0.1, 0.2]), (2,))
    assert single.next_action(None).tolist() == pytest.approx([0.1, 0.2])
    chunk = ActionChunker(Fixed([[1, 1], [2, 2]]), (2,))
    assert [chunk.next_action(None)[0] for _ in range(3)] == [1, 2, 1]  # used up: asked again
    discrete = ActionChunker(Fixed([3, 1, 0]), ())  # Discrete actions: shape (), a chunk of 3
    assert [int(discrete.next_action(None)) for _ in range(3)] == [3, 1, 0]
    with pytest.raises(ActionError, match="empty action chunk"):
        ActionChunker(Fixed(np.zeros((0, 2))), (2,)).next_action(None)
