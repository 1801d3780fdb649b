"""Run a program that serves TCP inside an episode's sandbox, and reach it through a Unix socket.

A confined program has a network namespace of its own (loopback only), so a TCP port it listens on cannot be
reached from the harness. This helper runs inside the same sandbox as the program: it starts the program as its
child and relays every connection made to a Unix socket in the workspace (the one folder the harness and the
sandbox share) to ``127.0.0.1:PORT`` inside the sandbox. Stellarium's RemoteControl plugin is reached this way.

    python3 tcp_bridge.py SOCKET PORT -- PROGRAM [ARGUMENT ...]

It exits with the program's exit status when the program exits, and passes SIGTERM on to it. Debian's Python
runs it (standard library only).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading

CHUNK = 65536


def pump(source: socket.socket, target: socket.socket) -> None:
    """Copy ``source`` to ``target`` until ``source`` ends; then end ``target``'s sending side."""
    with contextlib.suppress(OSError):
        while data := source.recv(CHUNK):
            target.sendall(data)
    with contextlib.suppress(OSError):
        target.shutdown(socket.SHUT_WR)


def relay(client: socket.socket, port: int) -> None:
    """Connect ``client`` to the program's port; a port not yet open closes the client (it may retry)."""
    try:
        upstream = socket.create_connection(("127.0.0.1", port), timeout=10.0)
    except OSError:
        client.close()
        return
    upstream.settimeout(None)
    back = threading.Thread(target=pump, args=(upstream, client), daemon=True)
    back.start()
    pump(client, upstream)
    back.join()
    client.close()
    upstream.close()


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--":
        print("usage: tcp_bridge.py SOCKET PORT -- PROGRAM [ARGUMENT ...]", file=sys.stderr)
        return 2
    path, port, program = argv[0], int(argv[1]), argv[3:]
    child = subprocess.Popen(program)
    signal.signal(signal.SIGTERM, lambda signum, frame: child.terminate())
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    server.bind(path)
    server.listen(16)
    server.settimeout(0.5)
    while child.poll() is None:
        try:
            client, _ = server.accept()
        except TimeoutError:
            continue
        except OSError:
            break
        client.settimeout(None)
        threading.Thread(target=relay, args=(client, port), daemon=True).start()
    server.close()
    with contextlib.suppress(OSError):
        os.unlink(path)
    return child.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
