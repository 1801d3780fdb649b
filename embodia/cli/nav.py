"""``embodia nav ...``: generate scenes, episode files and scene graphs; evaluate policies with Habitat's metrics.

::

    embodia nav scene --kind apartment --seed 7 --out scene.json --image scene.png
    embodia nav episodes --task objectnav --scene apartment_0 --count 100 --out val.json.gz
    embodia nav graph apartment_0 --out graph.json
    embodia nav eval --task pointnav --episodes 50 --policy expert
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from embodia.core.cli_args import add_parallel_arguments, output_file_path, positive_float, positive_int, seed

_TASK_IDS = {
    "pointnav": "embodia/Nav-PointNav-v0",
    "objectnav": "embodia/Nav-ObjectNav-v0",
    "instructionnav": "embodia/Nav-InstructionNav-v0",
    "multirobot": "embodia/Nav-MultiRobot-v0",
}


def cmd_scene(args: argparse.Namespace) -> int:
    from embodia.envs.habitat.scene_gen import generate_scene

    scene = generate_scene(args.kind, args.seed)
    path = scene.save(args.out)
    print(
        f"{scene.name}: {len(scene.rooms)} rooms, {len(scene.doors)} doors, {len(scene.objects)} objects -> {path}"
    )
    if args.image:
        from PIL import Image

        from embodia.envs.habitat.mujoco_backend import MuJoCoBackend

        backend = MuJoCoBackend(scene, num_robots=0)
        try:
            image, _ = backend.render_top_down(args.image_width)
        finally:
            backend.close()
        Image.fromarray(image).save(args.image)
        print(f"top-down view -> {args.image}")
    return 0


def cmd_episodes(args: argparse.Namespace) -> int:
    from embodia.envs.habitat.episodes import sample_episode, save_episodes
    from embodia.envs.habitat.mujoco_backend import MuJoCoBackend
    from embodia.envs.habitat.scene import load_scene

    scene = load_scene(args.scene)
    num_robots = args.robots if args.task == "multirobot" else 1
    backend = MuJoCoBackend(scene, num_robots=num_robots)
    rng = np.random.default_rng(args.seed)
    try:
        episodes = [
            sample_episode(args.task, backend.pathfinder, scene, args.scene, rng, num_robots, str(i))
            for i in range(args.count)
        ]
    finally:
        backend.close()
    path = save_episodes(episodes, args.out, scene, split=args.split)
    where = f"{path} (+ {path.parent / 'content'})" if args.split else str(path)
    print(f"{len(episodes)} {args.task} episodes in {args.scene} -> {where}")
    return 0


def cmd_graph(args: argparse.Namespace) -> int:
    from embodia.envs.habitat.mujoco_backend import MuJoCoBackend
    from embodia.envs.habitat.scene import load_scene
    from embodia.envs.habitat.scene_graph import build_scene_graph

    scene = load_scene(args.scene)
    backend = MuJoCoBackend(scene, num_robots=0)
    try:
        closed = set(args.close_door or [])
        for door_id in closed:
            backend.set_door_open(door_id, False)
        graph = build_scene_graph(
            scene, backend.pathfinder, args.speed, {d.id: d.id not in closed and d.open for d in scene.doors}
        )
    finally:
        backend.close()
    path = graph.save(args.out)
    print(
        f"{len(graph.rooms)} rooms, {len(graph.objects)} objects, {len(graph.connections)} connections -> {path}"
    )
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    from embodia.runner.evaluate import evaluate_policy
    from embodia.runner.hooks import NAV_METRICS

    result = evaluate_policy(
        args.policy,
        _TASK_IDS[args.task],
        episodes=args.episodes,
        seeds=[args.seed],
        seed_stride=1,  # episode i has seed SEED + i, as `embodia run`
        env_kwargs={"sensors": args.sensors, "action_mode": args.action_mode},
        metrics=NAV_METRICS,
        workers=args.workers,
        ray_address=args.ray_address,
        progress=not args.json,
    )
    if args.json:
        print(json.dumps(result.to_dict(), indent=2, default=float))
    else:
        summary = {
            "episodes": result.episodes,
            "success": result.success_rate,
            **result.metrics,
            "steps": result.mean_length,
            "steps_per_second": result.steps_per_second,
            # episodes where a metric is undefined (habitat-lab's SPL for a start at the goal): left out
            **{f"{k} undefined in": n for k, n in result.metrics_undefined.items() if n},
        }
        print(" | ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in summary.items()))
    return 130 if result.interrupted else 0


def add_commands(subparsers: argparse._SubParsersAction) -> None:
    """Add ``nav`` with its subcommands to the ``embodia`` command."""
    nav = subparsers.add_parser("nav", help="navigation scenes, episodes, scene graphs and evaluation")
    sub = nav.add_subparsers(dest="nav_command", required=True)

    scene = sub.add_parser("scene", help="generate a procedural scene (JSON, optional top-down PNG)")
    scene.add_argument("--kind", choices=("apartment", "office"), default="apartment")
    scene.add_argument("--seed", type=seed, default=0)
    scene.add_argument("--out", type=output_file_path, required=True)
    scene.add_argument(
        "--image", type=output_file_path, help="also write a rendered top-down view here (PNG)"
    )
    scene.add_argument("--image-width", type=positive_int, default=640)
    scene.set_defaults(func=cmd_scene)

    episodes = sub.add_parser("episodes", help="sample episodes into a habitat-lab JSON(.gz) file")
    episodes.add_argument("--task", choices=tuple(_TASK_IDS), default="pointnav")
    episodes.add_argument(
        "--scene", default="apartment_0", help="shipped name, scene JSON or procedural:<kind>:<seed>"
    )
    episodes.add_argument("--count", type=positive_int, default=100)
    episodes.add_argument("--robots", type=positive_int, default=3, help="robots per episode (multirobot)")
    episodes.add_argument("--seed", type=seed, default=0)
    episodes.add_argument("--out", type=output_file_path, required=True)
    episodes.add_argument(
        "--split",
        action="store_true",
        help="habitat-lab's split layout: --out (e.g. val/val.json.gz) without episodes, content/<scene>.json.gz beside it",
    )
    episodes.set_defaults(func=cmd_episodes)

    graph = sub.add_parser("graph", help="export a scene graph (rooms, objects, doors, travel times) as JSON")
    graph.add_argument("scene")
    graph.add_argument("--out", type=output_file_path, required=True)
    graph.add_argument(
        "--speed",
        type=positive_float,
        default=0.5,
        help="robot speed turning distances into travel times (m/s)",
    )
    graph.add_argument("--close-door", action="append", help="close this door first (repeatable)")
    graph.set_defaults(func=cmd_graph)

    ev = sub.add_parser("eval", help="evaluate a policy with Habitat's metrics")
    ev.add_argument("--task", choices=tuple(_TASK_IDS), default="pointnav")
    ev.add_argument("--policy", default="expert")
    ev.add_argument("--episodes", type=positive_int, default=50)
    ev.add_argument("--seed", type=seed, default=0)
    ev.add_argument("--sensors", default="none", choices=("rgbd", "rgb", "depth", "none"))
    ev.add_argument("--action-mode", default="discrete", choices=("discrete", "velocity"))
    ev.add_argument("--json", action="store_true")
    add_parallel_arguments(ev)
    ev.set_defaults(func=cmd_eval)
