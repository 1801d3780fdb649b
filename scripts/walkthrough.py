"""Run docs/walkthrough.md: every command of its ```bash blocks, in order, as written (`make walkthrough`).

    python scripts/walkthrough.py [--quick] [--out runs/walkthrough] [--isolated]

The commands are read from the document itself, so the walkthrough a newcomer reads is the one that runs.
``--quick`` (what the tests run) swaps a few numbers for smaller ones (fewer demonstrations, gradient steps,
episodes); each swap must match exactly one place in the document, so an edit of the document that
breaks one fails loudly instead of silently running the full size. ``--out`` moves ``runs/walkthrough``
elsewhere; ``--isolated`` runs the ROS 2 launch in a private loopback-only network (root; the tests use
it). The last line says whether the deployed policy succeeded in simulation through ROS 2; the exit
status is 0 only when it did in most of the deployed episodes (``--quick`` only checks the path works).

The output folder is removed before a run only when this script wrote it (a marker file inside);
anything else is refused.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCUMENT = ROOT / "docs" / "walkthrough.md"
DEFAULT_OUT = "runs/walkthrough"
MARKER = ".written-by-walkthrough"

#: the quick form: (text in the document, its replacement); each must occur exactly once
QUICK = [
    ("--expert-noise 0.1 --episodes 50", "--expert-noise 0.1 --episodes 4"),
    ("--steps 5000 --batch-size 256", "--steps 200 --batch-size 64"),
    ("--episodes 10 --seeds 1000", "--episodes 1 --seeds 1000"),
    ("--episodes 2 --seed 2000", "--episodes 1 --seed 2000 --max-steps 15"),
    ("episodes:=5 max_steps:=300 --timeout 900", "episodes:=1 max_steps:=30 --timeout 300"),
]


def document_commands(text: str) -> list[str]:
    """The commands of the document's ```bash blocks, one string each (``\\`` continuations joined)."""
    commands = []
    for block in re.findall(r"^```bash\n(.*?)^```", text, flags=re.S | re.M):
        for line in block.replace("\\\n", " ").splitlines():
            if line.strip() and not line.lstrip().startswith("#"):
                commands.append(line.strip())
    return commands


def quick_form(text: str) -> str:
    """The document with the quick numbers (each replacement matches exactly once)."""
    for old, new in QUICK:
        count = text.count(old)
        if count != 1:
            raise SystemExit(f"walkthrough --quick: {old!r} occurs {count} times in {DOCUMENT}; update QUICK")
        text = text.replace(old, new)
    return text


def prepared_out(out: Path) -> None:
    """Make ``out`` empty, removing it only when this script wrote it."""
    if out.exists():
        if not (out / MARKER).exists():
            raise SystemExit(
                f"walkthrough: {out} exists and was not written by this script; move it away or pass --out"
            )
        shutil.rmtree(out)
    out.mkdir(parents=True)
    (out / MARKER).write_text("scripts/walkthrough.py writes this folder and removes it on its next run\n")


def argv_for(command: str, out: Path, isolated: bool) -> list[str]:
    argv = [part.replace(DEFAULT_OUT, str(out)) for part in shlex.split(command, comments=True)]
    if argv[0] != "embodia":
        raise SystemExit(f"walkthrough: every command starts with `embodia`, got {command!r}")
    if isolated and argv[1:3] == ["robot", "launch"]:
        argv.insert(3, "--isolated")
    return [sys.executable, "-m", "embodia.cli", *argv[1:]]


def deployed_outcome(out: Path) -> tuple[int, int]:
    """(successes, episodes) of the deployed run, from the store the ROS 2 recorder wrote."""
    from embodia.data.store import TrajectoryStore

    store = TrajectoryStore(out / "ros.zarr")
    successes = [bool(store.episode_meta(i).success) for i in range(store.num_episodes)]
    return sum(successes), len(successes)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--quick", action="store_true", help="smaller numbers: checks the path, not the policy"
    )
    parser.add_argument(
        "--out", default=DEFAULT_OUT, help=f"where everything is written (default {DEFAULT_OUT})"
    )
    parser.add_argument("--isolated", action="store_true", help="ROS 2 in a private network namespace (root)")
    args = parser.parse_args()

    text = DOCUMENT.read_text()
    if args.quick:
        text = quick_form(text)
    out = Path(args.out).resolve()
    prepared_out(out)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    started = time.monotonic()
    for number, command in enumerate(document_commands(text), 1):
        print(f"\n[{number}] $ {command}", flush=True)
        step_started = time.monotonic()
        result = subprocess.run(argv_for(command, out, args.isolated), cwd=ROOT, env=env)
        if result.returncode != 0:
            print(f"walkthrough: step {number} failed with exit status {result.returncode}: {command}")
            return 1
        print(f"[{number}] done in {time.monotonic() - step_started:.0f} s", flush=True)

    successes, episodes = deployed_outcome(out)
    summary = {"successes": successes, "episodes": episodes, "seconds": round(time.monotonic() - started, 1)}
    (out / "walkthrough.json").write_text(json.dumps(summary, indent=2) + "\n")
    minutes = summary["seconds"] / 60
    if args.quick:
        print(
            f"walkthrough (quick) finished in {minutes:.1f} min: every step ran; the deployed policy "
            f"succeeded in {successes}/{episodes} episodes through ROS 2 (quick numbers: not expected to)"
        )
        return 0
    succeeded = episodes > 0 and successes * 2 > episodes
    verdict = "succeeds" if succeeded else "does NOT succeed"
    print(
        f"walkthrough finished in {minutes:.1f} min: the deployed policy {verdict} in simulation through "
        f"ROS 2 — the drawer opened in {successes}/{episodes} new kitchens (policy node + simulator bridge)"
    )
    return 0 if succeeded else 1


if __name__ == "__main__":
    sys.exit(main())
