"""The operating-system boundary around ScienceBoard's programs: whatever a command makes a program do, it
cannot read or write outside the episode's workspace nor leave a process behind.

The commands below go straight to the real programs (``Program.command``), past every text rule, as an agent
would once it has found a command the rules allow that does more than it says: PyMOL running Python, Coq's
``Redirect`` writing a file, a shell started in its own session with an empty environment, a connection to a
server on the host.
"""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

from embodia.agents.scienceboard.env import ScienceBoardEnv
from embodia.agents.scienceboard.programs.coq import Coq
from embodia.agents.scienceboard.programs.grass import Grass
from embodia.agents.scienceboard.programs.pymol import PyMOL
from embodia.agents.scienceboard.programs.texstudio import TeXstudio
from embodia.agents.scienceboard.sandbox import Sandbox
from embodia.agents.scienceboard.tasks import load_tasks, parse_task

SECRET = "the-secret-words-7f3a"


#: a check each domain's parser accepts (the tests below never evaluate it)
CHECKS = {
    "pymol": {"query": "object_names", "op": "true"},
    "coq": {"query": "proof_complete", "op": "true"},
    "grass": {"query": "raster_exists", "args": {"map": "ones"}, "op": "true"},
    "texstudio": {"query": "compiled_fresh", "op": "true"},
    "kalgebra": {"query": "variables", "op": "true"},
    "stellarium": {"query": "fov", "op": "true"},
}


def _task(domain: str, gui: bool = False) -> object:
    """A task of ``domain`` that only runs the program (on the gui interface too, with room for steps)."""
    extra = {"interfaces": ["gui"], "oracle_gui": [{"type": "done"}], "max_steps": 60} if gui else {}
    return parse_task(
        {
            "id": f"{domain}-boundary",
            "domain": domain,
            "difficulty": "easy",
            "instruction": "boundary test",
            "evaluate": [CHECKS[domain]],
            "oracle": [{"type": "done"}],
            "wrong": [{"type": "done"}],
            **extra,
        },
        "test",
    )


def _wait_for(condition, seconds: float = 60.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.1)
    return bool(condition())


def _running(pattern: str) -> list[str]:
    return subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True).stdout.split()


def test_a_confined_process_cannot_read_or_write_outside_nor_outlive_the_sandbox(tmp_path):
    secret, target = tmp_path / "secret.txt", tmp_path / "pwned.txt"
    secret.write_text(SECRET)
    with Sandbox() as sandbox:
        read = sandbox.run(["cat", str(secret)], timeout=30)
        write = sandbox.run(["sh", "-c", f"echo x > {target}"], timeout=30)
        home = sandbox.run(["ls", "/root", str(Path.home())], timeout=30)
        # a program that starts a process in a session of its own, without the sandbox's marker in its
        # environment, and keeps running
        sandbox.spawn(
            ["sh", "-c", "env -i setsid sleep 600.4242 > /dev/null 2>&1 & exec sleep 600"], stdout=None
        )
        assert _wait_for(lambda: _running("sleep 600.4242"))
        inside = sandbox.run(["sh", "-c", "echo kept > note.txt && cat note.txt"], timeout=30)
    assert SECRET not in read.stdout and read.returncode != 0
    assert write.returncode != 0 and not target.exists()
    assert home.returncode != 0
    assert inside.stdout.strip() == "kept"
    assert not _running("sleep 600.4242")  # gone with the sandbox, marker or not


def test_pymol_running_python_stays_inside_the_workspace(tmp_path):
    secret, target = tmp_path / "secret.txt", tmp_path / "pwned.txt"
    secret.write_text(SECRET)
    with Sandbox() as sandbox:
        pymol = PyMOL(sandbox, _task("pymol"), "api")
        pymol.start()
        read = pymol.command(f"/print(open({str(secret)!r}).read())")
        pymol.command(f"/open({str(target)!r}, 'w').write('x')")
        pymol.command("/import subprocess; subprocess.Popen(['env', '-i', 'setsid', 'sleep', '600.4343'])")
        assert _wait_for(lambda: _running("sleep 600.4343"))
        pymol.command("/open('note.txt', 'w').write('kept')")  # the workspace is the one place it writes
        kept = (sandbox.workspace / "note.txt").read_text()
    assert SECRET not in read and "No such file" in read
    assert not target.exists()
    assert kept == "kept"
    assert not _running("sleep 600.4343")


#: characters -> X key names, to press a line key by key
KEY_NAMES = {
    " ": "space", "(": "parenleft", ")": "parenright", "'": "apostrophe", ",": "comma", ".": "period",
    "+": "plus", "-": "minus", "_": "underscore", "[": "bracketleft", "]": "bracketright", "/": "slash",
    "=": "equal", ":": "colon", ";": "semicolon", "\\": "backslash", "{": "braceleft", "}": "braceright", '"': "quotedbl",
}  # fmt: skip


def _keys(line: str) -> str:
    return " ".join(KEY_NAMES.get(char, char) for char in line)


def test_python_typed_into_the_pymol_gui_stays_inside_the_workspace(tmp_path):
    """PyMOL's GUI command line takes Python. Typed text meets the same text rules as api commands, but keys
    pressed one at a time do not: the sandbox is what holds."""
    secret, target = tmp_path / "secret.txt", tmp_path / "pwned.txt"
    secret.write_text(SECRET)
    task = _task("pymol", gui=True)
    lines = [
        "import os, subprocess",
        f"stolen_words = open(os.sep + {str(secret)[1:]!r}).read()",
        "open('leak.txt', 'w').write(stolen_words)",
        f"open(os.sep + {str(target)[1:]!r}, 'w').write('x')",
        "subprocess.Popen(['env', '-i', 'setsid', 'sleep', '600.4444'])",
        "open('note.txt', 'w').write('kept')",  # the workspace is the one place it writes
    ]
    with ScienceBoardEnv("gui", observation="a11y_tree") as env:
        env.reset(task)
        workspace = env.sandbox.workspace
        for line in lines:
            assert env.step({"type": "type", "text": line})[4]["refused"], line  # the friendly refusal
            # the same line as single key presses: the text rules do not see it
            _, _, _, _, info = env.step({"type": "key", "text": f"{_keys(line)} Return"})
            assert not info["refused"], line
        assert _wait_for(lambda: (workspace / "note.txt").is_file(), 120)
        assert _wait_for(lambda: _running("sleep 600.4444"))
        leaked = (workspace / "leak.txt").read_text()  # empty: the name was never bound
    assert SECRET not in leaked  # the secret could not be opened (written after it, note.txt was)
    assert not target.exists()
    assert not _running("sleep 600.4444")


def test_modules_run_from_the_grass_gui_console_stay_inside_the_workspace(tmp_path):
    """GRASS's GUI console runs whatever module line it is given; pressed key by key, the text rules never see
    it. Writing a map outside fails in the sandbox; the same export inside the workspace works."""
    target = tmp_path / "pwned.asc"
    (task,) = [t for t in load_tasks(domains=["grass"]) if t.id == "grass-elevation-feet"]
    lines = [f"r.out.ascii input=dem output={target}", "r.out.ascii input=dem output=inside.asc"]
    with ScienceBoardEnv("gui", observation="a11y_tree") as env:
        env.reset(task)
        workspace = env.sandbox.workspace
        env.step({"type": "click", "x": 250, "y": 549})  # the Console tab
        env.step({"type": "click", "x": 300, "y": 494})  # its command prompt
        for line in lines:
            _, _, _, _, info = env.step({"type": "key", "text": f"{_keys(line)} Return"})
            assert not info["refused"], line
        assert _wait_for(lambda: (workspace / "inside.asc").is_file(), 120)
    assert not target.exists()


def test_a_redirect_typed_into_coqide_cannot_write_outside_the_workspace(tmp_path):
    """CoqIDE runs whatever the buffer holds when the agent steps through it (ctrl+End)."""
    target = tmp_path / "pwned"
    (task,) = [t for t in load_tasks(domains=["coq"]) if t.id == "coq-add-zero-right"]
    script = f'Redirect "{target}" Print nat. Redirect "inside" Print nat.'
    with ScienceBoardEnv("gui", observation="a11y_tree") as env:
        env.reset(task)
        workspace = env.sandbox.workspace
        env.step({"type": "click", "x": 300, "y": 400})  # the script buffer
        _, _, _, _, info = env.step({"type": "key", "text": f"ctrl+End Return {_keys(script)} ctrl+End"})
        assert not info["refused"]
        assert _wait_for(lambda: (workspace / "inside.out").is_file(), 120)
    assert not Path(f"{target}.out").exists()


def test_tex_typed_into_texstudio_cannot_write_outside_the_workspace(tmp_path):
    """TeXstudio compiles what the editor holds (F6); \\openout to an absolute path stays inside."""
    target = tmp_path / "pwned.tex"
    (task,) = [t for t in load_tasks(domains=["texstudio"]) if t.id == "texstudio-add-section"]
    line = (
        "\\immediate\\openout6=inside.txt\\immediate\\write6{y}\\immediate\\closeout6"
        f"\\immediate\\openout5={target}\\immediate\\write5{{x}}\\immediate\\closeout5"
    )
    with ScienceBoardEnv("gui", observation="a11y_tree") as env:
        env.reset(task)
        workspace = env.sandbox.workspace
        env.step({"type": "click", "x": 760, "y": 300})  # the editor
        _, _, _, _, info = env.step({"type": "key", "text": f"ctrl+End Up Home {_keys(line)} Return"})
        assert not info["refused"]
        env.step({"type": "key", "text": "F6"})  # build: TeXstudio saves and runs pdflatex
        assert _wait_for(lambda: (workspace / "inside.txt").is_file(), 180)
    assert not target.exists()


def test_kalgebra_save_dialog_cannot_write_outside_the_workspace(tmp_path):
    """KAlgebra's Save Script file dialog, given an absolute path key by key; then the same dialog with a
    name in the workspace, which lands (so the first save was handled before it)."""
    target = tmp_path / "pwned.kal"
    task = _task("kalgebra", gui=True)
    with ScienceBoardEnv("gui", observation="a11y_tree") as env:
        env.reset(task)
        sandbox = env.sandbox
        tree = lambda: sandbox.a11y_tree("kalgebra", max_lines=3000)  # noqa: E731
        env.step({"type": "type", "text": "r:=3"})
        env.step({"type": "key", "text": "Return"})
        for name in (str(target), "inside.kal"):
            env.step({"type": "click", "x": 126, "y": 11})  # the Calculator menu
            assert _wait_for(lambda: "Save Script..." in tree())
            env.step({"type": "click", "x": 212, "y": 84})  # Save Script...
            assert _wait_for(lambda: "[dialog]" in tree())
            _, _, _, _, info = env.step({"type": "key", "text": f"ctrl+a {_keys(name)} Return"})
            assert not info["refused"]
        assert _wait_for(lambda: (sandbox.workspace / "inside.kal").is_file(), 120)
    assert not target.exists()


def test_a_script_run_from_stellariums_console_cannot_write_outside_the_workspace(tmp_path):
    """Stellarium's GUI script console (F12) runs any script; screenshots are taken in order, so once the
    second (into the workspace) exists, the first would have been written."""
    task = _task("stellarium", gui=True)
    script = (
        f'core.screenshot("pwned", false, "{tmp_path}/", true); core.screenshot("kept", false, "", true);'
    )
    with ScienceBoardEnv("gui", observation="a11y_tree") as env:
        env.reset(task)
        sandbox = env.sandbox
        env.step({"type": "key", "text": "F12"})  # the script console, its editor focused
        assert _wait_for(lambda: "Script console" in sandbox.a11y_tree("stellarium", max_lines=3000))
        _, _, _, _, info = env.step({"type": "key", "text": _keys(script)})
        assert not info["refused"]
        env.step({"type": "click", "x": 806, "y": 190})  # run
        assert _wait_for(lambda: bool(list(sandbox.workspace.rglob("kept*.png"))), 120)
    assert list(tmp_path.iterdir()) == []


def test_coq_redirect_cannot_write_outside_the_workspace(tmp_path):
    target = tmp_path / "pwned"
    with Sandbox() as sandbox:
        coq = Coq(sandbox, _task("coq"), "api")
        coq.start()
        coq.command(f'Redirect "{target}" Print nat.')
        coq.command('Redirect "inside" Print nat.')
        inside = (sandbox.workspace / "inside.out").read_text()
    assert not Path(f"{target}.out").exists()
    assert "Inductive nat" in inside


def _listening() -> socket.socket:
    """A TCP server on the host's loopback, as a local service an agent could try to reach."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    server.settimeout(0.5)
    return server


def _was_reached(server: socket.socket) -> bool:
    try:
        connection, _ = server.accept()
    except TimeoutError:
        return False
    connection.close()
    return True


def test_a_confined_process_has_no_network_but_its_own_loopback():
    with _listening() as server, Sandbox() as sandbox:
        port = server.getsockname()[1]
        connect = (
            "import socket, sys\n"
            "for address in sys.argv[1:]:\n"
            "    host, port = address.rsplit(':', 1)\n"
            "    try:\n"
            "        socket.create_connection((host, int(port)), timeout=5).close()\n"
            "        print(address, 'reached')\n"
            "    except OSError as error:\n"
            "        print(address, 'refused', error.errno)\n"
        )
        # the host's loopback service, and an outside address (a public DNS resolver)
        tried = sandbox.run(["python3", "-c", connect, f"127.0.0.1:{port}", "9.9.9.9:53"], timeout=60)
        interfaces = sandbox.run(["cat", "/proc/net/dev"], timeout=30)
        reached = _was_reached(server)
    assert "reached" not in tried.stdout and tried.stdout.count("refused") == 2, tried.stdout
    assert not reached
    names = [line.split(":")[0].strip() for line in interfaces.stdout.splitlines()[2:]]
    assert names == ["lo"]


def test_pymol_running_python_cannot_reach_a_host_service():
    with _listening() as server, Sandbox() as sandbox:
        port = server.getsockname()[1]
        pymol = PyMOL(sandbox, _task("pymol"), "api")
        pymol.start()
        answer = pymol.command(f"/import socket; socket.create_connection(('127.0.0.1', {port}), timeout=5)")
        reached = _was_reached(server)
    assert not reached
    assert "refused" in answer.lower() or "errno" in answer.lower(), answer


def test_grass_modules_cannot_read_write_or_fetch_outside_the_workspace(tmp_path):
    secret, target = tmp_path / "secret.asc", tmp_path / "pwned.asc"
    secret.write_text("north: 1\nsouth: 0\neast: 1\nwest: 0\nrows: 1\ncols: 1\n7\n")
    with _listening() as server, Sandbox() as sandbox:
        port = server.getsockname()[1]
        grass = Grass(sandbox, _task("grass"), "api")
        grass.start()
        grass.command('r.mapcalc "ones = 1"')
        written = grass.command(f"r.out.ascii input=ones output={target}")
        read = grass.command(f"r.in.ascii input={secret} output=stolen")
        fetched = grass.command(f"r.in.gdal input=/vsicurl/http://127.0.0.1:{port}/dem.tif output=fetched")
        reached = _was_reached(server)
        kept = grass.command("r.out.ascii input=ones output=ones.asc")
        inside = (sandbox.workspace / "ones.asc").exists()
    assert not target.exists() and "exit status" in written, written
    assert "exit status" in read, read  # the module failed: no such file where it runs
    assert not reached and "exit status" in fetched, fetched
    assert inside, kept


def test_tex_cannot_write_or_read_outside_the_workspace(tmp_path):
    secret, target = tmp_path / "secret.tex", tmp_path / "pwned.tex"
    secret.write_text(SECRET)
    with Sandbox() as sandbox:
        tex = TeXstudio(sandbox, _task("texstudio"), "api")
        tex.start()
        tex.command(f"append \\immediate\\openout5={target} \\immediate\\write5{{x}}\\immediate\\closeout5")
        tex.command(f"append \\input{{{secret}}}")
        tex.command("append inside")
        tex.command("compile")
        text = sandbox.run(["pdftotext", "main.pdf", "-"], timeout=30).stdout
        log = (sandbox.workspace / "main.log").read_text(errors="replace")
    assert not target.exists()
    assert SECRET not in text and SECRET not in log


def test_a_program_sees_neither_the_harness_environment_nor_another_episode(monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    with Sandbox() as first, Sandbox() as second:
        (second.workspace / "notes.txt").write_text(SECRET)
        environment = first.run(["env"], timeout=30)
        other = first.run(["cat", str(second.workspace / "notes.txt")], timeout=30)
        listing = first.run(["ls", str(second.workspace.parent)], timeout=30)
    assert SECRET not in environment.stdout and "AWS_SECRET_ACCESS_KEY" not in environment.stdout
    assert other.returncode != 0 and SECRET not in other.stdout
    assert second.workspace.name not in listing.stdout
