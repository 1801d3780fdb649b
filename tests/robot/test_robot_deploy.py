"""The deploy path as a robot runs it: a policy trained with torch, exported to ONNX, run by the policy node on
the torch-free Python 3.12 install (.venv-robot) against the simulator bridge on the full 3.11 install, over
real ROS 2 in an isolated network namespace; the closed loop equals the torch policy's rollout without ROS."""

from __future__ import annotations

import shutil
import sys
import textwrap

import numpy as np
import yaml

import embodia
from embodia.core.policy import load_policy
from embodia.policies.onnx_export import export_onnx
from embodia.policies.train import TrainConfig, train
from embodia.robot.netns import check_isolation, run_isolated
from embodia.robot.sim_bridge import policy_config_for
from tests.conftest import ROOT
from tests.robot.robot_install import ROBOT_EMBODIA, robot_python

ENV, SEEDS, MAX_STEPS = "embodia/PointMaze-Medium-v0", 5, 120


class _Clipped:
    """The policy as deployed: its output clipped to the command limits, as the node's filter does."""

    def __init__(self, policy, low, high):
        self.policy, self.low, self.high = policy, low, high
        self.chunk_size = policy.chunk_size

    def reset(self, seed=None):
        self.policy.reset(seed)

    def act(self, obs):
        return np.clip(self.policy.act(obs), self.low, self.high)


def test_an_onnx_policy_on_the_python_312_robot_install_drives_the_simulator_like_torch(
    tmp_path, monkeypatch
):
    check_isolation()
    robot_python()
    monkeypatch.setenv("ROS_LOG_DIR", str(tmp_path / "ros_log"))
    # a BC policy with action chunks of 4, trained briefly on expert demonstrations
    embodia.rollout(ENV, "expert", episodes=8, seed=100, max_steps=200, record=tmp_path / "demos.zarr")
    config = TrainConfig(
        method="bc",
        dataset=str(tmp_path / "demos.zarr"),
        out=str(tmp_path / "bc"),
        steps=300,
        batch_size=64,
        eval_every=0,
        eval_episodes=0,
        method_config={"chunk": 4},
    )
    train(config)
    export_onnx(tmp_path / "bc" / "policy")
    robot_copy = tmp_path / "robot_policy"  # what goes to the robot: the config and the exported network
    robot_copy.mkdir()
    for name in ("config.json", "model.onnx"):
        shutil.copy(tmp_path / "bc" / "policy" / name, robot_copy / name)

    node_config = policy_config_for(ENV, command_type="TwistStamped")
    (tmp_path / "node.yaml").write_text(yaml.safe_dump(node_config.to_dict()))
    launch_file = tmp_path / "deploy.launch.yaml"
    launch_file.write_text(
        textwrap.dedent(f"""
        launch:
        - push-ros-namespace: {{namespace: maze}}
        - node:
            pkg: embodia_ros
            exec: sim_node
            name: sim
            args: "{ENV} --episodes {SEEDS + 1} --max-steps {MAX_STEPS} --command-type TwistStamped
                   --wait-for-subscribers 2 --results {tmp_path}/results.json"
        - executable:
            name: robot_policy
            cmd: "{ROBOT_EMBODIA} robot policy --policy {robot_copy} --config {tmp_path}/node.yaml
                  --runtime onnx --ros-args -r __node:=policy -r __ns:=/maze"
        - node:
            pkg: embodia_ros
            exec: record_node
            name: recorder
            args: "obs/state=state obs/goal=goal --action cmd --episodes {SEEDS} --out {tmp_path}/ros.zarr"
            on_exit: shutdown
        """)
    )
    result = run_isolated(
        [sys.executable, "-m", "embodia.cli", "robot", "launch", str(launch_file), "--timeout", "90"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-3000:]
    assert "policy OnnxActorPolicy" in result.stdout  # the 3.12 node ran the exported network

    import json

    through_ros = json.loads((tmp_path / "results.json").read_text())["episodes"][:SEEDS]
    torch_policy = load_policy(tmp_path / "bc" / "policy", runtime="torch")
    direct = embodia.rollout(
        ENV,
        _Clipped(torch_policy, -1.0, 1.0),
        episodes=SEEDS,
        seed=0,
        max_steps=MAX_STEPS,
        record=tmp_path / "direct.zarr",
    )
    assert [e["length"] for e in through_ros] == [e.length for e in direct.episodes]
    assert [e["success"] for e in through_ros] == [e.success for e in direct.episodes]
    recorded, reference = (
        embodia.TrajectoryStore(tmp_path / "ros.zarr"),
        embodia.TrajectoryStore(tmp_path / "direct.zarr"),
    )
    assert recorded.num_episodes == SEEDS
    for i in range(SEEDS):
        ours, theirs = recorded.episode(i), reference.episode(i)
        rows = (len(ours["action"]), len(theirs["action"]))
        assert rows[0] == rows[1], (
            f"episode {i}: {rows[0]} rows recorded, {rows[1]} stepped\n{result.stdout[-4000:]}"
        )
        # ONNX Runtime vs torch: the same commands within float32 rounding, step after step of a closed loop
        np.testing.assert_allclose(ours["action"][:, :2], theirs["action"], atol=1e-4)
        np.testing.assert_allclose(ours["state"][:, :2], theirs["state"], atol=1e-4)
