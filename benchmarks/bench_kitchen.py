"""Kitchen env speed: steps/s without cameras (baseline) vs with camera observations, in one process.

    python -m benchmarks.bench_kitchen [--quick] [--results PATH]

Every variant is the same task, kitchen (seed) and start state, stepped with the same actions:

- ``state``: state observations only (the baseline: robosuite's OSC controller + MuJoCo physics);
- ``cameras``: plus ``agentview_rgb`` and ``eye_in_hand_rgb`` at 128x128 (the robot drawn with its
  collision meshes, the default);
- ``cameras, detailed robot``: the same with the robot's detailed visual meshes (``detailed_robot=True``);
- ``cameras, shadows``: the default cameras with a 1024 shadow map (shadows are off by default).

For scale, robosuite's own ``Lift`` task (same Panda, mount and OSC controller, a table and a cube,
robosuite's observables) is stepped with the same actions in the same interleaved loop.

Runs are interleaved (``benchmarks._common.interleaved``) and ratios are medians of paired runs. Also
reports a reset (a new kitchen: layout, model build, robosuite hard reset) in milliseconds, and every
registered kitchen task with state observations against Lift, interleaved the same way (table ``tasks``;
``--quick``: two tasks). Writes ``results/benchmarks/kitchen.json`` (tables ``steps``, ``reset`` and
``tasks``; ``--quick``: under ``runs/quick-results/``).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import embodia
from benchmarks._common import interleaved, save_results
from embodia.core.results import Column, Table

TASK = "embodia/Kitchen-OpenDrawer-v0"
CAMERAS = ("agentview", "eye_in_hand")


def stepper(env, start: np.ndarray, actions: np.ndarray):
    def run() -> float:
        env.unwrapped.set_state(start)
        for action in actions:
            env.step(action)
        return len(actions)

    return run


def robosuite_lift(actions: np.ndarray):
    """Stepper for robosuite's stock Lift task (no cameras), reset to the same state every run."""
    from embodia.envs.kitchen import _robosuite  # noqa: F401  (quiet import)
    from embodia.envs.kitchen.scene import preserved_global_numpy_rng

    with preserved_global_numpy_rng():
        lift = _robosuite.robosuite.make(
            "Lift",
            robots="Panda",
            has_renderer=False,
            has_offscreen_renderer=False,
            use_camera_obs=False,
            ignore_done=True,
            hard_reset=False,
        )
        lift.reset()
    start = lift.sim.get_state().flatten()

    def run() -> float:
        lift.sim.set_state_from_flattened(start)
        lift.sim.forward()
        for action in actions:
            lift.step(action.astype(np.float64))
        return len(actions)

    return run


def task_rates(actions: np.ndarray, repeats: int, quick: bool) -> Table:
    """Steps/s of every kitchen task (state observations, its seed-0 kitchen) against robosuite's Lift."""
    from embodia.envs.kitchen import TASKS

    tasks = list(TASKS)[:2] if quick else list(TASKS)
    envs = {task: embodia.make(f"embodia/Kitchen-{task}-v0") for task in tasks}
    runs = {"Lift": robosuite_lift(actions)}  # first: every ratio is to it
    for task, env in envs.items():
        env.reset(seed=0)
        runs[task] = stepper(env, env.unwrapped.get_state(), actions)
    rates = interleaved(runs, repeats)
    for env in envs.values():
        env.close()
    table = Table(
        [
            Column("task", "task (state observations)"),
            Column("steps_per_second", "steps/s", ".1f"),
            Column("ratio", "ratio to robosuite's Lift", ".2f"),
        ]
    )
    for task in tasks:
        table.add(task=task, steps_per_second=rates[task], ratio=rates[f"{task}/Lift"])
    table.add(task="robosuite's Lift (same robot and controller)", steps_per_second=rates["Lift"], ratio=1.0)
    return table


def reset_ms(env, seeds: int) -> float:
    times = []
    for seed in range(seeds):
        started = time.perf_counter()
        env.reset(seed=seed)
        times.append(time.perf_counter() - started)
    return 1000 * statistics.median(times)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--size", type=int, default=128, help="camera image width and height")
    parser.add_argument(
        "--results", default=None, help="results file (default: results/benchmarks/kitchen.json)"
    )
    args = parser.parse_args(argv)
    steps, repeats = (10, 2) if args.quick else (60, 7)
    variants = {
        "state": {},
        "cameras": {"cameras": CAMERAS, "camera_width": args.size, "camera_height": args.size},
        "cameras, detailed robot": {
            "cameras": CAMERAS,
            "camera_width": args.size,
            "camera_height": args.size,
            "detailed_robot": True,
        },
        "cameras, shadows": {
            "cameras": CAMERAS,
            "camera_width": args.size,
            "camera_height": args.size,
            "shadow_size": 1024,
        },
    }
    envs = {name: embodia.make(TASK, **kwargs) for name, kwargs in variants.items()}
    # a gentle, state-independent action sequence (the drawer scene at rest would be too cheap to step)
    actions = np.random.default_rng(0).uniform(-0.3, 0.3, size=(steps, 7)).astype(np.float32)
    start = None
    for env in envs.values():
        env.reset(seed=0)
        start = env.unwrapped.get_state() if start is None else start
    runs = {name: stepper(env, start, actions) for name, env in envs.items()}
    runs["robosuite Lift"] = robosuite_lift(actions)
    rates = interleaved(runs, repeats)
    resets = reset_ms(envs["state"], 2 if args.quick else 5)
    for env in envs.values():
        env.close()
    tasks = task_rates(actions, repeats, args.quick)

    cameras = f"+ 2 cameras {args.size}x{args.size}"
    labels = {
        "state": "state observations (baseline)",
        "cameras": f"{cameras} (defaults: no shadows, robot drawn from its collision meshes)",
        "cameras, detailed robot": f"{cameras}, detailed robot meshes",
        "cameras, shadows": f"{cameras}, 1024 shadow map",
        "robosuite Lift": "robosuite's stock Lift task (same robot and controller, for scale)",
    }
    table = Table(
        [
            Column("observations", "observations (Kitchen-OpenDrawer)"),
            Column("steps_per_second", "steps/s", ".1f"),
            Column("ratio", "ratio to state-only", ".3f"),
        ]
    )
    for name, label in labels.items():
        ratio = 1.0 if name == "state" else rates[f"{name}/state"]
        table.add(observations=label, steps_per_second=rates[name], ratio=ratio)
    reset = Table([Column("what", "what"), Column("median_ms", "median time (ms)", ".0f")])
    reset.add(what="reset: a new kitchen (layout, MJCF, compile, robosuite hard reset)", median_ms=resets)
    print(f"{TASK}, {steps} steps x {repeats} interleaved repeats\n")
    print(table.markdown())
    print()
    print(reset.markdown())
    print()
    print(tasks.markdown())
    save_results(
        "kitchen",
        {"steps": table, "reset": reset, "tasks": tasks},
        quick=args.quick,
        path=args.results,
        data={"task": TASK, "size": args.size, "steps": steps, "repeats": repeats, "rates": rates},
        title="Kitchen environment speed: camera observations against state-only stepping, every task against Lift",
    )


if __name__ == "__main__":
    main()
