"""One MOVi-style scene: what is sampled per video and the MJCF string MuJoCo compiles from it.

A scene is a floor (checker-textured or plain grey, grey level drawn per video), with probability 1/2 a
back wall behind the arena, and K objects (K uniform in ``[min_objects, max_objects]``). Object k has a
shape s_k (box, sphere, cylinder or capsule), a palette colour c_k (distinct within a video while the
palette lasts), a size, a yaw (cylinders and capsules stand or lie), a start position p_k (no two
objects' footprints overlap) a little above its resting height, and a start velocity v_k: each object is
thrown toward another one with probability 1/2 (at least one always is, so objects collide and occlude),

    v_k = u_k (p_j - p_k) / |p_j - p_k|,   u_k ~ U(1.5, 3.0) m/s,

the others drift in a random direction with speed U(0, 0.8) m/s. Friction (sliding 0.4, torsional and
rolling resistance, ``condim=6``) makes them slide, roll and stop; soft, under-damped object contacts
(``solref`` damping ratio 0.3) give a little restitution. The camera looks at the arena centre from
``CAMERA_DISTANCE`` metres at an elevation of about -45 degrees and a random azimuth; with camera motion
it orbits at a random 1.5-3 degrees per frame.

Every scene of one image size shares the asset, ``visual`` and ``statistic`` blocks, so one
``mujoco.Renderer`` (its OpenGL textures and depth range) serves every video of that size
(:mod:`.render`).
"""

from __future__ import annotations

import colorsys
from dataclasses import dataclass

import numpy as np

#: well-separated saturated colours (RGB in [0, 1]); hues 0, 30, 55, 120, 180, 220, 275, 320 degrees
PALETTE: tuple[tuple[float, float, float], ...] = tuple(
    colorsys.hsv_to_rgb(h / 360.0, 0.85, 0.9) for h in (0, 30, 55, 120, 180, 220, 275, 320)
)
SHAPES = ("box", "sphere", "cylinder", "capsule")
ARENA = 1.2
"""Objects start with their centres in [-ARENA, ARENA]^2 (metres)."""
CAMERA_DISTANCE = 3.9
CAMERA_LOOKAT = (0.0, 0.0, 0.2)
WALL_DISTANCE = 2.6
"""The back wall's distance from the arena centre (metres)."""
TIMESTEP = 0.002


@dataclass
class ObjectSpec:
    shape: str
    """One of :data:`SHAPES`."""
    color: int
    """Index into :data:`PALETTE`."""
    size: tuple[float, float, float]
    """MJCF ``size`` (half-extents for a box; radius[, half-length] otherwise)."""
    pos: tuple[float, float, float]
    """Start position of the centre (metres)."""
    quat: tuple[float, float, float, float]
    """Start orientation (w, x, y, z)."""
    vel: tuple[float, float, float]
    """Start linear velocity (m/s)."""
    radius: float
    """Radius of the footprint in the floor plane, for placement (metres)."""


@dataclass
class SceneSpec:
    objects: list[ObjectSpec]
    """The K objects; object k gets instance id k + 1 in the masks."""
    textured_floor: bool
    """Checker-textured floor (else plain)."""
    floor_grey: float
    """Grey level of the floor material in [0, 1]."""
    wall: bool
    """Whether a back wall stands behind the arena (opposite the camera)."""
    azimuth: float
    """Camera azimuth at the first frame (degrees)."""
    elevation: float
    """Camera elevation (degrees, negative = looking down)."""
    azimuth_rate: float
    """Camera azimuth change per frame (degrees; 0 without camera motion)."""


def _yaw_quat(yaw: float, lying: bool) -> tuple[float, float, float, float]:
    """Quaternion of a rotation by ``yaw`` about z, after 90 degrees about x when ``lying``."""
    qz = np.array([np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2)])
    if not lying:
        return tuple(float(v) for v in qz)
    qx = np.array([np.cos(np.pi / 4), np.sin(np.pi / 4), 0.0, 0.0])
    w1, x1, y1, z1 = qz
    w2, x2, y2, z2 = qx
    q = (
        w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
        w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
        w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
        w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2,
    )
    return tuple(float(v) for v in q)


def _sample_shape(shape: str, rng: np.random.Generator) -> tuple[tuple[float, ...], float, float, bool]:
    """(MJCF size, footprint radius, resting height of the centre, lying) of one object."""
    s = float(rng.uniform(0.18, 0.32))
    if shape == "box":
        half = tuple(float(s * a) for a in rng.uniform(0.75, 1.25, size=3))
        return half, float(np.hypot(half[0], half[1])), half[2], False
    if shape == "sphere":
        return (s,), s, s, False
    lying = bool(rng.random() < 0.5)
    if shape == "cylinder":
        radius, half_len = s, float(s * rng.uniform(0.6, 1.2))
        if lying:
            return (radius, half_len), float(np.hypot(radius, half_len)), radius, True
        return (radius, half_len), radius, half_len, False
    radius, half_len = 0.7 * s, float(s * rng.uniform(0.6, 1.1))  # capsule
    if lying:
        return (radius, half_len), half_len + radius, radius, True
    return (radius, half_len), radius, half_len + radius, False


def sample_scene(config, rng: np.random.Generator) -> SceneSpec:
    """Draw one scene for ``config`` (a :class:`~.render.VideoConfig`) from ``rng``."""
    k = int(rng.integers(config.min_objects, config.max_objects + 1))
    shapes = [config.shapes[int(i)] for i in rng.integers(0, len(config.shapes), size=k)]
    colors = list(rng.permutation(len(PALETTE)))
    while len(colors) < k:
        colors += list(rng.permutation(len(PALETTE)))
    placed: list[tuple[np.ndarray, float]] = []
    drafts = []
    for i, shape in enumerate(shapes):
        size, radius, rest, lying = _sample_shape(shape, rng)
        xy = rng.uniform(-ARENA, ARENA, size=2)
        for _ in range(200):
            if all(np.linalg.norm(xy - p) > radius + r + 0.05 for p, r in placed):
                break
            xy = rng.uniform(-ARENA, ARENA, size=2)
        placed.append((xy, radius))
        z = rest + float(rng.uniform(0.02, 0.25))
        quat = _yaw_quat(float(rng.uniform(0, 2 * np.pi)), lying)
        drafts.append((shape, int(colors[i]), size, (float(xy[0]), float(xy[1]), z), quat, radius))
    thrown = rng.random(k) < 0.5
    if k >= 2 and not thrown.any():
        thrown[int(rng.integers(k))] = True
    objects = []
    for i, (shape, color, size, pos, quat, radius) in enumerate(drafts):
        if thrown[i] and k >= 2:
            j = int(rng.choice([m for m in range(k) if m != i]))
            direction = placed[j][0] - placed[i][0]
            speed = float(rng.uniform(1.5, 3.0))
        else:
            angle = float(rng.uniform(0, 2 * np.pi))
            direction = np.array([np.cos(angle), np.sin(angle)])
            speed = float(rng.uniform(0.0, 0.8))
        direction = direction / max(float(np.linalg.norm(direction)), 1e-9)
        vel = (float(direction[0] * speed), float(direction[1] * speed), 0.0)
        objects.append(ObjectSpec(shape, color, size, pos, quat, vel, radius))
    rate = float(rng.uniform(1.5, 3.0) * rng.choice([-1.0, 1.0])) if config.camera_motion else 0.0
    return SceneSpec(
        objects=objects,
        textured_floor=bool(rng.random() < 0.5),
        floor_grey=float(rng.uniform(0.45, 0.8)),
        wall=bool(rng.random() < 0.5),
        azimuth=float(rng.uniform(0.0, 360.0)),
        elevation=float(rng.uniform(-50.0, -40.0)),
        azimuth_rate=rate,
    )


def _fmt(values) -> str:
    return " ".join(f"{float(v):.6g}" for v in values)


def header_mjcf(size: int) -> str:
    """The blocks every scene of image size ``size`` shares (options, visual, statistic, assets)."""
    return f"""
  <option timestep="{TIMESTEP}" integrator="implicitfast"/>
  <statistic extent="4" center="0 0 0.2"/>
  <visual>
    <global offwidth="{size}" offheight="{size}" fovy="45"/>
    <quality shadowsize="1024" offsamples="0"/>
    <map znear="0.01" zfar="10"/>
    <headlight ambient="0.35 0.35 0.35" diffuse="0.35 0.35 0.35" specular="0 0 0"/>
  </visual>
  <asset>
    <texture name="checker" type="2d" builtin="checker" rgb1="1 1 1" rgb2="0.72 0.72 0.72"
             width="64" height="64"/>
    <material name="floor_tex" texture="checker" texrepeat="0.6 0.6" texuniform="true" specular="0"/>
    <material name="floor_plain" specular="0"/>
    <material name="object" specular="0.3" shininess="0.3"/>
  </asset>"""


def scene_mjcf(scene: SceneSpec, size: int) -> str:
    """The MJCF string of ``scene`` (objects are bodies ``obj1``..``objK`` with geoms ``geom1``..)."""
    grey = _fmt([scene.floor_grey] * 3 + [1])
    material = "floor_tex" if scene.textured_floor else "floor_plain"
    parts = [
        f'<mujoco model="movi_lite">{header_mjcf(size)}',
        "  <default>",
        '    <geom condim="6" friction="0.4 0.01 0.002" solref="0.01 0.3"/>',
        "  </default>",
        "  <worldbody>",
        '    <light directional="true" pos="0 0 6" dir="0.3 0.2 -1" diffuse="0.6 0.6 0.6" '
        'specular="0.1 0.1 0.1" castshadow="false"/>',
        f'    <geom name="floor" type="plane" size="15 15 0.1" material="{material}" rgba="{grey}"/>',
    ]
    if scene.wall:
        # the camera sits at -forward(azimuth) from the look-at point: the wall stands at +forward
        a = np.deg2rad(scene.azimuth)
        cx, cy = WALL_DISTANCE * np.cos(a), WALL_DISTANCE * np.sin(a)
        parts.append(
            f'    <geom name="wall" type="box" size="0.05 6 1.5" pos="{_fmt((cx, cy, 1.5))}" '
            f'euler="0 0 {scene.azimuth:.6g}" material="{material}" rgba="{grey}"/>'
        )
    for i, obj in enumerate(scene.objects, start=1):
        rgba = _fmt([*PALETTE[obj.color], 1])
        parts += [
            f'    <body name="obj{i}" pos="{_fmt(obj.pos)}" quat="{_fmt(obj.quat)}">',
            "      <freejoint/>",
            f'      <geom name="geom{i}" type="{obj.shape}" size="{_fmt(obj.size)}" rgba="{rgba}" '
            'density="600" material="object"/>',
            "    </body>",
        ]
    parts += ["  </worldbody>", "</mujoco>"]
    return "\n".join(parts)
