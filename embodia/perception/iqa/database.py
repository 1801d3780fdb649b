"""The Embodied-IQA database: reference observations x distortions, scored by what they do to an agent.

Li et al., "Image Quality Assessment for Embodied AI", arXiv:2505.16815 (ICLR 2026): a quality score for
embodied use is the damage a distortion does along the pipeline perception -> decision -> execution, measured
as the difference between the agent's output on the reference and on the distorted image. Here the agent is
an embodia pixel policy in simulation and, for a reference observation ``o`` with image ``x = o[image_key]``
and its distorted version ``x' = D_{c,l}(x)`` (:mod:`.distortions`):

- perception: ``s_P = 1 - cos(E(x), E(x'))`` with ``E`` the pooled vector of a frozen image encoder;
- cognition: ``s_C``, how far answers to questions about the image move from the answers about the reference
  (:mod:`.cognition`; filled in after the build by :func:`~.cognition.add_cognition`, NaN until then);
- decision: ``s_D = || pi(o) - pi(o') ||_2``, the first action of the policy on the clean and on the
  distorted observation (``o'`` is ``o`` with ``image_key`` replaced by ``x'``);
- execution: the simulator is restored to the reference state (``set_state``) and the policy runs up to
  ``horizon`` steps with every observation's image distorted (class ``c``, level ``l``, a fresh seed per
  step, shared by the levels of a class); ``S`` = success rate over ``rollouts`` such rollouts, ``S_0`` the
  same with clean images (paired: the same policy seeds), ``s_E = S_0 - S``. Because a success rate over a few rollouts is coarse, the progress
  ``p = success * (1 - (t - 1) / horizon)`` (``t``: the step at which success came; 1 at the first step, 0
  on failure) is recorded too and ``s_E' = p_0 - p`` is the column ``progress_drop``.

Only ``image_key`` is distorted; the goal image of goal-conditioned tasks (``goal_rgb``) stays clean, as a
goal given to the robot is not seen through its camera.

Storage: a zarr v3 group whose root attributes hold ``embodia_iqa`` (the format version), ``config`` and
``class_names``; one array per :class:`IQADatabase` array field. Saving over an earlier database replaces it;
a folder holding anything else is refused, never deleted.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np
import torch

from embodia.core.chunks import ActionChunker
from embodia.core.errors import EmbodiaError
from embodia.perception.array_groups import corrupt, read_group, write_group
from embodia.perception.encoders import ImageEncoder, prepare
from embodia.perception.iqa.distortions import CLASS_NAMES, LEVELS, check_distortion, distort, image_seed

FORMAT_VERSION = 2
MARKER = "embodia_iqa"
SCORES = ("perception", "cognition", "decision", "execution", "progress_drop")
"""The damage scores (larger = the distortion hurts more), one per pipeline level plus the finer execution."""


Observer = Callable[[np.ndarray, dict], None]
"""``observe(image, info)``: a clean frame of a reference episode and the ``info`` of the step that made it."""


class IQADatabaseError(EmbodiaError):
    """A database that cannot be built, or a path that is not (or no longer) an Embodied-IQA store."""


@dataclass
class IQADatabaseConfig:
    """What to render, distort and score (saved with the database)."""

    env_id: str = "embodia/Visual-CubeSingle-v0"
    """The pixel environment (its ``unwrapped`` has ``get_state`` / ``set_state``; ``info["success"]``)."""
    env_kwargs: dict[str, Any] = field(default_factory=lambda: {"shadow_size": 0, "multisamples": 0})
    """Keyword arguments of ``embodia.make`` (the defaults render 3x faster)."""
    image_key: str = "rgb"
    """The observation key that is distorted; every other key (e.g. the goal image) stays clean."""
    references: int = 20
    """How many reference states (observation + simulator state) are scored."""
    reference_episodes: int = 5
    """Episodes run with clean observations to collect candidate reference states, reset with the seeds
    ``seed, seed + 1, ...`` (a policy trained on demonstrations recorded from the same seeds has seen these
    layouts)."""
    reference_steps: int = 60
    """The most steps of one reference episode (it also ends at success, termination or truncation)."""
    snapshots: int = 6
    """Candidate states per reference episode, at evenly spread steps; ``references`` are drawn from them."""
    successful_only: bool = False
    """Draw references only from reference episodes that the policy solved (with a deterministic policy the
    clean rollout from such a state succeeds, so the execution score measures what the distortion breaks)."""
    classes: tuple[str, ...] = CLASS_NAMES
    """Distortion types (names of :data:`~.distortions.DISTORTIONS`: 30 in 7 families)."""
    levels: tuple[int, ...] = LEVELS
    """Distortion levels, each in 1..5."""
    rollouts: int = 2
    """Execution rollouts per distorted reference (and clean rollouts per reference); 0 skips execution."""
    horizon: int = 60
    """The most steps of one execution rollout from the reference state."""
    seed: int = 0
    """Seeds the reference episodes, the choice of references, every distortion and the policy resets."""


@dataclass
class IQADatabase:
    """``M = R x len(classes) x len(levels)`` distorted images of ``R`` references, with their scores."""

    references: np.ndarray
    """(R, H, W, 3) uint8 clean reference images."""
    images: np.ndarray
    """(M, H, W, 3) uint8 distorted images (what the agent saw first in execution rollout 0)."""
    ref_index: np.ndarray
    """(M,) int64 row of ``references`` each image was made from."""
    class_index: np.ndarray
    """(M,) int64 index into ``class_names``."""
    level: np.ndarray
    """(M,) int64 distortion level."""
    perception: np.ndarray
    """(M,) float32 ``1 - cos`` of the encoder's pooled vectors."""
    cognition: np.ndarray
    """(M,) float32 the answers' departure from the reference's answers (:mod:`.cognition`; NaN: not scored)."""
    decision: np.ndarray
    """(M,) float32 L2 distance of the first actions."""
    execution: np.ndarray
    """(M,) float32 clean minus distorted success rate (NaN when ``rollouts`` is 0)."""
    progress_drop: np.ndarray
    """(M,) float32 clean minus distorted progress (see the module docstring)."""
    success: np.ndarray
    """(M,) float32 success rate with distorted images."""
    clean_success: np.ndarray
    """(M,) float32 success rate with clean images from the same reference."""
    progress: np.ndarray
    """(M,) float32 mean progress with distorted images."""
    clean_progress: np.ndarray
    """(M,) float32 mean progress with clean images."""
    reference_states: np.ndarray
    """(R, S) float64 simulator states of the references."""
    reference_seeds: np.ndarray
    """(R,) int64 episode seed of each reference (``reset(seed)`` restores its goal before ``set_state``)."""
    reference_steps: np.ndarray
    """(R,) int64 step of the reference episode at which each reference was taken."""
    class_names: tuple[str, ...]
    config: IQADatabaseConfig

    def __len__(self) -> int:
        return len(self.images)

    def reference_images(self, indices: np.ndarray | None = None) -> np.ndarray:
        """The clean reference of every image (or of ``indices``): (M, H, W, 3) uint8."""
        rows = self.ref_index if indices is None else self.ref_index[np.asarray(indices)]
        return self.references[rows]


_ARRAYS = tuple(f.name for f in fields(IQADatabase) if f.name not in ("class_names", "config"))


def check_config(config: IQADatabaseConfig) -> None:
    """Raise :class:`IQADatabaseError` (one line) for an unusable configuration."""
    for name in ("references", "reference_episodes", "reference_steps", "snapshots", "horizon"):
        if int(getattr(config, name)) < 1:
            raise IQADatabaseError(f"IQADatabaseConfig.{name} must be >= 1, got {getattr(config, name)}")
    if int(config.rollouts) < 0:
        raise IQADatabaseError(
            f"IQADatabaseConfig.rollouts must be >= 0 (0 skips execution), got {config.rollouts}"
        )
    if not config.classes or not config.levels:
        raise IQADatabaseError("IQADatabaseConfig.classes and .levels must not be empty")
    for name in config.classes:
        check_distortion(name, 1)
    for level in config.levels:
        check_distortion(config.classes[0], level)
        if int(level) == 0:
            raise IQADatabaseError("IQADatabaseConfig.levels must be in 1..5 (0 is the reference itself)")


def _first_action(policy: Any, obs: dict, seed: int, action_ndim: int) -> np.ndarray:
    """``policy.act(obs)`` right after ``reset(seed)``; of a chunk, its first action."""
    policy.reset(seed=seed)
    out = np.asarray(policy.act(obs), dtype=np.float64)
    if out.ndim == action_ndim + 1:
        out = out[0]
    return out.reshape(-1)


def _collect_references(
    env: Any, policy: Any, config: IQADatabaseConfig, action_shape: tuple, observe: Observer | None = None
) -> list[dict]:
    pool = []
    for episode in range(config.reference_episodes):
        episode_seed = config.seed + episode
        obs, _ = env.reset(seed=episode_seed)
        if config.image_key not in obs:
            raise IQADatabaseError(
                f"{config.env_id} observations have no {config.image_key!r} (keys: {', '.join(obs)}); "
                "set IQADatabaseConfig.image_key to an image key"
            )
        policy.reset(seed=episode_seed)
        chunker = ActionChunker(policy, action_shape)
        records = [(0, env.unwrapped.get_state(), obs)]
        solved = False
        for step in range(config.reference_steps):
            obs, _, terminated, truncated, info = env.step(chunker.next_action(obs))
            if observe is not None:
                observe(obs[config.image_key], info)
            if info.get("success") or terminated or truncated:
                solved = bool(info.get("success"))
                break  # a state at or after success would score nothing
            records.append((step + 1, env.unwrapped.get_state(), obs))
        if config.successful_only and not solved:
            continue
        picks = np.unique(np.linspace(0, len(records) - 1, config.snapshots).round().astype(int))
        pool += [
            {"seed": episode_seed, "step": records[i][0], "state": records[i][1], "obs": records[i][2]}
            for i in picks
        ]
    if len(pool) < config.references:
        raise IQADatabaseError(
            f"only {len(pool)} candidate reference states from {config.reference_episodes} episodes"
            f"{' (solved ones only)' if config.successful_only else ''}, {config.references} wanted; raise "
            "reference_episodes or snapshots"
        )
    chosen = np.random.default_rng(image_seed(config.seed, 2)).choice(
        len(pool), config.references, replace=False
    )
    return [pool[i] for i in sorted(chosen)]


def _rollout(
    env: Any,
    policy: Any,
    ref: dict,
    config: IQADatabaseConfig,
    action_shape: tuple,
    policy_seed: int,
    distortion: tuple[str, int, tuple[int, ...]] | None,
) -> tuple[float, float]:
    """One execution rollout from ``ref``'s state: (success 0/1, progress)."""
    env.reset(seed=ref["seed"])
    env.unwrapped.set_state(ref["state"])
    policy.reset(seed=policy_seed)
    chunker = ActionChunker(policy, action_shape)
    obs = {key: np.array(value) for key, value in ref["obs"].items()}
    for step in range(config.horizon):
        seen = obs
        if distortion is not None:
            name, level, keys = distortion
            seen = {
                **obs,
                config.image_key: distort(obs[config.image_key], name, level, image_seed(*keys, step)),
            }
        obs, _, terminated, truncated, info = env.step(chunker.next_action(seen))
        if info.get("success"):
            return 1.0, 1.0 - step / config.horizon
        if terminated or truncated:
            break
    return 0.0, 0.0


@torch.no_grad()
def _pooled(encoder: ImageEncoder, images: np.ndarray) -> torch.Tensor:
    return torch.cat(
        [encoder(prepare(images[i : i + 64], encoder)).pooled for i in range(0, len(images), 64)]
    )


def build_database(
    config: IQADatabaseConfig,
    policy: Any,
    encoder: ImageEncoder,
    progress: bool = False,
    workers: int = 1,
    ray_address: str | None = None,
    observe: Observer | None = None,
) -> IQADatabase:
    """Render references with ``policy``, distort them and score every distortion (module docstring).

    ``policy``: an embodia policy (``reset(seed)``, ``act(obs)``; chunks are executed by
    :class:`~embodia.core.chunks.ActionChunker`) reading the pixel observations; ``encoder``: a frozen
    :class:`~embodia.perception.encoders.ImageEncoder` for the perception score. ``observe(image, info)`` is
    called with every clean frame of the reference episodes and the step's ``info`` (the simulator's ground
    truth: what :mod:`.cognition` trains its question answerer on). ``progress`` prints one
    line per reference to stderr. Cost: ``R * (len(classes) * len(levels) + 1) * rollouts * horizon`` steps;
    with ``workers > 1`` (or a Ray address) the references are scored in parallel on Ray
    (:func:`embodia.runner.parallel.map_tasks`, one environment per task), with the same result.
    """
    from embodia import make
    from embodia.runner.parallel import map_tasks, wants_ray

    check_config(config)
    env = make(config.env_id, **config.env_kwargs)
    action_shape = tuple(env.action_space.shape)
    start = time.perf_counter()
    rows: dict[str, list] = {name: [] for name in _ARRAYS}

    def add(r: int, scored: dict[str, list]) -> None:
        if progress:
            print(
                f"iqa database: reference {r + 1}/{len(refs)} done, {time.perf_counter() - start:.1f}s",
                file=sys.stderr,
                flush=True,
            )

    try:
        refs = _collect_references(env, policy, config, action_shape, observe)
        if wants_ray(workers, ray_address):
            arguments = [(config, policy, encoder, ref, r) for r, ref in enumerate(refs)]
            results = map_tasks(score_reference_task, arguments, workers, ray_address, on_result=add)
        else:
            results = []
            for r, ref in enumerate(refs):
                results.append(score_reference(env, config, policy, encoder, ref, r))
                add(r, results[-1])
    finally:
        env.close()
    for scored in results:  # in reference order, wherever each was scored
        for name, values in scored.items():
            rows[name].extend(values)
    return _assemble(rows, config)


def score_reference_task(
    config: IQADatabaseConfig, policy: Any, encoder: ImageEncoder, ref: dict, r: int
) -> dict:
    """:func:`score_reference` in an environment of its own (a Ray task)."""
    from embodia import make

    torch.set_num_threads(1)
    env = make(config.env_id, **config.env_kwargs)
    try:
        return score_reference(env, config, policy, encoder, ref, r)
    finally:
        env.close()


def score_reference(
    env: Any, config: IQADatabaseConfig, policy: Any, encoder: ImageEncoder, ref: dict, r: int
) -> dict[str, list]:
    """Every distortion of reference ``r``, scored at the three levels: the database rows of one reference.

    Deterministic given ``config.seed`` and ``r`` (rollouts restore the reference state exactly), so a run
    on Ray gives the same database as a serial one.
    """
    action_shape = tuple(env.action_space.shape)
    pairs = [(c, int(level)) for c in config.classes for level in config.levels]
    rows: dict[str, list] = {name: [] for name in _ARRAYS}
    clean = ref["obs"][config.image_key]
    # the seed leaves the level out: one reference's levels of a class share noise, direction and rectangles
    keys = [(config.seed, 3, r, CLASS_NAMES.index(c)) for c, _ in pairs]
    images = np.stack([distort(clean, c, level, image_seed(*k, 0, 0)) for (c, level), k in zip(pairs, keys)])
    vectors = _pooled(encoder, np.concatenate([clean[None], images]))
    perception = 1.0 - torch.nn.functional.cosine_similarity(vectors[:1], vectors[1:], dim=-1)
    seed = image_seed(config.seed, 4, r)
    clean_action = _first_action(policy, ref["obs"], seed, len(action_shape))
    decision = [
        np.linalg.norm(
            _first_action(policy, {**ref["obs"], config.image_key: image}, seed, len(action_shape))
            - clean_action
        )
        for image in images
    ]
    policy_seeds = [image_seed(config.seed, 5, r, k) for k in range(config.rollouts)]
    base = np.array([_rollout(env, policy, ref, config, action_shape, s, None) for s in policy_seeds])
    base = base.mean(axis=0) if len(base) else np.full(2, np.nan)
    for (c, level), k, image, p, d in zip(pairs, keys, images, perception.tolist(), decision):
        runs = np.array(
            [
                _rollout(env, policy, ref, config, action_shape, s, (c, level, (*k, j)))
                for j, s in enumerate(policy_seeds)
            ]
        )
        success, prog = runs.mean(axis=0) if len(runs) else (np.nan, np.nan)
        values = {
            "images": image,
            "ref_index": r,
            "class_index": config.classes.index(c),
            "level": level,
            "perception": p,
            "cognition": np.nan,
            "decision": d,
            "execution": base[0] - success,
            "progress_drop": base[1] - prog,
            "success": success,
            "clean_success": base[0],
            "progress": prog,
            "clean_progress": base[1],
        }
        for name, value in values.items():
            rows[name].append(value)
    rows["references"].append(clean)
    rows["reference_states"].append(ref["state"])
    rows["reference_seeds"].append(ref["seed"])
    rows["reference_steps"].append(ref["step"])
    return rows


_DTYPES = {"references": np.uint8, "images": np.uint8, "reference_states": np.float64}


def _assemble(rows: dict[str, list], config: IQADatabaseConfig) -> IQADatabase:
    arrays = {}
    for name in _ARRAYS:
        dtype = _DTYPES.get(
            name,
            np.int64
            if name in ("ref_index", "class_index", "level", "reference_seeds", "reference_steps")
            else np.float32,
        )
        arrays[name] = np.asarray(rows[name], dtype=dtype)
    return IQADatabase(**arrays, class_names=tuple(config.classes), config=config)


# ------------------------------------------------------------------ storage


def save_database(db: IQADatabase, path: str | Path) -> Path:
    """Write ``db`` to the zarr v3 group at ``path`` (created; an earlier IQA database there is replaced)."""
    config = asdict(db.config)
    config["classes"], config["levels"] = list(config["classes"]), list(config["levels"])
    return write_group(
        path,
        {name: getattr(db, name) for name in _ARRAYS},
        marker=MARKER,
        version=FORMAT_VERSION,
        attrs={"config": config, "class_names": list(db.class_names)},
        what="Embodied-IQA database",
        error=IQADatabaseError,
        chunk_rows={"images": 256, "references": 256},
    )


def load_database(path: str | Path) -> IQADatabase:
    """Read the database written by :func:`save_database` at ``path``."""
    path = Path(path)
    arrays, attrs = read_group(
        path,
        _ARRAYS,
        marker=MARKER,
        version=FORMAT_VERSION,
        what="Embodied-IQA database",
        writer="save_database",
        error=IQADatabaseError,
    )
    try:
        config = dict(attrs["config"])
        config["classes"], config["levels"] = tuple(config["classes"]), tuple(config["levels"])
        config = IQADatabaseConfig(**config)
        class_names = tuple(attrs["class_names"])
    except (KeyError, TypeError, ValueError) as cause:
        raise corrupt(IQADatabaseError, "Embodied-IQA database", path, cause) from None
    m = len(arrays["images"])
    bad = [
        n
        for n in _ARRAYS
        if n not in ("references", "reference_states", "reference_seeds", "reference_steps")
        and len(arrays[n]) != m
    ]
    if bad or len(arrays["reference_states"]) != len(arrays["references"]):
        raise IQADatabaseError(
            f"IQA database {str(path)!r} is corrupt: arrays {', '.join(bad) or 'reference_states'} disagree in "
            "length with the images; rebuild it"
        )
    return IQADatabase(**arrays, class_names=class_names, config=config)
