"""``embodia navcraft ...``: generate collaborative multi-robot missions, and run an agent on them.

::

    embodia navcraft generate --scenes 8 --episodes 25 --seed 0 --out navcraft_eps
    embodia navcraft run --agent planner --episodes navcraft_eps --out results_planner
    embodia navcraft run --agent solo --episodes navcraft_eps --out results_solo --disturb
    embodia navcraft run --agent llm --lm http://127.0.0.1:8080/v1#model --episodes navcraft_eps --out results_llm
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from embodia.core.cli_args import add_parallel_arguments, positive_int, seed
from embodia.core.errors import EmbodiaError, OutputPathError

EPISODE_FILE = "episodes.json.gz"
STATS_FILE = "stats.json"
RESULTS_FILE = "results.json"


def _output_folder(text: str, ours: tuple[str, ...]) -> Path:
    """A folder to write into: new, empty, or holding only files of this command (replaced)."""
    folder = Path(text)
    if folder.exists() and not folder.is_dir():
        raise OutputPathError(f"--out {text!r} is a file; name a folder (it is created)")
    if folder.is_dir():
        foreign = sorted(p.name for p in folder.iterdir() if p.name not in ours)
        if foreign:
            raise OutputPathError(
                f"--out {text!r} holds files embodia navcraft did not write ({', '.join(foreign[:3])}); "
                "choose a new or empty folder"
            )
        for name in ours:
            if (folder / name).exists() and not _written_by_navcraft(folder / name):
                raise OutputPathError(
                    f"{str(folder / name)!r} exists and is not a file embodia navcraft wrote; "
                    "choose a new or empty folder"
                )
    return folder


def _written_by_navcraft(path: Path) -> bool:
    """Whether ``path`` is an episode file, statistics or results that this command writes."""
    try:
        if path.name == EPISODE_FILE:
            from embodia.agents.navcraft.episode_io import load_episodes

            load_episodes(path)
            return True
        data = json.loads(path.read_text())
        keys = {"episodes", "by_taxonomy"} if path.name == STATS_FILE else {"summary", "rows", "config"}
        return isinstance(data, dict) and keys <= set(data)
    except (EmbodiaError, OSError, ValueError):
        return False


def _episode_file(text: str) -> Path:
    path = Path(text)
    if path.is_dir():
        path = path / EPISODE_FILE
    if not path.is_file():
        raise EmbodiaError(
            f"no NavCraft episode file at {text!r}; pass the folder `embodia navcraft generate --out` wrote, "
            "or its episodes.json.gz"
        )
    return path


def _row(values: dict, keys: list[str]) -> str:
    cells = []
    for key in keys:
        value = values[key]
        cells.append(f"{value:.3g}" if isinstance(value, float) and math.isfinite(value) else str(value))
    return "| " + " | ".join(cells) + " |"


def cmd_generate(args: argparse.Namespace) -> int:
    from embodia.agents.navcraft.benchmark import generate, scene_refs
    from embodia.agents.navcraft.episode_io import save_episodes
    from embodia.agents.navcraft.generate import GeneratorConfig
    from embodia.agents.navcraft.travel import Travel

    folder = _output_folder(args.out, (EPISODE_FILE, STATS_FILE))
    config = GeneratorConfig(min_room_hops=args.min_room_hops)
    result = generate(
        scene_refs(args.scenes, args.seed),
        args.episodes,
        args.seed,
        helpers=tuple(args.helpers),
        num_items=tuple(args.items),
        config=config,
        workers=args.workers,
        ray_address=args.ray_address,
    )
    folder.mkdir(parents=True, exist_ok=True)
    graphs = {
        ref: Travel.for_scene(ref).graph for ref in dict.fromkeys(e.mission.scene_id for e in result.episodes)
    }
    save_episodes(folder / EPISODE_FILE, result.episodes, scene_graphs=graphs)
    (folder / STATS_FILE).write_text(json.dumps(result.stats, indent=2, default=float) + "\n")
    stats = result.stats
    print(
        f"{stats['episodes']} episodes in {args.scenes} scenes -> {folder / EPISODE_FILE} "
        f"({stats['episodes_per_second']:.1f} episodes/s)"
    )
    print("by taxonomy: " + ", ".join(f"{k} {v}" for k, v in stats["by_taxonomy"].items()))
    print("rejected candidates: " + (", ".join(f"{k} {v}" for k, v in stats["rejected"].items()) or "none"))
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from embodia.agents.navcraft.episode_io import load_episodes
    from embodia.agents.navcraft.evaluation import RunConfig, run_episodes, summary_rows

    path = _episode_file(args.episodes)
    folder = _output_folder(args.out, (RESULTS_FILE,))
    episodes = load_episodes(path)[: args.limit]
    config = RunConfig(
        agent=args.agent, disturb=args.disturb, replan=not args.no_replan, lm=args.lm, seed=args.seed
    )

    def progress(index: int, row: dict) -> None:
        if not args.json:
            print(
                f"[{index + 1}/{len(episodes)}] {row['episode_id']} {row['taxonomy']}: "
                f"success {row['success']:.0f}, step success {row['step_success']:.2f}, "
                f"makespan {row['makespan']:.1f} s"
            )

    rows = run_episodes(episodes, config, workers=args.workers, ray_address=args.ray_address, on_row=progress)
    summary = summary_rows(rows)
    folder.mkdir(parents=True, exist_ok=True)
    report = {"episodes": str(path), "config": vars(config), "summary": summary, "rows": rows}
    (folder / RESULTS_FILE).write_text(json.dumps(report, indent=2, default=float) + "\n")
    if args.json:
        print(json.dumps(summary, indent=2, default=float))
        return 0
    keys = [
        "taxonomy",
        "episodes",
        "success",
        "step_success",
        "makespan",
        "handoff_errors",
        "interference",
        "spl",
    ]
    print("| " + " | ".join(keys) + " |")
    print("|" + "---|" * len(keys))
    for values in summary:
        print(_row(values, keys))
    print(f"-> {folder / RESULTS_FILE}")
    return 0


def add_commands(subparsers: argparse._SubParsersAction) -> None:
    """Add ``navcraft`` with its subcommands to the ``embodia`` command."""
    navcraft = subparsers.add_parser(
        "navcraft", help="collaborative multi-robot missions: generate episodes, run agents on them"
    )
    sub = navcraft.add_subparsers(dest="navcraft_command", required=True)
    gen = sub.add_parser("generate", help="generate missions (stage 1) and their collaboration (stage 2)")
    gen.add_argument(
        "--scenes", type=positive_int, default=4, help="scenes: the shipped ones, then procedural"
    )
    gen.add_argument("--episodes", type=positive_int, default=25, help="episodes per scene")
    gen.add_argument("--seed", type=seed, default=0)
    gen.add_argument(
        "--helpers", type=positive_int, nargs="+", default=[1, 2], help="helper robots to draw from"
    )
    gen.add_argument(
        "--items", type=positive_int, nargs="+", default=[1, 2], help="items per mission to draw from"
    )
    gen.add_argument("--min-room-hops", type=positive_int, default=2, help="fewest room hops per mission leg")
    gen.add_argument("--out", required=True, help="folder for episodes.json.gz and stats.json")
    add_parallel_arguments(gen)
    gen.set_defaults(func=cmd_generate)
    run = sub.add_parser("run", help="run an agent on generated episodes in the multi-robot environment")
    run.add_argument("--agent", choices=("planner", "solo", "llm"), default="planner")
    run.add_argument(
        "--episodes", required=True, help="a folder from `navcraft generate`, or its episode file"
    )
    run.add_argument("--out", required=True, help="folder for results.json")
    run.add_argument(
        "--lm", default="smollm2", help="llm agent: local model name/folder or endpoint URL#model"
    )
    run.add_argument("--disturb", action="store_true", help="inject a random delay and a door closing")
    run.add_argument("--no-replan", action="store_true", help="keep the first plans whatever happens")
    run.add_argument("--limit", type=positive_int, default=10**9, help="run only the first N episodes")
    run.add_argument("--seed", type=seed, default=0)
    run.add_argument("--json", action="store_true", help="print the summary as JSON")
    add_parallel_arguments(run)
    run.set_defaults(func=cmd_run)
