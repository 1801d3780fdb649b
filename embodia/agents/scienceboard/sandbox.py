"""Isolation of one ScienceBoard episode: its own workspace, display, session bus and process groups.

A :class:`Sandbox` owns

- a temporary **workspace** folder (the programs' working directory and ``$HOME``; removed on close);
- optionally a virtual **display**: ``Xvfb`` on a free display number (``-displayfd``), a private D-Bus session
  bus and, through it, the AT-SPI accessibility bus (Qt programs register on it with
  ``QT_LINUX_ACCESSIBILITY_ALWAYS_ON``), plus screenshots (Pillow's XCB grabber), ``xdotool`` input and the
  accessibility tree (:mod:`embodia.agents.scienceboard.a11y_tree`, run by Debian's Python, which has
  ``pyatspi``);
- every **process** it starts, each in a process group of its own (``start_new_session``), with a marker in its
  environment so that processes a program started behind our back (D-Bus activation, browser helpers) are
  found too;
- an **operating-system boundary** around the scientific programs (bubblewrap: mount, PID and network
  namespaces): the file system they see is the system's programs and libraries read-only (``/usr``, ``/etc``,
  ``/var/lib``, ...) plus the workspace, read-write, and the X server's socket; home folders, ``/root``,
  ``/tmp`` and the project are not there at all, every process a program starts dies with it, and the only
  network is a loopback of its own (a program that serves TCP, Stellarium, is reached through a Unix socket
  in the workspace, ``programs/tcp_bridge.py``). What a program does with an agent's input — a command that
  evaluates Python, a file dialog, a macro — cannot reach a file outside the workspace, a host service or the
  network, nor outlive the episode, whatever the text of the command. The display, bus and
  input helpers the harness itself runs (Xvfb, D-Bus, xdotool, the accessibility reader) stay outside.

Limits: :meth:`Sandbox.run` and the programs' read loops take a timeout; a program that does not answer in
time is killed (its whole group) and :class:`ProgramHungError` ends the episode cleanly. :meth:`close` kills
everything that carries the marker and removes the workspace; it runs on ``with`` exit, on Ctrl-C (the
exception unwinds through ``with``) and at interpreter exit for any sandbox still open.

:func:`outside_paths` finds file names in an agent's command that leave the workspace (absolute paths,
``..``, ``~``), which environments refuse unless the task allows it: a clearer answer to the agent, not the
boundary (the boundary is the file system the program sees).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from embodia.core.errors import EmbodiaError

if TYPE_CHECKING:
    from PIL import Image

MARKER = "EMBODIA_SCIENCEBOARD_SANDBOX"
"""Environment variable every sandboxed process carries (value: the sandbox id)."""
SYSTEM_PYTHON = "/usr/bin/python3"
"""Debian's Python, which has the distribution's ``pyatspi``, ``gi`` and ``pymol`` modules."""
SCREEN = (1280, 800)
"""Virtual screen size in pixels."""
_SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"
#: what a confined program sees of the system, read-only (the rest of the file system is not there)
SYSTEM_FOLDERS = ("/usr", "/etc", "/var/lib", "/var/cache", "/sys", "/opt")
#: the package's helper scripts that confined programs run (the PyMOL server): readable, nothing else of it
HELPERS = Path(__file__).resolve().parent / "programs"


class SandboxError(EmbodiaError):
    """A program or display that could not be started, or a sandbox used after closing."""


UNSAFE_FLAG = "--unsafe-no-sandbox"
"""The command-line flag that runs the programs without the boundary (never offered to an agent)."""
_BOUNDARY_PROBE: list[str] = ["--ro-bind", "/", "/", "--unshare-pid", "--unshare-uts", "--unshare-net"]
_boundary_problem: str | None = None
_boundary_checked = False


def boundary_problem() -> str | None:
    """None when bubblewrap can build the episode boundary on this machine, else what stops it (one line).

    Probed once per process: ``bwrap`` makes the mount, PID, UTS and network namespaces the sandbox uses and
    runs ``true``. Without user namespaces for an unprivileged user (a distribution that restricts them, or
    a container started with user namespaces disabled) it cannot.
    """
    global _boundary_problem, _boundary_checked
    if not _boundary_checked:
        if shutil.which("bwrap") is None:
            _boundary_problem = (
                "bubblewrap (bwrap) is not installed; run `make setup` (Debian: apt install bubblewrap)"
            )
        else:
            try:
                probe = subprocess.run(
                    ["bwrap", *_BOUNDARY_PROBE, "--", "true"], capture_output=True, text=True, timeout=30
                )
            except subprocess.TimeoutExpired:
                _boundary_problem = "bubblewrap did not start a trial sandbox within 30 s"
            else:
                said = (probe.stderr.strip().splitlines() or [f"exit status {probe.returncode}"])[-1]
                _boundary_problem = (
                    None
                    if probe.returncode == 0
                    else (
                        f"bubblewrap cannot make the episode's namespaces here ({said}); allow unprivileged user "
                        "namespaces (sysctl kernel.unprivileged_userns_clone=1; on Ubuntu also "
                        "kernel.apparmor_restrict_unprivileged_userns=0) or run as root, or pass "
                        f"{UNSAFE_FLAG} to run the programs without the boundary"
                    )
                )
        _boundary_checked = True
    return _boundary_problem


class ProgramHungError(SandboxError):
    """A program did not answer within its time limit; it has been killed."""


class ProgramCrashedError(SandboxError):
    """A program exited while the episode still needed it."""


def missing_programs(names: Sequence[str]) -> list[str]:
    """Which of ``names`` are not on the system ``PATH`` (the project's ``make setup`` installs them)."""
    return [name for name in names if shutil.which(name, path=_SYSTEM_PATH) is None]


def require_programs(names: Sequence[str], package_hint: str) -> None:
    """Raise :class:`SandboxError` naming what is missing and how to install it."""
    missing = missing_programs(names)
    if missing:
        raise SandboxError(
            f"{', '.join(missing)} not installed; run `make setup` (or `apt-get install {package_hint}`)"
        )


_OPEN: weakref.WeakSet[Sandbox] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    for sandbox in list(_OPEN):
        sandbox.close()


def _exit_on_sigterm() -> None:
    """Turn SIGTERM into SystemExit (in the main thread, where nobody else handles it), so that ``with``
    blocks and atexit close every sandbox: a terminated run leaves no program behind."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))


class Sandbox:
    """One episode's workspace, optional display, and processes (see the module docstring)."""

    def __init__(
        self,
        *,
        display: bool = False,
        parent: str | Path | None = None,
        screen: tuple[int, int] = SCREEN,
        confine: bool = True,
    ):
        """``confine=False`` runs the programs without the operating-system boundary (``--unsafe-no-sandbox``);
        with ``confine=True`` a machine where bubblewrap cannot build it raises :class:`SandboxError`."""
        if confine and (problem := boundary_problem()):
            raise SandboxError(problem)
        self.confine = confine
        self.id = uuid.uuid4().hex[:12]
        self.workspace = Path(tempfile.mkdtemp(prefix="embodia-scienceboard-", dir=parent)).resolve()
        self.screen = screen
        home, tmp, runtime = self.workspace / ".home", self.workspace / ".tmp", self.workspace / ".run"
        for folder in (home, tmp, runtime):
            folder.mkdir(mode=0o700)
        self.env: dict[str, str] = {
            "PATH": _SYSTEM_PATH,
            "HOME": str(home),
            "TMPDIR": str(tmp),
            "XDG_RUNTIME_DIR": str(runtime),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_CACHE_HOME": str(home / ".cache"),
            "XDG_DATA_HOME": str(home / ".local" / "share"),
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            MARKER: self.id,
        }
        self.display: str | None = None
        self._processes: list[subprocess.Popen] = []
        self._closed = False
        _OPEN.add(self)
        _exit_on_sigterm()
        if display:
            try:
                self._start_display()
            except BaseException:
                self.close()
                raise

    # ------------------------------------------------------------------------------------------ display
    def _start_display(self) -> None:
        require_programs(
            ["Xvfb", "dbus-daemon", "dbus-send", "xdotool", "xprop"],
            "xvfb dbus-daemon dbus-bin xdotool x11-utils at-spi2-core",
        )
        read_end, write_end = os.pipe()
        width, height = self.screen
        try:
            self.spawn(
                [
                    "Xvfb",
                    "-displayfd",
                    str(write_end),
                    "-screen",
                    "0",
                    f"{width}x{height}x24",
                    "-nolisten",
                    "tcp",
                ],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                pass_fds=(write_end,),
                confined=False,
            )
            os.close(write_end)
            number = _read_line(read_end, timeout=20.0, what="Xvfb's display number")
        finally:
            os.close(read_end)
        self.display = f":{number}"
        self.env["DISPLAY"] = self.display
        bus = self.spawn(
            [
                "dbus-daemon",
                "--session",
                "--fork",
                "--nopidfile",
                "--print-address=1",
                # in the workspace, the one folder confined programs share with the harness
                f"--address=unix:path={self.workspace / '.run' / 'bus'}",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            confined=False,
        )
        assert bus.stdout is not None
        self.env["DBUS_SESSION_BUS_ADDRESS"] = _read_line(
            bus.stdout.fileno(), timeout=20.0, what="the D-Bus address"
        )
        self.env.update(
            {
                "QT_LINUX_ACCESSIBILITY_ALWAYS_ON": "1",
                "QT_ACCESSIBILITY": "1",
                "QTWEBENGINE_DISABLE_SANDBOX": "1",  # Chromium's sandbox refuses to run as root (CI is root)
                "QT_QPA_PLATFORM": "xcb",
                "NO_AT_BRIDGE": "0",
            }
        )
        # The accessibility bus: Qt looks for it on the X root window first (AT_SPI_BUS), connecting at once;
        # its fallback (asking the session bus) races the program's own start-up and loses now and then.
        ask = ["dbus-send", "--session", "--print-reply=literal", "--dest=org.a11y.Bus", "/org/a11y/bus"]
        for _ in range(50):
            reply = self.run([*ask, "org.a11y.Bus.GetAddress"], timeout=10.0, confined=False)
            if reply.returncode == 0 and reply.stdout.strip():
                break
            time.sleep(0.2)
        else:
            raise SandboxError("the AT-SPI accessibility bus did not start (is at-spi2-core installed?)")
        address = reply.stdout.strip().splitlines()[-1].strip()
        self.a11y_tree()  # starts the registry, which programs register with
        for _ in range(20):  # the bus launcher may still be settling the root window's properties
            self.run(
                ["xprop", "-root", "-f", "AT_SPI_BUS", "8s", "-set", "AT_SPI_BUS", address],
                timeout=10.0,
                confined=False,
            )
            time.sleep(0.1)
            if address in self.run(["xprop", "-root", "AT_SPI_BUS"], timeout=10.0, confined=False).stdout:
                break
        else:
            raise SandboxError("could not publish the accessibility bus on the virtual display")

    def screenshot(self) -> Image.Image:
        """The whole virtual screen as an RGB image."""
        from PIL import ImageGrab

        self._need_display()
        return ImageGrab.grab(xdisplay=self.display).convert("RGB")

    def xdotool(self, *arguments: str, timeout: float = 15.0) -> str:
        """Run ``xdotool`` on this display; its output."""
        self._need_display()
        return self.run(["xdotool", *arguments], timeout=timeout, confined=False).stdout

    def a11y_tree(
        self,
        application: str | None = None,
        max_lines: int = 300,
        timeout: float = 20.0,
        showing_only: bool = False,
    ) -> str:
        """The accessibility tree of ``application`` (default: every one) as indented text, one node a line;
        ``showing_only`` leaves out what is not on screen (closed menus, hidden pages) and what is below it."""
        self._need_display()
        script = Path(__file__).with_name("a11y_tree.py")
        argv = [SYSTEM_PYTHON, str(script), "--max-lines", str(max_lines)]
        if showing_only:
            argv += ["--showing-only", "1"]
        if application:
            argv += ["--application", application]
        return self.run(argv, timeout=timeout, confined=False).stdout

    def _need_display(self) -> None:
        if self.display is None:
            raise SandboxError("this sandbox has no display (create it with display=True)")

    # ---------------------------------------------------------------------------------------- processes
    def confinement(self, cwd: str | Path | None = None) -> list[str]:
        """The bubblewrap command line that runs a program inside the episode's boundary (module docstring)."""
        require_programs(["bwrap"], "bubblewrap")
        argv = ["bwrap", "--die-with-parent", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try"]
        argv += ["--unshare-net"]  # a network namespace of its own: loopback only
        for folder in SYSTEM_FOLDERS:
            argv += ["--ro-bind-try", folder, folder]
        for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):  # merged-/usr links, or real folders
            top = Path("/") / name
            if top.is_symlink():
                argv += ["--symlink", os.readlink(top), str(top)]
            elif top.is_dir():
                argv += ["--ro-bind", str(top), str(top)]
        argv += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", "/run"]
        if Path("/tmp/.X11-unix").is_dir():  # the virtual display's socket
            argv += ["--ro-bind", "/tmp/.X11-unix", "/tmp/.X11-unix"]
        argv += ["--ro-bind", str(HELPERS), str(HELPERS)]
        argv += ["--bind", str(self.workspace), str(self.workspace), "--chdir", str(cwd or self.workspace)]
        return [*argv, "--"]

    def spawn(
        self,
        argv: Sequence[str],
        *,
        stdin: Any = subprocess.PIPE,
        stdout: Any = subprocess.PIPE,
        stderr: Any = None,
        env: dict[str, str] | None = None,
        cwd: str | Path | None = None,
        pass_fds: Sequence[int] = (),
        confined: bool = True,
    ) -> subprocess.Popen:
        """Start ``argv`` in its own process group inside the sandbox (cwd: the workspace).

        ``confined`` (the default, for every program an agent's actions reach) runs it inside the
        operating-system boundary; the harness's own display, bus and input helpers pass False.
        """
        if self._closed:
            raise SandboxError("this sandbox is closed")
        if confined and self.confine:
            argv = [*self.confinement(cwd), *argv]
        log = stderr
        if log is None:
            log = open(self.workspace / ".run" / "programs.log", "ab")  # noqa: SIM115 - handed to the child
        try:
            process = subprocess.Popen(
                list(argv),
                stdin=stdin,
                stdout=stdout,
                stderr=log,
                env={**self.env, **(env or {})},
                cwd=str(cwd or self.workspace),
                start_new_session=True,
                pass_fds=tuple(pass_fds),
            )
        except FileNotFoundError:
            raise SandboxError(f"{argv[0]} is not installed; run `make setup`") from None
        finally:
            if stderr is None:
                log.close()
        self._processes.append(process)
        return process

    def run(
        self,
        argv: Sequence[str],
        *,
        timeout: float,
        input: str | None = None,
        env: dict[str, str] | None = None,
        cwd: str | Path | None = None,
        confined: bool = True,
    ) -> subprocess.CompletedProcess:
        """Run ``argv`` to completion (text in/out, stderr merged into stdout); a program that takes longer
        than ``timeout`` seconds is killed with its group and :class:`ProgramHungError` raised."""
        process = self.spawn(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=cwd,
            confined=confined,
        )
        try:
            out, _ = process.communicate(input.encode() if input is not None else None, timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill(process)
            raise ProgramHungError(
                f"{Path(argv[0]).name} did not finish within {timeout:g} s and was killed"
            ) from None
        finally:
            with contextlib.suppress(ValueError):
                self._processes.remove(process)
        return subprocess.CompletedProcess(list(argv), process.returncode, out.decode("utf-8", "replace"), "")

    def kill(self, process: subprocess.Popen, grace: float = 2.0) -> None:
        """Terminate ``process``'s whole group (SIGTERM, then SIGKILL after ``grace`` seconds)."""
        for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, sig)
            try:
                process.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                continue
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()

    def marked_processes(self) -> list[int]:
        """Process ids that carry this sandbox's marker (everything it started, however indirectly)."""
        needle = f"{MARKER}={self.id}".encode()
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                if needle in (entry / "environ").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
            except OSError:
                continue
        return found

    def close(self) -> None:
        """Kill every process of the sandbox and remove its workspace (idempotent)."""
        if self._closed:
            return
        self._closed = True
        for process in reversed(self._processes):
            if process.poll() is None:
                self.kill(process, grace=1.0)
            else:
                for stream in (process.stdin, process.stdout, process.stderr):
                    if stream is not None:
                        with contextlib.suppress(OSError):
                            stream.close()
        self._processes.clear()
        for attempt in range(20):  # processes started behind our back (D-Bus activation) carry the marker
            left = self.marked_processes()
            if not left:
                break
            for pid in left:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL if attempt else signal.SIGTERM)
            time.sleep(0.1)
        shutil.rmtree(self.workspace, ignore_errors=True)
        _OPEN.discard(self)

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _read_line(fd: int, timeout: float, what: str) -> str:
    """Read one line from a file descriptor within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    data = b""
    while b"\n" not in data:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise SandboxError(f"timed out waiting for {what}")
        chunk = os.read(fd, 4096)
        if not chunk:
            raise SandboxError(f"the program exited before printing {what}")
        data += chunk
    return data.split(b"\n", 1)[0].decode().strip()


_PATH_TOKEN = re.compile(r"""(?:^|[\s"'=(,:;<>\[{])((?:~|/|\.\.)[^\s"',;)\]}]*)""")


def outside_paths(text: str, workspace: Path, allowed: Sequence[Path] = ()) -> list[str]:
    """File names in ``text`` that resolve outside ``workspace`` (and outside ``allowed`` folders)."""
    found = []
    for match in _PATH_TOKEN.finditer(text):
        token = match.group(1)
        if not re.search(r"[A-Za-z0-9_.]", token) or re.fullmatch(r"/+\d*", token):
            continue  # division, or an operator such as /\ or ~ (no file name in it)
        expanded = Path(os.path.expanduser(token)) if token.startswith("~") else Path(token)
        if token.startswith("~") and expanded == Path(token):
            found.append(token)
            continue
        resolved = (workspace / expanded).resolve()
        roots = [workspace, *allowed]
        if not any(resolved.is_relative_to(root) for root in roots):
            found.append(token)
    return found
