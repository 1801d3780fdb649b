"""Render the pictures of the navigation environments into docs/images/nav/.

    python scripts/render_nav.py [--out docs/images/nav] [--quick]

- ``views.png``: RGB (top row) and depth (bottom row, 0-6 m, dark = near) from the robot camera
  at three poses in apartment_0, as the environment observes them (256x256 here, 128x128 by default);
- ``topdown_path.png``: the rendered top-down view of apartment_0 with a PointNav episode: the
  geodesic shortest path (white), the expert's trajectory (black), start (blue) and goal (red);
- ``navmesh_path.png``: the same episode on the navigation mesh (Habitat-style top-down map: rooms
  tinted by category, obstacles grey);
- ``scene_graph.png``: the scene graph over the top-down view: rooms (by category), connections
  through open doors labelled with travel times (s);
- ``scenes.png``: top-down views of generated apartments and offices (seeds 0-2).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import embodia  # noqa: F401  (headless rendering before MuJoCo loads)
from embodia.envs.habitat.env import NavEnv
from embodia.envs.habitat.mujoco_backend import MuJoCoBackend
from embodia.envs.habitat.pathfinder import ShortestPath
from embodia.envs.habitat.scene_gen import generate_scene
from embodia.envs.habitat.scene_graph import build_scene_graph
from embodia.envs.habitat.topdown import TopDownMap


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _to_pixels(points, bounds, shape) -> tuple[np.ndarray, np.ndarray]:
    x0, y0, x1, y1 = bounds
    p = np.asarray(points, dtype=float).reshape(-1, np.shape(points)[-1])
    cols = (p[:, 0] - x0) / (x1 - x0) * shape[1]
    rows = (y1 - p[:, 1]) / (y1 - y0) * shape[0]
    return cols, rows


def render_views(out: Path, size: int) -> None:
    from PIL import Image

    env = NavEnv(scenes=("apartment_0",), width=size, height=size, normalize_depth=False)
    try:
        env.reset(seed=0)
        rng = np.random.default_rng(4)
        colormap = _plt().get_cmap("magma")
        rgbs, depths = [], []
        for _ in range(3):
            point = env.pathfinder.get_random_navigable_point(island_index=0, rng=rng)
            best = None
            for yaw in np.linspace(-np.pi, np.pi, 12, endpoint=False):  # face the most open direction
                env.backend.set_pose(0, point, float(yaw))
                rgb, depth = env.backend.render(0, size, size)
                if best is None or np.median(depth) > best[0]:
                    best = (float(np.median(depth)), rgb, depth)
            _, rgb, depth = best
            rgbs.append(rgb)
            depths.append((colormap(np.clip(depth, 0.0, 6.0) / 6.0)[..., :3] * 255).astype(np.uint8))
    finally:
        env.close()
    gap = np.full((size, 4, 3), 255, np.uint8)
    top = np.concatenate(sum(([im, gap] for im in rgbs), [])[:-1], axis=1)
    bottom = np.concatenate(sum(([im, gap] for im in depths), [])[:-1], axis=1)
    Image.fromarray(np.concatenate([top, np.full((4, top.shape[1], 3), 255, np.uint8), bottom])).save(
        out / "views.png"
    )


def render_episode(out: Path, width: int) -> None:
    plt = _plt()
    env = NavEnv(scenes=("apartment_0",), sensors="none")
    try:
        env.reset(seed=11)
        expert = env.make_expert()
        expert.reset(11)
        start = env.backend.get_pose(0)[0]
        goal = env.goals()[0]
        path = ShortestPath(start, goal)
        env.pathfinder.find_path(path)
        trajectory = [start]
        done = False
        while not done:
            _, _, terminated, truncated, info = env.step(expert.act(None))
            trajectory.append(env.backend.get_pose(0)[0])
            done = terminated or truncated
        image, bounds = env.backend.render_top_down(width)
        title = f"PointNav, apartment_0: geodesic {path.geodesic_distance:.2f} m, SPL {info['spl']:.2f}, success {info['success']}"
        fig, ax = plt.subplots(figsize=(image.shape[1] / 100, image.shape[0] / 100 + 0.4), dpi=100)
        ax.imshow(image)
        ax.plot(
            *_to_pixels(np.array(path.points), bounds, image.shape),
            color="white",
            lw=3.5,
            label="shortest path",
        )
        ax.plot(
            *_to_pixels(np.array(trajectory), bounds, image.shape),
            color="black",
            lw=1.5,
            label="expert trajectory",
        )
        ax.scatter(
            *_to_pixels(start, bounds, image.shape),
            s=90,
            color="#1f5fd6",
            edgecolor="white",
            zorder=5,
            label="start",
        )
        ax.scatter(
            *_to_pixels(goal, bounds, image.shape),
            s=90,
            color="#d62f1f",
            edgecolor="white",
            zorder=5,
            label="goal",
        )
        ax.set_title(title, fontsize=9)
        ax.legend(loc="lower right", fontsize=7)
        ax.axis("off")
        fig.tight_layout()
        fig.savefig(out / "topdown_path.png")
        plt.close(fig)

        topdown = TopDownMap(env.pathfinder, env.scene, scale=3)
        topdown.polyline(path.points, (40, 160, 60), width_m=0.06)
        topdown.polyline(trajectory, (0, 0, 0), width_m=0.03)
        topdown.goal(goal)
        topdown.robot(start, env.episode.start_yaws[0], 0)
        from PIL import Image

        Image.fromarray(topdown.image).save(out / "navmesh_path.png")
    finally:
        env.close()


def render_scene_graph(out: Path, width: int) -> None:
    plt = _plt()
    backend = MuJoCoBackend(generate_scene("apartment", 0), num_robots=0)
    try:
        graph = build_scene_graph(backend.scene, backend.pathfinder)
        image, bounds = backend.render_top_down(width)
    finally:
        backend.close()
    fig, ax = plt.subplots(figsize=(image.shape[1] / 100, image.shape[0] / 100 + 0.4), dpi=100)
    ax.imshow(image, alpha=0.55)
    anchors = {r.id: _to_pixels(r.anchor, bounds, image.shape) for r in graph.rooms}
    for c in graph.connections:
        (xa, ya), (xb, yb) = anchors[c.rooms[0]], anchors[c.rooms[1]]
        ax.plot([xa[0], xb[0]], [ya[0], yb[0]], color="#333333", lw=2)
        ax.text(
            (xa[0] + xb[0]) / 2,
            (ya[0] + yb[0]) / 2,
            f"{c.travel_time:.1f} s",
            fontsize=7,
            ha="center",
            va="center",
            bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none"},
        )
    for room in graph.rooms:
        x, y = anchors[room.id]
        ax.scatter(x, y, s=260, color="#2a6fdb", zorder=5)
        ax.text(x[0], y[0] - 14, room.category.replace("_", " "), fontsize=8, ha="center", weight="bold")
    ax.set_title(
        "scene graph of apartment_0: rooms, open-door connections, geodesic travel times at 0.5 m/s",
        fontsize=8,
    )
    ax.axis("off")
    fig.tight_layout()
    fig.savefig(out / "scene_graph.png")
    plt.close(fig)


def render_scenes(out: Path, width: int, seeds: int) -> None:
    plt = _plt()
    fig, axes = plt.subplots(2, seeds, figsize=(3.2 * seeds, 5.0), dpi=100, squeeze=False)
    for row, kind in enumerate(("apartment", "office")):
        for seed in range(seeds):
            scene = generate_scene(kind, seed)
            backend = MuJoCoBackend(scene, num_robots=0)
            try:
                image, _ = backend.render_top_down(width)
            finally:
                backend.close()
            ax = axes[row, seed]
            ax.imshow(image)
            ax.set_title(f"{kind} {seed}: {len(scene.rooms)} rooms, {len(scene.objects)} objects", fontsize=8)
            ax.axis("off")
    fig.tight_layout()
    fig.savefig(out / "scenes.png")
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default="docs/images/nav")
    parser.add_argument("--quick", action="store_true", help="small images, one scene per kind")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    render_views(out, 96 if args.quick else 256)
    render_episode(out, 320 if args.quick else 720)
    render_scene_graph(out, 320 if args.quick else 720)
    render_scenes(out, 200 if args.quick else 360, 1 if args.quick else 3)
    print(f"images written to {out}/")


if __name__ == "__main__":
    main()
