"""Tests of the Embodied-IQA package, and a synthetic database they share."""

from __future__ import annotations

import numpy as np

from embodia.perception.iqa.database import IQADatabase, IQADatabaseConfig
from embodia.perception.iqa.distortions import LEVELS, distort, image_seed

#: the known damage per level of each type in the synthetic database (a made-up "agent"; seven of the 30
#: types, the first of each family)
CLASS_WEIGHT = {
    "blur": 0.3,
    "noise": 1.0,
    "jpeg": 0.5,
    "exposure": 0.1,
    "colour": 0.8,
    "occlusion": 1.5,
    "pixelate": 0.6,
}


def synthetic_scene(seed: int, size: int = 32) -> np.ndarray:
    """A structured uint8 (size, size, 3) image: a colour gradient with a few random rectangles and a disc."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:size, 0:size] / size
    base = rng.uniform(40, 200, 3) + 50 * (
        yy[..., None] * rng.uniform(-1, 1, 3) + xx[..., None] * rng.uniform(-1, 1, 3)
    )
    for _ in range(3):
        top, left = rng.integers(0, size - 6, 2)
        h, w = rng.integers(4, size // 2, 2)
        base[top : top + h, left : left + w] = rng.uniform(0, 255, 3)
    centre, radius = rng.uniform(0.2, 0.8, 2), rng.uniform(0.08, 0.2)
    base[(yy - centre[0]) ** 2 + (xx - centre[1]) ** 2 < radius**2] = rng.uniform(0, 255, 3)
    return np.clip(base, 0, 255).astype(np.uint8)


def synthetic_database(references: int = 8, size: int = 32, seed: int = 0) -> IQADatabase:
    """Every reference x the 7 types of CLASS_WEIGHT x 5 levels; every score column = CLASS_WEIGHT[type] * level
    (+ noise for perception and cognition)."""
    refs = np.stack([synthetic_scene(seed * 1000 + r, size) for r in range(references)])
    rows: dict[str, list] = {k: [] for k in ("images", "ref_index", "class_index", "level", "damage")}
    for r, ref in enumerate(refs):
        for c, name in enumerate(CLASS_WEIGHT):
            for level in LEVELS:
                rows["images"].append(distort(ref, name, level, image_seed(seed, r, c, level)))
                rows["ref_index"].append(r)
                rows["class_index"].append(c)
                rows["level"].append(level)
                rows["damage"].append(CLASS_WEIGHT[name] * level)
    damage = np.asarray(rows["damage"], np.float32)
    noise = np.random.default_rng(seed).normal(0, 0.05, damage.shape).astype(np.float32)
    m = len(damage)
    return IQADatabase(
        references=refs,
        images=np.stack(rows["images"]),
        ref_index=np.asarray(rows["ref_index"]),
        class_index=np.asarray(rows["class_index"]),
        level=np.asarray(rows["level"]),
        perception=damage + noise,
        cognition=damage - noise,
        decision=damage,
        execution=damage,
        progress_drop=damage,
        success=np.zeros(m, np.float32),
        clean_success=np.zeros(m, np.float32),
        progress=np.zeros(m, np.float32),
        clean_progress=np.zeros(m, np.float32),
        reference_states=np.zeros((references, 4)),
        reference_seeds=np.arange(references),
        reference_steps=np.zeros(references, np.int64),
        class_names=tuple(CLASS_WEIGHT),
        config=IQADatabaseConfig(references=references),
    )
