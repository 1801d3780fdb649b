"""Scoring image files with a trained Embodied-IQA model (what ``embodia iqa score`` and the tool run).

An image (and, for a full-reference model, its undistorted reference) is read with Pillow, converted to
RGB and resized to the side the model was trained on; the score is the predicted damage in the units of
the model's target (e.g. ``execution``: the expected drop of the task success rate, 0 = harmless).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from embodia.perception.iqa.model import IQAModelError, load_iqa_model, predict


def read_image(path: str | Path, size: int) -> np.ndarray:
    """``uint8`` ``(size, size, 3)`` pixels of an image file; :class:`IQAModelError` if it is not one."""
    from PIL import Image, UnidentifiedImageError

    path = Path(path)
    if not path.is_file():
        raise IQAModelError(f"no image at {str(path)!r}; pass a PNG or JPEG file")
    try:
        with Image.open(path) as image:
            rgb = image.convert("RGB")
            if rgb.size != (size, size):
                rgb = rgb.resize((size, size), Image.Resampling.BILINEAR)
            return np.array(rgb, dtype=np.uint8)
    except (UnidentifiedImageError, OSError) as error:
        raise IQAModelError(
            f"{str(path)!r} is not a readable image ({type(error).__name__}); pass a PNG or JPEG"
        ) from None


def score_file(
    model_folder: str | Path, image: str | Path, reference: str | Path | None = None
) -> dict[str, Any]:
    """The model's predicted damage for one image file (and its reference file for a full-reference model)."""
    model = load_iqa_model(model_folder)
    size = int(model.config.image_size)
    if model.config.with_reference and reference is None:
        raise IQAModelError(
            f"the IQA model in {str(model_folder)!r} is full-reference: pass the undistorted image with --reference"
        )
    pixels = read_image(image, size)[None]
    ref = read_image(reference, size)[None] if model.config.with_reference else None
    score = float(predict(model, pixels, ref)[0])
    return {
        "score": score,
        "target": model.config.target,
        "full_reference": bool(model.config.with_reference),
        "image_size": size,
    }
