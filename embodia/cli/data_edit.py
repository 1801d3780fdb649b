"""``embodia data filter | drop | split | merge``: edit trajectory stores into new ones (:mod:`embodia.data.edit`)."""

from __future__ import annotations

import argparse
import math

from embodia.core.cli_args import seed


def episode_list(text: str) -> str:
    """An argparse type: ``0,3,5-9`` (checked here, parsed again by the library)."""
    from embodia.core.errors import EmbodiaError
    from embodia.data.edit import parse_index_list

    try:
        parse_index_list(text, "list")
    except EmbodiaError:
        raise argparse.ArgumentTypeError(
            f"expected non-negative integers and ranges like 0,3,5-9, got {text!r}"
        ) from None
    return text


def open_fraction(text: str) -> float:
    """An argparse type: a number strictly between 0 and 1."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"expected a number strictly between 0 and 1, got {text!r}")
    return value


def add_edit_commands(data_sub: argparse._SubParsersAction) -> None:
    """Add ``filter``, ``drop``, ``split`` and ``merge`` to ``embodia data``."""
    p = data_sub.add_parser(
        "filter", help="write the episodes that meet every criterion to a new store (by success, index, seed)"
    )
    p.add_argument("store", help="STORE.zarr to read (never written)")
    p.add_argument(
        "--out", required=True, metavar="NEW.zarr", help="new store (a new path or an empty folder)"
    )
    outcome = p.add_mutually_exclusive_group()
    outcome.add_argument("--success", action="store_true", help="keep successful episodes")
    outcome.add_argument("--failure", action="store_true", help="keep failed episodes")
    p.add_argument("--episodes", type=episode_list, metavar="LIST", help="keep these indices, e.g. 0,3,5-9")
    p.add_argument("--seeds", type=episode_list, metavar="LIST", help="keep these reset seeds, e.g. 0-99")
    p.set_defaults(func=cmd_filter)

    p = data_sub.add_parser("drop", help="write a store without the episodes named (by index or seed)")
    p.add_argument("store", help="STORE.zarr to read (never written)")
    p.add_argument(
        "--out", required=True, metavar="NEW.zarr", help="new store (a new path or an empty folder)"
    )
    p.add_argument("--episodes", type=episode_list, metavar="LIST", help="drop these indices, e.g. 0,3,5-9")
    p.add_argument("--seeds", type=episode_list, metavar="LIST", help="drop episodes with these reset seeds")
    p.set_defaults(func=cmd_drop)

    p = data_sub.add_parser("split", help="write a train and a validation store that partition a store")
    p.add_argument("store", help="STORE.zarr to read (never written)")
    p.add_argument("--out-train", required=True, metavar="TRAIN.zarr", help="new store of training episodes")
    p.add_argument("--out-val", required=True, metavar="VAL.zarr", help="new store of validation episodes")
    p.add_argument(
        "--val-fraction", type=open_fraction, required=True, help="share of episodes for validation, e.g. 0.1"
    )
    p.add_argument("--seed", type=seed, default=0, help="seed of the random draw of validation episodes")
    p.add_argument(
        "--in-order",
        action="store_true",
        help="take the last episodes for validation instead of a random draw",
    )
    p.set_defaults(func=cmd_split)

    p = data_sub.add_parser("merge", help="write the episodes of several stores, in order, to a new store")
    p.add_argument(
        "stores", nargs="+", metavar="STORE", help="stores of one schema, frame rate and video codec"
    )
    p.add_argument(
        "--out", required=True, metavar="NEW.zarr", help="new store (a new path or an empty folder)"
    )
    p.set_defaults(func=cmd_merge)


def _report(result) -> None:  # noqa: ANN001  (an EditResult)
    from embodia.data.edit import format_index_list

    def listed(indices: list[int]) -> str:
        text = format_index_list(indices)
        return text if len(text) <= 60 else f"{len(indices)} episodes"

    sources = "; ".join(f"{path} episodes {listed(indices)}" for path, indices in result.sources)
    print(f"wrote {result.episodes} episodes ({result.steps} steps) to {result.path} (from {sources})")


def cmd_filter(args: argparse.Namespace) -> int:
    from embodia.core.errors import EmbodiaError
    from embodia.data.edit import filter_store

    success = True if args.success else False if args.failure else None
    if success is None and args.episodes is None and args.seeds is None:
        raise EmbodiaError("data filter needs a criterion: --success, --failure, --episodes or --seeds")
    _report(filter_store(args.store, args.out, success=success, episodes=args.episodes, seeds=args.seeds))
    return 0


def cmd_drop(args: argparse.Namespace) -> int:
    from embodia.core.errors import EmbodiaError
    from embodia.data.edit import drop_episodes

    if args.episodes is None and args.seeds is None:
        raise EmbodiaError("data drop needs --episodes or --seeds (what to drop)")
    _report(drop_episodes(args.store, args.out, episodes=args.episodes, seeds=args.seeds))
    return 0


def cmd_split(args: argparse.Namespace) -> int:
    from embodia.data.edit import split_store

    for result in split_store(
        args.store,
        args.out_train,
        args.out_val,
        val_fraction=args.val_fraction,
        seed=args.seed,
        shuffle=not args.in_order,
    ):
        _report(result)
    return 0


def cmd_merge(args: argparse.Namespace) -> int:
    from embodia.data.edit import merge_stores

    _report(merge_stores(args.stores, args.out))
    return 0
