"""Embodied-IQA: image quality measured by what a distortion does to an embodied agent.

Li et al., "Image Quality Assessment for Embodied AI", arXiv:2505.16815 (ICLR 2026; perception -> cognition ->
decision -> execution pipeline, 30 distortion types in 7 families x 5 levels). Related: Zhang et al., "Embodied Image
Quality Assessment for Robotic Intelligence", arXiv:2412.18774 (the EPD database, robot-centric IQA).

For a reference observation with image ``x`` and distorted image ``x'`` the damage scores are
``s_P = 1 - cos(E(x), E(x'))`` (perception, a frozen encoder ``E``), ``s_C`` (cognition: how far a visual
question answerer's answers move from its answers about ``x``), ``s_D = ||pi(o) - pi(o')||_2`` (decision,
the policy's first action) and ``s_E = S_0 - S`` (execution, the drop of the success rate of rollouts from the
reference state with clean vs. distorted images; :mod:`.database` has the finer ``progress_drop``).

- :mod:`.distortions`: 30 types in 7 families (blur, noise, compression, lighting, colour, geometry,
  occlusion) x 5 levels, and the types that cannot be rendered here.
- :mod:`.cognition`: the questions, the visual question answerer trained on the simulator's ground truth,
  the cognition score; :mod:`.answerers`: a local language model on captions, an endpoint on images.
- :mod:`.database`: build the database in simulation with a pixel policy; zarr v3 storage.
- :mod:`.model`: a small CNN IQA model (full- or no-reference) trained on a database column.
- :mod:`.evaluate`: held-out splits, PSNR / SSIM / MS-SSIM / VIF / feature-distance baselines, SRCC / PLCC.

    from embodia.perception.iqa import IQADatabaseConfig, build_database, splits, train_iqa, predict
    db = build_database(IQADatabaseConfig(references=20), policy, encoder)
    train, test = splits(db, "classes", seed=0)
    model, history = train_iqa(db, train, IQAModelConfig(target="execution"))
    correlations(predict(model, db.images[test], db.reference_images(test)), db.execution[test])
"""

from embodia.perception.iqa.database import (
    SCORES,
    IQADatabase,
    IQADatabaseConfig,
    IQADatabaseError,
    build_database,
    load_database,
    save_database,
)
from embodia.perception.iqa.distortions import (
    CLASS_NAMES,
    DISTORTIONS,
    FAMILIES,
    FAMILY_OF,
    LEVELS,
    DistortionError,
    distort,
    distort_batch,
    image_seed,
)
from embodia.perception.iqa.evaluate import (
    SPLITS,
    IQAEvaluationError,
    baseline_scores,
    correlations,
    level_correlations,
    splits,
    t_interval,
)
from embodia.perception.iqa.model import (
    TARGETS,
    IQAModel,
    IQAModelConfig,
    IQAModelError,
    load_iqa_model,
    predict,
    save_iqa_model,
    train_iqa,
)

__all__ = [
    "CLASS_NAMES",
    "DISTORTIONS",
    "FAMILIES",
    "FAMILY_OF",
    "LEVELS",
    "SCORES",
    "SPLITS",
    "TARGETS",
    "DistortionError",
    "IQADatabase",
    "IQADatabaseConfig",
    "IQADatabaseError",
    "IQAEvaluationError",
    "IQAModel",
    "IQAModelConfig",
    "IQAModelError",
    "baseline_scores",
    "build_database",
    "correlations",
    "distort",
    "distort_batch",
    "image_seed",
    "level_correlations",
    "load_database",
    "load_iqa_model",
    "predict",
    "save_database",
    "save_iqa_model",
    "splits",
    "t_interval",
    "train_iqa",
]
