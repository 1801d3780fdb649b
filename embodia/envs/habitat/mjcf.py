"""Build a MuJoCo model (MJCF) from a navigation :class:`~embodia.envs.habitat.scene.Scene`.

What the model holds, by geom group (the navigation mesh and the renderers select geoms by group):

- group 0 - floors: one textured box per room, top face at z = 0 (wood, tile, carpet, concrete);
- group 1 - walls: boxes from :func:`~embodia.envs.habitat.scene.wall_segments`, ``wall_height`` tall;
- group 2 - furniture and objects: one static body per object, built from a few primitives per
  category (a table is a top and four legs, a plant a pot and an ellipsoid of leaves, ...), textured by
  a shared grain texture tinted with the object's colour;
- group 3 - robots: a base, mast and sensor head; joints ``robot<i>_x``, ``robot<i>_y`` (slide) and ``robot<i>_yaw`` (hinge) carry the pose,
  and camera ``robot<i>_rgbd`` looks along the robot's +x at ``camera_height``;
- group 4 - door leaves: one body per door with a slide joint ``<door id>``; position 0 fills the
  opening (closed), ``pocket * width`` hides the leaf inside the wall (open);
- group 5 - ceilings, hidden in top-down views;
- group 6 - robot collision hulls (never rendered): a cylinder of the robot radius from ``max_climb`` to
  the robot height, exactly the volume the navigation mesh keeps free of obstacles.

Collision filtering is set for collision *queries* only (the navigation is kinematic, as in Habitat):
robot hulls (contype 1, conaffinity 0) touch walls, furniture and doors (contype 0, conaffinity 1);
nothing else touches anything.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from xml.sax.saxutils import quoteattr

from embodia.envs.habitat.scene import Scene, SceneObject, wall_segments

GROUP_FLOOR, GROUP_WALL, GROUP_OBJECT, GROUP_ROBOT, GROUP_DOOR, GROUP_CEILING, GROUP_HULL = range(7)
#: geom groups that obstruct navigation
OBSTACLE_GROUPS = (GROUP_WALL, GROUP_OBJECT, GROUP_DOOR)


@dataclass(frozen=True)
class RobotSpec:
    """The mobile robot: a cylinder with an RGB-D camera (Habitat's agent conventions)."""

    radius: float = 0.18
    """Base radius (m); the navigation mesh keeps the centre this far from obstacles."""
    height: float = 0.88
    """Robot height (m); obstacles lower than ``max_climb`` or higher than this do not block it."""
    camera_height: float = 0.88
    """Height of the RGB-D camera above the floor (m)."""
    hfov: float = 90.0
    """Horizontal field of view of the camera (degrees)."""
    max_climb: float = 0.1
    """Obstacles whose top is below this height are stepped over (m)."""


def _attrs(**values: object) -> str:
    parts = []
    for key, value in values.items():
        if value is None:
            continue
        if isinstance(value, (tuple, list)):
            value = " ".join(f"{v:.6g}" if isinstance(v, float) else str(v) for v in value)
        elif isinstance(value, float):
            value = f"{value:.6g}"
        parts.append(f"{key.rstrip('_')}={quoteattr(str(value))}")
    return " ".join(parts)


def _geom(name: str | None, group: int, **values: object) -> str:
    collision = (
        {"contype": 0, "conaffinity": 1} if group in OBSTACLE_GROUPS else {"contype": 0, "conaffinity": 0}
    )
    return f"<geom {_attrs(name=name, group=group, **collision, **values)}/>"


_FLOOR_TEXTURES = """
    <texture name="tex_wood" type="2d" builtin="gradient" rgb1=".66 .5 .34" rgb2=".52 .37 .24" width="128" height="128" mark="random" random=".08" markrgb=".42 .3 .19"/>
    <texture name="tex_tile" type="2d" builtin="checker" rgb1=".86 .86 .83" rgb2=".78 .79 .77" width="128" height="128" mark="edge" markrgb=".55 .55 .55"/>
    <texture name="tex_carpet" type="2d" builtin="flat" rgb1=".55 .58 .66" width="128" height="128" mark="random" random=".25" markrgb=".45 .47 .55"/>
    <texture name="tex_concrete" type="2d" builtin="flat" rgb1=".62 .62 .6" width="128" height="128" mark="random" random=".15" markrgb=".52 .52 .5"/>
    <texture name="tex_grain" type="2d" builtin="flat" rgb1="1 1 1" width="64" height="64" mark="random" random=".2" markrgb=".78 .78 .78"/>
    <texture name="tex_wall" type="2d" builtin="flat" rgb1=".93 .91 .87" width="64" height="64" mark="random" random=".04" markrgb=".85 .83 .8"/>
    <material name="floor_wood" texture="tex_wood" texrepeat="1.5 1.5" texuniform="true"/>
    <material name="floor_tile" texture="tex_tile" texrepeat="2 2" texuniform="true"/>
    <material name="floor_carpet" texture="tex_carpet" texrepeat="2 2" texuniform="true"/>
    <material name="floor_concrete" texture="tex_concrete" texrepeat="1 1" texuniform="true"/>
    <material name="wall" texture="tex_wall" texrepeat="1 1" texuniform="true"/>
    <material name="ceiling" rgba=".97 .97 .96 1"/>
    <material name="door" rgba=".55 .4 .28 1" texture="tex_grain" texrepeat="2 2" texuniform="true"/>
    <material name="robot_body" rgba=".15 .35 .75 1"/>
    <material name="robot_dark" rgba=".1 .1 .12 1"/>
    <material name="screen" rgba=".03 .03 .05 1" specular=".6" shininess=".8"/>
    <material name="white" rgba=".96 .96 .97 1" specular=".4"/>
    <material name="leaves" rgba=".18 .5 .2 1" texture="tex_grain" texrepeat="3 3"/>
"""


def _object_parts(obj: SceneObject) -> list[tuple[str, tuple, tuple, str | None]]:
    """Primitives ``(type, local position, size, material override)`` for an object (local frame: origin at
    the footprint centre on its base, x along its width, +y toward its front, z up; MuJoCo half sizes)."""
    w, d, h = obj.size
    hw, hd = w / 2, d / 2
    cat = obj.category
    box = [("box", (0.0, 0.0, h / 2), (hw, hd, h / 2), None)]

    def legs(top: float, inset: float = 0.04, leg: float = 0.025) -> list:
        return [
            ("box", (sx * (hw - inset), sy * (hd - inset), top / 2), (leg, leg, top / 2), None)
            for sx in (-1, 1)
            for sy in (-1, 1)
        ]

    if cat in ("table", "desk"):
        return [("box", (0.0, 0.0, h - 0.02), (hw, hd, 0.02), None), *legs(h - 0.04)]
    if cat == "chair":
        seat = 0.46 * h / 0.9
        return [
            ("box", (0.0, 0.0, seat), (hw, hd, 0.03), None),
            *legs(seat - 0.03),
            ("box", (0.0, -hd + 0.03, (seat + h) / 2), (hw, 0.03, (h - seat) / 2), None),
        ]
    if cat == "sofa":
        seat = 0.45 * h
        return [
            ("box", (0.0, 0.0, seat / 2), (hw, hd, seat / 2), None),
            ("box", (0.0, -hd + 0.12, (seat + h) / 2), (hw, 0.12, (h - seat) / 2), None),
            ("box", (-hw + 0.09, 0.0, 0.32 * h + seat / 2), (0.09, hd, 0.32 * h), None),
            ("box", (hw - 0.09, 0.0, 0.32 * h + seat / 2), (0.09, hd, 0.32 * h), None),
        ]
    if cat == "bed":
        return [
            ("box", (0.0, 0.0, 0.4 * h / 2), (hw, hd, 0.4 * h / 2), None),
            ("box", (0.0, 0.03, 0.7 * h), (hw - 0.03, hd - 0.06, 0.3 * h), "white"),
            ("box", (0.0, -hd + 0.04, 0.5), (hw, 0.04, 0.5), None),
            ("ellipsoid", (0.0, -hd + 0.3, h + 0.05), (hw * 0.7, 0.18, 0.07), "white"),
        ]
    if cat == "tv_monitor":
        stand = 0.5
        return [
            ("box", (0.0, 0.0, stand / 2), (hw, hd, stand / 2), None),
            ("box", (0.0, -hd + 0.08, stand + (h - stand) / 2), (hw * 0.95, 0.03, (h - stand) / 2), "screen"),
        ]
    if cat == "plant":
        pot = 0.35 * h
        return [
            ("cylinder", (0.0, 0.0, pot / 2), (0.3 * min(w, d), pot / 2), None),
            ("ellipsoid", (0.0, 0.0, pot + 0.32 * h), (hw, hd, 0.33 * h), "leaves"),
        ]
    if cat == "toilet":
        return [
            ("cylinder", (0.0, hd - 0.22, 0.2), (min(hw, 0.2), 0.2), "white"),
            ("box", (0.0, -hd + 0.1, h / 2), (hw, 0.1, h / 2), "white"),
        ]
    if cat == "sink":
        return [*box, ("cylinder", (0.0, 0.05, h + 0.02), (min(hw, hd) * 0.7, 0.03), "white")]
    if cat in ("cup", "vase", "bowl"):
        return [("cylinder", (0.0, 0.0, h / 2), (min(hw, hd), h / 2), None)]
    if cat == "lamp":
        return [
            ("cylinder", (0.0, 0.0, 0.3 * h), (0.03, 0.3 * h), None),
            ("sphere", (0.0, 0.0, 0.75 * h), (min(hw, hd),), "white"),
        ]
    return box


def _object_xml(obj: SceneObject) -> str:
    x, y, z = obj.position
    r, g, b = obj.color
    lines = [f"    <body {_attrs(name=obj.id, pos=(x, y, z), euler=(0.0, 0.0, obj.yaw))}>"]
    lines.append(f"      <!-- {obj.category} in {obj.room} -->")
    for k, (kind, pos, size, material) in enumerate(_object_parts(obj)):
        style = {"material": material} if material else {"material": "grain", "rgba": (r, g, b, 1.0)}
        lines.append("      " + _geom(f"{obj.id}/{k}", GROUP_OBJECT, type=kind, pos=pos, size=size, **style))
    lines.append("    </body>")
    return "\n".join(lines)


def _robot_xml(index: int, robot: RobotSpec) -> str:
    name = f"robot{index}"
    r, h = robot.radius, robot.height
    # the camera looks along the body's +x with +z up: camera x-axis = -y, camera y-axis = +z
    fovy = robot.hfov  # square images: vertical fov = horizontal fov (renderers set it per aspect)
    return f"""    <body name="{name}" pos="0 0 0">
      <joint name="{name}_x" type="slide" axis="1 0 0" limited="false"/>
      <joint name="{name}_y" type="slide" axis="0 1 0" limited="false"/>
      <joint name="{name}_yaw" type="hinge" axis="0 0 1" limited="false"/>
      <geom {_attrs(name=f"{name}/hull", type="cylinder", size=(r, 0.5 * (h - robot.max_climb)), pos=(0.0, 0.0, 0.5 * (h + robot.max_climb)), group=GROUP_HULL, contype=1, conaffinity=0)}/>
      <geom {_attrs(name=f"{name}/base", type="cylinder", size=(r, 0.12), pos=(0.0, 0.0, 0.14), material="robot_body", group=GROUP_ROBOT, contype=0, conaffinity=0)}/>
      <geom {_attrs(name=f"{name}/mast", type="cylinder", size=(0.025, (h - 0.26) / 2), pos=(-0.1, 0.0, 0.26 + (h - 0.26) / 2), material="robot_dark", group=GROUP_ROBOT, contype=0, conaffinity=0)}/>
      <geom {_attrs(name=f"{name}/head", type="box", size=(0.05, 0.09, 0.04), pos=(-0.1, 0.0, robot.camera_height), material="robot_dark", group=GROUP_ROBOT, contype=0, conaffinity=0)}/>
      <geom {_attrs(name=f"{name}/nose", type="box", size=(0.04, 0.04, 0.02), pos=(r - 0.04, 0.0, 0.27), material="white", group=GROUP_ROBOT, contype=0, conaffinity=0)}/>
      <camera {_attrs(name=f"{name}_rgbd", pos=(0.0, 0.0, robot.camera_height), xyaxes=(0, -1, 0, 0, 0, 1), fovy=fovy)}/>
    </body>"""


def scene_to_mjcf(scene: Scene, robot: RobotSpec | None = None, num_robots: int = 1) -> str:
    """The MJCF text of ``scene`` with ``num_robots`` robots (all at the origin; set their joints)."""
    robot = robot or RobotSpec()
    x0, y0, x1, y1 = scene.bounds
    cx, cy = 0.5 * (x0 + x1), 0.5 * (y0 + y1)
    t, wh = scene.wall_thickness, scene.wall_height
    body = []
    for room in scene.rooms:
        rx0, ry0, rx1, ry1 = room.bounds
        body.append(
            "    "
            + _geom(
                f"floor/{room.id}",
                GROUP_FLOOR,
                type="box",
                pos=(0.5 * (rx0 + rx1), 0.5 * (ry0 + ry1), -0.01),
                size=(0.5 * (rx1 - rx0), 0.5 * (ry1 - ry0), 0.01),
                material=f"floor_{room.floor}",
            )
        )
        body.append(
            "    "
            + _geom(
                f"ceiling/{room.id}",
                GROUP_CEILING,
                type="box",
                pos=(0.5 * (rx0 + rx1), 0.5 * (ry0 + ry1), wh + 0.01),
                size=(0.5 * (rx1 - rx0), 0.5 * (ry1 - ry0), 0.01),
                material="ceiling",
            )
        )
    for k, wall in enumerate(wall_segments(scene)):
        bx0, by0, bx1, by1 = wall.box(t)
        body.append(
            "    "
            + _geom(
                f"wall/{k}",
                GROUP_WALL,
                type="box",
                pos=(0.5 * (bx0 + bx1), 0.5 * (by0 + by1), wh / 2),
                size=(0.5 * (bx1 - bx0), 0.5 * (by1 - by0), wh / 2),
                material="wall",
            )
        )
    for door in scene.doors:
        leaf_height = min(2.1, 0.9 * wh)
        half = (0.5 * door.width, 0.3 * t) if door.axis == "x" else (0.3 * t, 0.5 * door.width)
        axis = (1, 0, 0) if door.axis == "x" else (0, 1, 0)
        body.append(
            f"    <body {_attrs(name=door.id, pos=(door.center[0], door.center[1], 0.0))}>\n"
            f"      <joint {_attrs(name=door.id, type='slide', axis=axis, limited='false')}/>\n"
            f"      {_geom(f'{door.id}/leaf', GROUP_DOOR, type='box', pos=(0.0, 0.0, leaf_height / 2), size=(*half, leaf_height / 2), material='door')}\n"
            "    </body>"
        )
    body += [_object_xml(obj) for obj in scene.objects]
    body += [_robot_xml(i, robot) for i in range(num_robots)]
    extent = max(x1 - x0, y1 - y0, 2.0)
    return f"""<mujoco model={quoteattr("nav_" + scene.name)}>
  <compiler angle="radian"/>
  <option timestep="0.01" gravity="0 0 0"/>
  <statistic extent="10" center="{cx:.4g} {cy:.4g} 1"/>
  <visual>
    <global offwidth="1024" offheight="1024"/>
    <quality shadowsize="0" offsamples="0"/>
    <map znear="0.004" zfar="6"/>
    <headlight ambient=".42 .42 .42" diffuse=".35 .35 .35" specular="0 0 0"/>
  </visual>
  <asset>{_FLOOR_TEXTURES}    <material name="grain" texture="tex_grain" texrepeat="2 2" texuniform="true"/>
  </asset>
  <worldbody>
    <light name="sun" directional="true" castshadow="false" pos="{cx:.4g} {cy:.4g} 8" dir="0.3 0.2 -1" diffuse=".45 .45 .43" specular=".1 .1 .1"/>
    <camera name="top" pos="{cx:.4g} {cy:.4g} {wh + 6:.4g}" projection="orthographic" fovy="{extent + 0.4:.4g}"/>
{chr(10).join(body)}
  </worldbody>
</mujoco>
"""


def camera_fovy(hfov_degrees: float, width: int, height: int) -> float:
    """MuJoCo's vertical field of view (degrees) for a horizontal one at an image aspect ratio."""
    half = math.radians(hfov_degrees) / 2
    return math.degrees(2 * math.atan(math.tan(half) * height / width))
