"""Simulate and render MOVi-style videos: RGB, metric depth and instance masks per frame.

Video i of ``render_videos(config, count, seed)`` draws its scene (:func:`.scene.sample_scene`) from
``np.random.default_rng([seed, i])`` alone, so it is the same however many videos are rendered. The
scene's MJCF is compiled, the objects get their start velocities, and frame t (t = 0..T-1) is rendered
after t * ``steps_per_frame`` calls of ``mujoco.mj_step``. Each frame is rendered three times from one
``mjv_updateScene``: colour, depth (metres along the optical axis) and segmentation; a segmentation
pixel showing geom ``geom{k}`` gets instance id k, every other pixel (floor, wall, sky) 0.

One ``mujoco.Renderer`` per image size is kept for the process: every scene of a size shares the
asset, ``visual`` and ``statistic`` blocks (:func:`.scene.header_mjcf`), so the renderer's OpenGL
context (textures, depth range) built from an empty scene fits them all, and each video's scene is
written into the renderer's ``MjvScene`` with ``mujoco.mjv_updateScene`` for that video's model.
``MUJOCO_GL`` defaults to ``egl`` (set when :mod:`embodia` is imported).
"""

from __future__ import annotations

import atexit
from dataclasses import dataclass

import mujoco
import numpy as np

from embodia.core.errors import EmbodiaError
from embodia.perception.video.scene import (
    CAMERA_DISTANCE,
    CAMERA_LOOKAT,
    SHAPES,
    SceneSpec,
    sample_scene,
    scene_mjcf,
)


class VideoConfigError(EmbodiaError, ValueError):
    """A video configuration that cannot be rendered (unknown preset or shape, bad counts)."""


@dataclass
class VideoConfig:
    size: int = 64
    """Image height and width (pixels)."""
    frames: int = 12
    """Frames per video T."""
    min_objects: int = 3
    """Fewest objects in a video (K is uniform in [min_objects, max_objects])."""
    max_objects: int = 6
    """Most objects in a video (instance ids are 1..K <= max_objects)."""
    steps_per_frame: int = 25
    """Physics steps between frames (2 ms timestep: 25 steps = 50 ms, 20 frames per second)."""
    camera_motion: bool = False
    """Whether the camera orbits the arena slowly (1.5-3 degrees of azimuth per frame)."""
    shapes: tuple[str, ...] = SHAPES
    """Object shapes drawn from (MuJoCo geom types: box, sphere, cylinder, capsule)."""

    def check(self) -> VideoConfig:
        """Return ``self``; raise :class:`VideoConfigError` if it cannot be rendered."""
        if self.size < 8 or self.frames < 1 or self.steps_per_frame < 1:
            raise VideoConfigError(
                f"video config needs size >= 8, frames >= 1 and steps_per_frame >= 1, got size={self.size}, "
                f"frames={self.frames}, steps_per_frame={self.steps_per_frame}"
            )
        if not 1 <= self.min_objects <= self.max_objects <= 255:
            raise VideoConfigError(
                f"video config needs 1 <= min_objects <= max_objects <= 255, got {self.min_objects}, "
                f"{self.max_objects}"
            )
        bad = [s for s in self.shapes if s not in SHAPES]
        if bad or not self.shapes:
            raise VideoConfigError(f"video shapes must be a non-empty subset of {SHAPES}, got {self.shapes}")
        return self


@dataclass
class VideoBatch:
    rgb: np.ndarray
    """(N, T, H, W, 3) uint8 colour frames."""
    depth: np.ndarray
    """(N, T, H, W) float32 depth in metres (distance along the camera's optical axis)."""
    masks: np.ndarray
    """(N, T, H, W) uint8 instance ids: 0 = background (floor, wall), 1..K = objects, fixed across frames."""
    config: VideoConfig
    """The configuration the videos were rendered with."""
    seed: int
    """The seed: video i was drawn from ``np.random.default_rng([seed, i])``."""

    def __len__(self) -> int:
        return int(self.rgb.shape[0])


PRESETS: dict[str, VideoConfig] = {
    "tiny": VideoConfig(size=32, frames=6, min_objects=2, max_objects=3),
    "movi-lite": VideoConfig(size=64, frames=12, min_objects=3, max_objects=6, camera_motion=False),
    "movi-lite-cam": VideoConfig(size=64, frames=12, min_objects=3, max_objects=6, camera_motion=True),
}
"""Named configurations: ``tiny`` for tests, ``movi-lite`` (static camera, like MOVi-C) for experiments,
``movi-lite-cam`` the same with an orbiting camera."""


def resolve_config(config: VideoConfig | str) -> VideoConfig:
    """A :class:`VideoConfig` from itself or a preset name."""
    if isinstance(config, str):
        if config not in PRESETS:
            raise VideoConfigError(f"unknown video preset {config!r}; known: {', '.join(PRESETS)}")
        config = PRESETS[config]
    return config.check()


_RENDERERS: dict[int, mujoco.Renderer] = {}


def _close_renderers() -> None:
    """Free the OpenGL contexts while EGL is still up (registered after the first context, so it usually runs
    first). When another library already shut EGL down (a test session that rendered elsewhere first), the
    context is gone with the display: drop the handles quietly instead of failing at exit."""
    while _RENDERERS:
        renderer = _RENDERERS.popitem()[1]
        try:
            renderer.close()
        except Exception:  # EGL_NOT_INITIALIZED at interpreter exit: nothing left to free
            renderer._gl_context = None
            renderer._mjr_context = None


def _renderer(size: int) -> mujoco.Renderer:
    """The process's renderer for ``size`` x ``size`` images (built once, from an empty scene)."""
    if size not in _RENDERERS:
        empty = SceneSpec([], False, 0.5, False, 0.0, -45.0, 0.0)
        model = mujoco.MjModel.from_xml_string(scene_mjcf(empty, size))
        first = not _RENDERERS
        _RENDERERS[size] = mujoco.Renderer(model, height=size, width=size, max_geom=512)
        if first:  # after the first context: mujoco.egl's eglTerminate (registered then) must run after us
            atexit.register(_close_renderers)
    return _RENDERERS[size]


def _render_one(config: VideoConfig, scene: SceneSpec, renderer: mujoco.Renderer) -> tuple[np.ndarray, ...]:
    model = mujoco.MjModel.from_xml_string(scene_mjcf(scene, config.size))
    data = mujoco.MjData(model)
    for i, obj in enumerate(scene.objects):
        joint = model.body(f"obj{i + 1}").jntadr[0]
        data.qvel[model.jnt_dofadr[joint] : model.jnt_dofadr[joint] + 3] = obj.vel
    mujoco.mj_forward(model, data)
    # geom id -> instance id (segmentation pixels of non-geom objects or background stay 0)
    lookup = np.zeros(model.ngeom + 1, dtype=np.uint8)
    for i in range(len(scene.objects)):
        lookup[model.geom(f"geom{i + 1}").id + 1] = i + 1
    camera = mujoco.MjvCamera()
    camera.type = mujoco.mjtCamera.mjCAMERA_FREE
    camera.lookat[:] = CAMERA_LOOKAT
    camera.distance = CAMERA_DISTANCE
    camera.elevation = scene.elevation
    option = mujoco.MjvOption()
    t, s = config.frames, config.size
    rgb = np.empty((t, s, s, 3), np.uint8)
    depth = np.empty((t, s, s), np.float32)
    masks = np.empty((t, s, s), np.uint8)
    for f in range(t):
        if f:
            for _ in range(config.steps_per_frame):
                mujoco.mj_step(model, data)
        camera.azimuth = scene.azimuth + f * scene.azimuth_rate
        mujoco.mjv_updateScene(
            model, data, option, None, camera, mujoco.mjtCatBit.mjCAT_ALL.value, renderer.scene
        )
        renderer.render(out=rgb[f])
        renderer.enable_depth_rendering()
        renderer.render(out=depth[f])
        renderer.disable_depth_rendering()
        renderer.enable_segmentation_rendering()
        seg = renderer.render()
        renderer.disable_segmentation_rendering()
        ids = np.where(seg[..., 1] == mujoco.mjtObj.mjOBJ_GEOM, seg[..., 0], -1)
        masks[f] = lookup[ids + 1]
    return rgb, depth, masks


def render_videos(config: VideoConfig | str, count: int, seed: int) -> VideoBatch:
    """Render ``count`` videos for ``config`` (or a preset name); video i uses ``default_rng([seed, i])``."""
    config = resolve_config(config)
    if count < 0:
        raise VideoConfigError(f"video count must be >= 0, got {count}")
    t, s = config.frames, config.size
    rgb = np.empty((count, t, s, s, 3), np.uint8)
    depth = np.empty((count, t, s, s), np.float32)
    masks = np.empty((count, t, s, s), np.uint8)
    renderer = _renderer(s) if count else None
    for i in range(count):
        scene = sample_scene(config, np.random.default_rng([seed, i]))
        rgb[i], depth[i], masks[i] = _render_one(config, scene, renderer)
    return VideoBatch(rgb=rgb, depth=depth, masks=masks, config=config, seed=int(seed))
