"""Render the kitchen guide's figures: one image and one expert GIF per task, and a grid of layouts.

Writes into ``--out`` (default ``docs/images/kitchen``):

- ``<Task>.png``: the first frame of the expert episode (overview camera, detailed robot meshes);
- ``<Task>.gif``: the whole expert episode (every ``--every``-th step);
- ``layouts.png``: the same task in the first ``--layouts`` catalogue layouts (ids 0, 1, ...);
- ``cameras.png``: the agentview and eye-in-hand camera observations next to the overview;
- with ``--stills``: only ``<Task>-cameras.png`` per task (the overview, then the robot's agentview and
  eye-in-hand cameras at the episode's start), no GIFs.

    .venv/bin/python scripts/render_kitchen.py
    .venv/bin/python scripts/render_kitchen.py --tasks OpenDrawer --out /tmp/kitchen --quick
    .venv/bin/python scripts/render_kitchen.py --stills          # every task's overview and cameras
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import imageio.v2 as imageio
import numpy as np

import embodia
from embodia.envs.kitchen import TASKS

ROOT = Path(__file__).resolve().parents[1]


def _env(task: str, width: int, height: int, **kwargs):
    return embodia.make(
        f"embodia/Kitchen-{task}-v0",
        render_mode="rgb_array",
        width=width,
        height=height,
        detailed_robot=True,
        shadow_size=2048,
        multisamples=4,
        **kwargs,
    )


def expert_frames(task: str, seed: int, width: int, height: int, every: int) -> tuple[list[np.ndarray], bool]:
    """Frames of one expert episode (first and last always included) and whether it succeeded."""
    env = _env(task, width, height)
    expert = env.unwrapped.make_expert()
    obs, _ = env.reset(seed=seed)
    expert.reset(seed)
    frames, success, step = [env.render()], False, 0
    done = False
    while not done:
        obs, _, terminated, truncated, info = env.step(expert.act(obs))
        success = success or info["success"]
        done = terminated or truncated
        step += 1
        if step % every == 0 or done:
            frames.append(env.render())
    env.close()
    return frames, success


def layout_grid(task: str, layouts: list[int], width: int, height: int) -> np.ndarray:
    images = []
    for layout in layouts:
        env = _env(task, width, height, layout=layout)
        env.reset(seed=0)
        images.append(env.render())
        env.close()
    columns = 2 if len(images) > 1 else 1
    rows = [np.concatenate(images[i : i + columns], axis=1) for i in range(0, len(images), columns)]
    if len(rows[-1][0]) != len(rows[0][0]):
        rows[-1] = np.pad(rows[-1], ((0, 0), (0, rows[0].shape[1] - rows[-1].shape[1]), (0, 0)))
    return np.concatenate(rows, axis=0)


def camera_strip(task: str, seed: int, height: int) -> np.ndarray:
    env = _env(
        task,
        height * 4 // 3,
        height,
        cameras=("agentview", "eye_in_hand"),
        camera_width=height,
        camera_height=height,
    )
    obs, _ = env.reset(seed=seed)
    strip = np.concatenate([env.render(), obs["agentview_rgb"], obs["eye_in_hand_rgb"]], axis=1)
    env.close()
    return strip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", default=list(TASKS), choices=list(TASKS))
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "images" / "kitchen")
    parser.add_argument("--seed", type=int, default=0, help="kitchen (episode seed) of the images and GIFs")
    parser.add_argument("--width", type=int, default=320)
    parser.add_argument("--height", type=int, default=240)
    parser.add_argument("--every", type=int, default=4, help="keep every N-th step in the GIFs")
    parser.add_argument("--layouts", type=int, default=4, help="kitchens in layouts.png")
    parser.add_argument("--quick", action="store_true", help="small images, first task only")
    parser.add_argument(
        "--stills", action="store_true", help="per task the overview and the robot's cameras only"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.tasks, args.width, args.height, args.every, args.layouts = args.tasks[:1], 160, 120, 8, 2
    args.out.mkdir(parents=True, exist_ok=True)
    if args.stills:
        for task in args.tasks:
            strip = camera_strip(task, args.seed, args.height // 2 if args.quick else 128)
            imageio.imwrite(args.out / f"{task}-cameras.png", strip)
        print(f"wrote {len(args.tasks)} stills to {args.out}", file=sys.stderr)
        return 0

    for task in args.tasks:
        frames, success = expert_frames(task, args.seed, args.width, args.height, args.every)
        imageio.imwrite(args.out / f"{task}.png", frames[0])
        frames += [frames[-1]] * 6  # hold the last frame
        imageio.mimsave(args.out / f"{task}.gif", frames, duration=0.1 * args.every / 2, loop=0)
        print(f"{task}: {len(frames)} frames, expert {'succeeded' if success else 'FAILED'}", file=sys.stderr)
    first = args.tasks[0]
    imageio.imwrite(
        args.out / "layouts.png", layout_grid(first, list(range(args.layouts)), args.width, args.height)
    )
    imageio.imwrite(
        args.out / "cameras.png", camera_strip(first, args.seed, args.height // 2 if args.quick else 128)
    )
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
