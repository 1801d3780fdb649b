"""Teleoperation: a person drives the robot with a keyboard or a SpaceMouse and records demonstrations.

:func:`teleoperate` opens a window showing the robot's camera with the task's instruction, the device's keys
and the episode's status, reads a device (:mod:`embodia.runner.teleop_devices`: robosuite's ``Keyboard`` /
``SpaceMouse``) at the environment's control frequency (20 steps/s in the kitchens) and steps the
environment with the action the device gives. Episodes go to a trajectory store through the same recording
hook and recorder as ``embodia run --record`` (:class:`~embodia.runner.hooks.RecordingHook`,
:class:`~embodia.data.recorder.EpisodeRecorder`, one writer), with the instruction in every observation
(``instruction``), the seed, the initial and final simulator states and the success flags.

An episode, RoboCasa-style (RoboCasa's ``collect_demos.py``):

- it starts recording at the first input (an arm motion or a gripper change); until then nothing is stepped,
  so no idle steps are recorded (RoboCasa skips empty SpaceMouse input the same way);
- after that the environment steps at the control frequency whether or not a key is held (the robot holds
  its pose on a zero action);
- it is **kept** when the user ends it (Enter: the last step is marked ``truncated``) or when the
  environment ends it: a kitchen terminates at the first step where the task succeeds (RoboCasa waits for 10
  more successful steps; embodia's kitchens end at success, so that the recorded success matches ``embodia
  run``'s); ``max_steps``, when given, also ends it (kept, truncated);
- it is **discarded** with ``q`` (robosuite's reset key) or the SpaceMouse's right button, and when the user
  quits (Esc, or closing the window) in the middle of it; the next attempt starts in a new kitchen.

Attempt ``i`` resets with seed ``seed + i`` (kept or discarded), so every kitchen is reproducible; the store
records each episode's seed. The window is OpenCV's (``cv2.imshow``: ``opencv-python`` with its Qt backend is
already a dependency, and it shows numpy images without an OpenGL context of its own; the camera image is
rendered offscreen by the environment, as in every other embodia run).
"""

from __future__ import annotations

import os
import textwrap
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from embodia.core.errors import EmbodiaError
from embodia.core.seeds import check_seeds
from embodia.data.recorder import EpisodeRecorder, control_fps
from embodia.data.store import TrajectoryStore
from embodia.envs import make, resolve_id
from embodia.runner.hooks import EpisodeStats, RecordingHook, Step
from embodia.runner.teleop_devices import (
    RobosuiteArmMapper,
    SessionKeys,
    TeleopError,
    check_device,
    check_display,
    check_env_fits,
    close_device,
    device_help,
    make_device,
    robosuite_scene,
)

#: the episode length when no max_steps is given (a person takes as long as they need)
UNLIMITED_STEPS = 10**9
WINDOW_TITLE = "embodia teleop"


@dataclass
class TeleopResult:
    """What a teleoperation session recorded."""

    env_id: str
    kept: list[EpisodeStats] = field(default_factory=list)
    """the kept episodes (``store_index`` set where they were recorded)"""
    discarded: int = 0
    """attempts the user discarded (or left by quitting)"""
    quit: bool = False
    """whether the user quit (rather than reaching the number of episodes asked for)"""


#: the window's layout in pixels: the banner with the instruction on top, the panel with status and keys at the right
BANNER_HEIGHT = 56
PANEL_WIDTH = 300


def compose_view(
    frame: np.ndarray, instruction: str, status: Sequence[str], help_lines: Sequence[tuple[str, str]]
) -> np.ndarray:
    """The window's picture (BGR, for OpenCV): the instruction across the top, the camera image (RGB ``frame``)
    below it on the left, the status lines and the keys on the right."""
    import cv2

    image = np.ascontiguousarray(frame[..., ::-1])  # RGB -> OpenCV's BGR
    height, width = image.shape[:2]
    panel_height = max(height, 30 + 20 * len(status) + 19 * len(help_lines))
    total_width = width + PANEL_WIDTH
    canvas = np.full((BANNER_HEIGHT + panel_height, total_width, 3), 48, dtype=np.uint8)
    canvas[:BANNER_HEIGHT] = 32
    font = cv2.FONT_HERSHEY_SIMPLEX
    for i, line in enumerate(textwrap.wrap(instruction, width=max(20, total_width // 11))[:2]):
        cv2.putText(canvas, line, (8, 22 + 24 * i), font, 0.6, (255, 255, 255), 1, cv2.LINE_AA)
    canvas[BANNER_HEIGHT : BANNER_HEIGHT + height, :width] = image
    x, y = width + 8, BANNER_HEIGHT + 22
    for line in status:
        cv2.putText(canvas, line, (x, y), font, 0.5, (120, 230, 120), 1, cv2.LINE_AA)
        y += 20
    y += 10
    for keys, meaning in help_lines:
        cv2.putText(canvas, keys, (x, y), font, 0.45, (255, 220, 120), 1, cv2.LINE_AA)
        cv2.putText(canvas, meaning, (x + 110, y), font, 0.45, (235, 235, 235), 1, cv2.LINE_AA)
        y += 19
    return canvas


class TeleopWindow:
    """An OpenCV window: the camera image, the instruction above it, the keys and the status beside it."""

    def __init__(self, help_lines: Sequence[tuple[str, str]], title: str = WINDOW_TITLE) -> None:
        try:
            import cv2
        except ModuleNotFoundError:
            raise TeleopError("the teleoperation window needs OpenCV: pip install opencv-python") from None
        # OpenCV's Qt looks for fonts in its own folder and warns on every window; our text is drawn by OpenCV
        os.environ.setdefault("QT_LOGGING_RULES", "qt.qpa.fonts=false")
        self.cv2 = cv2
        self.title = title
        self.help_lines = tuple(help_lines)
        cv2.namedWindow(title, cv2.WINDOW_AUTOSIZE | cv2.WINDOW_GUI_NORMAL)

    def show(self, frame: np.ndarray, instruction: str, status: Sequence[str]) -> bool:
        """Draw a frame; False once the user has closed the window."""
        cv2 = self.cv2
        cv2.imshow(self.title, compose_view(frame, instruction, status, self.help_lines))
        cv2.waitKey(1)  # lets the window draw and handle its events (the keys are read by the device)
        return cv2.getWindowProperty(self.title, cv2.WND_PROP_VISIBLE) >= 1

    def close(self) -> None:
        self.cv2.destroyWindow(self.title)
        self.cv2.waitKey(1)


def teleoperate(
    env_id: str,
    *,
    device: str = "keyboard",
    record: str | Path | None = None,
    seed: int = 0,
    episodes: int | None = None,
    env_kwargs: dict[str, Any] | None = None,
    camera: str = "agentview",
    image_size: int = 480,
    pos_sensitivity: float = 1.0,
    rot_sensitivity: float = 1.0,
    max_steps: int | None = None,
    mirror: bool = True,
    on_message: Callable[[str], None] = print,
) -> TeleopResult:
    """Drive ``env_id`` with a device and record the kept episodes; returns what was kept and discarded.

    Args:
        env_id: an environment a robosuite device can drive (the kitchens, ``embodia/Kitchen-*``).
        device: ``"keyboard"`` (robosuite's ``Keyboard``) or ``"spacemouse"`` (robosuite's ``SpaceMouse``).
        record: a trajectory store to append the kept episodes to (created if missing); None records nothing.
        seed: attempt ``i`` resets with seed ``seed + i``.
        episodes: stop after this many kept episodes (None: until the user quits).
        env_kwargs: environment arguments (recorded with each episode, as ``embodia run`` does).
        camera: the environment camera the window shows (the kitchens: ``agentview``, the robot's view over its
            shoulder; ``eye_in_hand``; ``overview``).
        image_size: the camera image's side in the window, in pixels.
        pos_sensitivity: robosuite's scale of the device's position input.
        rot_sensitivity: robosuite's scale of the device's rotation input.
        max_steps: end (and keep) an episode after this many steps (None: no limit).
        mirror: robosuite's ``mirror_actions`` (the camera looks from behind the robot: the kitchens).
        on_message: receives one line per event (ready, kept, discarded, quit): the command prints them.
    """
    env_kwargs = dict(env_kwargs or {})
    if episodes is not None and episodes < 1:
        raise EmbodiaError(f"episodes must be at least 1, got {episodes}")
    if max_steps is not None and max_steps < 1:
        raise EmbodiaError(f"max_steps must be at least 1, got {max_steps}")
    if image_size < 16:
        raise EmbodiaError(f"image_size must be at least 16 pixels, got {image_size}")
    check_seeds(seed, episodes or 1)
    env_id = resolve_id(env_id)
    check_device(device)
    check_display()
    check_env_fits(env_id)
    display_kwargs = {
        "render_mode": "rgb_array",
        "render_camera": camera,
        "width": image_size,
        "height": image_size,
    }
    clash = sorted(set(display_kwargs) & set(env_kwargs))
    if clash:
        raise EmbodiaError(
            f"teleop sets {', '.join(clash)} itself (the window's camera): drop them from --env-kwarg"
        )
    # the store first: a locked or unusable store is refused before the kitchen is built
    store = TrajectoryStore(record, mode="a") if record is not None else None
    recorder = EpisodeRecorder(store, env_id, env_kwargs, commit_every=0.0) if store is not None else None
    result = TeleopResult(env_id)
    parts: list[Any] = []  # closed in reverse order
    try:
        env = make(env_id, **env_kwargs, **display_kwargs, max_episode_steps=max_steps or UNLIMITED_STEPS)
        parts.append(env)
        scene = robosuite_scene(env, env_id)
        keys = SessionKeys()
        parts.append(keys)
        robosuite_device = make_device(device, scene, keys, pos_sensitivity, rot_sensitivity)
        parts.append(robosuite_device)
        mapper = RobosuiteArmMapper(robosuite_device, scene, mirror, int(np.prod(env.action_space.shape)))
        window = TeleopWindow(device_help(device))
        parts.append(window)
        for keys_text, meaning in device_help(device):
            on_message(f"  {keys_text:<18} {meaning}")
        session = _Session(env, mapper, keys, window, recorder, control_fps(env) or 20.0, on_message)
        attempt = 0
        while episodes is None or len(result.kept) < episodes:
            check_seeds(seed + attempt, 1)
            outcome = session.run_attempt(seed + attempt, len(result.kept))
            attempt += 1
            if outcome.kept is not None:
                result.kept.append(outcome.kept)
            result.discarded += int(outcome.discarded)
            if outcome.quit:
                result.quit = True
                break
    finally:
        try:
            if recorder is not None and store is not None:
                recorder.flush()  # each kept episode was committed as it ended; this is a no-op then
                store.touch()
        finally:
            if store is not None:
                store.close()
            for part in reversed(parts):
                _close(part)
    recorded = f" to {record}" if record is not None else " (not recorded: no --record)"
    on_message(f"done: {len(result.kept)} episodes kept{recorded}, {result.discarded} discarded")
    return result


@dataclass
class _Outcome:
    kept: EpisodeStats | None = None
    discarded: bool = False
    quit: bool = False


class _Session:
    """Runs attempts: reset, wait for the first input, step at the control frequency, keep or discard."""

    def __init__(
        self,
        env: Any,
        mapper: RobosuiteArmMapper,
        keys: SessionKeys,
        window: TeleopWindow,
        recorder: EpisodeRecorder | None,
        fps: float,
        on_message: Callable[[str], None],
    ) -> None:
        self.env = env
        self.mapper = mapper
        self.keys = keys
        self.window = window
        self.hook = RecordingHook(recorder) if recorder is not None else None
        self.period = 1.0 / fps
        self.on_message = on_message

    def run_attempt(self, seed: int, index: int) -> _Outcome:
        """One attempt with ``seed``; kept as episode ``index`` of the session if the user keeps it."""
        env = self.env
        obs, info = env.reset(seed=seed)
        episode = _Episode(index, seed, str(info.get("instruction", "")) or "(no instruction)", obs, info)
        self.mapper.start()
        if self.keys.take()["quit"]:  # Esc pressed while the kitchen was being built
            return _Outcome(quit=True)
        frame = env.render()
        if not self.window.show(frame, episode.instruction, episode.status()):
            return _Outcome(quit=True)
        self.on_message(f"ready: episode {index} (seed {seed}): {episode.instruction}")
        try:
            while True:
                tick = time.monotonic()
                # the session keys before the device: every move pressed before them is in this reading
                flags = self.keys.take()
                if flags["quit"]:
                    return self._drop(episode, "quit", quit=True)
                command = self.mapper.read()
                if command.action is None or flags["discard"]:
                    return self._drop(episode, "discarded")
                if not episode.started and command.moved:
                    episode.started = True
                    if self.hook is not None:
                        self.hook.begin(env, seed, episode.obs, episode.info)
                    self.on_message(f"recording: episode {index} from the first input")
                if episode.started:
                    kept = self._step(episode, command.action, flags["end"])
                    if kept is not None:
                        return kept
                    frame = env.render()
                elif flags["end"]:
                    self.on_message("nothing to keep yet: move the robot first (q discards, Esc quits)")
                if not self.window.show(frame, episode.instruction, episode.status()):
                    return self._drop(episode, "quit (window closed)", quit=True)
                time.sleep(max(0.0, self.period - (time.monotonic() - tick)))
        except BaseException:
            if episode.started and self.hook is not None:
                self.hook.abort(env)
            raise

    def _step(self, episode: _Episode, action: np.ndarray, end: bool) -> _Outcome | None:
        """Step with ``action`` and record it; the outcome if the episode ends here (kept), else None."""
        env = self.env
        next_obs, reward, terminated, truncated, info = env.step(action)
        episode.steps += 1
        episode.total += float(reward)
        episode.success = episode.success or bool(info.get("success", False))
        episode.gripper = "closed" if action[-1] > 0 else "open"
        user_ended = end and not (terminated or truncated)
        truncated = bool(truncated or user_ended)
        if self.hook is not None:
            self.hook.step(env, Step(episode.obs, action, float(reward), bool(terminated), truncated, info))
        episode.obs = next_obs
        if not (terminated or truncated):
            return None
        stats = EpisodeStats(
            episode.index,
            episode.seed,
            episode.total,
            episode.steps,
            episode.success,
            bool(terminated),
            truncated,
        )
        if self.hook is not None:
            self.hook.end(env, stats)
        where = f", store episode {stats.store_index}" if stats.store_index is not None else ""
        why = "ended by you" if user_ended else ("success" if terminated else "step limit")
        self.on_message(
            f"kept: episode {episode.index} ({why}): {episode.steps} steps, "
            f"success {'yes' if episode.success else 'no'}{where}"
        )
        return _Outcome(kept=stats)

    def _drop(self, episode: _Episode, why: str, quit: bool = False) -> _Outcome:
        if episode.started and self.hook is not None:
            self.hook.abort(self.env)
        self.on_message(f"{why}: the episode was not kept" if episode.started else why)
        return _Outcome(discarded=episode.started or not quit, quit=quit)


@dataclass
class _Episode:
    """The attempt in progress."""

    index: int
    seed: int
    instruction: str
    obs: Any
    info: dict[str, Any]
    started: bool = False
    steps: int = 0
    total: float = 0.0
    success: bool = False
    gripper: str = "open"

    def status(self) -> tuple[str, ...]:
        return (
            f"episode {self.index}  seed {self.seed}",
            f"steps {self.steps}" if self.started else "waiting for the first input",
            f"gripper {self.gripper}",
            f"success {'yes' if self.success else 'no'}",
        )


def _close(part: Any) -> None:
    if isinstance(part, (SessionKeys, TeleopWindow)):
        part.close()
    elif hasattr(part, "input2action"):
        close_device(part)
    else:
        part.close()
