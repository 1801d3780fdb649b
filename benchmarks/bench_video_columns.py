"""Video camera columns: bytes per frame and write / read frames per second of a trajectory store whose
camera keys are h264 or AV1 video, against the same frames stored raw (zstd chunks), in one process.

    python -m benchmarks.bench_video_columns [--quick] [--results PATH]

Frames are real renders: expert episodes of the kitchen (two cameras) and of OGBench's pixel cube,
recorded once; then each codec stores the same episodes (``add_episodes`` into a new store, encode
included) and reads them back (``store.load``, decode included), the variants interleaved so that drift
hits all alike (:func:`benchmarks._common.interleaved`). Bytes are the camera keys' files on disk; quality
is the PSNR of the decoded frames against the rendered ones (raw columns are exact). Writes ``results/benchmarks/video_columns.json``
(``--quick``: under ``runs/quick-results/``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

import embodia
from benchmarks._common import interleaved, save_results
from embodia.core.results import Column, Table
from embodia.data.store import TrajectoryStore
from embodia.data.store_arrays import image_keys
from embodia.data.video import psnr

CODECS = ("none", "h264", "av1")


def render_episodes(env_id: str, env_kwargs: dict, episodes: int, steps: int, folder: Path) -> Path:
    """Expert episodes recorded raw (the frames every codec then stores)."""
    path = folder / f"{env_id.split('/')[-1]}.zarr"
    embodia.rollout(
        env_id, "expert", episodes=episodes, seed=0, max_steps=steps, record=path, env_kwargs=env_kwargs
    )
    return path


def folder_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def measure(source: Path, label: str, repeats: int, folder: Path) -> list[dict]:
    reference = TrajectoryStore(source)
    # the cameras (a goal image repeated over an episode would flatter the video codecs)
    cameras = [key for key in image_keys(reference.schema) if not key.startswith("goal")]
    episodes = [(reference.episode(i), {"env_id": "bench", "seed": i}) for i in range(reference.num_episodes)]
    frames = reference.num_steps * len(cameras)
    stores = {codec: folder / f"{label}-{codec}.zarr" for codec in CODECS}

    def write(codec: str):
        def run() -> float:
            with TrajectoryStore(stores[codec], mode="w", video_codec=codec, fps=reference.fps) as store:
                store.add_episodes(episodes)
            return frames

        return run

    def read(codec: str):
        def run() -> float:
            TrajectoryStore(stores[codec]).load(cameras)
            return frames

        return run

    writes = interleaved({codec: write(codec) for codec in CODECS}, repeats)
    reads = interleaved({codec: read(codec) for codec in CODECS}, repeats)
    exact = reference.load(cameras)
    shape = reference.schema[cameras[0]]["shape"]
    rows = []
    for codec in CODECS:
        store = TrajectoryStore(stores[codec])
        size = sum(
            folder_bytes(store.path / ("video" if key in store.video_keys else "data") / key)
            for key in cameras
        )
        decoded = store.load(cameras)
        rows.append(
            {
                "source": f"{label} ({len(cameras)} camera{'s' * (len(cameras) > 1)}, {shape[1]}x{shape[0]})",
                "codec": "raw (zstd)" if codec == "none" else codec,
                "frames": frames,
                "bytes_per_frame": size / frames,
                "write_fps": writes[codec],
                "read_fps": reads[codec],
                "write_ratio": 1.0 if codec == "none" else writes[f"{codec}/none"],
                "read_ratio": 1.0 if codec == "none" else reads[f"{codec}/none"],
                "psnr": None if codec == "none" else min(psnr(exact[key], decoded[key]) for key in cameras),
            }
        )
    raw_bytes = rows[0]["bytes_per_frame"]
    for row in rows:
        row["size_ratio"] = row["bytes_per_frame"] / raw_bytes
    return rows


def video_table(rows: list[dict]) -> Table:
    """The table the documentation shows, from the rows of :func:`measure`."""
    table = Table(
        [
            Column("source", "frames"),
            Column("codec", "camera columns"),
            Column("bytes_per_frame", "bytes / frame", ",.0f"),
            Column("size_ratio", "size vs raw", ".3f"),
            Column("write_fps", "write, frames/s", ",.0f"),
            Column("write_ratio", "vs raw", ".2f"),
            Column("read_fps", "read, frames/s", ",.0f"),
            Column("read_ratio", "vs raw", ".2f"),
            Column("psnr", "PSNR, dB (worst camera)", ".1f"),
        ]
    )
    for row in rows:
        table.add(**{column.key: row[column.key] for column in table.columns})
    return table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--results", default=None, help="results file (default: results/benchmarks/video_columns.json)"
    )
    args = parser.parse_args(argv)
    if args.quick:
        cases = [("embodia/Kitchen-OpenDrawer-v0", "kitchen", 64, 1, 20)]
        repeats = 1
    else:
        cases = [
            ("embodia/Kitchen-OpenDrawer-v0", "kitchen", 128, 2, 150),
            ("embodia/Visual-CubeSingle-v0", "pixel cube", None, 2, 200),
        ]
        repeats = 3
    folder = Path(tempfile.mkdtemp(prefix="bench-video-"))
    rows: list[dict] = []
    try:
        for env_id, label, size, episodes, steps in cases:
            env_kwargs = (
                {"cameras": ("agentview", "eye_in_hand"), "camera_width": size, "camera_height": size}
                if size
                else {}
            )
            source = render_episodes(env_id, env_kwargs, episodes, steps, folder)
            rows += measure(source, label, repeats, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    table = video_table(rows)
    print(table.markdown())
    save_results(
        "video_columns",
        {"video_columns": table},
        quick=args.quick,
        path=args.results,
        data={"rows": rows, "repeats": repeats, "load_average": os.getloadavg()},
        title="Video camera columns: bytes per frame and frames/s against raw columns",
        seeds=[0],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
