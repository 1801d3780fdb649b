"""Tools ``spatial_dise_question``, ``spatial_dise_grade``, ``spatial_dise_export``: the Spatial-DISE spatial
reasoning questions served one at a time (without their answers), graded, or written out as a set.

An agent under evaluation asks for question ``(kind, seed, index)``, answers it, and hands its answers to
``spatial_dise_grade``, which re-makes each question from its ``(kind, seed, index)`` and scores it: the
answer key never passes through the agent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field

from embodia.agents.methods.spatial_dise import KIND_NAMES, QUADRANTS
from embodia.agents.tools.registry import OutputPath, Progress, ToolArgumentError, no_progress, tool

KindName = Literal[KIND_NAMES]
Selector = Literal[(*KIND_NAMES, *QUADRANTS, "all")]
Seed = Annotated[int, Field(ge=0, le=2**32 - 1)]
Index = Annotated[int, Field(ge=0, le=10**6)]


@dataclass
class QuestionArgs:
    """Arguments of ``spatial_dise_question``."""

    kind: KindName
    """The question kind (its quadrant is in the result)."""
    seed: Seed = 0
    """The question set's seed."""
    index: Index = 0
    """Which question of the set (each one is made on its own from kind, seed and index)."""
    images_out: OutputPath | None = None
    """Folder to write the question's PNG images into (the composite, the stimulus and one per option); under
    `embodia mcp`, inside its workspace. Without it only the text is returned."""


@tool("spatial_dise_question")
def spatial_dise_question(args: QuestionArgs) -> dict:
    """One Spatial-DISE spatial-reasoning question (mental rotation, paper folding, assembly, views,
    perspective taking, moving objects, ...) with four options A-D, as text and optionally as PNG images;
    the answer is not included: grade answers with ``spatial_dise_grade``."""
    from embodia.agents.methods.spatial_dise import SpatialDiseError, question_at

    question = question_at(args.kind, args.seed, args.index)
    result = question.public()
    if args.images_out is not None:
        folder = Path(args.images_out)
        if folder.exists() and not folder.is_dir():
            raise SpatialDiseError(f"images_out {str(folder)!r} is a file; name a folder")
        folder.mkdir(parents=True, exist_ok=True)
        images = question.images()
        images["composite"] = question.composite(images=images)
        result["images"] = {}
        for name, image in images.items():
            path = folder / f"{question.id}_{name}.png"
            _write_png(image, path)
            result["images"][name] = str(path)
    return result


def _write_png(image: object, path: Path) -> None:
    """Write ``image``; an existing file is only replaced by identical bytes (never someone else's file)."""
    import io

    from embodia.agents.methods.spatial_dise import SpatialDiseError

    buffer = io.BytesIO()
    image.save(buffer, format="PNG")  # type: ignore[attr-defined]
    data = buffer.getvalue()
    if path.is_symlink() or (path.exists() and (not path.is_file() or path.read_bytes() != data)):
        raise SpatialDiseError(
            f"{str(path)!r} exists and is not this question's image; embodia does not overwrite what it did not "
            "write: choose another images_out folder"
        )
    if not path.exists():
        path.write_bytes(data)


@dataclass
class Answer:
    """One answer to grade."""

    kind: KindName
    """The question's kind."""
    seed: Seed
    """The question's seed."""
    index: Index
    """The question's index."""
    answer: str | int | None
    """The option chosen: a letter A-D (or its index 0-3); anything else counts as an invalid answer."""


@dataclass
class GradeArgs:
    """Arguments of ``spatial_dise_grade``."""

    answers: Annotated[list[Answer], Field(min_length=1, max_length=10_000)]
    """The answers, one per question, each naming its question by kind, seed and index."""
    include_items: bool = True
    """Also return, per answer, whether it was right and the correct letter."""


@tool("spatial_dise_grade")
def spatial_dise_grade(args: GradeArgs) -> dict:
    """Grade answers to Spatial-DISE questions: accuracy overall, per quadrant and per kind, against chance
    (with 95 % Wilson intervals and an exact binomial p-value), invalid answers counted as wrong."""
    from embodia.agents.methods.spatial_dise import evaluate_spatial_answers, parse_choice, question_at

    questions = [question_at(a.kind, a.seed, a.index) for a in args.answers]
    ids = [q.id for q in questions]
    if len(set(ids)) != len(ids):
        duplicate = next(i for i in ids if ids.count(i) > 1)
        raise ToolArgumentError(f"spatial_dise_grade: question {duplicate} is answered more than once")
    report = evaluate_spatial_answers(questions, [a.answer for a in args.answers])
    if args.include_items:
        report["items"] = [
            {
                "id": q.id,
                "given": a.answer,
                "correct_answer": q.answer_label,
                "right": parse_choice(a.answer, len(q.options)) == q.answer,
            }
            for q, a in zip(questions, args.answers)
        ]
    return report


@dataclass
class ExportArgs:
    """Arguments of ``spatial_dise_export``."""

    out: OutputPath
    """Folder to write (questions.jsonl with the answer key, images/ with PNGs); under `embodia mcp`, inside its
    workspace. It must be new, empty, or an earlier export with nothing added."""
    kinds: Annotated[list[Selector], Field(min_length=1)] = field(default_factory=lambda: ["all"])
    """Kinds, quadrants, or "all"."""
    n: Annotated[int, Field(ge=1, le=1000)] = 10
    """Questions per kind."""
    seed: Seed = 0
    """The set's seed."""
    images: bool = True
    """Write the PNG images (false: JSON lines only)."""


@tool("spatial_dise_export")
def spatial_dise_export(args: ExportArgs, progress: Progress = no_progress) -> dict:
    """Write a Spatial-DISE question set (with its answer key) as JSON lines and PNG images, for evaluating a
    vision-language model offline."""
    from embodia.agents.methods.spatial_dise import export_jsonl, generate_spatial_questions

    questions = generate_spatial_questions(args.kinds, args.n, args.seed)
    path = export_jsonl(questions, args.out, images=args.images, progress=lambda d, t, m: progress(d, t, m))
    counts: dict[str, int] = {}
    for q in questions:
        counts[q.kind] = counts.get(q.kind, 0) + 1
    return {"questions_file": str(path), "questions": len(questions), "by_kind": counts}
