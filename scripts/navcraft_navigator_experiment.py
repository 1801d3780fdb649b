"""NavCraft / CoNavBench: a learned navigator's step-level and episode-level success, solo vs collaborative.

    .venv/bin/python scripts/navcraft_navigator_experiment.py            # 4 scenes, 3 seeds (~12 min, loaded 2-core CPU)
    .venv/bin/python scripts/navcraft_navigator_experiment.py --quick    # 1 scene, tiny (tests)

Steps: (a) generate episodes in the shipped scenes (the first ``--train`` of each scene for training, the
next ``--test`` held out: new missions in seen scenes), with canonical object places
(:func:`embodia.agents.navcraft.navigator_data.canonical_episode`); (b) roll the discrete geodesic expert out
along every robot's plan of the training episodes' collaborative and solo schedules, with DART noise; (c)
train the instruction-conditioned policy by behaviour cloning, once per seed, with the previous action
among its inputs and without it (:data:`VARIANTS`); (d) execute every held-out
collaborative episode solo (the primary robot alone) and collaborative (every robot driven by the policy),
every held-out single-robot episode as it is, with each policy and with the expert it imitates (the upper
bound). Tables go to stdout and to the results file ``--results``
(default ``results/navcraft/navigator.json``; ``--quick``: under ``runs/quick-results/``), which the NavCraft
guide renders; every episode's row goes to ``--out``.
"""

from __future__ import annotations

import argparse
import itertools
import math
import shlex
import statistics
import sys
import time
from collections.abc import Sequence

import numpy as np
import torch
from scipy import stats

from embodia.agents.methods.report import save_json
from embodia.agents.navcraft.benchmark import generate, scene_refs
from embodia.agents.navcraft.learned_navigator import (
    EvaluationConfig,
    ExpertNavigator,
    LearnedNavigator,
    NavigatorConfig,
    run_with_navigator,
    train_navigator,
)
from embodia.agents.navcraft.mission import TAXONOMY
from embodia.agents.navcraft.navigator_data import (
    DemonstrationConfig,
    ObservationConfig,
    canonical_episode,
    collect,
    move_instruction,
)
from embodia.core.results import Column, Table, default_results_path, interval, write_results
from embodia.envs.habitat.scene import load_scene

RESULTS_NAME = "navcraft/navigator"
#: the policies trained: with the previous action as an input (habitat's baselines) and without it
VARIANTS = {
    "learned": ObservationConfig(),
    "learned, no previous action": ObservationConfig(previous_action=False),
}
#: runs per navigator: a collaborative episode solo (its primary alone) and collaborative, a single-robot
#: episode as it is
MODES = ("solo", "collab", "single-robot")


def seed_interval(values: Sequence[float]) -> dict[str, float] | float | None:
    """Mean over seeds with its 95 % Student-t interval, clipped to [0, 1] (a rate); a plain mean for one
    seed."""
    values = [v for v in values if v is not None and not math.isnan(v)]
    if not values:
        return None
    mean = float(np.mean(values))
    if len(values) < 2:
        return mean
    half = float(stats.t.ppf(0.975, len(values) - 1)) * statistics.stdev(values) / math.sqrt(len(values))
    return interval(mean, max(0.0, mean - half), min(1.0, mean + half))


def _mean(rows: Sequence[dict], key: str) -> float | None:
    values = [r[key] for r in rows if r[key] is not None]
    return float(np.mean(values)) if values else None


def _share(rows: Sequence[dict]) -> float | None:
    """The share of the navigators' driving steps spent stepping aside (by the follower)."""
    total = sum(r["aside_steps"] + r["navigated_steps"] for r in rows)
    return sum(r["aside_steps"] for r in rows) / total if total else None


def collaborative(episode) -> bool:
    """Whether the generator gave ``episode`` a collaboration (CoNavBench also has single-robot ones)."""
    return episode.info.get("taxonomy", episode.schedule.collaboration) != "solo"


def evaluate(test_set, navigator, evaluation: EvaluationConfig) -> dict[str, list[dict]]:
    """Rows per mode (:data:`MODES`): collaborative episodes solo and collaborative, single-robot ones."""
    together = [e for e in test_set if collaborative(e)]
    return {
        "solo": [run_with_navigator(e, "solo", navigator, evaluation) for e in together],
        "collab": [run_with_navigator(e, "collab", navigator, evaluation) for e in together],
        "single-robot": [
            run_with_navigator(e, "solo", navigator, evaluation) for e in test_set if not collaborative(e)
        ],
    }


def split_episodes(episodes, train: int, test: int):
    """Per scene, the first ``train`` episodes for training and the next ``test`` held out."""
    train_set, test_set = [], []
    for episode in episodes:
        index = int(episode.episode_id.rsplit("#", 1)[1])
        (train_set if index < train else test_set if index < train + test else []).append(episode)
    return train_set, test_set


def result_tables(
    rows: dict[str, dict[str, list[dict]]], variants: Sequence[str], seeds: Sequence[int]
) -> dict[str, Table]:
    """Step and episode success per navigator and mode (intervals over seeds), and per taxonomy type."""
    main = Table(
        [
            Column("agent", "navigator"),
            Column("mode", "mode"),
            Column("episodes", "episodes"),
            Column("step_success", "step success", ".2f"),
            Column("success", "episode success", ".2f"),
            Column("makespan", "makespan, successful (s)", ".1f"),
            Column("aside", "steps stepping aside (follower)", ".1%"),
        ]
    )
    runs_of = {variant: [f"{variant}/{s}" for s in seeds] for variant in variants} | {"expert": ["expert"]}
    for agent, runs in runs_of.items():
        for mode in MODES:
            per_run = [rows[run][mode] for run in runs]
            main.add(
                agent=agent,
                mode=mode,
                episodes=len(per_run[0]) if per_run else 0,
                step_success=seed_interval([_mean(r, "step_success") for r in per_run]),
                success=seed_interval([_mean(r, "success") for r in per_run]),
                makespan=_mean([x for r in per_run for x in r if x["success"]], "makespan"),
                aside=_share([x for r in per_run for x in r]),
            )
    columns = [Column("taxonomy", "taxonomy (collaborative episodes)"), Column("episodes", "episodes")]
    keys = {}
    for k, agent in enumerate([*VARIANTS, "expert"]):  # the same columns whichever variants ran
        for mode in ("solo", "collab"):
            keys[(agent, mode)] = f"n{k}_{mode}"
            columns.append(Column(keys[(agent, mode)], f"step success, {agent} {mode}", ".2f"))
    by_type = Table(columns)
    for name in [*TAXONOMY[1:], "all"]:
        pick = [i for i, r in enumerate(rows["expert"]["collab"]) if name == "all" or r["taxonomy"] == name]
        if pick:
            scores = {
                key: _mean(
                    [rows[run][mode][i] for run in runs_of.get(agent, []) for i in pick], "step_success"
                )
                for (agent, mode), key in keys.items()
            }
            by_type.add(taxonomy=name, episodes=len(pick), **scores)
    return {"navigator": main, "by_taxonomy": by_type}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="1 scene, 2 + 1 episodes, 1 seed, 60 steps, first variant (tests)",
    )
    parser.add_argument("--scenes", type=int, default=None, help="shipped scenes (default 4)")
    parser.add_argument("--train", type=int, default=None, help="training episodes per scene (default 12)")
    parser.add_argument("--test", type=int, default=None, help="held-out episodes per scene (default 4)")
    parser.add_argument("--seeds", type=int, nargs="+", default=None, help="training seeds (default 0 1 2)")
    parser.add_argument("--steps", type=int, default=None, help="gradient steps (default 1500)")
    parser.add_argument("--noise", type=float, default=0.2, help="DART noise of the demonstrations")
    parser.add_argument("--episode-seed", type=int, default=0, help="seed of the generated episodes")
    parser.add_argument("--out", default="runs/agents/navcraft_navigator.json", help="every row (JSON)")
    parser.add_argument("--results", default=None, help=f"results file (default results/{RESULTS_NAME}.json)")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    say = (lambda *a, **k: None) if args.quiet else print
    scenes = args.scenes or (1 if args.quick else 4)
    train_n = args.train or (2 if args.quick else 12)
    test_n = args.test or (1 if args.quick else 4)
    seeds = args.seeds or ([0] if args.quick else [0, 1, 2])
    steps = args.steps or (60 if args.quick else 1500)
    results_path = args.results or default_results_path(RESULTS_NAME, quick=args.quick)
    torch.set_num_threads(1)
    began = time.perf_counter()
    seconds: dict[str, float] = {}

    refs = scene_refs(scenes, args.episode_seed)
    generated = generate(refs, train_n + test_n, args.episode_seed)
    canonical = [canonical_episode(e) for e in generated.episodes]
    dropped = sum(e is None for e in canonical)
    train_set, test_set = split_episodes([e for e in canonical if e is not None], train_n, test_n)
    seconds["generate"] = time.perf_counter() - began

    t = time.perf_counter()
    demos = collect(train_set, DemonstrationConfig(noise=args.noise), seed=args.episode_seed)
    seconds["demonstrations"] = time.perf_counter() - t
    scene_of = {ref: load_scene(ref) for ref in refs}
    test_texts = {
        move_instruction(scene_of[e.mission.scene_id], e.mission.scene_id, s, plan[i + 1] if i + 1 < len(plan) else None)
        for e in test_set
        for schedule in (e.schedule, e.solo)
        for plan in schedule.plans
        for i, s in enumerate(plan)
        if s.kind == "move"
    }  # fmt: skip
    seen = len(test_texts & set(demos.texts)) / max(1, len(test_texts))
    data = Table(
        [
            Column("train", "training episodes"),
            Column("test", "held-out episodes"),
            Column("dropped", "dropped (not valid with canonical places)"),
            Column("samples", "expert samples"),
            Column("reached", "expert moves reached", ".1%"),
            Column("instructions", "training instructions"),
            Column("seen", "held-out instructions seen in training", ".0%"),
        ]
    )
    data.add(
        train=len(train_set),
        test=len(test_set),
        dropped=dropped,
        samples=len(demos.actions),
        reached=float(np.mean(demos.reached)) if demos.reached else None,
        instructions=len(set(demos.texts)),
        seen=seen,
    )
    say(data.markdown() + "\n")

    rows: dict[str, dict[str, list[dict]]] = {}
    evaluation = EvaluationConfig(seed=args.episode_seed)
    t = time.perf_counter()
    rows["expert"] = evaluate(test_set, ExpertNavigator, evaluation)
    seconds["expert"] = time.perf_counter() - t
    training = Table(
        [
            Column("variant", "navigator"),
            Column("seed", "seed"),
            Column("first_loss", "loss, first block", ".3f"),
            Column("last_loss", "loss, last block", ".3f"),
            Column("accuracy", "training accuracy", ".1%"),
            Column("seconds", "training (s)", ".0f"),
        ]
    )
    losses: dict[str, list[float]] = {}
    variants = {name: VARIANTS[name] for name in list(VARIANTS)[: 1 if args.quick else None]}
    for (variant, observation), seed in itertools.product(variants.items(), seeds):
        t = time.perf_counter()
        trained = train_navigator(demos, NavigatorConfig(steps=steps, seed=seed, observation=observation))
        losses[f"{variant}/{seed}"] = trained.losses
        training.add(
            variant=variant,
            seed=seed,
            first_loss=trained.losses[0],
            last_loss=trained.losses[-1],
            accuracy=trained.train_accuracy,
            seconds=time.perf_counter() - t,
        )
        t = time.perf_counter()

        def navigator(env, trained=trained):
            return LearnedNavigator(env, trained)

        rows[f"{variant}/{seed}"] = evaluate(test_set, navigator, evaluation)
        seconds[f"evaluate {variant}, seed {seed}"] = time.perf_counter() - t
        say(
            f"{variant}, seed {seed}: "
            + ", ".join(f"{m} {_mean(rows[f'{variant}/{seed}'][m], 'step_success')}" for m in MODES)
        )
    tables = {"data": data, "training": training, **result_tables(rows, list(variants), seeds)}
    seconds["total"] = time.perf_counter() - began
    tables["timing"] = Table([Column("stage", "stage"), Column("seconds", "seconds", ".0f")])
    for stage, value in seconds.items():
        tables["timing"].add(stage=stage, seconds=value)
    for name in ("training", "navigator", "by_taxonomy", "timing"):
        say(tables[name].markdown() + "\n")

    config = {
        "scenes": refs,
        "train_per_scene": train_n,
        "test_per_scene": test_n,
        "episode_seed": args.episode_seed,
        "seeds": seeds,
        "steps": steps,
        "noise": args.noise,
        "quick": args.quick,
    }
    save_json(args.out, {"config": config, "rows": rows})
    write_results(
        results_path,
        tables,
        name=RESULTS_NAME,
        title="NavCraft: a learned navigator's step and episode success, solo vs collaborative",
        command=None
        if argv is None
        else shlex.join(["python", "scripts/navcraft_navigator_experiment.py", *argv]),
        seeds=seeds,
        data={"config": config, "losses": losses, "rows_file": str(args.out)},
    )
    say(f"results: {results_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
