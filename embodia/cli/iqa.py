"""``embodia iqa build | train | score``: image quality measured by what it does to an embodied agent.

::

    embodia iqa build --policy runs/pixel/policy --out iqa.zarr          # render, distort, score (3 levels)
    embodia iqa train iqa.zarr --out iqa_model                          # CNN predicting the execution score
    embodia iqa score frame.png --reference clean.png --model iqa_model

``build`` renders reference observations with the policy, distorts them (30 types in 7 families x 5 levels)
and scores every distorted image at the perception (encoder features), decision (the policy's action) and execution
(task success of rollouts from the reference state) levels. ``train`` fits the IQA model and, with
``--holdout``, reports its rank correlation with the execution score on held-out references or distortion
classes next to PSNR and SSIM. ``score`` prints one image's predicted damage.
"""

from __future__ import annotations

import argparse

from embodia.core.cli_args import add_parallel_arguments, nonnegative_int, positive_int, seed


def cmd_build(args: argparse.Namespace) -> int:
    from embodia.core.policy import load_policy
    from embodia.perception.encoder_io import load_encoder
    from embodia.perception.iqa import CLASS_NAMES, IQADatabaseConfig, build_database, save_database

    policy = load_policy(args.policy)
    if args.encoder:
        encoder = load_encoder(args.encoder)
    elif hasattr(policy, "actor") and hasattr(policy.actor, "observations"):
        encoder = policy.actor.observations.encoder  # the policy's own image encoder
    else:
        from embodia.core.errors import EmbodiaError

        raise EmbodiaError(f"{args.policy} has no image encoder of its own; pass --encoder FOLDER")
    classes = tuple(args.classes) if args.classes else CLASS_NAMES
    config = IQADatabaseConfig(
        env_id=args.env,
        references=args.references,
        reference_episodes=args.reference_episodes,
        successful_only=args.successful_only,
        classes=classes,
        rollouts=args.rollouts,
        horizon=args.horizon,
        seed=args.seed,
    )
    db = build_database(
        config, policy, encoder, progress=True, workers=args.workers, ray_address=args.ray_address
    )
    save_database(db, args.out)
    print(
        f"{len(db.images)} distorted images of {len(db.references)} references ({len(classes)} classes x "
        f"{len(config.levels)} levels), clean success {float(db.clean_success.mean()):.0%} -> {args.out}"
    )
    return 0


def cmd_train(args: argparse.Namespace) -> int:
    import numpy as np
    import torch

    from embodia.perception.iqa import (
        IQAModelConfig,
        baseline_scores,
        correlations,
        load_database,
        predict,
        save_iqa_model,
        splits,
        train_iqa,
    )

    torch.set_num_threads(1)
    db = load_database(args.database)
    config = IQAModelConfig(
        with_reference=not args.no_reference, steps=args.steps, target=args.target, seed=args.seed
    )
    if args.holdout == "none":
        train_rows, test_rows = np.arange(len(db.images)), np.zeros(0, dtype=np.int64)
    else:
        train_rows, test_rows = splits(db, args.holdout, seed=args.seed)
    model, history = train_iqa(db, train_rows, config)
    save_iqa_model(model, args.out)
    print(
        f"trained on {len(history['rows'])} images, loss {history['loss'][0]:.3f} -> {history['loss'][-1]:.3f}"
    )
    if len(test_rows):
        target = getattr(db, args.target)[test_rows]
        refs = db.reference_images(test_rows) if config.with_reference else None
        scores = {"IQA model": predict(model, db.images[test_rows], refs), **baseline_scores(db, test_rows)}
        print(f"held-out {args.holdout} ({len(test_rows)} images), correlation with {args.target}:")
        for name, values in scores.items():
            c = correlations(values, target)
            print(f"  {name:>12}: SRCC {c['srcc']:+.3f}  PLCC {c['plcc']:+.3f}")
    print(f"-> {args.out}")
    return 0


def cmd_score(args: argparse.Namespace) -> int:
    from embodia.perception.iqa.scoring import score_file

    result = score_file(args.model, args.image, args.reference)
    print(f"{result['score']:.4f}  (predicted {result['target']} damage; 0 = harmless)")
    return 0


def add_commands(subparsers: argparse._SubParsersAction) -> None:
    """Add ``iqa`` with ``build``, ``train`` and ``score`` to the ``embodia`` command."""
    iqa = subparsers.add_parser("iqa", help="embodied image quality: build a database, train, score images")
    sub = iqa.add_subparsers(dest="iqa_command", required=True, metavar="SUBCOMMAND")

    build = sub.add_parser("build", help="render, distort and score images by their effect on a policy")
    build.add_argument(
        "--policy", required=True, help="a pixel policy folder (embodia train --method pixel_bc)"
    )
    build.add_argument("--out", required=True, help="the database to write (a new zarr folder)")
    build.add_argument("--env", default="embodia/Visual-CubeSingle-v0", help="the pixel task")
    build.add_argument("--encoder", help="encoder folder for the perception level (default: the policy's)")
    build.add_argument("--references", type=positive_int, default=20, help="reference observations")
    build.add_argument(
        "--reference-episodes", type=positive_int, default=5, help="clean episodes to draw references from"
    )
    build.add_argument(
        "--successful-only", action="store_true", help="draw references only from episodes the policy solved"
    )
    build.add_argument("--classes", nargs="+", metavar="CLASS", help="distortion types (default: all 30)")
    build.add_argument("--rollouts", type=nonnegative_int, default=2, help="execution rollouts per image")
    build.add_argument("--horizon", type=positive_int, default=60, help="steps of an execution rollout")
    build.add_argument("--seed", type=seed, default=0)
    add_parallel_arguments(build)
    build.set_defaults(func=cmd_build)

    train = sub.add_parser("train", help="train the IQA model on a database")
    train.add_argument("database", help="a database from `embodia iqa build`")
    train.add_argument("--out", required=True, help="the model folder to write")
    train.add_argument(
        "--target", default="execution", choices=("execution", "progress_drop", "decision", "perception")
    )
    train.add_argument("--no-reference", action="store_true", help="a no-reference model (image only)")
    train.add_argument("--steps", type=positive_int, default=600)
    train.add_argument(
        "--holdout",
        default="references",
        choices=("references", "classes", "none"),
        help="train without these and report correlations on them (none: train on everything)",
    )
    train.add_argument("--seed", type=seed, default=0)
    train.set_defaults(func=cmd_train)

    score = sub.add_parser("score", help="predicted damage of one image to the agent")
    score.add_argument("image", help="a PNG or JPEG")
    score.add_argument("--reference", help="the undistorted image (full-reference models)")
    score.add_argument("--model", required=True, help="a model folder from `embodia iqa train`")
    score.set_defaults(func=cmd_score)
