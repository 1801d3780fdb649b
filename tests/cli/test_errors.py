"""Every user error the command line can meet is one line on stderr and exit status 2, never a traceback.

The table feeds ``embodia`` bad input of every kind a careless user produces: nonsense numbers, bad seeds,
unknown or mistyped environment arguments, out-of-range indices, outputs that are folders or under files,
damaged policy folders, policies that do not fit the environment, broken launch files, bad stores. It runs
the real ``main()`` in this process (fast); tests/test_cli.py and tests/data/test_store_guarantees.py run the
same checks through real subprocesses.
"""

from __future__ import annotations

import numpy as np
import pytest

from embodia.cli import main
from embodia.data.store import TrajectoryStore
from embodia.policies.linear import LinearPolicy

POINTMAZE = "embodia/PointMaze-Medium-v0"


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    root = tmp_path_factory.mktemp("bad_input")
    with TrajectoryStore(root / "s.zarr", mode="a") as store:
        for seed in range(2):
            store.add_episode(
                {"state": np.zeros((4, 4), np.float32), "action": np.zeros((4, 2), np.float32)},
                env_id=POINTMAZE,
                seed=seed,
            )
    (root / "foreign").mkdir()
    (root / "foreign" / "notes.txt").write_text("mine")
    (root / "file.txt").write_text("a file")
    LinearPolicy(np.zeros((2, 7)), np.zeros(2), ["state"]).save(root / "wrong_obs")
    LinearPolicy(np.zeros((5, 4)), np.zeros(5), ["state", "goal"]).save(root / "wrong_action")
    LinearPolicy(np.zeros((2, 2)), np.zeros(2), ["depth"]).save(root / "wrong_key")
    (root / "not_object").mkdir()
    (root / "not_object" / "config.json").write_text("[1, 2, 3]")
    truncated = LinearPolicy(np.zeros((2, 4)), np.zeros(2), ["state", "goal"]).save(root / "truncated")
    weights = (truncated / "model.safetensors").read_bytes()
    (truncated / "model.safetensors").write_bytes(weights[: len(weights) // 2])
    (root / "self.launch.yaml").write_text("launch:\n- include:\n    file: $(dirname)/self.launch.yaml\n")
    (root / "notjson.npz").write_text("not an npz")
    return root


# (arguments, what the one line must say); {w} is the work folder
CASES = [
    # nonsense numbers
    (["run", POINTMAZE, "--episodes", "-1"], "--episodes: expected an integer >= 1"),
    (["run", POINTMAZE, "--episodes", "zero"], "--episodes: expected an integer >= 1, got 'zero'"),
    (["run", POINTMAZE, "--max-steps", "0"], "--max-steps: expected an integer >= 1"),
    (["run", POINTMAZE, "--commit-every", "-5"], "--commit-every: expected a finite number >= 0"),
    (["run", POINTMAZE, "--commit-every", "nan"], "--commit-every: expected a finite number >= 0"),
    (["replay", "{w}/s.zarr", "--tolerance", "inf"], "--tolerance: expected a finite number >= 0"),
    (["demo", "--episodes", "0"], "--episodes: expected an integer >= 1"),
    (["train", "bc", "--dataset", "{w}/s.zarr", "--out", "{w}/run", "--steps", "0"], "--steps"),
    (["train", "bc", "--dataset", "{w}/s.zarr", "--out", "{w}/run", "--batch-size", "-3"], "--batch-size"),
    (["eval", "{w}/wrong_obs", "--episodes", "0"], "--episodes: expected an integer >= 1"),
    (["data", "generate", POINTMAZE, "--episodes", "-2", "--out", "{w}/g.zarr"], "--episodes"),
    (["data", "generate", POINTMAZE, "--episodes", "1", "--noise", "-0.1", "--out", "{w}/g.zarr"], "--noise"),
    (
        ["data", "export", "{w}/s.zarr", "--mcap", "{w}/o.mcap", "--rate-hz", "0"],
        "--rate-hz: expected a finite number > 0",
    ),
    (["nav", "eval", "--episodes", "-1"], "--episodes"),
    (["robot", "sim", POINTMAZE, "--rate-hz", "nan"], "--rate-hz"),
    # seeds
    (["run", POINTMAZE, "--seed", "-1"], "--seed: expected a seed, an integer in [0, 4294967295]"),
    (["run", POINTMAZE, "--seed", "4294967296"], "--seed: expected a seed"),
    (["eval", "{w}/wrong_obs", "--seeds", "0", "-4"], "--seeds: expected a seed"),
    (["nav", "eval", "--seed", "-3"], "--seed: expected a seed"),
    # environment ids and arguments
    (["run", "embodia/CubeSingel-v0"], "Did you mean embodia/CubeSingle-v0"),
    (["run", POINTMAZE, "--env-kwarg", "nonsense=1"], "unknown argument(s) nonsense; it accepts"),
    (["run", POINTMAZE, "--env-kwarg", "no-equals-sign"], "--env-kwarg expects KEY=VALUE"),
    (
        ["run", "embodia/CubeSingle-v0", "--env-kwarg", "task_id=abc"],
        "task_id must be one of OGBench's tasks 1-5",
    ),
    (["run", "embodia/CubeSingle-v0", "--task-id", "9"], "task_id must be one of OGBench's tasks 1-5, got 9"),
    (["run", "embodia/CubeSingle-v0", "--task-id", "0"], "--task-id: expected an integer >= 1"),
    (
        ["run", "embodia/Nav-PointNav-v0", "--env-kwarg", "sensors=lidar"],
        "sensors must be 'rgbd', 'rgb', 'depth' or 'none'",
    ),
    (
        ["run", "embodia/Nav-PointNav-v0", "--env-kwarg", "width=0"],
        "width: Input should be greater than or equal to 1",
    ),
    (
        ["run", "embodia/Kitchen-OpenDrawer-v0", "--env-kwarg", "robot=R2D2"],
        "robot 'R2D2' cannot work in the kitchen",
    ),
    (
        ["run", "embodia/Kitchen-OpenDrawer-v0", "--env-kwarg", "camera_width=-3"],
        "camera_width must be a positive integer",
    ),
    (
        ["run", "embodia/Kitchen-OpenDrawer-v0", "--env-kwarg", "layout=12"],
        "layout must be an id in 0..9 or a list of such ids",
    ),
    # stores and indices
    (["replay", "{w}/s.zarr", "--episode", "5"], "episode 5 out of range: store"),
    (["data", "export", "{w}/s.zarr", "--mcap", "{w}/o.mcap", "--episode", "9"], "episode 9 out of range"),
    (["info", "{w}/foreign"], "holds files but no trajectory store"),
    (["info", "{w}/file.txt"], "is a file, not a trajectory store"),
    (["info", "{w}/missing.zarr"], "does not exist"),
    (["run", POINTMAZE, "--record", "{w}/foreign"], "holds files but no trajectory store"),
    (["run", POINTMAZE, "--record", "{w}/file.txt"], "is a file, not a trajectory store"),
    (["run", POINTMAZE, "--record", "{w}/file.txt/s.zarr"], "a parent of it is a file"),
    (
        ["data", "generate", POINTMAZE, "--episodes", "1", "--out", "{w}/foreign", "--overwrite"],
        "holds files",
    ),
    (["data", "import", "{w}/notjson.npz", "--out", "{w}/i.zarr", "--env", POINTMAZE], "cannot read"),
    (["train", "iql", "--dataset", "{w}/foreign", "--out", "{w}/run"], "holds files but no trajectory store"),
    (
        ["train", "iql", "--dataset", "{w}/s.zarr", "--out", "{w}/run"],
        "has no 'reward' key: iql learns from rewards",
    ),
    (
        ["train", "deas", "--dataset", "{w}/s.zarr", "--out", "{w}/run", "--config", '{"horizon": 0}'],
        "horizon",
    ),
    # output files
    (["run", POINTMAZE, "--video", "{w}/foreign"], "is a folder; name a file"),
    (["replay", "{w}/s.zarr", "--video", "{w}/file.txt/x.mp4"], "is a file, not a folder"),
    (["tool", "run", "lm_generate", "--args", "{}", "--out", "{w}/foreign"], "is a folder"),
    # policies
    (["run", POINTMAZE, "--policy", "{w}/nowhere"], "no policy at"),
    (["run", POINTMAZE, "--policy", "{w}/not_object"], "must hold a JSON object"),
    (["run", POINTMAZE, "--policy", "{w}/truncated"], "is incomplete or damaged, re-export it"),
    (["run", POINTMAZE, "--policy", "{w}/wrong_obs"], "linear policy expects 7 inputs"),
    (["run", POINTMAZE, "--policy", "{w}/wrong_key"], "needs observation keys ['depth']"),
    (["run", POINTMAZE, "--policy", "{w}/wrong_action"], "action has shape (5,)"),
    (
        ["eval", "{w}/wrong_obs", "--execute-steps", "2", "--env", POINTMAZE],
        "execute_steps applies to policies that output action chunks",
    ),
    # launch files
    (["robot", "launch", "{w}/self.launch.yaml"], "include cycle (self.launch.yaml -> self.launch.yaml)"),
    (["robot", "launch", "{w}/nowhere.launch.yaml"], "does not exist"),
    # tools
    (["tool", "run", "no_such_tool"], "no tool named 'no_such_tool'"),
    (["tool", "run", "lm_generate", "--args", "[1]"], "must hold a JSON object"),
    (["tool", "run", "lm_generate", "--args", '{"prompt": "hi", "max_new_tokens": NaN}'], "max_new_tokens"),
]


@pytest.mark.parametrize(("argv", "needle"), CASES, ids=[" ".join(a)[:60] for a, _ in CASES])
def test_bad_input_is_one_line_and_status_2(work, capsys, argv, needle):
    argv = [a.replace("{w}", str(work)) for a in argv]
    try:
        status = main(argv)
    except SystemExit as exit_:  # argparse refusals
        status = exit_.code
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if line.strip()]
    assert status == 2, (status, captured.err)
    assert len(lines) == 1 and lines[0].startswith("error:"), captured.err
    assert needle.replace("{w}", str(work)) in lines[0], lines[0]
    assert "Traceback" not in captured.err
    assert (work / "foreign" / "notes.txt").read_text() == "mine" and sorted(
        p.name for p in (work / "foreign").iterdir()
    ) == ["notes.txt"]
