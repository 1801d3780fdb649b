"""NavCraft / CoNavBench experiment: benchmark statistics, collaborative vs solo execution per taxonomy type,
disturbances with and without re-planning, a language-model planner, and a picture of one episode.

    .venv/bin/python scripts/navcraft_experiment.py                 # 8 scenes x 25 episodes, LM on 10
    .venv/bin/python scripts/navcraft_experiment.py --lm none       # without the LM planner
    .venv/bin/python scripts/navcraft_experiment.py --quick         # 2 scenes x 3 episodes (tests)

Steps: (a) generate the episodes (the 4 shipped scenes, then procedural ones) and report their statistics;
(b) execute every episode with the collaborative schedule (``planner``) and with the primary robot alone
(``solo``), one row per taxonomy type; (c) execute every episode with a random delay and door closing, with
and without re-planning; (d) the LM planner (SmolLM2 by default, a weak baseline) on the first episodes,
next to the planner and solo on the same ones; (e) draw one relay (or rendezvous) episode as executed.
Markdown tables go to stdout, every number to ``--out`` (JSON), the picture to ``--image``.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from embodia.agents.methods.report import markdown_table, progress_bar, save_json
from embodia.agents.navcraft.benchmark import generate, scene_refs
from embodia.agents.navcraft.evaluation import RunConfig, run_episodes
from embodia.agents.navcraft.executor import execute
from embodia.agents.navcraft.mission import TAXONOMY, NavCraftEpisode
from embodia.agents.navcraft.render import draw_episode


def _fmt(value: Any, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def _mean(rows: Sequence[dict], key: str) -> float | None:
    values = [
        r[key] for r in rows if r[key] is not None and not (isinstance(r[key], float) and math.isnan(r[key]))
    ]
    return float(np.mean(values)) if values else None


def _reduction(solo: float | None, collab: float | None) -> float | None:
    return None if not solo or collab is None else 100.0 * (solo - collab) / solo


def _groups(rows: Sequence[dict]) -> dict[str, list[int]]:
    """Row indices per taxonomy type (in TAXONOMY order) and ``all``."""
    out: dict[str, list[int]] = {}
    for name in TAXONOMY:
        indices = [i for i, r in enumerate(rows) if r["taxonomy"] == name]
        if indices:
            out[name] = indices
    out["all"] = list(range(len(rows)))
    return out


def _run(episodes, config: RunConfig, title: str, show: bool) -> list[dict]:
    with progress_bar(title, show) as update:
        return run_episodes(
            episodes, config, on_row=lambda i, row: update(i + 1, len(episodes), row["episode_id"])
        )


# ---------------------------------------------------------------------- (a) statistics
def generation_tables(stats: dict[str, Any]) -> str:
    total = stats["episodes"]
    by_type = [[name, n, f"{100.0 * n / total:.0f} %"] for name, n in stats["by_taxonomy"].items()]
    hops, length = stats["room_hops"], stats["mission_length_m"]
    summary = [
        ["episodes", total],
        [
            "room hops per leg (mean / min / max)",
            f"{hops['mean']:.2f} / {hops['min']:.0f} / {hops['max']:.0f}",
        ],
        [
            "mission length, m (mean / min / max)",
            f"{length['mean']:.1f} / {length['min']:.1f} / {length['max']:.1f}",
        ],
        ["robots per episode", ", ".join(f"{k}: {v}" for k, v in stats["robots"].items())],
        ["items per episode", ", ".join(f"{k}: {v}" for k, v in stats["items"].items())],
        ["generation", f"{stats['seconds']:.1f} s, {stats['episodes_per_second']:.2f} episodes/s"],
    ]
    rejected = [[reason, n] for reason, n in stats["rejected"].items()]
    return "\n\n".join(
        [
            markdown_table(["taxonomy", "episodes", "share"], by_type),
            markdown_table(["statistic", "value"], summary),
            markdown_table(["rejected candidate", "count"], rejected or [["-", 0]]),
        ]
    )


# ---------------------------------------------------------------------- (b) collaborative vs solo
def comparison(collab: list[dict], solo: list[dict], episodes: list[NavCraftEpisode]) -> dict[str, Any]:
    executed, planned = [], []
    for name, indices in _groups(collab).items():
        c, s = [collab[i] for i in indices], [solo[i] for i in indices]
        c_makespan, s_makespan = _mean(c, "makespan"), _mean(s, "makespan")
        executed.append(
            {
                "taxonomy": name,
                "episodes": len(indices),
                "solo_makespan": s_makespan,
                "collab_makespan": c_makespan,
                "makespan_reduction_pct": _reduction(s_makespan, c_makespan),
                "success_solo": _mean(s, "success"),
                "success_collab": _mean(c, "success"),
                "step_success_solo": _mean(s, "step_success"),
                "step_success_collab": _mean(c, "step_success"),
                "handoff_errors": _mean(c, "handoff_errors"),
                "interference": _mean(c, "interference"),
                "spl_solo": _mean(s, "spl_mean"),
                "spl_collab": _mean(c, "spl_mean"),
            }
        )
        p_solo = float(np.mean([episodes[i].info["solo_makespan"] for i in indices]))
        p_collab = float(np.mean([episodes[i].info["makespan"] for i in indices]))
        planned.append(
            {
                "taxonomy": name,
                "episodes": len(indices),
                "planned_solo_makespan": p_solo,
                "planned_collab_makespan": p_collab,
                "planned_reduction_pct": _reduction(p_solo, p_collab),
                "executed_over_planned_collab": _ratio(_mean(c, "makespan"), p_collab),
            }
        )
    return {"executed": executed, "planned": planned}


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or not b else a / b


def comparison_tables(result: dict[str, Any]) -> str:
    executed = markdown_table(
        [
            "taxonomy",
            "episodes",
            "solo makespan (s)",
            "collab makespan (s)",
            "makespan reduction",
            "success solo / collab",
            "step success solo / collab",
            "handoff errors",
            "interference events",
            "SPL solo / collab",
        ],
        [
            [
                r["taxonomy"],
                r["episodes"],
                _fmt(r["solo_makespan"], 1),
                _fmt(r["collab_makespan"], 1),
                f"{_fmt(r['makespan_reduction_pct'], 1)} %",
                f"{_fmt(r['success_solo'])} / {_fmt(r['success_collab'])}",
                f"{_fmt(r['step_success_solo'])} / {_fmt(r['step_success_collab'])}",
                _fmt(r["handoff_errors"]),
                _fmt(r["interference"]),
                f"{_fmt(r['spl_solo'])} / {_fmt(r['spl_collab'])}",
            ]
            for r in result["executed"]
        ],
    )
    planned = markdown_table(
        [
            "taxonomy",
            "planned solo (s)",
            "planned collab (s)",
            "planned reduction",
            "executed / planned (collab)",
        ],
        [
            [
                r["taxonomy"],
                _fmt(r["planned_solo_makespan"], 1),
                _fmt(r["planned_collab_makespan"], 1),
                f"{_fmt(r['planned_reduction_pct'], 1)} %",
                _fmt(r["executed_over_planned_collab"]),
            ]
            for r in result["planned"]
        ],
    )
    return executed + "\n\n" + planned


# ---------------------------------------------------------------------- (c) disturbances
def disturbance_summary(with_replan: list[dict], without: list[dict]) -> dict[str, Any]:
    table = []
    for label, rows in (("re-planning", with_replan), ("no re-planning", without)):
        table.append(
            {
                "run": label,
                "episodes": len(rows),
                "success": _mean(rows, "success"),
                "step_success": _mean(rows, "step_success"),
                "makespan": _mean(rows, "makespan"),
                "makespan_successful": _mean([r for r in rows if r["success"]], "makespan"),
                "handoff_errors": _mean(rows, "handoff_errors"),
                "replans": _mean(rows, "replans"),
            }
        )
    failed_without = [i for i, r in enumerate(without) if not r["success"]]
    saved = [i for i in failed_without if with_replan[i]["success"]]
    lost = [i for i, r in enumerate(with_replan) if not r["success"] and without[i]["success"]]
    return {
        "table": table,
        "saved": len(saved),
        "failed_without_replan": len(failed_without),
        "lost_by_replan": len(lost),
        "saved_episodes": [without[i]["episode_id"] for i in saved],
    }


def disturbance_tables(result: dict[str, Any]) -> str:
    table = markdown_table(
        [
            "disturbed run",
            "episodes",
            "success",
            "step success",
            "makespan (s)",
            "makespan, successful (s)",
            "handoff errors",
            "re-plans",
        ],
        [
            [
                r["run"],
                r["episodes"],
                _fmt(r["success"]),
                _fmt(r["step_success"]),
                _fmt(r["makespan"], 1),
                _fmt(r["makespan_successful"], 1),
                _fmt(r["handoff_errors"]),
                _fmt(r["replans"]),
            ]
            for r in result["table"]
        ],
    )
    return (
        f"{table}\n\nre-planning saved {result['saved']} of {result['failed_without_replan']} missions "
        f"(success with re-planning, failure without); it lost {result['lost_by_replan']} "
        "(failure with, success without)."
    )


# ---------------------------------------------------------------------- (d) LM planner
def lm_summary(llm: list[dict], collab: list[dict], solo: list[dict]) -> list[dict[str, Any]]:
    n = len(llm)
    out = []
    for label, rows in (("llm", llm), ("planner", collab[:n]), ("solo", solo[:n])):
        fallbacks = [r["lm_fallback"] for r in rows if r["lm_fallback"] is not None]
        out.append(
            {
                "agent": label,
                "episodes": len(rows),
                "success": _mean(rows, "success"),
                "step_success": _mean(rows, "step_success"),
                "makespan": _mean(rows, "makespan"),
                "unusable_answer": float(np.mean(fallbacks)) if fallbacks else None,
            }
        )
    return out


def lm_table(rows: list[dict[str, Any]], model: str) -> str:
    return markdown_table(
        [
            "agent (same episodes)",
            "episodes",
            "success",
            "step success",
            "makespan (s)",
            "unusable LM answer",
        ],
        [
            [
                f"{r['agent']} ({model})" if r["agent"] == "llm" else r["agent"],
                r["episodes"],
                _fmt(r["success"]),
                _fmt(r["step_success"]),
                _fmt(r["makespan"], 1),
                _fmt(r["unusable_answer"]),
            ]
            for r in rows
        ],
    )


# ---------------------------------------------------------------------- (e) picture
def picture_episode(episodes: list[NavCraftEpisode]) -> NavCraftEpisode | None:
    """The first relay episode, else the first rendezvous swap, else the first collaborative one."""
    for wanted in ("relay", "rendezvous_swap"):
        for episode in episodes:
            if episode.info.get("taxonomy") == wanted:
                return episode
    return next((e for e in episodes if e.info.get("taxonomy") != "solo"), episodes[0] if episodes else None)


def write_picture(episode: NavCraftEpisode, path: Path) -> dict[str, Any]:
    from PIL import Image

    result = execute(episode)
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(draw_episode(episode, result)).save(path)
    return {
        "path": str(path),
        "episode_id": episode.episode_id,
        "taxonomy": episode.info.get("taxonomy"),
        "success": result.success,
        "makespan": result.makespan,
        "planned_makespan": result.planned_makespan,
        "handoffs": len(result.handoffs),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 scenes x 3 episodes, LM on 1 (tests)")
    parser.add_argument("--out", default="runs/agents/navcraft.json")
    parser.add_argument("--image", default="docs/images/navcraft/episode.png")
    parser.add_argument("--scenes", type=int, default=None, help="scenes (default 8: 4 shipped + procedural)")
    parser.add_argument("--episodes", type=int, default=None, help="episodes per scene (default 25)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--lm", default="smollm2", help="LM planner model, or 'none' to skip it")
    parser.add_argument("--lm-episodes", type=int, default=None, help="episodes for the LM (default 10)")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    scenes = args.scenes or (2 if args.quick else 8)
    per_scene = args.episodes or (3 if args.quick else 25)
    lm_episodes = args.lm_episodes if args.lm_episodes is not None else (1 if args.quick else 10)
    show = not args.quiet
    say = print if show else (lambda *a, **k: None)
    began = time.perf_counter()
    seconds: dict[str, float] = {}

    generated = generate(scene_refs(scenes, args.seed), per_scene, args.seed)
    episodes, stats = generated.episodes, generated.stats
    seconds["generate"] = stats["seconds"]
    say(f"## NavCraft benchmark: {len(episodes)} episodes in {scenes} scenes (seed {args.seed})\n")
    say(generation_tables(stats) + "\n")

    t = time.perf_counter()
    collab = _run(episodes, RunConfig(agent="planner", seed=args.seed), "planner", show)
    solo = _run(episodes, RunConfig(agent="solo", seed=args.seed), "solo", show)
    seconds["execute"] = time.perf_counter() - t
    compared = comparison(collab, solo, episodes)
    say("## Collaborative schedule vs primary robot alone (executed, no disturbance)\n")
    say(comparison_tables(compared) + "\n")

    t = time.perf_counter()
    disturbed = _run(
        episodes, RunConfig(disturb=True, replan=True, seed=args.seed), "disturbed, re-plan", show
    )
    stuck = _run(
        episodes, RunConfig(disturb=True, replan=False, seed=args.seed), "disturbed, no re-plan", show
    )
    seconds["disturbed"] = time.perf_counter() - t
    disturbance = disturbance_summary(disturbed, stuck)
    say("## Random delay + door closing, with and without re-planning (collaborative schedule)\n")
    say(disturbance_tables(disturbance) + "\n")

    lm: dict[str, Any] = {"model": None, "episodes": 0, "table": [], "rows": []}
    if args.lm.lower() != "none" and lm_episodes > 0:
        t = time.perf_counter()
        config = RunConfig(agent="llm", lm=args.lm, max_new_tokens=16 if args.quick else 96, seed=args.seed)
        llm_rows = _run(episodes[:lm_episodes], config, f"LM planner ({args.lm})", show)
        seconds["lm"] = time.perf_counter() - t
        lm = {
            "model": args.lm,
            "episodes": len(llm_rows),
            "max_new_tokens": config.max_new_tokens,
            "table": lm_summary(llm_rows, collab, solo),
            "rows": llm_rows,
        }
        say(f"## LM planner ({args.lm}) on the first {len(llm_rows)} episodes\n")
        say(lm_table(lm["table"], args.lm) + "\n")

    picture = None
    chosen = picture_episode(episodes)
    if chosen is not None:
        picture = write_picture(chosen, Path(args.image))
        say(f"picture of {chosen.episode_id} ({picture['taxonomy']}) written to {args.image}")
    seconds["total"] = time.perf_counter() - began
    say(f"total {seconds['total']:.0f} s")
    save_json(
        args.out,
        {
            "config": {
                "scenes": scene_refs(scenes, args.seed),
                "episodes_per_scene": per_scene,
                "seed": args.seed,
                "lm": args.lm,
                "lm_episodes": lm_episodes,
                "quick": args.quick,
            },
            "generation": stats,
            "comparison": compared,
            "disturbance": disturbance,
            "lm": lm,
            "picture": picture,
            "seconds": seconds,
            "rows": {
                "planner": collab,
                "solo": solo,
                "disturbed_replan": disturbed,
                "disturbed_no_replan": stuck,
            },
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
