"""Scripted experts for OGBench's manipulation tasks (cube, puzzle, scene) in ogbench's task mode.

ogbench ships Markov oracles (``ogbench.manipspace.oracles.markov``) for one *subtask* at a time: one
cube to a target pose, one button to a target state, the drawer or window handle to a target. They read
the subtask from the info dict (``privileged/target_block``, ``privileged/target_button_state``,
``privileged/target_drawer_handle_pos``, ...), which only ogbench's ``data_collection`` mode fills in.
In ``task`` mode (embodia's ids) the environment holds a whole goal configuration instead: cube goals
in the mocap bodies ``_cube_target_mocap_ids``, ``_target_button_states``, ``_target_drawer_pos``,
``_target_window_pos``.

The expert is a small task planner on top of the unchanged oracles. Every step it reads privileged
state (``raw.compute_ob_info()``, so pixel ids work too) and asks the planner for the next subtask
toward the goal: none means everything is at its goal, and the expert holds still, gripper open. The
current subtask is kept until it is achieved and the arm has backed off above the object (or the
oracle says ``done``); then the planner's subtask starts: its data-collection keys are written into the
info dict and its oracle is reset under :func:`legacy_numpy_seed` with a seed from the expert's own
generator (oracles draw their retreat pose from NumPy's global generator). A cube released within
tolerance counts as placed, and the arm backs off straight up (the cube oracle turns the half-open
gripper toward a random yaw while lifting, which can drag the cube away, and re-grasps anything more
than 2 cm off); an arm that has not moved for 20 steps is lifted before planning again.

Planners:

- cubes: one at a time, lower goals first (a stacked cube goes on the cube actually below it); a cube
  with another on top is uncovered first (the top one goes to its own goal if that is free and
  supported, else to the free table spot farthest from all cubes and goals); when every pending goal
  is occupied (a swap or a cycle), the occupant of the first one goes to a free spot;
- puzzle (lights out): the presses are a solution of ``A x = current xor goal`` over GF(2), ``A`` the
  toggle matrix (a button toggles itself and its 4 neighbours; singular for 4x4, where the solution
  with the fewest presses is taken); the nearest one is pressed, then the plan is recomputed;
- scene: the cube, then the drawer, its button, the window, its button. Drawer and window are locked
  (damping 1e6) while their button is 0: the button is pressed to unlock before the object moves and set
  to its goal state after. A cube goal inside the drawer: unlock, open, lock again (the cube oracle
  pushes toward the target while releasing, which slides an unlocked drawer), turn the gripper so the
  fingers close parallel to the drawer's front wall, place the cube at the goal shifted by the drawer's
  displacement (2 cm off the front wall the goal touches), unlock and close.
"""

from __future__ import annotations

import itertools
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from ogbench.manipspace.oracles.markov.button_markov import ButtonMarkovOracle
from ogbench.manipspace.oracles.markov.cube_markov import CubeMarkovOracle
from ogbench.manipspace.oracles.markov.drawer_markov import DrawerMarkovOracle
from ogbench.manipspace.oracles.markov.window_markov import WindowMarkovOracle

from embodia.core.errors import PolicyError
from embodia.envs.ogbench.env import legacy_numpy_seed

if TYPE_CHECKING:
    from embodia.envs.ogbench.env import OGBenchEnv

#: ogbench's success threshold for cubes (Euclidean) and for the drawer and window joints.
GOAL_TOL = 0.04
CUBE_SIZE = 0.04
#: A drawer at least this far open (joint position, metres) takes a cube.
DRAWER_OPEN = -0.14
DRAWER_FULLY_OPEN = -0.16
#: Drawer geometry (ogbench's drawer.xml), as offsets from the handle site along y: inner face of the
#: front wall, inner face of the back wall; the fixed cabinet's front edge; x half-width of the inside.
_DRAWER_FRONT, _DRAWER_BACK, _CABINET_FRONT_Y, _DRAWER_HALF_X = -0.096, -0.244, -0.32, 0.084
#: Clearance kept between a cube placed in the drawer and the drawer walls (the fingers close along x).
_DRAWER_CLEARANCE = 0.02
#: Effector heights above which each oracle considers the arm clear of the object (from the oracles).
_CLEAR_HEIGHT = {"cube": 0.16, "button": 0.16, "drawer": 0.18, "window": 0.28}
_ORIENT_TOL = 0.1  # rad
#: Give up on a subtask (and plan again, with a fresh oracle reset) after this many steps.
_STEP_LIMIT = {"default": 250, "orient": 40, "lift": 20}
#: An arm that has not moved for this many steps is stuck: lift it to this height and plan again.
_STALL_STEPS, _LIFT_HEIGHT = 20, 0.22
HOLD_ACTION = np.array([0.0, 0.0, 0.0, 0.0, -1.0], dtype=np.float32)


@dataclass(frozen=True)
class Subtask:
    """One oracle-sized step toward the task goal.

    Attributes:
        kind: ``"cube"``, ``"button"``, ``"drawer"`` or ``"window"`` (the oracle that executes it),
            ``"orient"`` (turn the gripper in place, before a cube goes into the drawer) or ``"lift"``
            (raise the arm, after it got stuck).
        index: the cube or button index (0 for the drawer and window).
        target: cube: target position (xyz); button: ``(target state,)``; drawer / window: ``(joint pos,)``;
            orient: ``(effector yaw,)``.
        accept: cube: where the cube counts as placed (within ``GOAL_TOL``), if not ``target``.
    """

    kind: str
    index: int = 0
    target: tuple[float, ...] = ()
    accept: tuple[float, ...] = ()


# ---------------------------------------------------------------------- GF(2) linear algebra
def solve_gf2(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Solve ``a @ x = b`` over GF(2) by Gaussian elimination.

    Returns:
        ``(x, null)``: one solution and a basis of the null space of ``a`` (rows of ``null``), so the
        solutions are ``x ^ (c @ null % 2)`` for every 0/1 vector ``c``; ``None`` if there is none.
    """
    a = np.asarray(a, dtype=np.uint8) % 2
    b = np.asarray(b, dtype=np.uint8) % 2
    n_rows, n_cols = a.shape
    m = np.concatenate([a, b[:, None]], axis=1)
    pivots: list[int] = []
    row = 0
    for col in range(n_cols):
        hits = np.nonzero(m[row:, col])[0]
        if len(hits) == 0:
            continue
        pivot = row + hits[0]
        m[[row, pivot]] = m[[pivot, row]]
        others = np.nonzero(m[:, col])[0]
        others = others[others != row]
        m[others] ^= m[row]  # reduced row echelon form: clear the column above and below
        pivots.append(col)
        row += 1
        if row == n_rows:
            break
    if m[row:, -1].any():  # a zero row with a one on the right-hand side
        return None
    x = np.zeros(n_cols, dtype=np.uint8)
    for r, col in enumerate(pivots):
        x[col] = m[r, -1]
    free = [c for c in range(n_cols) if c not in pivots]
    null = np.zeros((len(free), n_cols), dtype=np.uint8)
    for k, f in enumerate(free):
        null[k, f] = 1
        for r, col in enumerate(pivots):
            null[k, col] = m[r, f]
    return x, null


def lights_out_matrix(rows: int, cols: int) -> np.ndarray:
    """The toggle matrix of a ``rows x cols`` lights-out board (button ``r * cols + c``)."""
    n = rows * cols
    a = np.zeros((n, n), dtype=np.uint8)
    for r, c in itertools.product(range(rows), range(cols)):
        for dr, dc in ((0, 0), (1, 0), (-1, 0), (0, 1), (0, -1)):
            if 0 <= r + dr < rows and 0 <= c + dc < cols:
                a[(r + dr) * cols + c + dc, r * cols + c] = 1
    return a


def lights_out_presses(rows: int, cols: int, diff: np.ndarray) -> np.ndarray | None:
    """The fewest buttons to press once each so that exactly the buttons in ``diff`` toggle (0/1 vector)."""
    solved = solve_gf2(lights_out_matrix(rows, cols), diff)
    if solved is None:
        return None
    x, null = solved
    if len(null) == 0 or len(null) > 12:  # 12: never for ogbench's boards (4x4 has 4)
        return x
    combos = np.array(list(itertools.product((0, 1), repeat=len(null))), dtype=np.uint8)
    candidates = x[None, :] ^ (combos @ null % 2).astype(np.uint8)
    return candidates[np.argmin(candidates.sum(axis=1))]


# ---------------------------------------------------------------------- planners
def _cube_positions(raw: Any, info: dict[str, Any]) -> np.ndarray:
    return np.array([info[f"privileged/block_{i}_pos"] for i in range(raw._num_cubes)])


def _cube_goals(raw: Any) -> np.ndarray:
    return np.array([raw._data.mocap_pos[m] for m in raw._cube_target_mocap_ids], dtype=np.float64)


class CubePlanner:
    """Orders pick-and-place moves so that all cubes reach their goals (stacks, swaps, cycles)."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw

    def next_subtask(self, info: dict[str, Any], goals: np.ndarray | None = None) -> Subtask | None:
        """The next cube move, or ``None`` when every cube is at its goal."""
        pos = _cube_positions(self.raw, info)
        goals = _cube_goals(self.raw) if goals is None else goals
        n = len(pos)
        pending = [i for i in range(n) if np.linalg.norm(pos[i] - goals[i]) > GOAL_TOL]
        if not pending:
            return None
        pending.sort(key=lambda i: (round(goals[i][2], 3), i))  # build stacks bottom up
        for i in pending:
            top = self._cube_on_top(pos, i)
            if top is not None:
                return self._move(top, pos, goals) or self._to_free_spot(top, pos, goals)
            move = self._move(i, pos, goals)
            if move is not None:
                return move
        # Every pending goal is blocked by a cube that is not at its goal (a swap or a cycle).
        first = pending[0]
        occupant = self._occupant(goals[first], first, pos)
        return self._to_free_spot(occupant if occupant is not None else first, pos, goals)

    def _move(self, i: int, pos: np.ndarray, goals: np.ndarray) -> Subtask | None:
        """Move cube ``i`` to its goal if the goal is free and (for stacked goals) supported."""
        goal = goals[i]
        if self._occupant(goal, i, pos) is not None:
            return None
        target = goal.copy()
        below = [j for j in range(len(pos)) if np.allclose(goals[j], goal - [0, 0, CUBE_SIZE], atol=0.01)]
        if below:  # a stacked goal: the cube below must be in place, with nothing on it
            j = below[0]
            if np.linalg.norm(pos[j] - goals[j]) > GOAL_TOL or self._cube_on_top(pos, j) is not None:
                return None
            target = pos[j] + [0.0, 0.0, CUBE_SIZE]  # on the cube actually there
        return Subtask("cube", i, _floats(target), accept=_floats(goal))

    @staticmethod
    def _cube_on_top(pos: np.ndarray, i: int) -> int | None:
        above = [j for j in range(len(pos)) if j != i and pos[j][2] > pos[i][2] + CUBE_SIZE / 2]
        return next((j for j in above if np.linalg.norm(pos[j][:2] - pos[i][:2]) < 0.03), None)

    @staticmethod
    def _occupant(target: np.ndarray, i: int, pos: np.ndarray) -> int | None:
        """A cube other than ``i`` in the way of placing a cube at ``target``."""
        level = [j for j in range(len(pos)) if j != i and abs(pos[j][2] - target[2]) < 0.03]
        return next((j for j in level if np.linalg.norm(pos[j][:2] - target[:2]) < 1.25 * CUBE_SIZE), None)

    def _to_free_spot(self, i: int, pos: np.ndarray, goals: np.ndarray) -> Subtask:
        """Move cube ``i`` to the table spot farthest from every other cube and every goal."""
        low, high = np.asarray(self.raw._object_sampling_bounds, dtype=np.float64)
        xs = np.linspace(low[0], high[0], 6)
        ys = np.linspace(low[1], high[1], 13)
        grid = np.array([(x, y) for x in xs for y in ys])
        obstacles = np.concatenate([np.delete(pos, i, axis=0)[:, :2], goals[:, :2]])
        clearance = np.min(np.linalg.norm(grid[:, None] - obstacles[None], axis=-1), axis=1)
        # Clear enough spots (rounded to 1 cm) tie-break on closeness to the cube.
        score = np.round(np.minimum(clearance, 0.15), 2) - 1e-3 * np.linalg.norm(grid - pos[i][:2], axis=1)
        x, y = grid[np.argmax(score)]
        return Subtask("cube", i, (float(x), float(y), CUBE_SIZE / 2))


class PuzzlePlanner:
    """Lights out: press the nearest button of the fewest-presses solution."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw

    def next_subtask(self, info: dict[str, Any]) -> Subtask | None:
        raw = self.raw
        current = np.asarray(raw._cur_button_states, dtype=np.uint8)
        diff = current ^ np.asarray(raw._target_button_states, dtype=np.uint8)
        if not diff.any():
            return None
        presses = lights_out_presses(raw._num_rows, raw._num_cols, diff)
        if presses is None:  # unreachable goal (never for ogbench's tasks): press a wrong button
            presses = diff
        effector = info["proprio/effector_pos"][:2]
        candidates = np.nonzero(presses)[0]
        distances = [np.linalg.norm(_button_top(raw, k)[:2] - effector) for k in candidates]
        k = int(candidates[int(np.argmin(distances))])
        return Subtask("button", k, (float(1 - current[k]),))


class ScenePlanner:
    """Cube, drawer, drawer lock, window, window lock, in that order (see the module docstring)."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw
        self.cubes = CubePlanner(raw)

    def next_subtask(self, info: dict[str, Any]) -> Subtask | None:
        raw = self.raw
        buttons = np.asarray(raw._cur_button_states)
        goal_buttons = np.asarray(raw._target_button_states)
        drawer = float(info["privileged/drawer_pos"][0])
        window = float(info["privileged/window_pos"][0])
        goal_drawer, goal_window = float(raw._target_drawer_pos), float(raw._target_window_pos)
        handle_y = float(info["privileged/drawer_handle_pos"][1])

        goals = _cube_goals(raw)
        goal_handle_y = handle_y - (goal_drawer - drawer)
        in_drawer_goal = [_in_drawer(g, goal_handle_y) for g in goals]
        shifted = goals.copy()  # where the cubes must be now, given the drawer's current position
        for i, inside in enumerate(in_drawer_goal):
            if inside:
                shifted[i, 1] += goal_drawer - drawer
        pos = _cube_positions(raw, info)
        pending = np.linalg.norm(pos - shifted, axis=1) > GOAL_TOL
        if pending.any():
            needs_drawer = any(
                pending[i] and (in_drawer_goal[i] or _in_drawer(pos[i], handle_y)) for i in range(len(pos))
            )
            if needs_drawer and drawer > DRAWER_OPEN:
                return self._unlock_or_move("drawer", 0, buttons, DRAWER_FULLY_OPEN)
            if needs_drawer and buttons[0] == 1:  # lock the open drawer: the arm would drag it along
                return Subtask("button", 0, (0.0,))
            move = self.cubes.next_subtask(info, goals=shifted)
            if (
                move is not None
                and in_drawer_goal[move.index]
                and np.allclose(move.target, shifted[move.index])
            ):
                return self._into_drawer(move.index, shifted[move.index], info)
            if move is not None:
                return move
        if abs(drawer - goal_drawer) > GOAL_TOL / 2:
            return self._unlock_or_move("drawer", 0, buttons, goal_drawer)
        if buttons[0] != goal_buttons[0]:
            return Subtask("button", 0, (float(goal_buttons[0]),))
        if abs(window - goal_window) > GOAL_TOL / 2:
            return self._unlock_or_move("window", 1, buttons, goal_window)
        if buttons[1] != goal_buttons[1]:
            return Subtask("button", 1, (float(goal_buttons[1]),))
        return None

    @staticmethod
    def _into_drawer(i: int, goal: np.ndarray, info: dict[str, Any]) -> Subtask:
        """Cube ``i`` to ``goal`` in the open drawer, after turning the gripper if it needs to."""
        yaw = _grasp_yaw_for_drawer(info, i)
        if yaw is not None:
            return Subtask("orient", i, (yaw,))
        target = _drawer_placement(goal, info["privileged/drawer_handle_pos"])
        return Subtask("cube", i, _floats(target), accept=_floats(goal))

    @staticmethod
    def _unlock_or_move(kind: str, button: int, buttons: np.ndarray, target: float) -> Subtask:
        if buttons[button] == 0:  # locked: press the button first
            return Subtask("button", button, (1.0,))
        return Subtask(kind, 0, (target,))


def _drawer_placement(target: np.ndarray, handle: np.ndarray) -> np.ndarray:
    """``target`` moved inside the open drawer, clear of its walls and of the cabinet.

    ogbench's in-drawer goals put the cube against the drawer's front wall; lowering it there makes it
    catch on the wall and push the unlocked drawer shut, so it goes a little further in (the success
    threshold allows 4 cm).
    """
    margin = CUBE_SIZE / 2 + _DRAWER_CLEARANCE
    front = handle[1] + _DRAWER_FRONT - margin
    back = max(handle[1] + _DRAWER_BACK, _CABINET_FRONT_Y) + margin
    target = np.array(target, dtype=np.float64)
    target[1] = np.clip(target[1], back, front)
    target[0] = np.clip(
        target[0], handle[0] - _DRAWER_HALF_X + margin + 0.015, handle[0] + _DRAWER_HALF_X - margin - 0.015
    )
    return target


def _grasp_yaw_for_drawer(info: dict[str, Any], i: int) -> float | None:
    """The effector yaw to turn to before grasping a cube for the drawer, or ``None`` if none is needed.

    The cube oracle grasps at the face-aligned yaw nearest the effector's and places the cube at the
    nearest multiple of 90 degrees, so the fingers end up closing along x (parallel to the drawer's
    front wall, which they would otherwise hit) exactly when the grasp yaw is within 45 degrees of
    +-90 degrees. The returned yaw is the face-aligned yaw closest to +-90 degrees.
    """
    effector = float(info["proprio/effector_yaw"][0])
    cube = float(info[f"privileged/block_{i}_yaw"][0])
    copies = cube + np.pi / 2 * np.arange(-4, 5)
    nearest = copies[np.argmin(np.abs(copies - effector))]  # the grasp yaw the oracle would pick
    copies = copies[np.abs(copies) <= np.pi]
    off_axis = np.abs(np.abs(copies) - np.pi / 2)
    best = copies[off_axis <= off_axis.min() + 1e-9]
    best_yaw = float(best[np.argmin(np.abs(best - effector))])
    if abs(abs(nearest) - np.pi / 2) < np.pi / 4 - 0.05 or abs(nearest - best_yaw) < 1e-6:
        return None
    return best_yaw


def _floats(v: np.ndarray) -> tuple[float, ...]:
    return tuple(float(x) for x in v)


def _in_drawer(p: np.ndarray, handle_y: float) -> bool:
    """Whether ``p`` lies in the drawer whose handle is at ``handle_y`` (ogbench's ``_is_in_drawer`` box)."""
    low = np.array([0.21, handle_y - 0.27, 0.0])
    high = np.array([0.45, handle_y - 0.07, 0.15])
    return bool(np.all(low <= p) and np.all(p <= high))


def _button_top(raw: Any, k: int) -> np.ndarray:
    return raw._data.site_xpos[raw._button_site_ids[k]].copy()


# ---------------------------------------------------------------------- the expert
class ManipTaskExpert:
    """Subtask planner + ogbench's Markov oracles, as an embodia policy (see the module docstring).

    Args:
        env: the :class:`OGBenchEnv` it controls (cube, puzzle or scene, state or pixel observations).
        noise: std of Gaussian noise added to every action dimension (actions are clipped to [-1, 1]).
    """

    chunk_size = 1

    def __init__(self, env: OGBenchEnv, noise: float = 0.0) -> None:
        raw = env.raw
        if getattr(raw, "_mode", "task") != "task":
            raise PolicyError(f"{env.ogbench_id}: the manipulation expert needs ogbench's task mode")
        self.env = env
        self.noise = float(noise)
        base = env.ogbench_id.removeprefix("visual-")
        self.family = base.split("-")[0]
        if self.family == "cube":
            self.planner: CubePlanner | PuzzlePlanner | ScenePlanner = CubePlanner(raw)
            self.oracles: dict[str, Any] = {"cube": CubeMarkovOracle(env=raw)}
        elif self.family == "puzzle":
            self.planner = PuzzlePlanner(raw)
            self.oracles = {"button": ButtonMarkovOracle(env=raw, gripper_always_closed=True)}
        elif self.family == "scene":
            self.planner = ScenePlanner(raw)
            self.oracles = {
                "cube": CubeMarkovOracle(env=raw),
                "button": ButtonMarkovOracle(env=raw),
                "drawer": DrawerMarkovOracle(env=raw),
                "window": WindowMarkovOracle(env=raw),
            }
        else:
            raise PolicyError(f"no scripted manipulation expert for {env.ogbench_id}")
        self.reset()

    def reset(self, seed: int | None = None) -> None:
        """Start a new episode: forget the subtask and reseed the oracle and noise generators."""
        oracle_seq, noise_seq = np.random.SeedSequence(seed).spawn(2)
        self._oracle_rng = np.random.default_rng(oracle_seq)
        self._noise_rng = np.random.default_rng(noise_seq)
        self._start(None)

    def act(self, obs: Any) -> np.ndarray:
        info = self.env.raw.compute_ob_info()
        plan = self.planner.next_subtask(info)  # None: everything is at its goal
        subtask = self.subtask if plan is not None else None
        if subtask is not None:
            self._track(subtask, info)
            if self._finished(subtask, info):
                subtask = None
            elif subtask.kind in self.oracles and self._stalled():
                subtask = Subtask("lift")  # stuck (say a finger on a cube): back off upward, then replan
                self._start(subtask)
        if subtask is None:
            subtask = plan
            self._start(subtask)
            self._orient_height = max(float(info["proprio/effector_pos"][2]), _LIFT_HEIGHT)
            if subtask is not None and subtask.kind in self.oracles:
                with legacy_numpy_seed(int(self._oracle_rng.integers(2**31 - 1))):
                    self.oracles[subtask.kind].reset(obs, self._with_targets(subtask, info))
        if subtask is None:
            action = HOLD_ACTION.astype(np.float64)
        elif subtask.kind == "orient":  # turn in place with the oracles' gains (not sagging), gripper open
            action = HOLD_ACTION.astype(np.float64)
            action[2] = 5.0 * (self._orient_height - float(info["proprio/effector_pos"][2]))
            action[3] = 3.0 * (subtask.target[0] - float(info["proprio/effector_yaw"][0]))
        elif subtask.kind == "lift" or self._settled:  # straight up, gripper open (first, once placed)
            opening = float(info["proprio/gripper_opening"][0])
            action = np.array([0.0, 0.0, 1.0 if subtask.kind == "lift" or opening < 0.25 else 0.0, 0.0, -1.0])
        else:
            action = self.oracles[subtask.kind].select_action(obs, self._with_targets(subtask, info))
            action = np.asarray(action, dtype=np.float64)
        self._steps += 1
        if self.noise > 0:
            action = action + self._noise_rng.normal(0.0, self.noise, size=action.shape)
        return np.clip(action, -1.0, 1.0).astype(np.float32)

    # ------------------------------------------------------------------ internals
    def _start(self, subtask: Subtask | None) -> None:
        self.subtask = subtask
        self._steps = 0
        self._grasped = False  # cube subtasks: the gripper has held the cube
        self._settled = False  # cube subtasks: released within tolerance; only backing off is left
        self._recent: deque[np.ndarray] = deque(maxlen=_STALL_STEPS)
        self._orient_height = _LIFT_HEIGHT  # orient: the height held while turning

    def _track(self, subtask: Subtask, info: dict[str, Any]) -> None:
        """Update the per-subtask flags and the recent effector poses (stall detection)."""
        self._recent.append(np.concatenate([info["proprio/effector_pos"], info["proprio/effector_yaw"] / 10]))
        if subtask.kind != "cube":
            return
        contact = float(info["proprio/gripper_contact"][0])
        self._grasped = self._grasped or contact > 0.5
        if self._grasped and contact < 0.1 and self._achieved(subtask, info):
            self._settled = True

    def _stalled(self) -> bool:
        """The arm has not moved (4 mm, 0.04 rad) for the last ``_STALL_STEPS`` steps."""
        return (
            len(self._recent) == _STALL_STEPS and float(np.ptp(np.array(self._recent), axis=0).max()) < 0.004
        )

    def _achieved(self, subtask: Subtask, info: dict[str, Any]) -> bool:
        raw = self.env.raw
        if subtask.kind == "cube":
            pos = info[f"privileged/block_{subtask.index}_pos"]
            return bool(np.linalg.norm(pos - np.array(subtask.accept or subtask.target)) <= GOAL_TOL)
        if subtask.kind == "button":
            return int(raw._cur_button_states[subtask.index]) == int(subtask.target[0])
        if subtask.kind == "orient":
            return abs(float(info["proprio/effector_yaw"][0]) - subtask.target[0]) < _ORIENT_TOL
        if subtask.kind == "lift":
            return bool(info["proprio/effector_pos"][2] > _LIFT_HEIGHT)
        joint = float(info[f"privileged/{subtask.kind}_pos"][0])
        return abs(joint - subtask.target[0]) <= GOAL_TOL / 2

    def _finished(self, subtask: Subtask, info: dict[str, Any]) -> bool:
        """Achieved and the arm clear of the object (or the oracle done, or the subtask too long)."""
        if self._steps >= _STEP_LIMIT.get(subtask.kind, _STEP_LIMIT["default"]):
            return True
        if subtask.kind in ("orient", "lift"):
            return self._achieved(subtask, info)
        if not (self._settled or self._achieved(subtask, info)):
            return False
        clear = info["proprio/effector_pos"][2] > _CLEAR_HEIGHT[subtask.kind]
        if subtask.kind == "cube":
            clear = clear and info["proprio/gripper_contact"][0] < 0.1
        return bool(clear or self.oracles[subtask.kind].done)

    def _with_targets(self, subtask: Subtask, info: dict[str, Any]) -> dict[str, Any]:
        """``info`` plus the data-collection keys that tell the oracle what ``subtask`` is."""
        raw = self.env.raw
        info = dict(info)
        info["privileged/target_task"] = subtask.kind
        if subtask.kind == "cube":
            info["privileged/target_block"] = subtask.index
            info["privileged/target_block_pos"] = np.array(subtask.target, dtype=np.float64)
            info["privileged/target_block_yaw"] = np.zeros(1)
        elif subtask.kind == "button":
            info["privileged/target_button"] = subtask.index
            info["privileged/target_button_state"] = int(subtask.target[0])
            info["privileged/target_button_top_pos"] = _button_top(raw, subtask.index)
        else:
            joint = float(info[f"privileged/{subtask.kind}_pos"][0])
            handle = np.array(info[f"privileged/{subtask.kind}_handle_pos"], dtype=np.float64)
            if subtask.kind == "drawer":  # the handle moves along -y as the joint grows
                handle[1] -= subtask.target[0] - joint
            else:  # the window handle moves along +x
                handle[0] += subtask.target[0] - joint
            info[f"privileged/target_{subtask.kind}_pos"] = np.array([subtask.target[0]])
            info[f"privileged/target_{subtask.kind}_handle_pos"] = handle
        return info


def make_manip_expert(env: OGBenchEnv, noise: float = 0.0) -> ManipTaskExpert:
    """The scripted expert for an ogbench cube, puzzle or scene environment in task mode."""
    return ManipTaskExpert(env, noise=noise)
