"""LeRobot datasets: export and import throughput, and bytes per frame with and without video columns.

    python -m benchmarks.bench_lerobot [--quick] [--results PATH]

A kitchen recording (``embodia/Kitchen-OpenDrawer-v0``, random actions, two 128x128 cameras, no simulator
states; ``--quick``: 64x64, fewer and shorter episodes) is written as a LeRobotDataset v3.0 with h264 and with
AV1 video (LeRobot's CRF 30, keyframe every 2 frames) and imported back, interleaved and repeated; throughput is
frames (steps, every camera included) per second, and each is also given as a ratio to reading the same
episodes from the store. Sizes are bytes on disk per frame: all of it, the camera part (raw zstd-compressed
chunks in the store, the mp4 files in LeRobot's folder) and the rest (every other column and the metadata);
PSNR is that of the imported images against the recorded ones. Writes ``results/benchmarks/lerobot.json``
(``--quick``: under ``runs/quick-results/``).
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

import embodia
from benchmarks._common import interleaved, save_results
from embodia.core.results import Column, Table
from embodia.data.lerobot_export import export_lerobot
from embodia.data.lerobot_import import import_lerobot
from embodia.data.store import TrajectoryStore

ENV_ID = "embodia/Kitchen-OpenDrawer-v0"
CAMERAS = ("agentview", "eye_in_hand")
CODECS = ("h264", "av1")


def folder_bytes(path: Path, part: str | None = None) -> int:
    """Bytes of the files under ``path`` (only those under ``path / part`` if given)."""
    root = path / part if part else path
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) if root.exists() else 0


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = float(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2))
    return math.inf if mse == 0 else 10 * math.log10(255**2 / mse)


def measure(episodes: int, steps: int, size: int, repeats: int, work: Path) -> dict:
    store_path = work / "kitchen.zarr"
    embodia.rollout(
        ENV_ID,
        "random",
        episodes=episodes,
        seed=0,
        max_steps=steps,
        record=store_path,
        env_kwargs={"cameras": CAMERAS, "camera_width": size, "camera_height": size},
    )
    store = TrajectoryStore(store_path)
    frames = store.num_steps
    camera_keys = [f"{camera}_rgb" for camera in CAMERAS]
    runs = iter(range(10**6))

    def read_store() -> float:
        for index in range(store.num_episodes):
            store.episode(index)
        return frames

    def export(codec: str):
        def run() -> float:
            export_lerobot(store, work / f"{codec}-{next(runs)}", {"video_codec": codec})
            return frames

        return run

    def reimport(codec: str):
        def run() -> float:
            import_lerobot(work / f"{codec}-ref", work / f"import-{codec}-{next(runs)}.zarr")
            return frames

        return run

    for codec in CODECS:
        export_lerobot(store, work / f"{codec}-ref", {"video_codec": codec})
    fns = {"read": read_store}
    fns.update({f"export_{codec}": export(codec) for codec in CODECS})
    fns.update({f"import_{codec}": reimport(codec) for codec in CODECS})
    rates = interleaved(fns, repeats)

    recorded = store.load(camera_keys)
    sizes = {
        "store": {
            "total": folder_bytes(store_path),
            "cameras": sum(folder_bytes(store_path, f"data/{key}") for key in camera_keys),
        }
    }
    quality = {}
    for codec in CODECS:
        folder = work / f"{codec}-ref"
        sizes[codec] = {"total": folder_bytes(folder), "cameras": folder_bytes(folder, "videos")}
        back = TrajectoryStore(next(work.glob(f"import-{codec}-*.zarr")))
        images = back.load(camera_keys)
        quality[codec] = min(psnr(images[key], recorded[key]) for key in camera_keys)
    for entry in sizes.values():
        entry["other"] = entry["total"] - entry["cameras"]
    return {
        "env_id": ENV_ID,
        "episodes": episodes,
        "steps_per_episode": steps,
        "frames": frames,
        "image_size": size,
        "cameras": len(CAMERAS),
        "rates": rates,
        "bytes": sizes,
        "psnr_db": quality,
    }


def throughput_table(result: dict) -> Table:
    rates = result["rates"]
    table = Table(
        [
            Column("what", "operation"),
            Column("rate", "frames/s", ",.0f"),
            Column("ratio", "relative to reading the store", ".3f"),
        ]
    )
    table.add(what="read the episodes from the store (zarr, raw images)", rate=rates["read"], ratio=1.0)
    for codec, label in (("h264", "h264"), ("av1", "AV1")):
        table.add(
            what=f"export to LeRobot v3.0, {label}",
            rate=rates[f"export_{codec}"],
            ratio=rates[f"export_{codec}/read"],
        )
    for codec, label in (("h264", "h264"), ("av1", "AV1")):
        table.add(
            what=f"import from LeRobot v3.0, {label}",
            rate=rates[f"import_{codec}"],
            ratio=rates[f"import_{codec}/read"],
        )
    return table


def size_table(result: dict) -> Table:
    frames, sizes = result["frames"], result["bytes"]
    table = Table(
        [
            Column("format", "format"),
            Column("total", "bytes / frame", ",.0f"),
            Column("cameras", "cameras", ",.0f"),
            Column("other", "without video columns", ",.0f"),
            Column("ratio", "total / store", ".3f"),
            Column("psnr", "PSNR (dB)", ".1f"),
        ]
    )
    rows = [
        ("store", "embodia store (zarr, raw images, zstd)"),
        ("h264", "LeRobot v3.0, h264"),
        ("av1", "LeRobot v3.0, AV1"),
    ]
    for key, label in rows:
        table.add(
            format=label,
            total=sizes[key]["total"] / frames,
            cameras=sizes[key]["cameras"] / frames,
            other=sizes[key]["other"] / frames,
            ratio=sizes[key]["total"] / sizes["store"]["total"],
            psnr=result["psnr_db"].get(key),
        )
    return table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--results", default=None, help="results file (default: results/benchmarks/lerobot.json)"
    )
    args = parser.parse_args(argv)
    episodes, steps, size, repeats = (2, 10, 64, 1) if args.quick else (8, 50, 128, 5)
    work = Path(tempfile.mkdtemp(prefix="bench-lerobot-"))
    try:
        result = measure(episodes, steps, size, repeats, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    tables = {"throughput": throughput_table(result), "size": size_table(result)}
    for table in tables.values():
        print(table.markdown())
    save_results(
        "lerobot",
        tables,
        quick=args.quick,
        path=args.results,
        data={**result, "repeats": repeats, "load_average": os.getloadavg()},
        title="LeRobot datasets: export / import throughput and bytes per frame",
        seeds=[0],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
