"""The ScienceBoard guide's pictures: one per program, each from a real episode.

    python scripts/render_scienceboard.py --out docs/images/scienceboard

KAlgebra, TeXstudio and Stellarium: the screen after the task's GUI oracle (Xvfb screenshot). PyMOL: the
program's own ray-traced image of the task's structure (``png``). GRASS: the task's map written by
``r.out.png`` with GRASS's elevation colours. Coq has no GUI here (CoqIDE is not installed): its picture is
coqtop's own text after the proof, drawn as a terminal.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

from embodia.agents.scienceboard.env import ScienceBoardEnv
from embodia.agents.scienceboard.tasks import load_tasks

GUI = {
    "kalgebra": "kalgebra-factorial",
    "texstudio": "texstudio-add-section",
    "stellarium": "stellarium-select-jupiter",
}


def compact(image: Image.Image) -> Image.Image:
    """The screen cropped to what the program drew (the rest of the virtual screen is black), 256 colours."""
    box = image.convert("L").point(lambda value: 255 if value > 8 else 0).getbbox()
    return (image.crop(box) if box else image).quantize(256)


def gui_screenshot(task_id: str, out: Path) -> None:
    (task,) = load_tasks(ids=[task_id])
    with ScienceBoardEnv("gui", "screenshot") as env:
        observation = env.reset(task)
        for action in task.oracle_gui or []:
            if action.type == "done":
                break
            observation, *_ = env.step(action)
        compact(observation["screenshot"]).save(out, optimize=True)


def api_episode(task_id: str, extra: list[str], produced: str, out: Path) -> None:
    """Run the task's oracle, then ``extra`` program commands (trusted: not agent input), copy ``produced``."""
    (task,) = load_tasks(ids=[task_id])
    with ScienceBoardEnv("api") as env:
        env.reset(task)
        for action in task.oracle:
            if action.type == "done":
                break
            env.step(action)
        for command in extra:
            env.program.command(command)
        shutil.copy(env.sandbox.workspace / produced, out)


def coq_terminal(out: Path) -> None:
    (task,) = load_tasks(ids=["coq-rev-involutive"])
    lines: list[str] = []
    with ScienceBoardEnv("api") as env:
        env.reset(task)
        for action in task.oracle:
            if action.type == "done":
                break
            observation, *_ = env.step(action)
            lines.append("coq < " + action.text)
            lines += [line for line in observation["output"].splitlines() if line.strip()][:6]
        lines.append("coq < Print Assumptions rev_involutive.")
        lines.append(env.program.command("Print Assumptions rev_involutive.").strip())
    font = ImageFont.load_default(size=15)
    wrapped = [line[i : i + 110] for line in lines for i in range(0, max(len(line), 1), 110)][-44:]
    image = Image.new("RGB", (1000, 20 + 18 * len(wrapped)), (24, 24, 24))
    draw = ImageDraw.Draw(image)
    for row, line in enumerate(wrapped):
        colour = (120, 200, 255) if line.startswith("coq <") else (230, 230, 230)
        draw.text((12, 10 + 18 * row), line, fill=colour, font=font)
    image.save(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="docs/images/scienceboard", help="output folder")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for domain, task_id in GUI.items():
        gui_screenshot(task_id, out / f"{domain}.png")
        print(f"{domain}: {out / f'{domain}.png'}", flush=True)
    api_episode(
        "pymol-binding-site",
        [
            "hide everything",
            "show cartoon",
            "show sticks, site",
            "orient site",
            "png pymol.png, width=900, height=600, ray=1",
        ],
        "pymol.png",
        out / "pymol.png",
    )
    with Image.open(out / "pymol.png") as image:
        compact(image.convert("RGB")).save(out / "pymol.png", optimize=True)
    print(f"pymol: {out / 'pymol.png'}", flush=True)
    api_episode(
        "grass-slope-degrees",
        ["r.colors map=dem color=elevation", "r.out.png input=dem output=dem.png"],
        "dem.png",
        out / "grass.png",
    )
    with Image.open(out / "grass.png") as image:  # 100 x 100 cells: enlarge without smoothing
        image.convert("RGB").resize((400, 400), Image.NEAREST).save(out / "grass.png")
    print(f"grass: {out / 'grass.png'}", flush=True)
    coq_terminal(out / "coq.png")
    print(f"coq: {out / 'coq.png'}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
