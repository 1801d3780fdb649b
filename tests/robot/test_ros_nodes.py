"""Real multi-process ROS 2: the nodes as users run them, each test in its own network namespace.

Every test starts its processes inside ``unshare -n`` with only loopback up (see
:mod:`embodia.robot.netns`), so DDS discovery never leaves the machine; CI runs as root and can do it.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap

import numpy as np
import pytest
import yaml

import embodia
from embodia.policies.linear import LinearPolicy
from embodia.robot.netns import check_isolation, run_isolated
from embodia.robot.sim_bridge import policy_config_for
from tests.conftest import ROOT

SEEDS, MAX_STEPS = 6, 150


@pytest.fixture(autouse=True)
def _ros_env(tmp_path, monkeypatch):
    check_isolation()  # a clear error (not a skip) where namespaces cannot be made
    monkeypatch.setenv("ROS_LOG_DIR", str(tmp_path / "ros_log"))
    monkeypatch.setenv("PYTHONUNBUFFERED", "1")


def _scenario(name, workdir, timeout=240):
    result = run_isolated(
        [sys.executable, "-m", "tests.robot.scenarios", name, str(workdir)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert result.returncode == 0, (
        f"scenario {name} failed:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


class _Clipped:
    """The policy as deployed: its output clipped to the command limits, as the node's filter does."""

    def __init__(self, policy, low, high):
        self.policy, self.low, self.high = policy, low, high

    def reset(self, seed=None):
        self.policy.reset(seed)

    def act(self, obs):
        return np.clip(self.policy.act(obs), self.low, self.high)


def test_policy_node_drives_the_simulator_like_a_direct_rollout(tmp_path):
    """Launch file -> sim bridge + policy node + recorder; success and data equal the rollout without ROS."""
    seek = LinearPolicy(np.hstack([-np.eye(2), np.eye(2)]).astype(np.float32), np.zeros(2), ["state", "goal"])
    seek.save(tmp_path / "seek")
    launch_file = tmp_path / "loop.launch.yaml"
    launch_file.write_text(
        textwrap.dedent(f"""
        launch:
        - arg: {{name: episodes, default: "{SEEDS}"}}
        - push-ros-namespace: {{namespace: maze}}
        - node:
            pkg: embodia_ros
            exec: sim_node
            name: sim
            args: "embodia/PointMaze-Medium-v0 --episodes {SEEDS + 1} --max-steps {MAX_STEPS}
                   --command-type TwistStamped --wait-for-subscribers 2 --results {tmp_path}/results.json"
        - node:
            pkg: embodia_ros
            exec: policy_node
            name: policy
            param:
            - {{name: policy, value: "{tmp_path}/seek"}}
            - {{name: config, value: "$(dirname)/node.yaml"}}
        - node:
            pkg: embodia_ros
            exec: record_node
            name: recorder
            args: "obs/state=state obs/goal=goal --action cmd --episodes $(var episodes)
                   --out {tmp_path}/ros.zarr"
            on_exit: shutdown
    """)
    )
    # the bridge's topics; stamped commands carry the stamp of the observation they answer
    node_config = policy_config_for("embodia/PointMaze-Medium-v0", command_type="TwistStamped")
    (tmp_path / "node.yaml").write_text(yaml.safe_dump(node_config.to_dict()))
    result = run_isolated(
        [sys.executable, "-m", "embodia.cli", "robot", "launch", str(launch_file), "--timeout", "60"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-3000:]
    assert "[recorder-1]" in result.stdout and "[policy-1]" in result.stdout  # prefixed output

    # the recorder stops the launch after its 6 episodes, while the bridge runs the 7th
    through_ros = json.loads((tmp_path / "results.json").read_text())["episodes"][:SEEDS]
    direct = embodia.rollout(
        "embodia/PointMaze-Medium-v0",
        _Clipped(seek, -1.0, 1.0),
        episodes=SEEDS,
        seed=0,
        max_steps=MAX_STEPS,
        record=tmp_path / "direct.zarr",
    )
    assert [e["seed"] for e in through_ros] == [e.seed for e in direct.episodes]
    ros_success = [e["success"] for e in through_ros]
    assert ros_success == [e.success for e in direct.episodes]
    assert [e["length"] for e in through_ros] == [e.length for e in direct.episodes]
    assert 0 < sum(ros_success) < SEEDS  # a comparison that can tell success from failure

    # the recorder split the same episodes, row for row: (observation, the command that answered it)
    recorded = embodia.TrajectoryStore(tmp_path / "ros.zarr")
    reference = embodia.TrajectoryStore(tmp_path / "direct.zarr")
    assert recorded.num_episodes == SEEDS
    for i in range(SEEDS):
        meta = recorded.episode_meta(i)
        assert (meta.env_id, meta.seed, meta.success) == ("embodia/PointMaze-Medium-v0", i, ros_success[i])
        ours, theirs = recorded.episode(i), reference.episode(i)
        rows = (len(ours["action"]), len(theirs["action"]))
        assert rows[0] == rows[1], (
            f"episode {i}: {rows[0]} rows recorded, {rows[1]} stepped\n{result.stdout[-4000:]}"
        )
        # JointState rows are recorded as [position, velocity, effort]; the env's vector is the position
        np.testing.assert_allclose(ours["state"][:, :2], theirs["state"], atol=1e-6)
        np.testing.assert_allclose(ours["goal"][:, :2], theirs["goal"], atol=1e-6)
        # TwistStamped rows are [linear xyz, angular xyz]; the bridge maps the action to linear.x, linear.y
        np.testing.assert_allclose(ours["action"][:, :2], theirs["action"], atol=1e-6)


def test_policy_node_faults_never_reach_the_command_topic(tmp_path):
    seen = _scenario("faults", tmp_path)
    phases = seen["phases"]
    assert phases["normal"] == [[0.5, -0.2]]
    assert phases["wrong_joints"] == [[0.0, 0.0]]  # rejected -> stale -> safe stop
    assert phases["reordered"] == [[-0.2, 0.5]]  # same joints in another order: reordered by name
    assert phases["bad_images"] == [[0.5, -0.2]]  # bad messages on an optional topic change nothing
    assert phases["out_of_range"] == [[0.0, 0.0]]  # out_of_range: stop
    assert phases["nan"] == [[0.0, 0.0]]
    assert phases["silence"] == [[0.0, 0.0]]
    assert phases["resumed"] == [[0.5, -0.2]]
    status = seen["final_status"]
    assert status["rejected_messages"]["obs/state"] > 0 and status["rejected_messages"]["camera"] == 6
    assert status["filter_nan"] > 0 and status["filter_out_of_range"] > 0 and status["stale"] > 0
    assert seen["last_status"]["published"] > 0  # the status topic reports the same counters live
    log = seen["log"]
    assert (
        "rejected message on obs/state (#1): JointState has joints ['x', 'y'], expected ['s0', 's1']" in log
    )
    assert "image has encoding 'mono8', expected 'rgb8'" in log
    assert (
        "safe stop (nan" in log and "safe stop (out_of_range" in log and "watchdog: observations stale" in log
    )
    assert seen["exit_code"] == 0


def test_restarting_either_node_does_not_wedge_the_other(tmp_path):
    seen = _scenario("restarts", tmp_path)
    steps = seen["steps"]
    assert steps["started"] == 1 and steps["running"] > 20
    assert steps["policy_dead"] <= 2  # lockstep waits for a controller (at most the commands in flight)
    assert steps["policy_restarted"] >= 20  # a new policy node picks the loop up (observation republished)
    assert steps["sim_dead"] == 0
    assert steps["sim_restarted"] >= 20  # the policy node resumes after the watchdog stopped it
    assert "resumed: running the policy again" in seen["policy_log"]
    assert seen["exit_codes"] == {"sim": 0, "policy": 0}


def test_isolation_helper_gives_a_private_loopback_only_network():
    result = run_isolated(["ip", "-o", "link", "show"], capture_output=True, text=True, timeout=30)
    assert result.returncode == 0
    links = [line.split(":")[1].strip() for line in result.stdout.strip().splitlines()]
    assert links == ["lo"] and os.environ.get("ROS_LOG_DIR")


def test_latency_benchmark_quick_writes_the_committed_layout(tmp_path):
    """``benchmarks/bench_ros_latency.py --quick``: every path answers, and its results file has the layout
    of the committed ``results/benchmarks/ros_latency.json`` the ROS 2 page renders (timings not asserted)."""
    from benchmarks.bench_ros_latency import main
    from embodia.core.results import layout_differences, read_results

    out = tmp_path / "ros_latency.json"
    main(["--quick", "--results", str(out)])
    produced = read_results(out)
    assert layout_differences(produced, read_results(ROOT / "results/benchmarks/ros_latency.json")) == []
    assert all(row["samples"] > 0 for row in produced["tables"]["latency"]["rows"])
    assert [row["target_hz"] for row in produced["tables"]["rates"]["rows"]] == [50, 100, 50, 100]
    assert produced["tables"]["act"]["rows"][1]["max_abs_diff"] <= 1e-5  # the export's own check
