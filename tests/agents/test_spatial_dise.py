"""Spatial-DISE: every kind's answer key re-derived by a solver written here (a different computation from
the generator's), near-miss distractors, the evaluator, JSONL + PNG export, the tools (also over a real MCP
client) and the script's quick run."""

from __future__ import annotations

import base64
import io
import json
import math
from collections import Counter
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

import anyio
import numpy as np
import pytest
from mcp import ClientSession, stdio_client
from PIL import Image

from embodia.agents.llm import load_lm
from embodia.agents.methods.spatial_dise import (
    KIND_NAMES,
    KINDS,
    QUADRANTS,
    SpatialDiseError,
    SpatialQuestion,
    answer_with_lm,
    evaluate_spatial_answers,
    export_jsonl,
    generate_spatial_questions,
    letter_from_text,
    load_jsonl,
    parse_choice,
    question_at,
    shapes,
)
from embodia.agents.methods.spatial_dise.blind import (
    BLIND_ANSWERERS,
    blind_answers,
    majority_scores,
    medoid_scores,
    option_distance,
)
from embodia.agents.methods.spatial_dise.core import balanced_distractors, grow_pool
from embodia.agents.tools import ToolArgumentError, ToolContext, call_tool, list_tools
from embodia.core.results import default_results_path, layout_differences, read_results
from tests.agents.conftest import mcp_server, run_script
from tests.conftest import chat_completion, http_server, send_json

SEEDS = range(20)


# ---------------------------------------------------------------------------------------------- solvers
def _array(cells: Any) -> np.ndarray:
    """Cells (row, col) as a boolean array cropped to their bounding box."""
    cells = np.array(cells)
    cells = cells - cells.min(axis=0)
    a = np.zeros(cells.max(axis=0) + 1, dtype=bool)
    a[tuple(cells.T)] = True
    return a


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and bool((a == b).all())


def _volume(cubes: Any) -> np.ndarray:
    return _array(cubes)  # works in 3D too: (x, y, z) -> a[x, y, z]


def _orientations(a: np.ndarray) -> list[np.ndarray]:
    """All arrays reachable by quarter turns about the three axes (closure of the group they generate)."""
    seen: dict[tuple, np.ndarray] = {}
    todo = [a]
    while todo:
        b = todo.pop()
        key = (b.shape, b.tobytes())
        if key in seen:
            continue
        seen[key] = b
        todo += [np.rot90(b, 1, axes) for axes in ((0, 1), (1, 2), (0, 2))]
    return list(seen.values())


def _contains(figure: np.ndarray, piece: np.ndarray) -> bool:
    h, w = piece.shape
    return any(
        (figure[r : r + h, c : c + w] >= piece).all()
        for r in range(figure.shape[0] - h + 1)
        for c in range(figure.shape[1] - w + 1)
    )


def _symmetric(a: np.ndarray) -> bool:
    mirrors = [np.fliplr(a), np.flipud(a), a.T, a[::-1, ::-1].T]
    return any(_same(a, m) for m in mirrors)


FOLD_LINE = {
    "left": "vertical",
    "right": "vertical",
    "top": "horizontal",
    "bottom": "horizontal",
    "lower-left": "diagonal",
    "upper-right": "diagonal",
    "upper-left": "anti-diagonal",
    "lower-right": "anti-diagonal",
}
MIRROR_ARRAY = {
    "vertical": np.fliplr,
    "horizontal": np.flipud,
    "diagonal": lambda a: a.T,
    "anti-diagonal": lambda a: a[::-1, ::-1].T,
}


def _unfold(n: int, punch: Any, lines: list[str]) -> np.ndarray:
    """Holes after unfolding: reflect the punched sheet across the fold lines, last fold first."""
    holes = np.zeros((n, n), dtype=bool)
    holes[tuple(punch)] = True
    for line in reversed(lines):
        holes = holes | MIRROR_ARRAY[line](holes)
    return holes


def _holes(n: int, cells: Any) -> np.ndarray:
    a = np.zeros((n, n), dtype=bool)
    for r, c in cells:
        a[r, c] = True
    return a


def _silhouette(cubes: Any, side: str) -> np.ndarray:
    v = np.zeros((3, 3, 3), dtype=bool)  # v[x, y, z]
    for x, y, z in cubes:
        v[x, y, z] = True
    front = v.any(axis=1).T[::-1]  # rows: z from the top; columns: x
    right = v.any(axis=0).T[::-1]  # columns: y (the front on the left)
    top = v.any(axis=2).T[::-1]  # rows: y from the back; columns: x
    return {"front": front, "back": front[:, ::-1], "right": right, "left": right[:, ::-1], "top": top}[side]


def _direction(at: Any, facing: Any, target: Any) -> str:
    v = np.subtract(facing, at)
    w = np.subtract(target, at)
    cross, dot = v[0] * w[1] - v[1] * w[0], v @ w
    if dot > abs(cross):
        return "in front of you"
    if -dot > abs(cross):
        return "behind you"
    return "to your left" if cross > 0 else "to your right"


def _replay(stimulus: Any) -> dict[str, Any]:
    heading = {"north": 1j, "east": 1, "south": -1j, "west": -1}
    pos, h = complex(*stimulus["start"]), heading[stimulus["facing"]]
    for command in stimulus["commands"]:
        if command == "turn left":
            h *= 1j
        elif command == "turn right":
            h *= -1j
        else:
            pos += h * int(command.split()[1])
    name = next(k for k, v in heading.items() if v == h)
    return {"x": int(pos.real), "y": int(pos.imag), "facing": name}


def _die_top(stimulus: Any) -> int:
    f = stimulus["faces"]
    normals = {
        f["top"]: (0, 0, 1),
        7 - f["top"]: (0, 0, -1),
        f["south"]: (0, -1, 0),
        7 - f["south"]: (0, 1, 0),
        f["east"]: (1, 0, 0),
        7 - f["east"]: (-1, 0, 0),
    }
    north = np.array([[1, 0, 0], [0, 0, 1], [0, -1, 0]])  # top -> north, south -> top
    east = np.array([[0, 0, 1], [0, 1, 0], [-1, 0, 0]])  # top -> east, west -> top
    turn = {"north": north, "south": north.T, "east": east, "west": east.T}
    vectors = {k: np.array(v) for k, v in normals.items()}
    for direction in stimulus["rolls"]:
        vectors = {k: turn[direction] @ v for k, v in vectors.items()}
    return next(k for k, v in vectors.items() if tuple(v) == (0, 0, 1))


def _perspective(q: SpatialQuestion) -> list[bool]:
    objects = q.stimulus["objects"]
    at, facing = objects[q.stimulus["at"]], objects[q.stimulus["facing"]]
    if "target" in q.stimulus:  # where is the target: a direction
        return [o == _direction(at, facing, objects[q.stimulus["target"]]) for o in q.options]
    return [_direction(at, facing, objects[o]) == q.stimulus["relation"] for o in q.options]


def _gap(stimulus: Any) -> np.ndarray:
    return _array(stimulus["gap"])


#: kind -> (question -> for each option, whether it satisfies the question)
SOLVERS: dict[str, Callable[[SpatialQuestion], list[bool]]] = {
    "shape_finding": lambda q: [
        _contains(_array(q.stimulus["figure"]), _array(o)) for o in q.options
    ],  # translation only: a window of the figure covers every cell of the piece
    "symmetry": lambda q: [_symmetric(_array(o)) for o in q.options],
    "rotation_2d": lambda q: [
        any(_same(np.rot90(_array(q.stimulus["shape"]), k), _array(o)) for k in range(4)) for o in q.options
    ],
    "rotation_3d": lambda q: [
        any(_same(b, _volume(o)) for b in _orientations(_volume(q.stimulus["cubes"]))) for o in q.options
    ],
    "assembly": lambda q: [
        any(_same(np.rot90(_array(o), k), _gap(q.stimulus)) for k in range(4)) for o in q.options
    ],
    "fold_and_punch": lambda q: [
        _same(
            _unfold(q.stimulus["n"], q.stimulus["punch"], [FOLD_LINE[s] for s in q.stimulus["folds"]]),
            _holes(q.stimulus["n"], o),
        )
        for o in q.options
    ],
    "projection": lambda q: [
        _same(_silhouette(q.stimulus["cubes"], q.stimulus["side"]), _holes(3, o)) for o in q.options
    ],
    "perspective_taking": lambda q: _perspective(q),
    "dynamic_sequence": lambda q: [o == _replay(q.stimulus) for o in q.options],
    "cube_rolling": lambda q: [o == _die_top(q.stimulus) for o in q.options],
}


def test_there_is_a_solver_for_every_kind_and_every_quadrant_has_kinds():
    assert set(SOLVERS) == set(KINDS) == set(KIND_NAMES)
    assert {KINDS[k].quadrant for k in KINDS} == set(QUADRANTS)
    assert len(_orientations(_volume([(0, 0, 0), (1, 0, 0), (2, 0, 0), (2, 1, 0), (2, 1, 1)]))) == 24


@pytest.mark.parametrize("kind", KIND_NAMES)
def test_the_answer_key_is_the_only_option_an_independent_solver_accepts(kind):
    for seed in SEEDS:
        q = question_at(kind, seed, seed % 3)
        satisfied = SOLVERS[kind](q)
        assert satisfied.count(True) == 1 and satisfied[q.answer], (q.id, satisfied, q.answer)
        keys = {json.dumps(o, sort_keys=True) for o in q.options}
        assert len(keys) == 4 and len(q.option_texts) == 4 and len(set(q.option_texts)) == 4, q.id
        assert q.quadrant == KINDS[kind].quadrant and q.id == f"{kind}-{seed}-{seed % 3}"


def test_generation_is_deterministic_and_each_question_stands_alone():
    for kind in KIND_NAMES:
        batch = generate_spatial_questions(kind, 5, seed=7)
        assert batch == generate_spatial_questions(kind, 5, seed=7)
        assert [question_at(kind, 7, i) for i in (4, 0, 2)] == [batch[4], batch[0], batch[2]]
        assert batch != generate_spatial_questions(kind, 5, seed=8)
    selected = generate_spatial_questions(["intrinsic-static", "cube_rolling"], 2, seed=1)
    assert [q.kind for q in selected] == ["shape_finding"] * 2 + ["symmetry"] * 2 + ["cube_rolling"] * 2
    with pytest.raises(SpatialDiseError, match="unknown Spatial-DISE kind 'origami'"):
        question_at("origami", 0, 0)
    with pytest.raises(SpatialDiseError, match="seed must be an integer >= 0"):
        question_at("symmetry", -1, 0)


def test_the_correct_option_sits_at_every_position_about_equally_often():
    counts = Counter(q.answer for q in generate_spatial_questions("all", 30, seed=3))
    assert set(counts) == {0, 1, 2, 3} and all(50 <= c <= 100 for c in counts.values()), counts
    # options with a natural order (the four directions) are shuffled too: their order gives nothing away
    orders = Counter(
        tuple(q.option_texts)
        for q in generate_spatial_questions("perspective_taking", 400, seed=0)
        if "target" in q.stimulus
    )
    assert 150 <= orders.total() <= 250 and len(orders) == 24 and max(orders.values()) <= 20, orders


def _offsets_overlap(a: np.ndarray, b: np.ndarray) -> int:
    """Most cells two shapes share under any translation."""
    best = 0
    for dr in range(-b.shape[0], a.shape[0] + 1):
        for dc in range(-b.shape[1], a.shape[1] + 1):
            shared = 0
            for r, c in zip(*np.nonzero(b)):
                rr, cc = r + dr, c + dc
                shared += 0 <= rr < a.shape[0] and 0 <= cc < a.shape[1] and a[rr, cc]
            best = max(best, shared)
    return best


def test_rotation_distractors_are_near_misses():
    for seed in SEEDS:
        q = question_at("rotation_2d", seed, 0)
        answer = _array(q.options[q.answer])
        distractors = [o for i, o in enumerate(q.options) if i != q.answer]
        for option, how in zip(distractors, q.params["distractors"]):
            d = _array(option)
            if how == "mirror image":
                assert _same(d, np.fliplr(answer)), q.id
            elif how == "one cell moved":
                assert d.sum() == answer.sum() and _offsets_overlap(answer, d) == answer.sum() - 1, q.id
            else:  # two changes: a near miss of a near miss, still the same number of cells
                assert how.count(", then ") == 1 and d.sum() == answer.sum(), (q.id, how)


def test_fold_and_punch_distractors_are_near_misses():
    seen = Counter()
    for seed in range(40):
        q = question_at("fold_and_punch", seed, 1)
        n, punch, lines = q.stimulus["n"], q.stimulus["punch"], [FOLD_LINE[s] for s in q.stimulus["folds"]]
        answer = _holes(n, q.options[q.answer])
        near: list[np.ndarray] = [_unfold(n, punch, lines[:i] + lines[i + 1 :]) for i in range(len(lines))]
        near += [
            _unfold(n, punch, lines[:i] + [other] + lines[i + 1 :])
            for i in range(len(lines))
            for other in MIRROR_ARRAY
        ]
        distractors = [o for i, o in enumerate(q.options) if i != q.answer]
        for option, how in zip(distractors, q.params["distractors"]):
            d = _holes(n, option)
            if how == "one hole shifted":
                changed = np.argwhere(d != answer)
                assert d.sum() == answer.sum() and len(changed) == 2, q.id
                assert abs(changed[0] - changed[1]).sum() == 1, q.id  # to a neighbouring cell
                seen["shifted"] += 1
            elif ", then " not in how:  # "a fold forgotten" / "a fold along the wrong line"
                assert any(_same(d, m) for m in near), (q.id, how)
                seen["fold"] += 1
            else:  # a near miss of a near miss: one of the above with a hole shifted
                assert how.endswith(", then one hole shifted"), (q.id, how)
                seen["two"] += 1
    assert seen["shifted"] > 5 and seen["fold"] > 5 and seen["two"] > 5  # every kind of near miss occurs


def test_every_distractor_is_one_or_two_minimal_changes_by_its_generator_record():
    expected = {
        "shape_finding": {"one cell moved", "mirrored", "turned"},
        "symmetry": {"one cell moved"},
        "rotation_3d": {"mirror image", "mirror image, turned", "one cube moved"},
        "assembly": {"mirror image", "one cell moved", "one cell more or less"},
        "projection": {"one cell added or removed"}
        | {f"view from the {s}" for s in ("front", "back", "left", "right", "top")},
        "dynamic_sequence": {"a turn the wrong way", "a turn forgotten", "a move one step off"},
        "cube_rolling": {"the bottom face", "a roll the wrong way", "a roll left out", "another face"},
    }
    for kind, allowed in expected.items():
        for seed in range(10):
            q = question_at(kind, seed, 0)
            steps = [how.split(", then ") for how in q.params["distractors"]]
            assert len(steps) == 3 and all(1 <= len(s) <= 2 and set(s) <= allowed for s in steps), q.id
    for seed in range(10):  # dice: two pairs of opposite faces, so "adds up to 7" singles nothing out
        q = question_at("cube_rolling", seed, 0)
        assert sorted(q.options) in ([a, b, 7 - b, 7 - a] for a in range(1, 4) for b in range(a + 1, 4))
    for seed in range(10):  # perspective: no distractor lies in the asked direction
        q = question_at("perspective_taking", seed, 0)
        asked = q.stimulus.get("relation", q.option_texts[q.answer])
        assert len(q.params["distractors"]) == 3 and asked not in q.params["distractors"]


# ---------------------------------------------------------------------------------------------- evaluator
def _question(kind: str, answer: int, n_options: int = 4) -> SpatialQuestion:
    return SpatialQuestion(
        id=f"{kind}-{answer}",
        kind=kind,
        quadrant=KINDS[kind].quadrant,
        prompt="?",
        stimulus=None,
        options=list(range(n_options)),
        answer=answer,
        stimulus_text="",
        option_texts=[str(i) for i in range(n_options)],
    )


def test_evaluator_counts_per_quadrant_and_kind_against_chance():
    questions = [
        _question("rotation_2d", 0),  # intrinsic-dynamic
        _question("rotation_2d", 1),
        _question("assembly", 2),  # intrinsic-dynamic
        _question("projection", 3),  # extrinsic-static
        _question("cube_rolling", 0),  # extrinsic-dynamic
        _question("cube_rolling", 1),
    ]
    answers = ["A", "b", 2, "(D)", "E", None]  # right, right, right (index), right, invalid, invalid
    report = evaluate_spatial_answers(questions, answers)
    assert (report["n"], report["correct"], report["invalid"]) == (6, 4, 2)
    assert report["accuracy"] == pytest.approx(4 / 6) and report["chance"] == 0.25
    assert list(report["by_quadrant"]) == ["intrinsic-dynamic", "extrinsic-static", "extrinsic-dynamic"]
    dyn = report["by_quadrant"]["intrinsic-dynamic"]
    assert (dyn["n"], dyn["correct"], dyn["accuracy"], dyn["invalid"]) == (3, 3, 1.0, 0)
    assert dyn["p_value"] == pytest.approx(0.25**3)  # all three right by guessing
    ed = report["by_quadrant"]["extrinsic-dynamic"]
    assert (ed["correct"], ed["invalid"], ed["accuracy"], ed["p_value"]) == (0, 2, 0.0, 1.0)
    assert report["by_kind"]["cube_rolling"]["quadrant"] == "extrinsic-dynamic"
    assert report["by_kind"]["assembly"]["n"] == 1
    # 95 % Wilson interval of 4 / 6
    p, n, z = 4 / 6, 6, 1.96
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    assert report["interval"] == pytest.approx([centre - half, centre + half])
    assert report["above_chance"] is (centre - half > 0.25)
    # P(X >= 4), X ~ Binomial(6, 1/4)
    tail = sum(math.comb(6, k) * 0.25**k * 0.75 ** (6 - k) for k in range(4, 7))
    assert report["p_value"] == pytest.approx(tail)
    assert report["chosen"] == {"A": 1, "B": 1, "C": 1, "D": 1, "invalid": 2}
    assert report["key"] == {"A": 2, "B": 2, "C": 1, "D": 1}
    # a two-option question: chance 1/2, "C" is out of range
    mixed = evaluate_spatial_answers([_question("symmetry", 1, 2), _question("symmetry", 0)], ["C", 7])
    assert mixed["chance"] == pytest.approx((0.5 + 0.25) / 2) and mixed["invalid"] == 2
    with pytest.raises(SpatialDiseError, match="got 1 answers for 2 questions"):
        evaluate_spatial_answers(questions[:2], ["A"])


def test_answer_parsing():
    assert [parse_choice(a) for a in ("A", " c ", "(B)", "D.", 3, 4, True, "AB", "maybe", None)] == [
        0,
        2,
        1,
        3,
        3,
        None,
        None,
        None,
        None,
        None,
    ]
    assert letter_from_text("B) the second one") == 1
    assert letter_from_text("I think the answer is C.") == 2
    assert letter_from_text("Option D fits best") == 3
    assert letter_from_text("A or B, hard to say") is None  # two letters named: no answer
    assert letter_from_text("It is the mirrored one") is None


def test_answer_with_a_generate_only_back_end():
    class Endpoint:  # what OpenAICompatibleLM offers: generation only
        name = "endpoint"

        def __init__(self) -> None:
            self.prompts: list[str] = []

        def generate(self, prompt: str, *, max_new_tokens: int = 64, **_: Any) -> str:
            self.prompts.append(prompt)
            return "The answer is B."

    lm = Endpoint()
    q = question_at("dynamic_sequence", 0, 0)
    answer = answer_with_lm(lm, q)
    assert answer.choice == 1 and answer.letter == "B" and answer.text == "The answer is B."
    assert lm.prompts == [q.text()] and "Answer with the letter" in q.text()


def test_circular_answering_cancels_a_letter_preference():
    q = question_at("rotation_2d", 1, 0)
    wanted = q.option_texts[(q.answer + 1) % 4]  # the option this model likes, wherever it is shown

    class Biased:  # a local-model interface: letter log-probabilities (no next-token shortcut)
        name = "biased"

        def chat_text(self, prompt: str) -> str:
            return prompt

        def continuation_logprobs(self, prompt: str, letters: list[str]) -> list[float]:
            shown = prompt.split("Options:\n")[1]
            liked = next(k for k, label in enumerate(letters) if f"{label}:\n{wanted}" in shown)
            return [
                (-0.5 if k == liked else -2.0) + (2.0 if label == "A" else 0.0)
                for k, label in enumerate(letters)
            ]

    plain = answer_with_lm(Biased(), q)
    assert plain.letter == "A"  # a single pass follows the letter preference
    circular = answer_with_lm(Biased(), q, circular=True)
    assert circular.choice == (q.answer + 1) % 4
    assert circular.scores[circular.choice] == pytest.approx(-0.5 + 2.0 / 4)


def test_answer_with_smollm2_uses_letter_logprobs(smol):
    q = question_at("cube_rolling", 0, 0)
    answer = answer_with_lm(smol, q)
    assert len(answer.scores) == 4 and answer.choice == int(np.argmax(answer.scores))
    # the one-pass next-token read gives what scoring each letter as a continuation gives
    batched = smol.continuation_logprobs(smol.chat_text(q.text()), ["A", "B", "C", "D"])
    assert answer.scores == pytest.approx(batched, abs=1e-4)


# ---------------------------------------------------------------------------------------------- export
def test_export_and_load_round_trip(tmp_path):
    questions = generate_spatial_questions("all", 1, seed=2)
    path = export_jsonl(questions, tmp_path / "set")
    assert path == tmp_path / "set" / "questions.jsonl"
    assert load_jsonl(path) == questions and load_jsonl(tmp_path / "set") == questions
    records = [json.loads(line) for line in path.read_text().splitlines()]
    for record, q in zip(records, questions):
        assert record["answer_label"] == q.answer_label
        composite = Image.open(tmp_path / "set" / record["image"])
        assert composite.width >= 4 * 128 and composite.mode == "RGB"
        for name in ("stimulus", "A", "B", "C", "D"):
            with Image.open(tmp_path / "set" / record["images"][name]) as image:
                image.load()
                assert min(image.size) == 128
    # an edited set (an answer given as a letter) is read back and evaluated
    records[0]["answer"] = "D"
    (tmp_path / "edited.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n")
    edited = load_jsonl(tmp_path / "edited.jsonl")
    assert (
        edited[0].answer == 3
        and evaluate_spatial_answers(edited, ["D"] + [q.answer for q in edited[1:]])["accuracy"] == 1.0
    )
    (tmp_path / "broken.jsonl").write_text('{"id": "x", "kind": "symmetry"}\n')
    with pytest.raises(SpatialDiseError, match="broken.jsonl:1: missing prompt, options, answer"):
        load_jsonl(tmp_path / "broken.jsonl")


def test_export_writes_over_its_own_export_only(tmp_path):
    questions = generate_spatial_questions("symmetry", 2, seed=0)
    folder = tmp_path / "set"
    export_jsonl(questions, folder)
    export_jsonl(questions[:1], folder)  # an earlier export: replaced
    assert len(load_jsonl(folder)) == 1 and len(list((folder / "images").iterdir())) == 6
    (folder / "notes.txt").write_text("mine")
    with pytest.raises(SpatialDiseError, match=r"holds \['notes.txt'\], which embodia did not write"):
        export_jsonl(questions, folder)
    assert (folder / "notes.txt").read_text() == "mine" and len(load_jsonl(folder)) == 1
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "data.csv").write_text("1,2")
    with pytest.raises(SpatialDiseError, match="no Spatial-DISE export manifest"):
        export_jsonl(questions, foreign)
    assert sorted(p.name for p in foreign.iterdir()) == ["data.csv"]
    (tmp_path / "file").write_text("x")
    with pytest.raises(SpatialDiseError, match="it is a file"):
        export_jsonl(questions, tmp_path / "file")


# ---------------------------------------------------------------------------------------------- tools
TOOLS = {"spatial_dise_question", "spatial_dise_grade", "spatial_dise_export"}


def test_tools_are_registered_and_do_not_leak_the_answer(tmp_path):
    assert {t.name for t in list_tools()} >= TOOLS
    q = question_at("assembly", 4, 2)
    served = call_tool("spatial_dise_question", {"kind": "assembly", "seed": 4, "index": 2})
    assert served["text"] == q.text() and [o["label"] for o in served["options"]] == ["A", "B", "C", "D"]
    assert not {"answer", "answer_label", "params", "stimulus"} & set(served) and "images" not in served
    assert "distractor" not in json.dumps(served)
    graded = call_tool(
        "spatial_dise_grade",
        {"answers": [{"kind": "assembly", "seed": 4, "index": 2, "answer": q.answer_label}]},
    )
    assert graded["accuracy"] == 1.0 and graded["items"][0]["right"] is True
    with pytest.raises(ToolArgumentError, match="kind: Input should be"):
        call_tool("spatial_dise_question", {"kind": "origami"})
    with pytest.raises(ToolArgumentError, match="answered more than once"):
        call_tool(
            "spatial_dise_grade",
            {"answers": [{"kind": "symmetry", "seed": 0, "index": 0, "answer": "A"}] * 2},
        )
    with pytest.raises(ToolArgumentError, match="images_out: path '../x'"):
        call_tool(
            "spatial_dise_question",
            {"kind": "symmetry", "images_out": "../x"},
            context=ToolContext.confined(tmp_path),
        )
    (tmp_path / "imgs").mkdir()
    (tmp_path / "imgs" / f"{question_at('symmetry', 0, 0).id}_A.png").write_text("not mine")
    with pytest.raises(SpatialDiseError, match="is not this question's image"):
        call_tool("spatial_dise_question", {"kind": "symmetry", "images_out": str(tmp_path / "imgs")})


def test_an_agent_answers_questions_one_by_one_over_mcp(tmp_path):
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    results: dict[str, Any] = {}

    async def run() -> None:
        async with stdio_client(mcp_server(ws)) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            results["tools"] = {t.name: t for t in (await session.list_tools()).tools}
            served = []
            for index in range(3):
                served.append(
                    await session.call_tool(
                        "spatial_dise_question",
                        {"kind": "fold_and_punch", "seed": 5, "index": index, "images_out": "imgs"},
                    )
                )
            results["served"] = served
            answers = [{"kind": "fold_and_punch", "seed": 5, "index": i, "answer": "A"} for i in range(3)]
            results["grade"] = await session.call_tool("spatial_dise_grade", {"answers": answers})
            results["bad"] = await session.call_tool(
                "spatial_dise_question", {"kind": "fold_and_punch", "seed": -1}
            )
            results["escape"] = await session.call_tool(
                "spatial_dise_question", {"kind": "symmetry", "images_out": str(outside)}
            )
            results["export_out"] = await session.call_tool(
                "spatial_dise_export", {"out": "../outside/set", "n": 1}
            )
            results["export"] = await session.call_tool(
                "spatial_dise_export", {"out": "set", "kinds": ["extrinsic-dynamic"], "n": 2, "images": False}
            )

    anyio.run(run)
    assert set(results["tools"]) >= TOOLS
    assert results["tools"]["spatial_dise_question"].input_schema["properties"]["kind"]["enum"] == list(
        KIND_NAMES
    )
    for index, result in enumerate(results["served"]):
        assert not result.is_error, result.content[0].text
        content = result.structured_content
        assert content["id"] == f"fold_and_punch-5-{index}" and "answer" not in content
        assert content["text"] == question_at("fold_and_punch", 5, index).text()
        for path in content["images"].values():
            assert path.startswith(str(ws.resolve())) and Image.open(path).size[1] >= 128
    grade = results["grade"]
    assert not grade.is_error, grade.content[0].text
    key = [question_at("fold_and_punch", 5, i).answer for i in range(3)]
    assert grade.structured_content["correct"] == key.count(0) and grade.structured_content["n"] == 3
    assert (
        results["bad"].is_error
        and "seed: Input should be greater than or equal to 0" in results["bad"].content[0].text
    )
    for name, field in (("escape", "images_out"), ("export_out", "out")):
        message = results[name].content[0].text
        assert (
            results[name].is_error and f"{field}: path" in message and "is outside the workspace" in message
        )
    assert list(outside.iterdir()) == []
    export = results["export"]
    assert not export.is_error, export.content[0].text
    assert export.structured_content["by_kind"] == {"dynamic_sequence": 2, "cube_rolling": 2}
    assert len(load_jsonl(ws / "set")) == 4


# ---------------------------------------------------------------------------------------------- script
def test_quick_script(tmp_path, smol):  # smol: the model is loaded once for the session
    out, results = tmp_path / "spatial.json", tmp_path / "spatial_results.json"
    assert (
        run_script(
            "spatial_dise_experiment", "--quick", "--quiet", "--out", str(out), "--results", str(results)
        )
        == 0
    )
    # the quick run's results file has the layout of the committed ones (single pass and --circular alike)
    written = read_results(results)
    for name in ("methods/spatial_dise", "methods/spatial_dise_circular"):
        assert layout_differences(written, read_results(default_results_path(name))) == []
    rows = written["tables"]["accuracy"]["rows"]
    assert rows[-1]["quadrant"] == "overall" and rows[-1]["n"] == 2 * len(KIND_NAMES)
    letters = {r["letter"]: r["chosen"] for r in written["tables"]["letters"]["rows"]}
    assert sum(letters.values()) == 2 * len(KIND_NAMES)
    payload = json.loads(out.read_text())
    report = payload["report"]
    assert report["n"] == 2 * len(KIND_NAMES) and set(report["by_quadrant"]) == set(QUADRANTS)
    assert all(s["n"] == 2 and s["chance"] == 0.25 for s in report["by_kind"].values())
    assert len(payload["answers"]) == report["n"] and all(len(a["scores"]) == 4 for a in payload["answers"])


# ---------------------------------------------------------------------------------------------- blind answerers
def _options_question(options: list[Any], answer: int = 0) -> SpatialQuestion:
    return SpatialQuestion(
        id="hand",
        kind="rotation_2d",
        quadrant="intrinsic-dynamic",
        prompt="?",
        stimulus=None,
        options=options,
        answer=answer,
        stimulus_text="",
        option_texts=[json.dumps(o) for o in options],
    )


def test_blind_distances_and_answerers_on_hand_options():
    # an L of four cells; one cell moved is distance 2 whatever the translation, a mirror image too here
    key = [[0, 0], [1, 0], [2, 0], [2, 1]]
    moved = [[0, 0], [1, 0], [2, 0], [1, 1]]
    shifted = [[r + 1, c + 1] for r, c in moved]  # the same shape, translated: still distance 2
    assert option_distance(key, moved) == 2.0 and option_distance(key, shifted) == 2.0
    assert option_distance(key, key) == 0.0
    assert option_distance({"x": 2, "y": 0, "facing": "east"}, {"x": 3, "y": 0, "facing": "north"}) == 2.0
    assert option_distance(4, 1) == 3.0 and option_distance("left", "right") == 1.0
    # a 2 x 3 block and three near misses, each with a different cell moved: d1 and d3 are 2 apart (a
    # translation aligns them), d2 is 4 from both; the key is 2 from each
    block = [[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [1, 2]]
    d1 = [[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [2, 2]]  # (1, 2) -> (2, 2)
    d2 = [[0, 1], [0, 2], [1, 0], [1, 1], [1, 2], [2, 0]]  # (0, 0) -> (2, 0)
    d3 = [[0, 0], [0, 1], [0, 2], [0, 3], [1, 1], [1, 2]]  # (1, 0) -> (0, 3)
    q = _options_question([block, d1, d2, d3])
    assert medoid_scores(q.options) == [6.0, 8.0, 10.0, 8.0]
    assert majority_scores(q.options) == [0, 2, 2, 2]  # the per-cell majority is the key itself
    rng = np.random.default_rng(0)
    assert {name: f(q, rng) for name, f in BLIND_ANSWERERS.items()} == {
        "closest_to_others": 0,
        "majority": 0,
        "text_medoid": 0,
    }
    # all tied: the pick is uniform (a tie scores chance)
    tied = _options_question([1, 2, 3, 4])
    picks = Counter(blind_answers([tied] * 400, "majority", seed=1))
    assert set(picks) == {0, 1, 2, 3} and all(70 <= c <= 130 for c in picks.values()), picks


def _key_share_by_hand(options: list[Any]) -> float:
    """How often the medoid / majority answerers pick option 0, ties at random, averaged (test's own)."""
    shares = []
    for scores in (medoid_scores(options), majority_scores(options)):
        best = [i for i, s in enumerate(scores) if s == min(scores)]
        shares.append((0 in best) / len(best))
    return sum(shares) / 2


def test_balanced_distractors_leave_the_key_at_chance_for_blind_answerers():
    p_shape = ((0, 0), (0, 1), (0, 2), (1, 0), (1, 1))
    rng = np.random.default_rng(3)
    pool, made = grow_pool(
        rng, p_shape, lambda r, base: (shapes.move_one_cell(r, base), "one cell moved"), lambda c: True
    )
    key, pool = json.loads(json.dumps(p_shape)), json.loads(json.dumps(pool))  # as questions hold them
    assert len(pool) == 8 and all(1 <= len(m.split(", then ")) <= 2 for m in made)
    assert all(", then " not in m for m in made[:3])  # the first three are of the key itself
    assert _key_share_by_hand([key, *pool[:3]]) > 0.5  # one change each: the key is in the middle
    shares = []
    for seed in range(300):
        chosen, met = balanced_distractors(np.random.default_rng(seed), key, pool)
        assert met and len(set(chosen)) == 3
        shares.append(_key_share_by_hand([key, *(pool[k] for k in chosen)]))
    assert abs(np.mean(shares) - 0.25) < 0.06  # exactly 1/4 in expectation
    # a pool whose every triple leaves the key in the middle cannot be balanced, and says so
    near = [
        [[0, 0], [0, 1], [0, 2], [1, 0]],
        [[0, 0], [0, 1], [0, 2], [1, 2]],
        [[0, 0], [0, 1], [0, 2], [1, 1]],
    ]
    line = [[0, 0], [0, 1], [0, 2]]
    _, met = balanced_distractors(np.random.default_rng(0), line, near)
    assert not met


def test_blind_answerers_beat_chance_on_one_change_distractors_but_not_on_balanced_ones():
    one_change = generate_spatial_questions("dynamic_sequence", 120, seed=11, balanced=False)
    balanced = generate_spatial_questions("dynamic_sequence", 120, seed=11)
    for name in ("closest_to_others", "majority"):
        before = evaluate_spatial_answers(one_change, blind_answers(one_change, name))
        after = evaluate_spatial_answers(balanced, blind_answers(balanced, name))
        assert before["above_chance"] and before["accuracy"] > 0.45, (name, before["accuracy"])
        assert 0.12 <= after["accuracy"] <= 0.38 and not after["above_chance"], (name, after["accuracy"])


def test_the_blind_script_writes_the_committed_layout(tmp_path):
    results = tmp_path / "blind.json"
    assert (
        run_script("spatial_dise_experiment", "--blind", "--quick", "--quiet", "--results", str(results)) == 0
    )
    written = read_results(results)
    assert layout_differences(written, read_results(default_results_path("methods/spatial_dise_blind"))) == []
    rows = written["tables"]["blind"]["rows"]
    assert len(rows) == 2 * len(BLIND_ANSWERERS) * (len(KIND_NAMES) + 1)
    assert {r["design"] for r in rows} == {"one change each", "balanced pool"}


# ---------------------------------------------------------------------------------------------- images
def test_images_go_to_an_openai_compatible_endpoint_as_image_url_parts():
    received: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server API)
            received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            send_json(self, chat_completion("C"))

        def log_message(self, *args: Any) -> None:
            pass

    with http_server(Handler) as base:
        lm = load_lm(f"{base}/v1#some-vlm")
        q = question_at("fold_and_punch", 0, 3)
        answer = answer_with_lm(lm, q, images=True)
    assert answer.choice == 2 and answer.text == "C"
    (body,) = received
    assert body["model"] == "some-vlm"
    (message,) = body["messages"]
    text, image = message["content"]
    assert message["role"] == "user" and text["type"] == "text" and image["type"] == "image_url"
    assert text["text"].startswith(q.prompt) and "(A, B, C or D)" in text["text"]
    assert q.stimulus_text not in text["text"]  # the stimulus goes as pixels only
    prefix = "data:image/png;base64,"
    assert image["image_url"]["url"].startswith(prefix)
    png = Image.open(io.BytesIO(base64.b64decode(image["image_url"]["url"][len(prefix) :])))
    assert png.format == "PNG"
    assert np.array_equal(np.asarray(png.convert("RGB")), np.asarray(q.composite().convert("RGB")))


def test_a_text_only_local_model_refuses_images():
    class TextOnly:  # the local-model interface: letter log-probabilities
        name = "text-only"

        def chat_text(self, prompt: str) -> str:
            return prompt

        def continuation_logprobs(self, prompt: str, letters: list[str]) -> list[float]:
            return [0.0] * len(letters)

    with pytest.raises(SpatialDiseError, match="reads text only; images need an OpenAI-compatible"):
        answer_with_lm(TextOnly(), question_at("symmetry", 0, 0), images=True)
