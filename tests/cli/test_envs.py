"""The `embodia` command end to end, through subprocesses (what users type)."""

from __future__ import annotations

import json

import numpy as np
import zarr

from embodia.policies.linear import LinearPolicy


def assert_one_line_error(result, *needles):
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.strip().splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_envs_lists_ids(cli):
    result = cli("envs", "--ids", check=True)
    ids = result.stdout.split()
    assert "embodia/PointMaze-Medium-v0" in ids and "embodia/CubeSingle-SingleTask-v0" in ids


def test_envs_table_describes_spaces(cli):
    result = cli("envs", "PointMaze-Medium", "--json", check=True)
    infos = {i["id"]: i for i in json.loads(result.stdout)}
    info = infos["embodia/PointMaze-Medium-v0"]
    assert info["action_space"] == "Box(2,) float32" and info["renders"] and info["has_expert"]
    assert "goal" in info["observation_space"] and info["max_episode_steps"] == 1000


def test_run_record_info_replay(cli, tmp_path):
    store, video, replay_video = tmp_path / "s.zarr", tmp_path / "run.mp4", tmp_path / "replay.mp4"
    run = cli(
        "run",
        "embodia/PointMaze-Medium-v0",
        "--policy",
        "expert",
        "--episodes",
        "2",
        "--seed",
        "3",
        "--record",
        str(store),
        "--record-sim-state",
        "--video",
        str(video),
        "--env-kwarg",
        "width=64",
        "--env-kwarg",
        "height=64",
        check=True,
    )
    assert "mean" in run.stdout and "100%" in run.stdout and video.stat().st_size > 0

    info = cli("info", str(store), "--json", check=True)
    summary = json.loads(info.stdout)
    assert summary["episodes"] == 2 and summary["success_rate"] == 1.0
    assert summary["env_ids"] == ["embodia/PointMaze-Medium-v0"]
    assert summary["keys"]["state"]["shape"] == [2] and summary["keys"]["action"]["role"] == "action"
    human = cli("info", str(store), check=True)
    assert "episodes 2" in human.stdout and "sim_state" in human.stdout

    replayed = cli(
        "replay", str(store), "--episode", "1", "--verify", "--video", str(replay_video), check=True
    )
    assert "largest state deviation 0.00e+00" in replayed.stdout and replay_video.stat().st_size > 0

    as_json = json.loads(
        cli(
            "run", "embodia/PointMaze-Medium-v0", "--episodes", "1", "--max-steps", "7", "--json", check=True
        ).stdout
    )
    assert as_json["episodes"][0]["length"] == 7


def test_run_records_a_noisy_expert_and_refuses_noise_for_other_policies(cli, tmp_path):
    import embodia

    runs = {}
    for name, noise in (("clean", []), ("noisy", ["--expert-noise", "0.3"])):
        store = tmp_path / f"{name}.zarr"
        args = ["run", "embodia/PointMaze-Medium-v0", "--policy", "expert", "--max-steps", "30", "--json"]
        result = cli(*args, *noise, "--record", str(store), "--quiet", check=True)
        runs[name] = (json.loads(result.stdout), embodia.TrajectoryStore(store).episode(0)["action"])
    assert runs["noisy"][0]["policy"] == "expert(noise=0.3)"
    difference = np.abs(runs["noisy"][1] - runs["clean"][1]).mean()
    assert 0.05 < difference < 0.5  # the same expert, with Gaussian noise of std 0.3 (clipped to [-1, 1])
    refused = cli("run", "embodia/PointMaze-Medium-v0", "--expert-noise", "0.1")
    assert_one_line_error(refused, "--expert-noise", "'random'")


def test_unknown_env_suggests(cli):
    assert_one_line_error(
        cli("run", "embodia/PointMaze-Medum-v0"), "unknown environment id", "embodia/PointMaze-Medium-v0"
    )


def test_missing_and_corrupt_and_future_stores(cli, tmp_path):
    assert_one_line_error(cli("info", str(tmp_path / "missing.zarr")), "does not exist")
    store = tmp_path / "s.zarr"
    cli("run", "embodia/PointMaze-Medium-v0", "--max-steps", "3", "--record", str(store), check=True)
    zarr.open_group(str(store), mode="r+").attrs["embodia_format"] = 99
    assert_one_line_error(cli("info", str(store)), "format version 99")
    assert_one_line_error(cli("replay", str(store), "--verify"), "format version 99")
    (store / "zarr.json").write_text("garbage")
    assert_one_line_error(cli("info", str(store)), "is corrupt: its root metadata")


def test_bad_policy_outputs_are_one_line_errors_and_keep_the_store(cli, tmp_path):
    store = tmp_path / "s.zarr"
    cli("run", "embodia/PointMaze-Medium-v0", "--max-steps", "3", "--record", str(store), check=True)
    nan_policy = LinearPolicy(np.full((2, 4), np.nan), np.zeros(2), ["state", "goal"]).save(tmp_path / "nan")
    assert_one_line_error(
        cli("run", "embodia/PointMaze-Medium-v0", "--policy", str(nan_policy), "--record", str(store)), "NaN"
    )
    wide = LinearPolicy(np.zeros((3, 4)), np.zeros(3), ["state", "goal"]).save(tmp_path / "wide")
    assert_one_line_error(cli("run", "embodia/PointMaze-Medium-v0", "--policy", str(wide)), "shape (3,)")
    assert_one_line_error(
        cli("run", "embodia/PointMaze-Medium-v0", "--policy", str(tmp_path / "nothing")), "no policy at"
    )
    assert json.loads(cli("info", str(store), "--json", check=True).stdout)["episodes"] == 1


def test_linear_policy_folder_runs(cli, tmp_path):
    toward_goal = LinearPolicy(np.array([[-1, 0, 1, 0], [0, -1, 0, 1]]), np.zeros(2), ["state", "goal"]).save(
        tmp_path / "p"
    )
    result = cli(
        "run",
        "embodia/PointMaze-Medium-v0",
        "--policy",
        str(toward_goal),
        "--max-steps",
        "5",
        "--json",
        check=True,
    )
    assert json.loads(result.stdout)["episodes"][0]["length"] == 5


def test_run_records_cameras_as_video_which_info_and_replay_read(cli, tmp_path):
    store = tmp_path / "video.zarr"
    args = ["run", "embodia/Visual-CubeSingle-v0", "--max-steps", "5", "--episodes", "2"]
    args += ["--record", str(store)]
    cli(*args, "--record-sim-state", "--video-codec", "h264", "--quiet", check=True)
    summary = json.loads(cli("info", str(store), "--check", "--json", check=True).stdout)
    assert summary["video_codec"] == "h264" and summary["video_keys"] == ["rgb", "goal_rgb"]
    assert summary["fps"] == 20.0 and summary["format"] == 2 and summary["check"]["videos_decoded"] == 4
    human = cli("info", str(store), check=True).stdout
    assert "control frequency: 20 steps/s" in human and "h264 video: rgb, goal_rgb" in human
    replayed = cli("replay", str(store), "--verify", check=True)
    assert "largest state deviation 0.00e+00" in replayed.stdout
    assert_one_line_error(cli(*args, "--video-codec", "none"), "keeps its images as h264, not raw")
