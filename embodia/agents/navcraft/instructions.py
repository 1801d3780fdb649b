"""Instruction templates for NavCraft missions (stage 1): one sentence per mission, from its rooms and objects.

Paper: "CoNavBench: Collaborative Long-Horizon Vision-Language Navigation Benchmark" (ICLR 2026,
OpenReview bMrH2PFMsi; NavCraft is its generation platform) (see
``../shared/PAPERS.md``, "Collaborative VLN"). A base mission is *go to -> pick up -> deliver -> ... ->
end*; its instruction names every item's category, where it is (its room and, when it stands on or next to
a piece of furniture, that landmark), the room it goes to and the room the robot finishes in, e.g.
*"Go to the kitchen, pick up the cup next to the counter, and bring it to the bedroom; then wait in the
corridor."* Phrasings are drawn from a seeded generator, so a mission's text is reproducible. Room ids are
humanised (``living_room_0`` -> "the living room"; "the second bedroom" when a scene has several).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from embodia.envs.habitat.instructions import object_name, room_name
from embodia.envs.habitat.scene import Scene

#: categories of objects a robot can carry (besides any object standing on another one)
PORTABLE_CATEGORIES = ("cup", "vase", "book", "laptop", "plant", "bowl", "bottle", "box", "toy")

_ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth")

#: first item: ``{room}`` its room, ``{object}`` its category phrase, ``{where}`` " on the desk" or ""
_FIRST = (
    "Go to {room}, pick up the {object}{where}, and bring it to {destination}",
    "Head to {room} and grab the {object}{where}; take it to {destination}",
    "Fetch the {object}{where} in {room} and carry it to {destination}",
    "In {room}, pick up the {object}{where} and deliver it to {destination}",
)
_NEXT = (
    "next, fetch the {object}{where} from {room} and take it to {destination}",
    "after that, bring the {object}{where} in {room} to {destination}",
    "then pick up the {object}{where} in {room} and carry it to {destination}",
)
_END = (
    "then wait in {room}.",
    "finally, stop in {room}.",
    "then go to {room} and wait there.",
    "last, finish in {room}.",
)
_WHERE = (" on the {support}", " next to the {support}", " by the {support}")


@dataclass
class ItemPhrase:
    """What the instruction says about one item."""

    category: str
    room: str
    """Room id the item is in."""
    destination: str
    """Room id it goes to."""
    landmark: str | None = None
    """Category of the furniture it stands on or next to."""


def landmark_category(scene: Scene, object_id: str, radius: float = 1.5) -> str | None:
    """The furniture an instruction locates an object by: what it stands on, else the nearest piece of
    furniture in its room within ``radius`` m, else ``None``."""
    obj = scene.object(object_id)
    if obj.support is not None:
        return scene.object(obj.support).category
    furniture = [
        o
        for o in scene.objects
        if o.room == obj.room
        and o.id != obj.id
        and o.support is None
        and o.category not in PORTABLE_CATEGORIES
    ]
    if not furniture:
        return None
    distances = [math.dist(o.position[:2], obj.position[:2]) for o in furniture]
    k = int(np.argmin(distances))
    return furniture[k].category if distances[k] <= radius else None


def humanise_room(room_id: str, room_ids: Sequence[str]) -> str:
    """``living_room_0`` -> "the living room"; "the second bedroom" when ``room_ids`` hold several bedrooms."""
    category, _, index = room_id.rpartition("_")
    if not category or not index.isdigit():
        return f"the {room_name(room_id)}"
    same = sorted(r for r in room_ids if r.rpartition("_")[0] == category)
    if len(same) <= 1:
        return f"the {room_name(category)}"
    rank = same.index(room_id) if room_id in same else int(index)
    ordinal = _ORDINALS[rank] if rank < len(_ORDINALS) else f"number {rank + 1}"
    return f"the {ordinal} {room_name(category)}"


def mission_instruction(
    items: Sequence[ItemPhrase], end_room: str, room_ids: Sequence[str], rng: np.random.Generator
) -> str:
    """The instruction of a mission delivering ``items`` in order and finishing in ``end_room``."""
    clauses = []
    for k, item in enumerate(items):
        where = ""
        if item.landmark is not None:
            where = _WHERE[int(rng.integers(len(_WHERE)))].format(support=object_name(item.landmark))
        templates = _FIRST if k == 0 else _NEXT
        clauses.append(
            templates[int(rng.integers(len(templates)))].format(
                room=humanise_room(item.room, room_ids),
                object=object_name(item.category),
                where=where,
                destination=humanise_room(item.destination, room_ids),
            )
        )
    ending = _END[int(rng.integers(len(_END)))].format(room=humanise_room(end_room, room_ids))
    return "; ".join(clauses) + "; " + ending
