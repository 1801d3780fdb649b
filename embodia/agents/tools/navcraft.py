"""Tools ``navcraft_generate`` and ``navcraft_evaluate``: NavCraft's collaborative multi-robot episodes,
generated (and written as an episode file) or run by an agent and scored.

Paper: "CoNavBench: Collaborative Long-Horizon Vision-Language Navigation Benchmark" (ICLR 2026,
OpenReview bMrH2PFMsi; NavCraft is its generation platform) (see
``../shared/PAPERS.md``, "Collaborative VLN"). ``navcraft_generate`` runs NavCraft's two-stage generator
(:func:`embodia.agents.navcraft.benchmark.generate`: a long-horizon base mission per episode, then the
collaboration schedule that beats the primary robot's solo plan, if any) over the shipped and procedural
scenes (:func:`~embodia.agents.navcraft.benchmark.scene_refs`), and returns the benchmark statistics;
``navcraft_evaluate`` executes episodes - from a file or generated on the spot - with the collaborative
planner, the primary robot alone, or a language-model planner, optionally disturbed (a delayed robot and a
closed door), and returns CoNavBench's metrics per episode and per taxonomy type
(:mod:`embodia.agents.navcraft.evaluation`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field

from embodia.agents.tools.registry import (
    InputPath,
    ModelSpec,
    OutputPath,
    Progress,
    ToolArgumentError,
    no_progress,
    tool,
)

#: most episodes one ``navcraft_generate`` call makes
MAX_EPISODES = 2000
#: most episodes ``navcraft_evaluate`` generates on the spot (write bigger sets with ``navcraft_generate``)
MAX_EVALUATION_EPISODES = 200
#: most episodes the ``llm`` agent runs in one call (one model answer each)
MAX_LLM_EPISODES = 10
#: episodes ``navcraft_evaluate`` runs when no limit is given (the llm agent: MAX_LLM_EPISODES)
DEFAULT_LIMIT = 20
#: episodes listed one by one in ``navcraft_generate``'s answer
LISTED_EPISODES = 20
#: suffixes of an episode file
EPISODE_SUFFIXES = (".json", ".json.gz")

Seed = Annotated[int, Field(ge=0, le=2**32 - 1)]
SceneCount = Annotated[int, Field(ge=1, le=50)]
EpisodesPerScene = Annotated[int, Field(ge=1, le=200)]
Choices = Annotated[list[Annotated[int, Field(ge=1, le=3)]], Field(min_length=1, max_length=3)]
RoomHops = Annotated[int, Field(ge=1, le=6)]


@dataclass
class GenerationSpec:
    """Episodes to generate on the spot (instead of an episode file)."""

    scenes: SceneCount = 1
    """Number of scenes: the shipped ones (apartment_0..2, office_0) first, then procedural apartments and
    offices."""
    episodes_per_scene: EpisodesPerScene = 20
    """Episodes per scene."""
    seed: Seed = 0
    """Generation seed (each episode has its own generator from seed, scene and episode index)."""
    helpers: Choices = field(default_factory=lambda: [1, 2])
    """Helper robots per episode, drawn from this list (each 1-3)."""
    items: Choices = field(default_factory=lambda: [1, 2])
    """Items per mission, drawn from this list (each 1-3)."""
    min_room_hops: RoomHops = 2
    """Fewest room hops on every leg of a mission."""


@dataclass
class GenerateArgs:
    """Arguments of ``navcraft_generate``."""

    scenes: SceneCount = 1
    """Number of scenes: the shipped ones (apartment_0..2, office_0) first, then procedural apartments and
    offices."""
    episodes_per_scene: EpisodesPerScene = 10
    """Episodes per scene (scenes x episodes_per_scene at most 2000)."""
    seed: Seed = 0
    """Generation seed (each episode has its own generator from seed, scene and episode index, so the same
    arguments give the same episodes)."""
    helpers: Choices = field(default_factory=lambda: [1, 2])
    """Helper robots per episode, drawn from this list (each 1-3)."""
    items: Choices = field(default_factory=lambda: [1, 2])
    """Items per mission, drawn from this list (each 1-3)."""
    min_room_hops: RoomHops = 2
    """Fewest room hops on every leg of a mission (start -> pickup -> destination -> ... -> end)."""
    out: OutputPath | None = None
    """Episode file to write (.json or .json.gz: habitat-lab's episode JSON extended for several robots);
    under `embodia mcp`, inside its workspace. An existing file is replaced only if it is a NavCraft episode
    file."""


def _generate(spec: GenerationSpec | GenerateArgs, tool_name: str, most: int) -> Any:
    """Run the generator as ``spec`` says; argument problems as :class:`ToolArgumentError`."""
    from embodia.agents.navcraft.benchmark import generate, scene_refs
    from embodia.agents.navcraft.generate import GeneratorConfig, NavCraftError

    total = spec.scenes * spec.episodes_per_scene
    if total > most:
        raise ToolArgumentError(
            f"{tool_name}: scenes x episodes_per_scene = {total} episodes; at most {most} per call"
        )
    try:
        return generate(
            scene_refs(spec.scenes, spec.seed),
            spec.episodes_per_scene,
            spec.seed,
            helpers=spec.helpers,
            num_items=spec.items,
            config=GeneratorConfig(min_room_hops=spec.min_room_hops),
        )
    except NavCraftError as error:  # e.g. no mission with that many room hops in a small scene
        raise ToolArgumentError(f"{tool_name}: {error}") from None


def _check_output(path: Path) -> None:
    """Refuse to write over anything that is not a NavCraft episode file (embodia's or an earlier one)."""
    from embodia.agents.navcraft.episode_io import NavCraftFileError, load_episodes

    if not path.name.endswith(EPISODE_SUFFIXES):
        raise ToolArgumentError(f"navcraft_generate: out {str(path)!r} must end in .json or .json.gz")
    if path.is_symlink() or path.is_dir():
        raise ToolArgumentError(f"navcraft_generate: out {str(path)!r} is a folder or a symlink; name a file")
    if path.exists():
        try:
            load_episodes(path)
        except NavCraftFileError:
            raise ToolArgumentError(
                f"navcraft_generate: out {str(path)!r} exists and is not a NavCraft episode file; embodia does "
                "not overwrite what it did not write: choose another file"
            ) from None


@tool("navcraft_generate")
def navcraft_generate(args: GenerateArgs, progress: Progress = no_progress) -> dict:
    """Generate NavCraft collaborative multi-robot navigation episodes (long-horizon fetch-and-deliver
    missions with a relay / parallel-fetch / rendezvous-swap / escort schedule that beats the solo plan, or
    solo), optionally written as an episode file; returns the statistics (episodes by taxonomy type, room
    hops, robots, rejected candidates by reason, episodes per second) and the first episodes."""
    from embodia.agents.navcraft.episode_io import save_episodes

    out = Path(args.out) if args.out is not None else None
    if out is not None:
        _check_output(out)
    total = args.scenes * args.episodes_per_scene
    progress(0, total, "generating")
    result = _generate(args, "navcraft_generate", MAX_EPISODES)
    progress(total, total, "generated")
    answer: dict[str, Any] = {"stats": result.stats}
    answer["episodes"] = [
        {
            "episode_id": ep.episode_id,
            "taxonomy": ep.info["taxonomy"],
            "robots": ep.num_robots,
            "makespan": ep.info["makespan"],
            "solo_makespan": ep.info["solo_makespan"],
            "instruction": ep.mission.instruction,
        }
        for ep in result.episodes[:LISTED_EPISODES]
    ]
    answer["episodes_total"] = len(result.episodes)
    answer["episodes_listed"] = len(answer["episodes"])
    if out is not None:
        answer["out"] = str(save_episodes(out, result.episodes))
    return answer


@dataclass
class EvaluateArgs:
    """Arguments of ``navcraft_evaluate``."""

    episodes: InputPath | None = None
    """NavCraft episode file (.json / .json.gz, as navcraft_generate writes); under `embodia mcp`, inside its
    workspace. Give this or ``generate``, not both."""
    generate: GenerationSpec | None = None
    """Generate the episodes on the spot instead (at most 200); give this or ``episodes``, not both."""
    agent: Literal["planner", "solo", "llm"] = "planner"
    """``planner``: the episode's collaborative schedule, executed robot by robot; ``solo``: the primary
    robot alone (helpers idle); ``llm``: a language model allocates the items from the scene graph as text
    (the solo schedule when its answer is unusable; at most 10 episodes per call: each is one model answer,
    about 20 s with SmolLM2 on a CPU)."""
    model: ModelSpec | None = None
    """``llm`` agent only: a known model name (default ``smollm2``, SmolLM2-135M-Instruct, loaded in the
    server), a local model folder / .gguf file, or an allowed endpoint ``http://host:port/v1#model``."""
    max_new_tokens: Annotated[int, Field(ge=8, le=512)] = 96
    """``llm`` agent only: tokens the model may answer with."""
    disturb: bool = False
    """Inject a random delay of one robot (20-60 s) and the closing of a door the plan goes through."""
    replan: bool = True
    """Re-plan on a disturbance, an unreachable target or a handoff window that will be missed."""
    limit: Annotated[int, Field(ge=1, le=200)] | None = None
    """Run only the first this many episodes (default 20; for the llm agent 10, also its most)."""
    seed: Seed = 0
    """Seed of the disturbances and of the environment."""


#: row fields returned per episode (scalars; the per-robot SPL list is summarised by ``spl_mean``)
ROW_FIELDS = (
    "episode_id",
    "taxonomy",
    "agent",
    "disturbed",
    "replan",
    "robots",
    "success",
    "step_success",
    "makespan",
    "planned_makespan",
    "handoffs",
    "handoff_errors",
    "interference",
    "replans",
    "spl_mean",
    "lm_fallback",
    "steps",
)


def _episodes_for(args: EvaluateArgs) -> tuple[list, dict[str, Any]]:
    """The episodes to run and where they came from."""
    from embodia.agents.navcraft.episode_io import NavCraftFileError, load_episodes

    if (args.episodes is None) == (args.generate is None):
        raise ToolArgumentError("navcraft_evaluate: give either episodes (a file) or generate (exactly one)")
    if args.episodes is not None:
        try:
            episodes = load_episodes(args.episodes)
        except NavCraftFileError as error:
            raise ToolArgumentError(
                f"navcraft_evaluate: episodes {args.episodes!r} is not a NavCraft episode file ({error})"
            ) from None
        if not episodes:
            raise ToolArgumentError(f"navcraft_evaluate: episode file {args.episodes!r} has no episodes")
        return episodes, {"episodes_file": args.episodes}
    result = _generate(args.generate, "navcraft_evaluate", MAX_EVALUATION_EPISODES)
    return result.episodes, {"generated": vars(args.generate)}


@tool("navcraft_evaluate")
def navcraft_evaluate(args: EvaluateArgs, progress: Progress = no_progress) -> dict:
    """Run NavCraft episodes (from an episode file, or generated on the spot) with the collaborative planner,
    the primary robot alone, or a language-model planner, optionally with a delayed robot and a closed door,
    and score them as CoNavBench does: mission and step success, makespan, handoff errors, interference,
    re-plans and SPL, per episode and per taxonomy type."""
    from embodia.agents.navcraft.evaluation import RunConfig, run_episodes, summary_rows

    if args.agent != "llm" and args.model is not None:
        raise ToolArgumentError(f"navcraft_evaluate: model is only used by the llm agent, not {args.agent!r}")
    if args.agent == "llm" and args.limit is not None and args.limit > MAX_LLM_EPISODES:
        raise ToolArgumentError(
            f"navcraft_evaluate: the llm agent runs at most {MAX_LLM_EPISODES} episodes per call, got limit "
            f"{args.limit}"
        )
    episodes, source = _episodes_for(args)
    limit = args.limit or (MAX_LLM_EPISODES if args.agent == "llm" else DEFAULT_LIMIT)
    chosen = episodes[:limit]
    config = RunConfig(
        agent=args.agent,
        disturb=args.disturb,
        replan=args.replan,
        lm=args.model or "smollm2",
        max_new_tokens=args.max_new_tokens,
        seed=args.seed,
    )
    progress(0, len(chosen), "running episodes")
    rows = run_episodes(chosen, config, on_row=lambda i, row: progress(i + 1, len(chosen), row["episode_id"]))
    answer: dict[str, Any] = {
        **source,
        "agent": args.agent,
        "disturb": args.disturb,
        "replan": args.replan,
        "episodes_available": len(episodes),
        "episodes_run": len(rows),
        "summary": summary_rows(rows),
        "rows": [{key: row.get(key) for key in ROW_FIELDS} for row in rows],
    }
    if args.agent == "llm":
        answer["model"] = config.lm
    return answer
