"""Rerun view overhead: rollout steps/s with ``RerunHook`` (``embodia run --view``) vs without, and .rrd size.

    python -m benchmarks.bench_rerun_view [--quick] [--results PATH]

Speed: the same seeded expert episodes of a state-only environment (PointMaze) run through
``embodia.runner.run_episode`` in one process, interleaved: without hooks, with :class:`RerunHook`
(buffers the episode, one ``send_columns`` per entity at its end), and with a per-step logger (one
``rr.log`` per key and step, what the hook avoids). Ratios are with / without; the recording is flushed to
disk before each repetition's clock stops. Acceptance: the hook's overhead <= 10 %.

Size: bytes of the ``.rrd`` per 1000 steps, state-only (PointMaze) vs images (the navigation env's
128 x 128 rgb + depth). Writes ``results/benchmarks/rerun_view.json`` (``--quick``: under
``runs/quick-results/``).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import embodia
from benchmarks._common import interleaved, save_results
from embodia.core.policy import make_policy
from embodia.core.results import Column, Table
from embodia.runner import run_episode
from embodia.runner.hooks import EpisodeHook
from embodia.runner.rerun_view import RerunHook, open_recording

STATE_ENV = "embodia/PointMaze-Medium-v0"
IMAGE_ENV = "embodia/Nav-PointNav-v0"


class PerStepLogger(EpisodeHook):
    """The alternative to buffering: every key of every step logged as it comes (``rr.log``)."""

    def __init__(self, path: Path) -> None:
        self.recording = open_recording(path)
        self.step_index = 0

    def step(self, env, step) -> None:
        import rerun as rr

        rec = self.recording
        rec.set_time("step", sequence=self.step_index)
        for key, value in step.obs.items():
            rec.log(f"obs/{key}", rr.Scalars(value.reshape(-1)))
        rec.log("action", rr.Scalars(step.action.reshape(-1)))
        rec.log("reward", rr.Scalars(step.reward))
        self.step_index += 1


def speed(episodes: int, steps: int, repeats: int, tmp: Path) -> dict:
    env = embodia.make(STATE_ENV)
    policy = make_policy("expert", env)
    hook = RerunHook(tmp / "hook.rrd")
    per_step = PerStepLogger(tmp / "per_step.rrd")

    def run(hooks: list, recording) -> float:
        done = sum(run_episode(env, policy, s, hooks=hooks, max_steps=steps).length for s in range(episodes))
        if recording is not None:
            recording.flush()  # written before the clock stops
        return done

    logged = run([hook], None)  # warm up: the recording's first episode creates its file
    rates = interleaved(
        {
            "without": lambda: run([], None),
            "rerun_hook": lambda: run([hook], hook.recording),
            "per_step_log": lambda: run([per_step], per_step.recording),
        },
        repeats,
    )
    hook.close()
    per_step.recording.disconnect()
    env.close()
    return {
        "env_id": STATE_ENV,
        "episodes": episodes,
        "steps_per_episode": steps,
        **rates,
        "ratio": rates["rerun_hook/without"],
        "ratio_per_step": rates["per_step_log/without"],
        "mean_episode_length": logged / episodes,
    }


def size_per_1k_steps(env_id: str, policy: str, steps: int, max_steps: int, tmp: Path) -> dict:
    path = tmp / f"{env_id.split('/')[1]}.rrd"
    hook = RerunHook(path)
    env = embodia.make(env_id)
    done, seed = 0, 0
    while done < steps:
        done += (
            embodia.rollout(env, policy, episodes=1, seed=seed, max_steps=max_steps, hooks=[hook])
            .episodes[0]
            .length
        )
        seed += 1
    hook.close()
    env.close()
    return {"env_id": env_id, "steps": done, "bytes_per_1k_steps": path.stat().st_size * 1000 / done}


def ms_per_episode(ratio: float, without: float, length: float) -> float:
    """Milliseconds a logger adds to an episode of ``length`` steps: its paired ratio to the baseline applied
    to the baseline's time per episode."""
    return (1 / ratio - 1) * length / without * 1e3


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--results", default=None, help="results file (default: results/benchmarks/rerun_view.json)"
    )
    args = parser.parse_args(argv)
    episodes, steps, repeats = (2, 200, 2) if args.quick else (4, 500, 7)
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        result = speed(episodes, steps, repeats, tmp)
        sizes = [
            size_per_1k_steps(STATE_ENV, "expert", 1000, 500, tmp),
            size_per_1k_steps(IMAGE_ENV, "expert", 1000, 200, tmp),
        ]
    length = result["mean_episode_length"]
    speed_table = Table(
        [
            Column("logging", "PointMaze-Medium (state only), logging"),
            Column("steps_per_s", "steps/s", ",.0f"),
            Column("us_per_step", "µs per step", ".0f"),
            Column("ratio", "ratio to no logging", ".2f"),
            Column("ms_per_episode", "ms added per episode", ".1f"),
        ]
    )
    speed_table.add(
        logging="none (baseline)",
        steps_per_s=result["without"],
        us_per_step=1e6 / result["without"],
        ratio=1.0,
        ms_per_episode=None,
    )
    for key, label in [
        ("rerun_hook", "`embodia run --view` (`RerunHook`: buffer the episode, `send_columns` at its end)"),
        ("per_step_log", "every step with `rr.log` (what the hook avoids)"),
    ]:
        ratio = result[f"{key}/without"]
        speed_table.add(
            logging=label,
            steps_per_s=result[key],
            us_per_step=1e6 / result[key],
            ratio=ratio,
            ms_per_episode=ms_per_episode(ratio, result["without"], length),
        )
    size_table = Table(
        [
            Column("recording", "recording"),
            Column("steps", "steps logged"),
            Column("mb_per_1k_steps", "MB per 1000 steps", ".2f"),
        ]
    )
    contents = {
        STATE_ENV: "PointMaze (state, goal, action, reward, flags)",
        IMAGE_ENV: "PointNav (128x128 RGB + depth, GPS, compass, goal, map)",
    }
    for s in sizes:
        size_table.add(
            recording=contents[s["env_id"]], steps=s["steps"], mb_per_1k_steps=s["bytes_per_1k_steps"] / 1e6
        )
    print(speed_table.markdown(), size_table.markdown(), sep="\n\n")
    save_results(
        "rerun_view",
        {"speed": speed_table, "size": size_table},
        quick=args.quick,
        path=args.results,
        data={"speed": result, "size": sizes, "repeats": repeats, "load_average": os.getloadavg()},
        title="Rerun: the cost of embodia run --view, and the size of recordings",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
