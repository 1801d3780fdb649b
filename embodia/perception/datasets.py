"""Labelled frames rendered from embodia's pixel cube task: RGB with aligned depth, segmentation and state.

The frames train the vision teachers of VER (:mod:`embodia.perception.teachers`). A noisy scripted expert
(``env.unwrapped.make_expert(noise)``, ogbench's Markov cube oracle under embodia's planner) plays
``episodes`` seeded episodes of ``embodia/Visual-CubeSingle-v0``; every ``every``-th step is kept with:

- ``rgb``: the environment's 64x64 observation, exactly (the pixel camera ``front_pixels``);
- ``depth`` and ``segmentation``: MuJoCo depth and segmentation renders of the same camera, size and
  kinematic state. ogbench renders the observation inside ``step`` before embodia refreshes the kinematics
  (one substep later), so a render after ``step`` would differ on the moving arm; instead the raw env's
  ``get_pixel_observation`` is wrapped to render depth and segmentation right after the observation, in
  the same scene. ``mujoco.Renderer`` returns depth in metres, as the distance along the optical axis
  (planar depth, not ray length); pixels that see no geometry (~1 %, beyond the 2 m floor) hold the far
  plane and are clipped to :data:`MAX_DEPTH`;
- the state: cube position, effector position, gripper opening (``raw.compute_ob_info()``) and a phase.

Segmentation classes (:data:`CLASSES`), mapped from MuJoCo geom names: ``floor`` -> 1 (table/floor);
geoms whose name starts with ``ur5e/`` (the UR5e arm and its Robotiq gripper) -> 2; ``object_*`` (the
cube) -> 3; everything else (the invisible goal cube ``target_object_*``, walls, sites, nothing) -> 0.
The pixel task draws the arm at alpha 0.1 and the gripper pads at 0.5 (ogbench's ``pixel_transparent_arm``):
class 2 marks where the arm's geometry is, which the RGB shows only faintly; depth is the nearest surface
MuJoCo's depth buffer holds there.

Phase rule (from ``compute_ob_info()`` and ``info["success"]`` after the step), with d = |cube - effector|
and z the cube's height (it rests at 0.02 m):

    3 place/done   if the task succeeds (cube within 4 cm of its goal; the expert releases and backs off)
    2 carry        elif z > 0.04 and d < 0.05      (cube lifted, in the gripper)
    1 grasp/lift   elif d < 0.05                   (gripper at the cube on the table: descend, close, lift)
    0 reach        otherwise                       (arm away from the cube, also after a drop)

Frames are stored as a zarr v3 group (:func:`save_frames` / :func:`load_frames`), one array per field,
the root attribute ``embodia_frames`` holding the format version and the config.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import mujoco
import numpy as np

from embodia.core.errors import EmbodiaError
from embodia.perception.array_groups import corrupt, read_group, write_group

FORMAT_VERSION = 1
MARKER = "embodia_frames"
#: Segmentation class names, by label.
CLASSES = ("background", "floor", "robot", "cube")
#: Depth (metres) that pixels seeing nothing are clipped to (the scene is within ~1.5 m of the camera).
MAX_DEPTH = 5.0
PHASES = ("reach", "grasp", "carry", "place")
_NEAR, _LIFTED = 0.05, 0.04
_ARRAYS = (
    "rgb",
    "depth",
    "segmentation",
    "cube_pos",
    "effector_pos",
    "gripper_opening",
    "phase",
    "episode",
    "step",
)


class FrameStoreError(EmbodiaError):
    """A frame store path that is missing, not a frame store, corrupt, or of another format version."""


@dataclass
class FrameDatasetConfig:
    """What :func:`render_labelled_frames` renders."""

    env_id: str = "embodia/Visual-CubeSingle-v0"
    """A pixel cube task (64x64 ``rgb`` observations, a scripted expert, one cube ``block_0``)."""
    env_kwargs: dict[str, Any] = field(default_factory=lambda: {"shadow_size": 0, "multisamples": 0})
    """Keyword arguments of ``embodia.make`` (no shadows, no anti-aliasing: ~3x faster rendering)."""
    episodes: int = 40
    """Episodes, reset with seeds ``seed, seed + 1, ...``."""
    max_steps: int = 80
    """Environment steps per episode, also past success (fewer if it is truncated); the reset frame is step 0."""
    noise: float = 0.2
    """Std of the Gaussian noise the expert adds to its actions (varied arm and cube states)."""
    every: int = 2
    """Keep every ``every``-th step (0, every, 2 every, ...)."""
    seed: int = 0
    """Seed of the first episode (environment reset and expert)."""


@dataclass
class LabelledFrames:
    """N labelled frames (see the module docstring for the labels)."""

    rgb: np.ndarray
    """(N, 64, 64, 3) uint8: the environment's ``rgb`` observation."""
    depth: np.ndarray
    """(N, 64, 64) float32: planar depth in metres, clipped to ``MAX_DEPTH``."""
    segmentation: np.ndarray
    """(N, 64, 64) uint8: 0 background/other, 1 floor, 2 robot arm + gripper, 3 cube."""
    cube_pos: np.ndarray
    """(N, 3) float32: the cube's position (metres, world frame)."""
    effector_pos: np.ndarray
    """(N, 3) float32: the gripper's position (metres, world frame)."""
    gripper_opening: np.ndarray
    """(N,) float32: ogbench's gripper opening (0 open .. ~0.8 closed)."""
    phase: np.ndarray
    """(N,) int8: 0 reach, 1 grasp/lift, 2 carry, 3 place/done."""
    episode: np.ndarray
    """(N,) int32: the episode index (0-based)."""
    step: np.ndarray
    """(N,) int32: the step within the episode (0 = reset frame)."""
    config: FrameDatasetConfig = field(default_factory=FrameDatasetConfig)
    """How the frames were rendered."""

    def __len__(self) -> int:
        return len(self.rgb)

    def subset(self, index: np.ndarray | slice) -> LabelledFrames:
        """The frames at ``index`` (a slice or an index array)."""
        return LabelledFrames(**{name: getattr(self, name)[index] for name in _ARRAYS}, config=self.config)


def segmentation_lookup(model: mujoco.MjModel) -> np.ndarray:
    """Class label of every geom id (see the module docstring)."""
    lookup = np.zeros(model.ngeom, dtype=np.uint8)
    for g in range(model.ngeom):
        name = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_GEOM, g) or ""
        if name == "floor":
            lookup[g] = 1
        elif name.startswith("ur5e/"):
            lookup[g] = 2
        elif name.startswith("object_"):
            lookup[g] = 3
    return lookup


def phase_label(info: dict[str, np.ndarray], success: bool) -> int:
    """The task phase of one state (the rule in the module docstring)."""
    cube = np.asarray(info["privileged/block_0_pos"], dtype=np.float64)
    effector = np.asarray(info["proprio/effector_pos"], dtype=np.float64)
    distance = float(np.linalg.norm(cube - effector))
    if success:
        return 3
    if distance < _NEAR:
        return 2 if cube[2] > _LIFTED else 1
    return 0


class _Capture:
    """Wraps ``raw.get_pixel_observation`` to render depth and segmentation in the observation's scene."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw
        self.original = raw.get_pixel_observation
        self.enabled = False
        self.rgb = self.depth = self.segmentation = None
        raw.get_pixel_observation = self

    def __call__(self) -> np.ndarray:
        frame = self.original()
        if self.enabled:
            self.rgb = np.array(frame, dtype=np.uint8)
            self.depth = np.array(self.raw.render(depth=True), dtype=np.float32)
            self.segmentation = np.array(self.raw.render(segmentation=True)[..., :2])
        return frame

    def restore(self) -> None:
        if self.raw.__dict__.get("get_pixel_observation") is self:
            del self.raw.get_pixel_observation


def render_labelled_frames(
    config: FrameDatasetConfig | None = None, progress: bool = False
) -> LabelledFrames:
    """Play ``config.episodes`` noisy expert episodes and keep every ``config.every``-th labelled frame."""
    import embodia

    config = config or FrameDatasetConfig()
    if config.episodes < 1 or config.max_steps < 0 or config.every < 1 or config.noise < 0:
        raise ValueError(
            f"frame dataset needs episodes >= 1, max_steps >= 0, every >= 1 and noise >= 0; got {config}"
        )
    env = embodia.make(config.env_id, **config.env_kwargs)
    raw = env.unwrapped.raw
    capture = _Capture(raw)
    columns: dict[str, list] = {name: [] for name in _ARRAYS}
    start = time.perf_counter()
    try:
        expert = env.unwrapped.make_expert(noise=config.noise)
        lookup = None
        for episode in range(config.episodes):
            seed = config.seed + episode
            capture.enabled = True
            obs, _ = env.reset(seed=seed)
            expert.reset(seed=seed)
            if lookup is None:
                lookup = segmentation_lookup(raw._model)
            success = False
            for step in range(config.max_steps + 1):
                if step > 0:
                    capture.enabled = step % config.every == 0
                    # ogbench terminates at success; stepping on is well defined (the expert holds still)
                    # and gives the place/done phase as many frames as the others.
                    obs, _, _, truncated, info = env.step(expert.act(obs))
                    success = bool(info["success"])
                if step % config.every == 0:
                    if not np.array_equal(capture.rgb, obs["rgb"]):
                        raise RuntimeError("the captured frame is not the observation; ogbench changed?")
                    _append(columns, capture, lookup, raw.compute_ob_info(), obs, success, episode, step)
                if step > 0 and truncated:
                    break
            if progress:
                n = len(columns["rgb"])
                rate = n / (time.perf_counter() - start)
                print(
                    f"episode {episode + 1}/{config.episodes}: {n} frames ({rate:.1f} frames/s)", flush=True
                )
    finally:
        capture.restore()
        env.close()
    arrays = {name: np.stack(values) for name, values in columns.items()}
    return LabelledFrames(**arrays, config=config)


def _append(columns, capture, lookup, info, obs, success, episode, step) -> None:
    seg = capture.segmentation
    ids, types = seg[..., 0], seg[..., 1]
    geom = (types == int(mujoco.mjtObj.mjOBJ_GEOM)) & (ids >= 0) & (ids < len(lookup))
    labels = np.where(geom, lookup[np.clip(ids, 0, len(lookup) - 1)], 0).astype(np.uint8)
    columns["rgb"].append(np.array(obs["rgb"], dtype=np.uint8))
    columns["depth"].append(np.minimum(capture.depth, MAX_DEPTH).astype(np.float32))
    columns["segmentation"].append(labels)
    columns["cube_pos"].append(np.asarray(info["privileged/block_0_pos"], dtype=np.float32))
    columns["effector_pos"].append(np.asarray(info["proprio/effector_pos"], dtype=np.float32))
    columns["gripper_opening"].append(np.float32(info["proprio/gripper_opening"][0]))
    columns["phase"].append(np.int8(phase_label(info, success)))
    columns["episode"].append(np.int32(episode))
    columns["step"].append(np.int32(step))


# ---------------------------------------------------------------------------------------------- storage
def save_frames(frames: LabelledFrames, path: str | Path) -> Path:
    """Write ``frames`` to the zarr group at ``path`` (created; an earlier frame store there is replaced).

    Raises:
        FrameStoreError: ``path`` is a file, or a folder holding something other than a frame store.
    """
    return write_group(
        path,
        {name: getattr(frames, name) for name in _ARRAYS},
        marker=MARKER,
        version=FORMAT_VERSION,
        attrs={"config": asdict(frames.config)},
        what="frame store",
        error=FrameStoreError,
    )


def load_frames(path: str | Path) -> LabelledFrames:
    """Read the frame store at ``path``.

    Raises:
        FrameStoreError: no frame store there, another format version, or missing / corrupt arrays.
    """
    arrays, attrs = read_group(
        path,
        _ARRAYS,
        marker=MARKER,
        version=FORMAT_VERSION,
        what="frame store",
        writer="save_frames",
        error=FrameStoreError,
    )
    try:
        known = {f.name for f in fields(FrameDatasetConfig)}
        config = FrameDatasetConfig(**{k: v for k, v in dict(attrs.get("config", {})).items() if k in known})
    except (TypeError, ValueError) as cause:
        raise corrupt(FrameStoreError, "frame store", Path(path), cause) from None
    n = len(arrays["rgb"])
    if any(len(a) != n for a in arrays.values()):
        raise FrameStoreError(f"frame store {str(path)!r} is corrupt: its arrays differ in length")
    return LabelledFrames(**arrays, config=config)
