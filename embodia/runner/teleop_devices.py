"""Input devices for teleoperation: robosuite's ``Keyboard`` and ``SpaceMouse`` turned into environment actions.

robosuite's device classes (``robosuite.devices``) read a keyboard (through pynput, which listens to the X
display) or a 3Dconnexion SpaceMouse (through hidapi) and turn the input into one action dictionary per call
of ``input2action``: a normalised end-effector delta per arm (position and axis-angle rotation, clipped to
[-1, 1]; at sensitivity 1 a position key press gives a full-scale step of the OSC controller, 5 cm, a rotation
key 0.15 of one, 0.075 rad) and an open/close gripper command (-1 open, 1 closed). :class:`RobosuiteArmMapper` feeds that dictionary to the robot's own
``create_action_vector``, as robosuite's ``collect_human_demonstrations.py`` and RoboCasa's ``collect_demos.py``
do, which gives the environment action: for the kitchens (``embodia/Kitchen-*``, every robot of
``SINGLE_ARM_ROBOTS``) the 7-D action ``[dx, dy, dz, droll, dpitch, dyaw, gripper]`` of robosuite's
``OSC_POSE`` controller.

Which environments fit: those that take a ``render_camera`` (the window's image) and whose unwrapped
environment holds a robosuite robot environment as ``scene`` with ``OSC_POSE`` arm controllers (robosuite's
devices read its robots and controllers): the kitchens, every task and every robot of ``SINGLE_ARM_ROBOTS``.
:func:`check_env_fits` and :func:`robosuite_scene` refuse any other id in one line: OGBench's manipulation arm
(a 5-D action: position delta, yaw, gripper) is not a robosuite robot, so robosuite's devices cannot drive it,
and the mazes' and Habitat's actions are not end-effector motions.

The session keys (:class:`SessionKeys`, the same for both devices): Enter ends the episode and keeps it,
``q`` (robosuite's reset key) discards it and starts the next attempt, Esc quits.

Mirrored input (``mirror``): the kitchens' robot camera (``agentview``) looks over the robot's shoulder, so
the arrow keys move the gripper as seen on the screen only with robosuite's ``mirror_actions`` (what RoboCasa
uses for its kitchens): up moves it forward (+x, away from the camera), left to the robot's left (+y).
"""

from __future__ import annotations

import contextlib
import io
import os
import threading
from copy import deepcopy
from dataclasses import dataclass
from typing import Any

import numpy as np

from embodia.core.errors import EmbodiaError

DEVICES = ("keyboard", "spacemouse")

#: what the user sees in the window and the terminal, one (keys, meaning) pair per line
KEYBOARD_HELP = (
    ("up / down", "forward / back"),
    ("left / right", "left / right"),
    ("; / .", "up / down"),
    ("e / r", "roll"),
    ("y / h", "pitch"),
    ("o / p", "yaw"),
    ("space", "open / close gripper"),
)
SPACEMOUSE_HELP = (
    ("move the cap", "move and turn the gripper"),
    ("hold left button", "close the gripper"),
    ("right button", "discard the episode"),
)
SESSION_HELP = (
    ("Enter", "end the episode, keep it"),
    ("q", "discard it, next episode"),
    ("Esc", "quit"),
)


class TeleopError(EmbodiaError):
    """Teleoperation cannot start: no display, no device, or an environment a device cannot drive."""


def check_display() -> str:
    """The X display the keyboard listener and the window use; a :class:`TeleopError` if there is none."""
    display = os.environ.get("DISPLAY", "")
    if not display:
        raise TeleopError(
            "teleoperation needs an X display for its window and the keyboard, and DISPLAY is not set: run it "
            "in a desktop session, over `ssh -X`, or on a virtual display (`xvfb-run -a embodia teleop ...`)"
        )
    try:
        from Xlib.display import Display
        from Xlib.error import DisplayError
    except ModuleNotFoundError as error:
        raise TeleopError(
            f"teleoperation needs python-xlib (no module {error.name!r}): pip install python-xlib pynput"
        ) from None
    try:
        Display(display).close()
    except (DisplayError, OSError, ConnectionError) as error:
        raise TeleopError(
            f"cannot open the X display {display!r} ({error}): start the X server or set DISPLAY to a running one"
        ) from None
    return display


def check_env_fits(env_id: str) -> None:
    """Refuse, before building it, an environment the window cannot show: its class must take a
    ``render_camera`` (the camera the window shows); :func:`robosuite_scene` checks the robot once it is built."""
    import inspect

    import gymnasium
    from gymnasium.envs.registration import load_env_creator

    creator = load_env_creator(gymnasium.spec(env_id).entry_point)
    try:
        parameters = inspect.signature(creator).parameters
    except (TypeError, ValueError):
        parameters = {}
    if "render_camera" not in parameters:
        raise TeleopError(
            f"{env_id} has no robosuite robot to drive through a camera: embodia teleop works with the "
            f"robosuite kitchens (`embodia envs Kitchen` lists them)"
        )


def robosuite_scene(env: Any, env_id: str) -> Any:
    """The robosuite environment that ``env`` steps, if a robosuite device can drive it; else a TeleopError."""
    scene = getattr(getattr(env, "unwrapped", env), "scene", None)
    robots = getattr(scene, "robots", None)
    if not robots:
        raise TeleopError(
            f"{env_id} has no robosuite robot to drive: embodia teleop works with the robosuite kitchens "
            f"(`embodia envs Kitchen` lists them)"
        )
    for robot in robots:
        for arm in robot.arms:
            name = robot.part_controllers[arm].name
            if name != "OSC_POSE":
                raise TeleopError(
                    f"{env_id}'s {arm} arm uses robosuite's {name} controller; the devices drive OSC_POSE "
                    f"(the kitchens' default)"
                )
    return scene


def _import_robosuite_devices() -> Any:
    """``robosuite.devices``, imported without its stdout chatter (it prints when hidapi is missing)."""
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            import robosuite.devices as devices
    except ImportError as error:  # pynput refuses to load without an X server it can reach
        raise TeleopError(f"robosuite's input devices cannot load here: {error}") from None
    return devices


class SessionKeys:
    """The keys that run a session, whichever device moves the arm: Enter (end, keep), q (discard), Esc (quit).

    Key releases set flags; :meth:`take` reads and clears them together, so each key is acted on once. With the
    keyboard device these keys come through the device's own pynput listener (:func:`make_device` hands them
    over), so they are seen in order with the moves: when Enter's flag is read, every move and gripper key
    pressed before it has reached the device. With the SpaceMouse, :meth:`listen` starts a listener of their
    own.
    """

    def __init__(self) -> None:
        try:
            from pynput.keyboard import Key
        except ImportError as error:  # pynput refuses to load without an X server it can reach
            raise TeleopError(f"the keyboard listener (pynput) cannot load here: {error}") from None
        self._key = Key
        self._lock = threading.Lock()
        self._flags = {"end": False, "discard": False, "quit": False}
        self.listener: Any = None

    def listen(self) -> None:
        """Listen to the keyboard in a thread of their own (when no keyboard device hands keys over)."""
        from pynput.keyboard import Listener

        self.listener = Listener(on_release=self.release)
        self.listener.start()
        self.listener.wait()  # connected to the display: keys pressed from now on are seen

    def release(self, key: Any) -> bool:
        """A key was released: whether it is a session key (and its flag is set)."""
        if key == self._key.enter:
            flag = "end"
        elif key == self._key.esc:
            flag = "quit"
        elif getattr(key, "char", None) == "q":
            flag = "discard"
        else:
            return False
        with self._lock:
            self._flags[flag] = True
        return True

    def take(self) -> dict[str, bool]:
        """The flags set since the last call (and clear them)."""
        with self._lock:
            flags, self._flags = self._flags, dict.fromkeys(self._flags, False)
        return flags

    def close(self) -> None:
        if self.listener is not None:
            self.listener.stop()


def check_device(kind: str) -> None:
    """Refuse a device that cannot work here before anything is built (the SpaceMouse needs hidapi)."""
    import importlib.util

    if kind not in DEVICES:
        raise TeleopError(f"unknown device {kind!r}; devices: {', '.join(DEVICES)}")
    if kind == "spacemouse" and importlib.util.find_spec("hid") is None:
        raise TeleopError(
            "the SpaceMouse driver needs the hidapi package (`pip install hidapi`, and on Linux read access to "
            "the device, e.g. a udev rule for 3Dconnexion's vendor id 256f); or use --device keyboard"
        )


def make_device(
    kind: str, scene: Any, session: SessionKeys, pos_sensitivity: float = 1.0, rot_sensitivity: float = 1.0
) -> Any:
    """A robosuite device (``"keyboard"`` or ``"spacemouse"``) bound to the robosuite environment ``scene``;
    the session keys go to ``session``."""
    check_device(kind)
    devices = _import_robosuite_devices()
    if kind == "keyboard":

        class _SessionKeyboard(devices.Keyboard):
            """robosuite's keyboard, its listener handing the session keys to ``session`` (q, robosuite's reset
            key, discards through the session), without robosuite's printed key table."""

            @staticmethod
            def _display_controls() -> None:
                pass

            def on_release(self, key: Any) -> None:
                if not session.release(key):
                    super().on_release(key)

        device = _SessionKeyboard(scene, pos_sensitivity=pos_sensitivity, rot_sensitivity=rot_sensitivity)
        device.listener.wait()  # connected to the display: keys pressed from now on are seen
        return device
    if not hasattr(devices, "SpaceMouse"):  # hidapi is there but robosuite could not load its driver
        raise TeleopError("robosuite's SpaceMouse driver did not load (see `python -c 'import hid'`)")
    from robosuite import macros

    try:
        with contextlib.redirect_stdout(io.StringIO()):
            device = devices.SpaceMouse(
                scene,
                vendor_id=macros.SPACEMOUSE_VENDOR_ID,
                product_id=macros.SPACEMOUSE_PRODUCT_ID,
                pos_sensitivity=pos_sensitivity,
                rot_sensitivity=rot_sensitivity,
            )
        session.listen()
    except OSError as error:
        raise TeleopError(
            f"no SpaceMouse could be opened (vendor {macros.SPACEMOUSE_VENDOR_ID}, product "
            f"{macros.SPACEMOUSE_PRODUCT_ID}: {error}): plug one in (and check the device's permissions), or "
            f"use --device keyboard"
        ) from None
    return device


def device_help(kind: str) -> tuple[tuple[str, str], ...]:
    """The (keys, meaning) lines of a device, then the session keys."""
    return (KEYBOARD_HELP if kind == "keyboard" else SPACEMOUSE_HELP) + SESSION_HELP


def close_device(device: Any) -> None:
    """Stop a device's listener threads (the SpaceMouse's reader thread is a daemon and ends with the process)."""
    listener = getattr(device, "listener", None)
    if listener is not None:
        listener.stop()


@dataclass
class DeviceCommand:
    """One reading of a device, as an environment action."""

    action: np.ndarray | None
    """the environment action (float32), None when the device asked for a reset (discard)"""
    moved: bool = False
    """whether the arm moves or the gripper changed since the start (RoboCasa records from the first input on)"""


class RobosuiteArmMapper:
    """Turns a robosuite device's input into the action of the robosuite environment ``scene``.

    The active robot gets the device's arm delta (or absolute pose, for an absolute controller) and gripper
    command; any other robot keeps its last gripper command and holds its arms, as in robosuite's script.

    Args:
        device: a robosuite ``Device`` bound to ``scene``.
        scene: the robosuite robot environment.
        mirror: robosuite's ``mirror_actions`` (the camera looks from behind the robot).
        action_size: the environment's action length (checked against the robots' action vectors).
    """

    def __init__(self, device: Any, scene: Any, mirror: bool, action_size: int) -> None:
        self.device = device
        self.scene = scene
        self.mirror = bool(mirror)
        self.action_size = int(action_size)
        self._held_grippers = [
            {
                f"{arm}_gripper": -np.ones(robot.gripper[arm].dof)
                for arm in robot.arms
                if robot.gripper[arm].dof
            }
            for robot in scene.robots
        ]
        self._start_gripper: np.ndarray | None = None

    def start(self) -> None:
        """A new episode: the device starts from rest with an open gripper."""
        self.device.start_control()
        self._start_gripper = None
        for held in self._held_grippers:
            for key in held:
                held[key] = -np.ones_like(held[key])

    def read(self) -> DeviceCommand:
        """The device's input since the last reading, as one environment action."""
        device, scene = self.device, self.scene
        inputs = device.input2action(mirror_actions=self.mirror)
        if inputs is None:
            return DeviceCommand(None)
        robot = scene.robots[device.active_robot]
        action_dict = deepcopy(inputs)
        moved = False
        for arm in robot.arms:
            delta = inputs[f"{arm}_delta"]
            moved = moved or bool(np.any(delta != 0))
            absolute = robot.part_controllers[arm].input_type == "absolute"
            action_dict[arm] = inputs[f"{arm}_abs"] if absolute else delta
        vectors = [
            robot_i.create_action_vector(self._held_grippers[i]) for i, robot_i in enumerate(scene.robots)
        ]
        vectors[device.active_robot] = robot.create_action_vector(action_dict)
        held = self._held_grippers[device.active_robot]
        for key in held:
            held[key] = np.asarray(action_dict[key], dtype=float)
        gripper = np.concatenate([held[key] for key in sorted(held)]) if held else np.zeros(0)
        if self._start_gripper is None:
            self._start_gripper = -np.ones_like(gripper)
        moved = moved or not np.array_equal(gripper, self._start_gripper)
        action = np.concatenate(vectors).astype(np.float32)
        if action.shape != (self.action_size,):
            raise TeleopError(
                f"the device gives {action.shape[0]}-D actions, the environment takes {self.action_size}-D ones"
            )
        return DeviceCommand(action + np.float32(0.0), moved)  # + 0: no -0.0 from mirrored axes
