"""NavCraft / CoNavBench experiment: benchmark statistics, collaborative vs solo execution per taxonomy type,
disturbances with and without re-planning, a language-model planner, and a picture of one episode; and the
agentic generator against the rule-based one.

    .venv/bin/python scripts/navcraft_experiment.py                 # both parts
    .venv/bin/python scripts/navcraft_experiment.py --part benchmark --lm none   # without the LM planner
    .venv/bin/python scripts/navcraft_experiment.py --part generators --agent-lm http://host:8080/v1#model
    .venv/bin/python scripts/navcraft_experiment.py --quick         # 2 scenes x 3 episodes, 1 agent episode

Part ``generators`` (results file ``--generator-results``, default ``results/navcraft/generators.json``): the
rule-based generator on 8 scenes x 10 episodes per seed and the agentic one (:mod:`embodia.agents.navcraft.
agentic`, SmolLM2 by default) on ``--agent-episodes`` episode slots per seed (seed k: episode 0 of scene k),
seeds 0 1 2, each compared with the rule-based episode of the same slot; validity, fallbacks, single-robot
episodes, taxonomy and pattern coverage, planned makespan reduction, with 95 % intervals.

Steps: (a) generate the episodes (the 4 shipped scenes, then procedural ones) and report their statistics;
(b) execute every episode with the collaborative schedule (``planner``) and with the primary robot alone
(``solo``), one row per taxonomy type; (c) execute every episode with a random delay and door closing, with
and without re-planning; (d) the LM planner (SmolLM2 by default, a weak baseline) on the first episodes,
next to the planner and solo on the same ones; (e) draw one relay (or rendezvous) episode as executed.
Markdown tables go to stdout and to the results file ``--results`` (default ``results/navcraft/experiment.json``;
``--quick``: under ``runs/quick-results/``), which the NavCraft page renders; every episode's row goes to
``--out`` (JSON), the picture to ``--image``.
"""

from __future__ import annotations

import argparse
import math
import shlex
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from embodia.agents.methods.report import progress_bar, save_json
from embodia.agents.navcraft.agentic import tool_counts
from embodia.agents.navcraft.benchmark import generate, scene_refs
from embodia.agents.navcraft.evaluation import RunConfig, run_episodes
from embodia.agents.navcraft.executor import execute
from embodia.agents.navcraft.mission import TAXONOMY, NavCraftEpisode
from embodia.agents.navcraft.render import draw_episode
from embodia.agents.navcraft.stats import PATTERNS, collaboration_patterns, generator_summary
from embodia.core.results import Column, Table, default_results_path, write_results

RESULTS_NAME = "navcraft/experiment"
GENERATORS_NAME = "navcraft/generators"
IMAGE = "docs/images/navcraft/episode.png"


def _mean(rows: Sequence[dict], key: str) -> float | None:
    values = [
        r[key] for r in rows if r[key] is not None and not (isinstance(r[key], float) and math.isnan(r[key]))
    ]
    return float(np.mean(values)) if values else None


def _reduction(solo: float | None, collab: float | None) -> float | None:
    """The makespan saved by collaborating, as a fraction of the solo makespan."""
    return None if not solo or collab is None else (solo - collab) / solo


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or not b else a / b


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
def generation_tables(stats: dict[str, Any]) -> dict[str, Table]:
    """Episodes by taxonomy type, leg and mission lengths, robots and items per episode, speed, rejections."""
    total = stats["episodes"]
    taxonomy = Table(
        [Column("taxonomy", "taxonomy"), Column("episodes", "episodes"), Column("share", "share", ".0%")]
    )
    for name, n in stats["by_taxonomy"].items():
        taxonomy.add(taxonomy=name, episodes=n, share=n / total)
    lengths = Table(
        [Column("statistic", "statistic"), Column("mean", "mean"), Column("min", "min"), Column("max", "max")]
    )
    for label, key in (("room hops per leg", "room_hops"), ("mission length, m", "mission_length_m")):
        lengths.add(statistic=label, **stats[key])
    composition = Table(
        [Column("quantity", "per episode"), Column("number", "number"), Column("episodes", "episodes")]
    )
    for quantity in ("robots", "items"):
        for number, n in stats[quantity].items():
            composition.add(quantity=quantity, number=int(number), episodes=n)
    speed = Table(
        [
            Column("episodes", "episodes"),
            Column("seconds", "generation (s)", ".1f"),
            Column("rate", "episodes/s", ".2f"),
        ]
    )
    speed.add(episodes=total, seconds=stats["seconds"], rate=stats["episodes_per_second"])
    rejected = Table([Column("reason", "rejected candidate"), Column("count", "count")])
    for reason, n in stats["rejected"].items():
        rejected.add(reason=reason, count=n)
    return {
        "taxonomy": taxonomy,
        "statistics": lengths,
        "composition": composition,
        "generation": speed,
        "rejected": rejected,
    }


# ---------------------------------------------------------------------- (b) collaborative vs solo
def comparison_tables(
    collab: list[dict], solo: list[dict], episodes: list[NavCraftEpisode]
) -> dict[str, Table]:
    """Executed solo vs collaborative per taxonomy type, and the time model's plans against the executions."""
    executed = Table(
        [
            Column("taxonomy", "taxonomy"),
            Column("episodes", "episodes"),
            Column("solo_makespan", "solo makespan (s)", ".1f"),
            Column("collab_makespan", "collab makespan (s)", ".1f"),
            Column("reduction", "makespan reduction", ".1%"),
            Column("success_solo", "success, solo", ".2f"),
            Column("success_collab", "success, collab", ".2f"),
            Column("step_success_solo", "step success, solo", ".2f"),
            Column("step_success_collab", "step success, collab", ".2f"),
            Column("handoff_errors", "handoff errors", ".2f"),
            Column("interference", "interference events", ".2f"),
            Column("spl_solo", "SPL, solo", ".2f"),
            Column("spl_collab", "SPL, collab", ".2f"),
        ]
    )
    planned = Table(
        [
            Column("taxonomy", "taxonomy"),
            Column("planned_solo", "planned solo (s)", ".1f"),
            Column("planned_collab", "planned collab (s)", ".1f"),
            Column("planned_reduction", "planned reduction", ".1%"),
            Column("executed_over_planned", "executed / planned (collab)", ".2f"),
        ]
    )
    for name, indices in _groups(collab).items():
        c, s = [collab[i] for i in indices], [solo[i] for i in indices]
        c_makespan, s_makespan = _mean(c, "makespan"), _mean(s, "makespan")
        executed.add(
            taxonomy=name,
            episodes=len(indices),
            solo_makespan=s_makespan,
            collab_makespan=c_makespan,
            reduction=_reduction(s_makespan, c_makespan),
            success_solo=_mean(s, "success"),
            success_collab=_mean(c, "success"),
            step_success_solo=_mean(s, "step_success"),
            step_success_collab=_mean(c, "step_success"),
            handoff_errors=_mean(c, "handoff_errors"),
            interference=_mean(c, "interference"),
            spl_solo=_mean(s, "spl_mean"),
            spl_collab=_mean(c, "spl_mean"),
        )
        p_solo = float(np.mean([episodes[i].info["solo_makespan"] for i in indices]))
        p_collab = float(np.mean([episodes[i].info["makespan"] for i in indices]))
        planned.add(
            taxonomy=name,
            planned_solo=p_solo,
            planned_collab=p_collab,
            planned_reduction=_reduction(p_solo, p_collab),
            executed_over_planned=_ratio(c_makespan, p_collab),
        )
    return {"executed": executed, "planned": planned}


# ---------------------------------------------------------------------- (c) disturbances
def disturbance_tables(with_replan: list[dict], without: list[dict]) -> dict[str, Table]:
    """Disturbed runs with and without re-planning, and the missions re-planning saved (and lost)."""
    table = Table(
        [
            Column("run", "disturbed run"),
            Column("episodes", "episodes"),
            Column("success", "success", ".2f"),
            Column("step_success", "step success", ".2f"),
            Column("makespan", "makespan (s)", ".1f"),
            Column("makespan_successful", "makespan, successful (s)", ".1f"),
            Column("handoff_errors", "handoff errors", ".2f"),
            Column("replans", "re-plans", ".2f"),
        ]
    )
    for label, rows in (("re-planning", with_replan), ("no re-planning", without)):
        table.add(
            run=label,
            episodes=len(rows),
            success=_mean(rows, "success"),
            step_success=_mean(rows, "step_success"),
            makespan=_mean(rows, "makespan"),
            makespan_successful=_mean([r for r in rows if r["success"]], "makespan"),
            handoff_errors=_mean(rows, "handoff_errors"),
            replans=_mean(rows, "replans"),
        )
    failed_without = [i for i, r in enumerate(without) if not r["success"]]
    saved = [i for i in failed_without if with_replan[i]["success"]]
    lost = [i for i, r in enumerate(with_replan) if not r["success"] and without[i]["success"]]
    effect = Table(
        [
            Column("failed_without", "missions failed without re-planning"),
            Column("saved", "saved by re-planning (success with, failure without)"),
            Column("lost", "lost by re-planning (failure with, success without)"),
        ]
    )
    effect.add(failed_without=len(failed_without), saved=len(saved), lost=len(lost))
    return {"disturbance": table, "replanning": effect}


# ---------------------------------------------------------------------- (d) LM planner
def lm_table(llm: list[dict], collab: list[dict], solo: list[dict], model: str) -> Table:
    """The LM planner next to the planner and the primary robot alone, on the same (first) episodes."""
    table = Table(
        [
            Column("agent", "agent (same episodes)"),
            Column("episodes", "episodes"),
            Column("success", "success", ".2f"),
            Column("step_success", "step success", ".2f"),
            Column("makespan", "makespan (s)", ".1f"),
            Column("unusable", "unusable LM answer", ".2f"),
        ]
    )
    n = len(llm)
    if n == 0:  # not run: an empty table of the same layout
        return table
    for label, rows in ((f"llm ({model})", llm), ("planner", collab[:n]), ("solo", solo[:n])):
        fallbacks = [r["lm_fallback"] for r in rows if r["lm_fallback"] is not None]
        table.add(
            agent=label,
            episodes=len(rows),
            success=_mean(rows, "success"),
            step_success=_mean(rows, "step_success"),
            makespan=_mean(rows, "makespan"),
            unusable=float(np.mean(fallbacks)) if fallbacks else None,
        )
    return table


# ---------------------------------------------------------------------- (e) picture
def picture_episode(episodes: list[NavCraftEpisode]) -> NavCraftEpisode | None:
    """The first relay episode, else the first rendezvous swap, else the first collaborative one."""
    for wanted in ("relay", "rendezvous_swap"):
        for episode in episodes:
            if episode.info.get("taxonomy") == wanted:
                return episode
    return next((e for e in episodes if e.info.get("taxonomy") != "solo"), episodes[0] if episodes else None)


def write_picture(episode: NavCraftEpisode, path: Path) -> tuple[Table, dict[str, Any]]:
    """Execute ``episode``, draw it to ``path``; its numbers as a one-row table, and the rest as data."""
    from PIL import Image

    result = execute(episode)
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(draw_episode(episode, result)).save(path)
    table = Table(
        [
            Column("scene", "scene"),
            Column("taxonomy", "taxonomy"),
            Column("planned_solo", "planned solo (s)", ".1f"),
            Column("planned", "planned (s)", ".1f"),
            Column("executed", "executed (s)", ".1f"),
        ]
    )
    table.add(
        scene=episode.mission.scene_id,
        taxonomy=episode.info.get("taxonomy"),
        planned_solo=episode.info["solo_makespan"],
        planned=result.planned_makespan,
        executed=result.makespan,
    )
    data = {
        "path": str(path),
        "episode_id": episode.episode_id,
        "success": result.success,
        "handoffs": len(result.handoffs),
    }
    return table, data


# ---------------------------------------------------------------------- (f) agentic vs rule-based generator
def generator_tables(
    rows: list[dict[str, Any]], groups: dict[str, list[NavCraftEpisode]]
) -> dict[str, Table]:
    """The comparison table, episodes per collaboration pattern per generator, and the single-robot split."""
    table = Table(
        [
            Column("generator", "generator"),
            Column("episodes", "episodes"),
            Column("mission_by_agent", "stage 1 by the agent", ".0%"),
            Column("schedule_by_agent", "stage 2 by the agent", ".0%"),
            Column("fell_back", "fell back to rules", ".0%"),
            Column("proposals", "proposals"),
            Column("valid_as_proposed", "proposals valid as proposed", ".0%"),
            Column("valid_final", "episodes valid", ".0%"),
            Column("single_robot", "single-robot episodes", ".0%"),
            Column("reduction", "planned makespan reduction", ".1%"),
            Column("taxonomy_coverage", "taxonomy types covered", ".0%"),
            Column("pattern_coverage", "patterns covered", ".0%"),
            Column("lm_calls", "LM calls / episode", ".1f"),
            Column("seconds", "s / episode", ".2f"),
        ]
    )
    for row in rows:
        table.add(**row)
    names = list(groups)
    keys = [f"g{i}" for i in range(len(names))]
    patterns = Table([Column("pattern", "pattern")] + [Column(k, n) for k, n in zip(keys, names)])
    for pattern in PATTERNS:
        counts = [sum(pattern in collaboration_patterns(e.schedule) for e in eps) for eps in groups.values()]
        patterns.add(pattern=pattern, **dict(zip(keys, counts)))
    for kind in TAXONOMY:
        patterns.add(
            pattern=f"type: {kind}",
            **{k: sum(e.info["taxonomy"] == kind for e in eps) for k, eps in zip(keys, groups.values())},
        )
    single = Table(
        [
            Column("generator", "generator"),
            Column("reason", "single-robot episode because"),
            Column("episodes", "episodes"),
        ]
    )
    for name, episodes in groups.items():
        for reason in ("no_helpers", "no_gain", "agent_kept_solo"):
            single.add(
                generator=name,
                reason=reason,
                episodes=sum(e.info.get("single_robot") == reason for e in episodes),
            )
    return {"generators": table, "patterns": patterns, "single_robot": single}


def agent_table(records: list, episodes: list[NavCraftEpisode]) -> Table:
    """What the agent's answers were: outcomes per stage, unparsable answers, tool errors, tool calls."""
    table = Table([Column("quantity", "agent"), Column("count", "count"), Column("share", "share", ".0%")])
    calls = sum(r.lm_calls for r in records)
    for label, value, total in (
        ("LM answers", calls, calls),
        ("answers without a tool call", sum(r.unparsable for r in records), calls),
        ("tool calls refused (bad name or arguments)", sum(r.tool_errors for r in records), calls),
        ("stage 1: agent's mission used", sum(r.mission_by == "agent" for r in records), len(records)),
        ("stage 2: agent's collaboration used", sum(r.schedule_by == "agent" for r in records), len(records)),
        (
            "stage 2: agent kept the mission solo",
            sum(r.schedule_by == "agent_solo" for r in records),
            len(records),
        ),
        ("stage 2: fell back to rules", sum(r.schedule_by == "rules" for r in records), len(records)),
        (
            "stage 2: no helpers (single-robot slot)",
            sum(r.schedule_by == "no_helpers" for r in records),
            len(records),
        ),
    ):
        table.add(quantity=label, count=int(value), share=value / total if total else None)
    for name, count in tool_counts(records).items():
        table.add(quantity=f"tool calls: {name}", count=count, share=count / calls if calls else None)
    return table


def run_generators(args, say) -> int:
    """Part ``generators``: the rule-based and the agentic generator on the same episode slots."""
    from embodia.agents.llm import load_lm
    from embodia.agents.navcraft.agentic import AgenticConfig, AgenticGenerator

    quick = args.quick
    seeds = args.generator_seeds or ([0] if quick else [0, 1, 2])
    scenes = args.scenes or (2 if quick else 8)
    per_scene = args.episodes or (3 if quick else 10)
    agent_episodes = args.agent_episodes if args.agent_episodes is not None else 1
    agent_config = AgenticConfig(max_turns=1, max_new_tokens=24) if quick else AgenticConfig()
    lm = load_lm(args.agent_lm) if agent_episodes else None
    generator = AgenticGenerator(lm, agent=agent_config)
    rules, same_slots, agentic, records = [], [], [], []
    rule_seconds = agent_seconds = 0.0
    transcript: list = []
    for position, seed in enumerate(seeds):
        refs = scene_refs(scenes, seed)
        result = generate(refs, per_scene, seed)
        rule_seconds += result.stats["seconds"]
        rules += result.episodes
        for slot in range(position, position + agent_episodes):  # seed k starts at scene k
            scene_index, index = slot % scenes, slot // scenes
            same_slots.append(result.episodes[scene_index * per_scene + index])
            t = time.perf_counter()
            episode, record = generator.episode(refs[scene_index], scene_index, index, seed)
            agent_seconds += time.perf_counter() - t
            agentic.append(episode)
            records.append(record)
            transcript = transcript or record.transcript
            say(
                f"seed {seed} {episode.episode_id}: mission by {record.mission_by}, schedule by "
                f"{record.schedule_by}, {record.lm_calls} LM calls, {time.perf_counter() - t:.0f} s"
            )
    slot_seconds = rule_seconds / max(len(rules), 1) * len(same_slots)
    agent_label = f"agent ({lm.name if lm else args.agent_lm})"
    rows = [
        generator_summary("rules, all episodes", rules, rule_seconds),
        generator_summary("rules, the agent's slots", same_slots, slot_seconds),
        generator_summary(agent_label, agentic, agent_seconds),
    ]
    groups = {"rules, all episodes": rules, "rules, the agent's slots": same_slots, agent_label: agentic}
    tables = generator_tables(rows, groups)
    tables["agent"] = agent_table(records, agentic)
    for name in tables:
        say(tables[name].markdown() + "\n")
    config = {
        "seeds": seeds,
        "scenes": scenes,
        "episodes_per_scene": per_scene,
        "agent_episodes_per_seed": agent_episodes,
        "agent_lm": lm.name if lm else args.agent_lm,
        "agent": agent_config.__dict__,
        "torch_threads": args.torch_threads,
        "quick": quick,
    }
    path = args.generator_results or default_results_path(GENERATORS_NAME, quick=quick)
    write_results(
        path,
        tables,
        name=GENERATORS_NAME,
        title="NavCraft: the agentic generator (language model + tools) against the rule-based one",
        command=None
        if args.argv is None
        else shlex.join(["python", "scripts/navcraft_experiment.py", *args.argv]),
        seeds=list(seeds),
        data={"config": config, "first_transcript": transcript},
    )
    say(f"results: {path}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 scenes x 3 episodes, LM on 1 (tests)")
    parser.add_argument("--out", default="runs/agents/navcraft.json", help="every episode's row (JSON)")
    parser.add_argument(
        "--results", default=None, help=f"results file (default: results/{RESULTS_NAME}.json)"
    )
    parser.add_argument(
        "--image",
        default=None,
        help="the picture (default: docs/images/navcraft/episode.png; --quick: runs/)",
    )
    parser.add_argument("--scenes", type=int, default=None, help="scenes (default 8: 4 shipped + procedural)")
    parser.add_argument("--episodes", type=int, default=None, help="episodes per scene (default 25)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--lm", default="smollm2", help="LM planner model, or 'none' to skip it")
    parser.add_argument("--lm-episodes", type=int, default=None, help="episodes for the LM (default 10)")
    parser.add_argument("--quiet", action="store_true")
    parser.add_argument(
        "--part", choices=("all", "benchmark", "generators"), default="all", help="which part to run"
    )
    parser.add_argument("--agent-lm", default="smollm2", help="the agentic generator's model or endpoint")
    parser.add_argument(
        "--agent-episodes", type=int, default=None, help="agent episodes per seed (default 1)"
    )
    parser.add_argument(
        "--generator-seeds", type=int, nargs="+", default=None, help="default 0 1 2 (--quick: 0)"
    )
    parser.add_argument("--generator-results", default=None, help=f"default: results/{GENERATORS_NAME}.json")
    parser.add_argument(
        "--torch-threads",
        type=int,
        default=1,
        help="torch threads of the local language models (1: fastest on a loaded 2-core machine; 0: torch's choice)",
    )
    args = parser.parse_args(argv)
    args.argv = argv
    if (
        args.torch_threads
    ):  # the local language models (the agent's, the LM planner's) run on this many threads
        import torch

        torch.set_num_threads(args.torch_threads)
    show = not args.quiet
    say = print if show else (lambda *a, **k: None)
    if args.part == "generators":
        return run_generators(args, say)
    if args.part == "all":
        run_generators(args, say)
    results_path = args.results or default_results_path(RESULTS_NAME, quick=args.quick)
    image = Path(args.image or ("runs/quick-results/navcraft/episode.png" if args.quick else IMAGE))
    scenes = args.scenes or (2 if args.quick else 8)
    per_scene = args.episodes or (3 if args.quick else 25)
    lm_episodes = args.lm_episodes if args.lm_episodes is not None else (1 if args.quick else 10)
    began = time.perf_counter()
    seconds: dict[str, float] = {}
    tables: dict[str, Table] = {}

    def report(title: str, names: Sequence[str]) -> None:
        say(f"## {title}\n")
        for name in names:
            say(tables[name].markdown() + "\n")

    generated = generate(scene_refs(scenes, args.seed), per_scene, args.seed)
    episodes, stats = generated.episodes, generated.stats
    seconds["generate"] = stats["seconds"]
    tables |= generation_tables(stats)
    report(
        f"NavCraft benchmark: {len(episodes)} episodes in {scenes} scenes (seed {args.seed})", list(tables)
    )

    t = time.perf_counter()
    collab = _run(episodes, RunConfig(agent="planner", seed=args.seed), "planner", show)
    solo = _run(episodes, RunConfig(agent="solo", seed=args.seed), "solo", show)
    seconds["execute"] = time.perf_counter() - t
    tables |= comparison_tables(collab, solo, episodes)
    report(
        "Collaborative schedule vs primary robot alone (executed, no disturbance)", ["executed", "planned"]
    )

    t = time.perf_counter()
    disturbed = _run(
        episodes, RunConfig(disturb=True, replan=True, seed=args.seed), "disturbed, re-plan", show
    )
    stuck = _run(
        episodes, RunConfig(disturb=True, replan=False, seed=args.seed), "disturbed, no re-plan", show
    )
    seconds["disturbed"] = time.perf_counter() - t
    tables |= disturbance_tables(disturbed, stuck)
    report(
        "Random delay + door closing, with and without re-planning (collaborative schedule)",
        ["disturbance", "replanning"],
    )

    llm_rows: list[dict] = []
    max_new_tokens = 16 if args.quick else 96
    if args.lm.lower() != "none" and lm_episodes > 0:
        t = time.perf_counter()
        config = RunConfig(agent="llm", lm=args.lm, max_new_tokens=max_new_tokens, seed=args.seed)
        llm_rows = _run(episodes[:lm_episodes], config, f"LM planner ({args.lm})", show)
        seconds["lm"] = time.perf_counter() - t
    tables["lm"] = lm_table(llm_rows, collab, solo, args.lm)
    if llm_rows:
        report(f"LM planner ({args.lm}) on the first {len(llm_rows)} episodes", ["lm"])

    picture = None
    chosen = picture_episode(episodes)
    if chosen is not None:
        tables["picture"], picture = write_picture(chosen, image)
        say(f"picture of {chosen.episode_id} ({chosen.info.get('taxonomy')}) written to {image}\n")
        say(tables["picture"].markdown() + "\n")
    seconds["total"] = time.perf_counter() - began
    tables["timing"] = Table([Column("stage", "stage"), Column("seconds", "seconds")])
    for stage, value in seconds.items():
        tables["timing"].add(stage=stage, seconds=value)
    say(f"total {seconds['total']:.0f} s")

    config = {
        "scenes": scene_refs(scenes, args.seed),
        "episodes_per_scene": per_scene,
        "seed": args.seed,
        "lm": args.lm,
        "lm_episodes": lm_episodes,
        "max_new_tokens": max_new_tokens,
        "quick": args.quick,
    }
    rows = {
        "planner": collab,
        "solo": solo,
        "disturbed_replan": disturbed,
        "disturbed_no_replan": stuck,
        "llm": llm_rows,
    }
    save_json(args.out, {"config": config, "generation": stats, "rows": rows})
    write_results(
        results_path,
        tables,
        name=RESULTS_NAME,
        title="NavCraft: generated missions, collaborative vs solo execution, disturbances, LM planner",
        command=None if argv is None else shlex.join(["python", "scripts/navcraft_experiment.py", *argv]),
        seeds=[args.seed],
        data={"config": config, "picture": picture, "rows_file": str(args.out)},
    )
    say(f"results: {results_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
