"""The kitchen as a robosuite environment: robot + kitchen arena + fixtures + one graspable object.

:class:`KitchenScene` is a robosuite :class:`~robosuite.environments.manipulation.manipulation_env.ManipulationEnv`
(real robosuite robot models, mounts, grippers and composite controllers; OSC pose for the arms by
default). It builds its MJCF from a :class:`~embodia.envs.kitchen.layout.KitchenLayout` on every
(hard) reset, so each episode can have a different kitchen. It computes no observations or rewards
itself: :class:`~embodia.envs.kitchen.env.KitchenEnv` reads the simulator directly (robosuite's
observable machinery runs every physics substep and is skipped here for speed).
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

import numpy as np

from embodia.envs.kitchen import _robosuite  # noqa: F401  (robosuite imported quietly, first)

# isort: split
from robosuite.environments.manipulation.manipulation_env import ManipulationEnv
from robosuite.models.objects import BreadObject, CanObject, LemonObject, MilkObject
from robosuite.models.tasks import ManipulationTask

from embodia.envs.kitchen.coffee_fixtures import MugObject
from embodia.envs.kitchen.fixtures import KitchenArena, TemplateFixture, build_fixtures
from embodia.envs.kitchen.layout import BURNERS, OBJECT_KINDS, KitchenLayout

#: robosuite's single-arm manipulators (fixed mount, default gripper) that the kitchen supports
#: (robosuite's Sawyer is left out: its head mesh does not compile with MuJoCo 3.8.1)
SINGLE_ARM_ROBOTS = ("Panda", "UR5e", "IIWA", "Kinova3", "Jaco")

_OBJECT_CLASSES = {
    "can": CanObject,
    "lemon": LemonObject,
    "bread": BreadObject,
    "milk": MilkObject,
    "mug": MugObject,  # embodia's (robosuite has no mug); only the coffee tasks fix it
}

#: articulated joints of the fixtures (model names)
JOINTS = ("sink_lever", "drawer_slide", "cabinet_hinge", "microwave_button")
JOINTS += tuple(f"stove_knob_{burner}" for burner in BURNERS)  # the stove's knobs
JOINTS += ("microwave_stop_button", "microwave_door")  # the microwave's stop button and door hinge
#: sites the tasks read (model names)
SITES = (
    "sink_basin",
    "sink_lever_tip",
    "drawer_handle",
    "cabinet_handle",
    "cabinet_hinge",
    "microwave_button",
)
SITES += tuple(f"stove_{part}_{burner}" for part in ("knob", "burner") for burner in BURNERS)  # stove
JOINTS += ("coffee_machine_button",)  # the coffee machine's serve button
SITES += ("coffee_machine_button", "coffee_machine_station")  # ... and its mug station (drip tray top)
SITES += ("microwave_stop_button", "microwave_door_handle", "microwave_door_hinge", "microwave_plate")
# the double-door wall cabinet's pair and the sink's swivel spout (a kitchen has either the single door's
# joint or the pair's: names a model lacks are left out of the look-ups below)
JOINTS += ("cabinet_left_hinge", "cabinet_right_hinge", "sink_spout")
SITES += ("cabinet_left_handle", "cabinet_right_handle", "cabinet_left_hinge", "cabinet_right_hinge")
SITES += ("sink_spout_tip", "cabinet_interior")


@contextlib.contextmanager
def preserved_global_numpy_rng() -> Iterator[None]:
    """Run a block and restore NumPy's global generator afterwards.

    robosuite draws robot initialisation noise from ``np.random`` even when its magnitude is zero;
    embodia never lets an environment move the caller's global generator.
    """
    saved = np.random.get_state()
    try:
        yield
    finally:
        np.random.set_state(saved)


class KitchenScene(ManipulationEnv):
    """A robosuite manipulation environment whose model is the kitchen described by ``layout``.

    Args:
        layout: the kitchen to build (replace ``self.layout`` and call ``reset()`` to build another).
        focus: world point the ``overview`` camera looks at.
        robot: a robosuite robot name (one of ``SINGLE_ARM_ROBOTS``).
        controller_config: a robosuite composite controller config; ``None`` = the robot's default
            (``BASIC`` with an ``OSC_POSE`` arm controller for the single-arm robots).
        control_freq: policy steps per simulated second.
    """

    def __init__(
        self,
        layout: KitchenLayout,
        focus: np.ndarray,
        robot: str = "Panda",
        controller_config: dict | None = None,
        control_freq: int = 20,
    ) -> None:
        self.layout = layout
        self.focus = np.asarray(focus, dtype=float)
        self.fixtures: dict[str, TemplateFixture] = {}
        self.object: Any = None
        with preserved_global_numpy_rng():
            super().__init__(
                robots=robot,
                controller_configs=controller_config,
                initialization_noise=None,
                use_camera_obs=False,
                has_renderer=False,
                has_offscreen_renderer=False,
                control_freq=control_freq,
                horizon=10**9,
                ignore_done=True,
                hard_reset=True,
                renderer="mujoco",
            )
        self._canonical_gripper_commands()

    # ------------------------------------------------------------------ robosuite hooks
    def _load_model(self) -> None:
        super()._load_model()  # robot models
        layout = self.layout
        robot_model = self.robots[0].robot_model
        robot_model.set_base_xpos(np.array([layout.robot_x, layout.robot_y, 0.0]))
        arena = KitchenArena(layout, self.focus)
        fixtures = build_fixtures(layout)
        self.fixtures = {fixture.name: fixture for fixture in fixtures}
        self.object = _OBJECT_CLASSES[OBJECT_KINDS[layout.object_kind]](name="object")
        self.model = ManipulationTask(
            mujoco_arena=arena,
            mujoco_robots=[robot.robot_model for robot in self.robots],
            mujoco_objects=[*fixtures, self.object],
        )

    def _setup_references(self) -> None:
        super()._setup_references()
        model = self.sim.model
        self.mj_model = model._model
        self.mj_data = self.sim.data._data
        joints = [name for name in JOINTS if name in model.joint_names]  # e.g. one door or a pair
        self.joint_qpos = {name: model.get_joint_qpos_addr(name) for name in joints}
        self.joint_qvel = {name: model.get_joint_qvel_addr(name) for name in joints}
        self.site_ids = {name: model.site_name2id(name) for name in SITES if name in model.site_names}
        self.object_body = model.body_name2id(self.object.root_body)
        self.object_qpos = model.get_joint_qpos_addr(self.object.joints[0])
        self.object_qvel = model.get_joint_qvel_addr(self.object.joints[0])
        self.object_geoms = [model.geom_name2id(name) for name in self.object.contact_geoms]
        robot = self.robots[0]
        self.eef_site = robot.eef_site_id["right"]
        self.base_body = model.body_name2id(robot.robot_model.root_body)
        self.arm_qpos = np.asarray(robot._ref_joint_pos_indexes)
        self.arm_qvel = np.asarray(robot._ref_joint_vel_indexes)
        self.gripper_qpos = np.asarray(robot._ref_gripper_joint_pos_indexes["right"])
        self.gripper_qvel = np.asarray(robot._ref_gripper_joint_vel_indexes["right"])
        self._assign_render_groups()

    def _assign_render_groups(self) -> None:
        """Regroup geoms for rendering (physics ignores groups after compilation).

        Group 1: room, fixtures and object as seen; group 2: the robot's detailed visual meshes
        (~170k triangles for a Panda on its pedestal); group 0: the robot's collision meshes (~15k,
        drawn in plain colours: 5x faster on a CPU renderer); group 3: collision geoms of everything else
        (never drawn; robosuite gives each of them a visual twin in group 1).
        """
        model = self.mj_model
        prefixes = tuple(
            part.naming_prefix for part in (self.robots[0].robot_model, *self.robots[0].robot_model.models)
        )
        for geom in range(model.ngeom):
            name = model.geom(geom).name
            robot = name.startswith(prefixes)
            if model.geom_group[geom] == 0 and not robot:
                model.geom_group[geom] = 3
            elif model.geom_group[geom] == 1 and robot:
                model.geom_group[geom] = 2
            elif model.geom_group[geom] == 0 and robot:
                dark = (
                    "mount" in name
                    or "finger" in name
                    or name.endswith(("link7_collision", "hand_collision"))
                )
                model.geom_rgba[geom] = (0.22, 0.22, 0.23, 1.0) if dark else (0.92, 0.92, 0.92, 1.0)

    def _setup_observables(self) -> OrderedDict:
        return OrderedDict()  # KitchenEnv computes observations once per step instead of every substep

    def reward(self, action: np.ndarray | None = None) -> float:
        return 0.0  # KitchenEnv rewards success

    def _check_success(self) -> bool:
        return False

    # ------------------------------------------------------------------ state access
    def rebuild(self) -> None:
        """Build the model of ``self.layout`` and reset robot and controllers (a robosuite hard reset)."""
        with preserved_global_numpy_rng():
            self.reset()
        self._canonical_gripper_commands()

    def _canonical_gripper_commands(self) -> None:
        """Give each gripper's Python-side command its steady shape (robosuite resets it to ``dof``
        entries and the first step widens it to one per finger), so that the state has a fixed size."""
        for gripper in self.robots[0].gripper.values():
            gripper.format_action(np.zeros(gripper.dof))  # sign(0) = 0: values stay, the shape settles

    def controller_state(self) -> np.ndarray:
        """Controller state robosuite keeps in Python: each gripper's rate-limited command
        (``GripperModel.current_action`` moves toward the commanded open/close by a fixed step per
        substep), which decides the finger torques of the next steps."""
        grippers = self.robots[0].gripper.values()
        return np.concatenate([np.asarray(g.current_action, dtype=np.float64).ravel() for g in grippers])

    def set_controller_state(self, values: np.ndarray) -> None:
        i = 0
        for gripper in self.robots[0].gripper.values():
            n = np.size(gripper.current_action)
            gripper.current_action = np.array(values[i : i + n], dtype=np.float64).reshape(
                np.shape(gripper.current_action)
            )
            i += n

    def invalidate_controllers(self) -> None:
        """Make every controller re-read the simulator at its next use (after the state was written)."""
        for robot in self.robots:
            for controller in robot.part_controllers.values():
                controller.new_update = True

    def joint(self, name: str) -> float:
        return float(self.mj_data.qpos[self.joint_qpos[name]])

    def set_joint(self, name: str, value: float) -> None:
        self.mj_data.qpos[self.joint_qpos[name]] = value
        self.mj_data.qvel[self.joint_qvel[name]] = 0.0

    def site(self, name: str) -> np.ndarray:
        return self.mj_data.site_xpos[self.site_ids[name]].copy()

    def site_rotation(self, name: str) -> np.ndarray:
        return self.mj_data.site_xmat[self.site_ids[name]].reshape(3, 3).copy()

    @property
    def eef_pos(self) -> np.ndarray:
        return self.mj_data.site_xpos[self.eef_site].copy()

    @property
    def eef_rotation(self) -> np.ndarray:
        return self.mj_data.site_xmat[self.eef_site].reshape(3, 3).copy()

    @property
    def base_pos(self) -> np.ndarray:
        return self.mj_data.xpos[self.base_body].copy()

    @property
    def object_pos(self) -> np.ndarray:
        return self.mj_data.xpos[self.object_body].copy()

    @property
    def object_quat(self) -> np.ndarray:
        """Object orientation as a (w, x, y, z) quaternion."""
        return self.mj_data.xquat[self.object_body].copy()

    def set_object_pose(self, pos: np.ndarray, quat: np.ndarray) -> None:
        start, end = self.object_qpos
        self.mj_data.qpos[start:end] = np.concatenate([pos, quat])
        start, end = self.object_qvel
        self.mj_data.qvel[start:end] = 0.0

    def object_grasped(self) -> bool:
        """Whether both gripper fingers touch the object (robosuite's grasp check)."""
        return bool(self._check_grasp(gripper=self.robots[0].gripper["right"], object_geoms=self.object))

    def touching_object(self) -> bool:
        """Whether any robot geom touches the object."""
        data, model = self.mj_data, self.mj_model
        objects = set(self.object_geoms)
        robot_bodies = self._robot_bodies()
        for contact in data.contact[: data.ncon]:
            g1, g2 = contact.geom1, contact.geom2
            if g1 in objects and model.geom_bodyid[g2] in robot_bodies:
                return True
            if g2 in objects and model.geom_bodyid[g1] in robot_bodies:
                return True
        return False

    def _robot_bodies(self) -> set[int]:
        cached = getattr(self, "_robot_body_cache", None)
        if cached is None or cached[0] is not self.mj_model:
            model = self.sim.model
            names = [*self.robots[0].robot_model.bodies, *self.robots[0].gripper["right"].bodies]
            cached = (self.mj_model, {model.body_name2id(name) for name in names})
            self._robot_body_cache = cached
        return cached[1]
