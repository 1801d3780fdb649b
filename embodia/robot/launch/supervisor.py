"""The process supervisor: starts a :class:`~.plan.LaunchPlan`'s processes and stops them as ROS 2 does.

Every output line is prefixed ``[name-N]``; processes start at their ``timer`` delay; ``respawn``
processes restart after ``respawn_delay`` (at most ``respawn_max_retries`` times); a process with
``on_exit: shutdown`` or a ``shutdown`` action stops the launch. Stopping (also on SIGINT / SIGTERM to the
supervisor) sends SIGINT to every running process, SIGTERM to those still running ``sigterm_timeout``
seconds later, and SIGKILL ``sigkill_timeout`` seconds after that (per process; 5 s each by default, as
in ROS 2). Timers that have not fired when the launch stops never start their processes. A
``lifecycle_node`` with ``autostart`` is configured and activated once its services appear
(:mod:`.lifecycle`).
"""

from __future__ import annotations

import contextlib
import os
import pty
import signal
import subprocess
import sys
import threading
import time
from typing import IO, Any, TextIO

from embodia.robot.launch.plan import LaunchPlan, ProcessSpec

FAILED_TO_START = 127
"""the exit code recorded for a process that could not start (as a shell's 'command not found')"""


class Supervisor:
    """Starts the processes, prefixes their output, respawns, and stops them all (see module docstring)."""

    def __init__(
        self,
        specs: list[ProcessSpec] | LaunchPlan,
        out: TextIO | None = None,
        grace: float = 5.0,
        activate: bool = False,
    ) -> None:
        """``grace``: the SIGTERM and SIGKILL timeouts of processes that set none; ``activate``: configure and
        activate every ``lifecycle_node`` once it starts, as if each had ``autostart: true``."""
        plan = specs if isinstance(specs, LaunchPlan) else None
        self.specs = list(plan.processes if plan else specs)
        self.logs = list(plan.logs) if plan else []
        self.shutdowns = list(plan.shutdowns) if plan else []
        self.out = out or sys.stdout
        self.grace = grace
        self.activate = activate
        self._lock = threading.Lock()
        self._procs: dict[str, subprocess.Popen[bytes]] = {}
        self._threads: list[threading.Thread] = []
        self._stop = threading.Event()
        self.exit_codes: dict[str, list[int]] = {s.name: [] for s in self.specs}
        self.starts: dict[str, int] = {s.name: 0 for s in self.specs}

    def _print(self, line: str) -> None:
        with self._lock:
            self.out.write(line + "\n")
            self.out.flush()

    def _pump(self, name: str, stream: IO[bytes]) -> None:
        with contextlib.suppress(OSError):  # a pseudo-terminal reports EIO once the process has ended
            for raw in iter(stream.readline, b""):
                self._print(f"[{name}] {raw.decode(errors='replace').rstrip()}")
        stream.close()

    def _start(self, spec: ProcessSpec) -> subprocess.Popen[bytes] | None:
        """Start ``spec``; None (and an error line) when it cannot start (a missing cwd, ...)."""
        if spec.missing:  # known when the file was read; reported now, when this process would start
            self.starts[spec.name] += 1
            self._print(f"[ERROR] [launch]: process [{spec.name}] could not start: {spec.missing}")
            return None
        env = {**os.environ, **spec.env, "PYTHONUNBUFFERED": "1"}
        for name in spec.unset_env:
            env.pop(name, None)
        if spec.emulate_tty:
            master, slave = pty.openpty()
            output: Any = slave
        else:
            output = subprocess.PIPE
        try:
            proc = subprocess.Popen(
                spec.argv if not spec.shell else spec.argv[0],
                shell=spec.shell,
                cwd=spec.cwd,
                env=env,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # signals come from the supervisor only, in a defined order
            )
        except OSError as error:
            if spec.emulate_tty:
                os.close(master)
            self.starts[spec.name] += 1
            self._print(f"[ERROR] [launch]: process [{spec.name}] could not start: {error}")
            return None
        finally:
            if spec.emulate_tty:
                os.close(slave)
        stream: IO[bytes] = os.fdopen(master, "rb") if spec.emulate_tty else proc.stdout  # type: ignore[assignment]
        self.starts[spec.name] += 1
        thread = threading.Thread(target=self._pump, args=(spec.name, stream), daemon=True)
        thread.start()
        self._threads.append(thread)
        self._print(f"[INFO] [launch]: process started with pid [{proc.pid}]: {spec.name}")
        if spec.lifecycle and (spec.autostart or self.activate):
            from embodia.robot.launch.lifecycle import autostart

            driver = threading.Thread(
                target=autostart,
                args=(spec.full_node_name, lambda: proc.poll() is None, self._stop, self._print),
                daemon=True,
            )
            driver.start()
            self._threads.append(driver)
        return proc

    def stop(self) -> None:
        """Ask the supervisor to shut everything down (thread-safe; also what SIGINT / SIGTERM do)."""
        self._stop.set()

    def run(self, timeout: float | None = None) -> int:
        """Run until every process has ended for good, one with ``on_exit: shutdown`` ended, a ``shutdown``
        action fired, or :meth:`stop`.

        Returns 0 when the shutdown-triggering process (or, without one, every process) exited with 0.
        """
        installed = {}
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                installed[sig] = signal.signal(sig, lambda *_: self.stop())
        started = time.monotonic()
        status = 0
        start_at = {spec.name: started + spec.delay for spec in self.specs}  # first start or respawn
        retries = {spec.name: 0 for spec in self.specs}
        logs = sorted(self.logs, key=lambda m: m.delay)
        shutdowns = sorted(self.shutdowns, key=lambda m: m.delay)
        try:
            while not self._stop.is_set():
                now = time.monotonic()
                if timeout is not None and now - started > timeout:
                    self._print("[WARN] [launch]: timeout reached, shutting down")
                    status = 124
                    break
                while logs and now >= started + logs[0].delay:
                    self._print(f"[INFO] [launch.user]: {logs.pop(0).text}")
                if shutdowns and now >= started + shutdowns[0].delay:
                    self._print(f"[INFO] [launch]: shutdown action ({shutdowns[0].text}); stopping all")
                    break
                failed = set()
                for spec in self.specs:
                    if spec.name in start_at and now >= start_at[spec.name]:
                        del start_at[spec.name]
                        started_proc = self._start(spec)
                        if started_proc is None:
                            failed.add(spec.name)
                        else:
                            self._procs[spec.name] = started_proc
                for spec in self.specs:
                    proc = self._procs.get(spec.name)
                    if spec.name in failed:
                        code = FAILED_TO_START
                    elif proc is None or (code := proc.poll()) is None:
                        continue
                    else:
                        del self._procs[spec.name]
                        self._print(
                            f"[INFO] [launch]: process has finished cleanly [pid {proc.pid}]: {spec.name}"
                            if code == 0
                            else f"[ERROR] [launch]: process [{spec.name}] died, exit code {code}"
                        )
                    self.exit_codes[spec.name].append(code)
                    if spec.shutdown_on_exit:
                        self._print(
                            f"[INFO] [launch]: {spec.name} exited with on_exit: shutdown; stopping all"
                        )
                        status = code
                        self._stop.set()
                        break
                    limit = spec.respawn_max_retries
                    if spec.respawn and (limit < 0 or retries[spec.name] < limit):
                        retries[spec.name] += 1
                        start_at[spec.name] = time.monotonic() + spec.respawn_delay
                    elif code != 0 and status == 0:
                        status = code
                if not (self._procs or start_at or logs or shutdowns):
                    break
                self._stop.wait(0.05)
        finally:
            self._shutdown()
            for sig, handler in installed.items():
                signal.signal(sig, handler)
        return status

    def _signal(self, name: str, proc: subprocess.Popen[bytes], sig: signal.Signals) -> None:
        self._print(f"[INFO] [launch]: sending signal '{sig.name}' to process[{name}]")
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)

    def _shutdown(self) -> None:
        """SIGINT to all; per process SIGTERM after its sigterm_timeout, SIGKILL after its sigkill_timeout."""
        specs = {spec.name: spec for spec in self.specs}
        running = {n: p for n, p in self._procs.items() if p.poll() is None}
        now = time.monotonic()
        deadlines: dict[str, list[tuple[float, signal.Signals]]] = {}
        for name, proc in running.items():
            spec = specs[name]
            term = self.grace if spec.sigterm_timeout is None else spec.sigterm_timeout
            kill = self.grace if spec.sigkill_timeout is None else spec.sigkill_timeout
            deadlines[name] = [(now + term, signal.SIGTERM), (now + term + kill, signal.SIGKILL)]
            self._signal(name, proc, signal.SIGINT)
        while running:
            now = time.monotonic()
            for name in [n for n, p in running.items() if p.poll() is not None]:
                del running[name]
            # signals that fell due, earliest deadline first (a stalled loop keeps their order)
            due = sorted(
                (deadlines[n][0][0], n) for n in running if deadlines[n] and now >= deadlines[n][0][0]
            )
            for _, name in due:
                self._signal(name, running[name], deadlines[name].pop(0)[1])
            for name in [n for n in running if not deadlines[n]]:  # SIGKILL sent: reap it
                with contextlib.suppress(subprocess.TimeoutExpired):
                    running[name].wait(timeout=5.0)
                del running[name]
            time.sleep(0.02)
        for name, proc in self._procs.items():
            if proc.returncode is not None:
                self.exit_codes[name].append(proc.returncode)
        self._procs.clear()
        for thread in self._threads:
            thread.join(timeout=2.0)
