"""Spatial-DISE: a generator of spatial-reasoning questions with verifiable answers, and their evaluator.

Paper: X. Huang, Q. He, Z. Huang, B. Wang, Z. Li, G. Cheng, Y. Dong and X. Huang, "Spatial-DISE: A Unified
Benchmark for Evaluating Spatial Reasoning in Vision-Language Models", ICLR 2026, arXiv:2510.13394.

The benchmark sorts spatial reasoning into four quadrants, after the cognitive taxonomy of intrinsic vs
extrinsic (the shape of one object vs where objects are relative to each other or to a viewer) and
static vs dynamic (nothing moves vs something is transformed or moves):

=================== ==================================================== ===========================================
quadrant            what is asked                                        kinds here
=================== ==================================================== ===========================================
intrinsic-static    an object's own shape, as it is                      ``shape_finding``, ``symmetry``
intrinsic-dynamic   an object transformed (turned, folded, fitted)       ``rotation_2d``, ``rotation_3d``,
                                                                         ``fold_and_punch``, ``assembly``
extrinsic-static    relations to a viewer or between objects, at rest    ``projection``, ``perspective_taking``
extrinsic-dynamic   an object moving through the world, step by step     ``dynamic_sequence``, ``cube_rolling``
=================== ==================================================== ===========================================

Mental rotation and paper folding are intrinsic-dynamic (the paper's emphasis: the object is transformed
in the mind); perspective taking here asks about a fixed scene from an imagined standpoint, so it is
filed as extrinsic-static.

Each question is generated from scene parameters, so its answer is computed, not annotated:

- four options, A-D; the correct one at a uniformly random position (seeded);
- near-miss distractors, each verified wrong: one or two minimal changes from the answer — a mirror image,
  one cell or cube moved, one fold forgotten or along the wrong line, one turn the wrong way, one step off,
  the view from the opposite side. Where a kind's distractors were all one change from the key, the key was
  the option "in the middle" and stimulus-blind answerers beat chance (:mod:`.blind`); those kinds now
  offer a pool of near misses and near misses of near misses, from which
  :func:`~.core.balanced_distractors` picks three so that a blind answerer finds the key with probability
  1/4 (``question_at(..., balanced=False)`` keeps the one-change design, for comparison);
- the stimulus and options as JSON data, as text a text-only model can read ('#' / '.' grids, cube layers,
  coordinates), and as images (Pillow, 128 px per option);
- question ``i`` of a kind depends only on ``(kind, seed, i)``: :func:`question_at` makes (and a grader
  re-makes) it alone.

:func:`evaluate_spatial_answers` reports accuracy overall, per quadrant and per kind against chance (1/4),
with 95 % Wilson intervals and an exact binomial p-value. :func:`export_jsonl` / :func:`load_jsonl` write
and read a set as JSON lines + PNG. :func:`answer_with_lm` asks a language model a question as text:
local models by the log-probability of each option letter, generate-only endpoints by parsing the letter;
with ``images=True`` an OpenAI-compatible endpoint gets the composite PNG as an ``image_url`` part
(:func:`image_messages`), for a vision-language model.

A known limit of near-miss designs (the paper's too): if the distractors are each one change away from the
answer, the answer is the option "in the middle" of the others, and comparing the options with each other
beats chance without reading the stimulus. :mod:`.blind` measures that (``scripts/spatial_dise_experiment.py
--blind``); the balanced pools remove it for the two answerers they are balanced against, and the third
(the medoid of the texts) is a check they were not tuned on. Other blind strategies are not ruled out.
"""

from __future__ import annotations

from embodia.agents.methods.spatial_dise import (  # noqa: F401 (importing registers the kinds)
    extrinsic_dynamic,
    extrinsic_static,
    folding,
    intrinsic_dynamic,
    intrinsic_static,
)
from embodia.agents.methods.spatial_dise.answering import (
    LMAnswer,
    answer_all,
    answer_with_lm,
    image_messages,
    letter_from_text,
    letter_logprobs,
    png_data_url,
)
from embodia.agents.methods.spatial_dise.core import (
    IMAGE_SIZE,
    KINDS,
    LABELS,
    QUADRANTS,
    Kind,
    SpatialDiseError,
    SpatialQuestion,
    evaluate_spatial_answers,
    generate_spatial_questions,
    kind_names,
    kinds_for,
    parse_choice,
    question_at,
)
from embodia.agents.methods.spatial_dise.export import export_jsonl, load_jsonl

KIND_NAMES = tuple(kind_names())
"""Every kind, grouped by quadrant."""

__all__ = [
    "IMAGE_SIZE",
    "KINDS",
    "KIND_NAMES",
    "LABELS",
    "QUADRANTS",
    "Kind",
    "LMAnswer",
    "SpatialDiseError",
    "SpatialQuestion",
    "answer_all",
    "answer_with_lm",
    "evaluate_spatial_answers",
    "export_jsonl",
    "generate_spatial_questions",
    "image_messages",
    "kind_names",
    "kinds_for",
    "letter_from_text",
    "letter_logprobs",
    "load_jsonl",
    "parse_choice",
    "png_data_url",
    "question_at",
]
