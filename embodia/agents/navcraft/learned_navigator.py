"""NavCraft's learned navigator: a small instruction-conditioned policy trained by imitation on expert
roll-outs of generated episodes, and its evaluation solo vs collaborative, at step and episode level.

Paper: "CoNavBench: Collaborative Long-Horizon Vision-Language Navigation Benchmark" (ICLR 2026,
OpenReview bMrH2PFMsi; NavCraft is its generation platform) (see ``../shared/PAPERS.md``, "Collaborative
VLN"). The paper's headline is a learned navigator's step-level success on CoNavBench episodes (its baseline
a fine-tuned Qwen2.5-VL-3B reading the instruction and the robot's views). Here, on a CPU:

- **Policy** (:class:`NavigatorPolicy`): the instruction's word embeddings, averaged (a bag of words,
  :class:`~.navigator_data.Vocabulary`), scale and shift the first hidden layer of a 3-layer MLP over the
  observation vector (FiLM, Perez et al., "FiLM: Visual Reasoning with a General Conditioning Layer", AAAI
  2018, arXiv 1709.07871: ``h = relu(W x) * (1 + gamma(t)) + beta(t)``); the output is a categorical
  distribution over the 4 discrete actions. What it reads is in :mod:`.navigator_data`.
- **Training** (:func:`train_navigator`): behaviour cloning, the cross-entropy of the expert's action
  (``-log pi(a* | o, t)``) on the DART-noised expert demonstrations, Adam, mini-batches.
- **Evaluation** (:func:`run_with_navigator`): the episode runs in NavCraft's executor
  (:func:`~.executor.execute`) with the navigator driving every robot's moves (the ``navigator`` hook):
  the schedule still says which robot does what and when (picks, drops, handoffs), the navigator gets each
  robot there from its move instruction and observations, acting greedily (the most probable action).
  *Solo*: the mission by the primary robot alone (the episode's solo plan, helpers idle); *collaborative*:
  the episode's schedule, the navigator driving every robot. Step-level success is the fraction of the
  mission's subgoals achieved and episode-level success whether all were (:mod:`.metrics`). A robot that
  the executor makes step aside for another (its traffic rule) is driven there by the geodesic follower;
  those steps are counted (``aside_steps``). An episode is cut off after ``time_factor`` times its planned
  makespan plus ``time_slack`` seconds.
- **Expert** (:class:`ExpertNavigator`): the discrete geodesic follower the policy imitates, through the
  same hook: the upper bound.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

import numpy as np
import torch
from pydantic import Field
from torch import nn

from embodia.agents.navcraft.metrics import mission_success, step_success
from embodia.agents.navcraft.mission import NavCraftEpisode, Step
from embodia.agents.navcraft.navigator_data import (
    STOP,
    Demonstrations,
    ObservationConfig,
    Vocabulary,
    expert_action,
    move_instruction,
    observe,
    velocity_command,
)


@dataclass
class NavigatorConfig:
    """The policy's size and its behaviour-cloning training."""

    hidden: Annotated[int, Field(ge=8)] = 128
    """Width of the MLP's hidden layers."""
    embedding: Annotated[int, Field(ge=4)] = 32
    """Size of a word embedding."""
    instruction_words: Annotated[int, Field(ge=1)] = 24
    """Words of an instruction the policy reads (the rest are cut)."""
    steps: Annotated[int, Field(ge=1)] = 1500
    """Gradient steps."""
    batch_size: Annotated[int, Field(ge=1)] = 256
    """Samples per gradient step."""
    learning_rate: Annotated[float, Field(gt=0)] = 1e-3
    """Adam's step size."""
    weight_decay: Annotated[float, Field(ge=0)] = 1e-5
    """Adam's L2 penalty."""
    seed: int = 0
    """Seed of the initialisation and the mini-batches."""
    threads: Annotated[int, Field(ge=1)] = 1
    """Torch threads while training (a small model: more threads only wait for each other)."""
    observation: ObservationConfig = field(default_factory=ObservationConfig)
    """What the policy observes (must match the demonstrations')."""


class NavigatorPolicy(nn.Module):
    """``pi(a | o, t)``: FiLM-conditioned MLP over the observation ``o``, conditioned on the bag-of-words
    instruction ``t`` (see the module docstring)."""

    def __init__(self, vocabulary_size: int, observation_size: int, config: NavigatorConfig) -> None:
        super().__init__()
        self.words = nn.Embedding(vocabulary_size, config.embedding, padding_idx=0)
        self.first = nn.Linear(observation_size, config.hidden)
        self.film = nn.Linear(config.embedding, 2 * config.hidden)
        self.rest = nn.Sequential(
            nn.Linear(config.hidden + config.embedding, config.hidden),
            nn.ReLU(),
            nn.Linear(config.hidden, config.hidden),
            nn.ReLU(),
            nn.Linear(config.hidden, 4),
        )

    def forward(self, observations: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        """Action logits ``(B, 4)`` for observations ``(B, D)`` and word ids ``(B, L)`` (0 pads)."""
        mask = (tokens > 0).unsqueeze(-1).float()
        text = (self.words(tokens) * mask).sum(1) / mask.sum(1).clamp(min=1.0)
        gamma, beta = self.film(text).chunk(2, dim=-1)
        hidden = torch.relu(self.first(observations)) * (1 + gamma) + beta
        return self.rest(torch.cat([hidden, text], dim=-1))


@dataclass
class TrainedNavigator:
    """A trained policy with its vocabulary and settings, and its training curve."""

    policy: NavigatorPolicy
    vocabulary: Vocabulary
    config: NavigatorConfig
    losses: list[float]
    """Mean cross-entropy per block of ``min(100, steps // 10)`` steps (the last block may be shorter)."""
    train_accuracy: float
    """Fraction of the demonstrations whose expert action the trained policy picks."""

    def encode(self, text: str) -> np.ndarray:
        return self.vocabulary.encode(text, self.config.instruction_words)


def train_navigator(demonstrations: Demonstrations, config: NavigatorConfig) -> TrainedNavigator:
    """Behaviour cloning on ``demonstrations`` (see the module docstring), in ``config.threads`` torch
    threads (the previous number is restored)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(config.threads)
    try:
        return _train(demonstrations, config)
    finally:
        torch.set_num_threads(threads)


def _train(demonstrations: Demonstrations, config: NavigatorConfig) -> TrainedNavigator:
    torch.manual_seed(config.seed)
    rng = np.random.default_rng(config.seed)
    vocabulary = Vocabulary.build(demonstrations.texts)
    by_text = {t: vocabulary.encode(t, config.instruction_words) for t in set(demonstrations.texts)}
    tokens = torch.as_tensor(np.stack([by_text[t] for t in demonstrations.texts]))
    observations = torch.as_tensor(demonstrations.observations).clone()
    if not config.observation.previous_action:  # the one-hot previous action is the last block
        observations[:, -4:] = 0.0
    actions = torch.as_tensor(demonstrations.actions)
    policy = NavigatorPolicy(len(vocabulary), observations.shape[1], config)
    optimiser = torch.optim.Adam(
        policy.parameters(), lr=config.learning_rate, weight_decay=config.weight_decay
    )
    losses, block = [], []
    every = min(100, max(1, config.steps // 10))
    n = len(actions)
    for step in range(config.steps):
        index = torch.as_tensor(rng.integers(n, size=min(config.batch_size, n)))
        loss = nn.functional.cross_entropy(policy(observations[index], tokens[index]), actions[index])
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        block.append(float(loss.detach()))
        if len(block) == every or step == config.steps - 1:
            losses.append(float(np.mean(block)))
            block = []
    policy.eval()
    with torch.no_grad():
        predicted = torch.cat(
            [policy(observations[k : k + 4096], tokens[k : k + 4096]).argmax(-1) for k in range(0, n, 4096)]
        )
    accuracy = float((predicted == actions).float().mean()) if n else math.nan
    return TrainedNavigator(policy, vocabulary, config, losses, accuracy)


# ---------------------------------------------------------------------- the executor's navigator hook
class _Navigator:
    """Drives the robots the executor lets follow (``act(remaining)``: per robot its plan from the current
    step on, ``None`` while it steps aside); stepping aside goes through the geodesic follower."""

    def __init__(self, env) -> None:
        self.env = env
        self.follower = env.make_expert()
        self.previous = [STOP] * env.config.num_robots
        self.aside_steps = 0
        self.moves = 0

    def reset(self, seed: int | None = None) -> None:
        self.follower.reset(seed)

    def act(self, remaining: Sequence[Sequence[Step]] | None) -> np.ndarray:
        env, n = self.env, self.env.config.num_robots
        out = np.zeros((n, 3), np.float32)
        scripted = None
        for k in range(n):
            plan = remaining[k] if remaining is not None else []
            if plan is None:  # stepping aside: the executor's traffic rule, driven by the follower
                if scripted is None:
                    scripted = np.asarray(self.follower.act(None), np.float32).reshape(n, 3)
                out[k] = scripted[k]
                self.aside_steps += 1
            elif plan and plan[0].kind == "move":
                action = self.move_action(k, plan[0], plan[1] if len(plan) > 1 else None)
                self.previous[k] = action
                out[k] = velocity_command(env, action)
                self.moves += 1
            else:  # not moving (acting, waiting, done): the executor sends its no-op
                out[k] = velocity_command(env, STOP)
        return out

    def move_action(self, robot: int, step: Step, following: Step | None) -> int:
        raise NotImplementedError


class LearnedNavigator(_Navigator):
    """The trained policy as the executor's navigator (greedy actions)."""

    def __init__(self, env, trained: TrainedNavigator) -> None:
        super().__init__(env)
        self.trained = trained
        self.scene_ref = env.episode.scene_id
        self._tokens: dict[str, torch.Tensor] = {}

    def move_action(self, robot: int, step: Step, following: Step | None) -> int:
        text = move_instruction(self.env.scene, self.scene_ref, step, following)
        if text not in self._tokens:
            self._tokens[text] = torch.as_tensor(self.trained.encode(text))[None]
        obs = torch.as_tensor(
            observe(self.env, robot, self.previous[robot], self.trained.config.observation)
        )[None]
        with torch.no_grad():
            return int(self.trained.policy(obs, self._tokens[text]).argmax(-1))


class ExpertNavigator(_Navigator):
    """The discrete geodesic follower the policy imitates, as the executor's navigator."""

    def __init__(self, env, arrive_distance: float = 0.3) -> None:
        super().__init__(env)
        self.arrive_distance = arrive_distance

    def move_action(self, robot: int, step: Step, following: Step | None) -> int:
        return expert_action(self.env, robot, step.place.position, self.arrive_distance)


# ---------------------------------------------------------------------- evaluation
@dataclass
class EvaluationConfig:
    """How :func:`run_with_navigator` runs an episode."""

    time_factor: Annotated[float, Field(gt=0)] = 2.0
    """An episode is cut off after this many times its planned makespan ..."""
    time_slack: Annotated[float, Field(ge=0)] = 30.0
    """... plus this many seconds."""
    seed: int = 0
    """Seed of the environment and the executor's traffic rule."""


def run_with_navigator(
    episode: NavCraftEpisode, mode: str, navigator: Any, config: EvaluationConfig | None = None
) -> dict[str, Any]:
    """Execute ``episode`` solo (``mode="solo"``: the solo plan, helpers idle) or collaborative
    (``"collab"``: its schedule) with ``navigator(env)`` driving the robots; a row of metrics."""
    from embodia.agents.navcraft.evaluation import solo_of
    from embodia.agents.navcraft.executor import execute

    config = config or EvaluationConfig()
    if mode not in ("solo", "collab"):
        raise ValueError(f"mode must be 'solo' or 'collab', got {mode!r}")
    schedule = solo_of(episode) if mode == "solo" else episode.schedule
    made: list[_Navigator] = []

    def factory(env):
        made.append(navigator(env))
        return made[-1]

    max_steps = math.ceil((config.time_factor * schedule.makespan + config.time_slack) / 0.5)
    result = execute((episode.mission, schedule), navigator=factory, max_steps=max_steps, seed=config.seed)
    driver = made[0]
    return {
        "episode_id": episode.episode_id,
        "taxonomy": episode.info.get("taxonomy", episode.schedule.collaboration),
        "mode": mode,
        "robots": sum(1 for plan in schedule.plans if plan),
        "success": mission_success(result),
        "step_success": step_success(result),
        "makespan": result.makespan,
        "planned_makespan": schedule.makespan,
        "steps": result.steps,
        "aside_steps": driver.aside_steps,
        "navigated_steps": driver.moves,
    }
