"""Tool ``iqa_score``: how much an image would hurt an embodied agent, by a trained Embodied-IQA model
(arXiv:2505.16815): an image file (and its undistorted reference for a full-reference model) in, the
predicted damage out, in the units of the model's target (``execution``: the expected drop of the task
success rate; 0 = harmless). Models come from ``embodia iqa train``.
"""

from __future__ import annotations

from dataclasses import dataclass

from embodia.agents.tools.registry import InputPath, tool


@dataclass
class IQAScoreArgs:
    """Arguments of ``iqa_score``."""

    image: InputPath
    """The image to score (PNG or JPEG); under `embodia mcp`, inside its workspace."""
    model: InputPath
    """An IQA model folder (config.json + model.safetensors, from `embodia iqa train`)."""
    reference: InputPath | None = None
    """The undistorted image, needed by a full-reference model."""


@tool("iqa_score")
def iqa_score(args: IQAScoreArgs) -> dict:
    """Predict how much an image's quality would hurt a robot policy acting on it (Embodied-IQA): returns the
    score, the target it predicts (e.g. execution: drop in task success) and whether a reference was used."""
    from embodia.perception.iqa.scoring import score_file

    return score_file(args.model, args.image, args.reference)
