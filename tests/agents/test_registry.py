from __future__ import annotations

import math
from dataclasses import dataclass, field

import jsonschema
import numpy as np
import pytest
import torch

from embodia.agents.tools import ToolArgumentError, UnknownToolError, call_tool, get_tool, list_tools, tool
from embodia.core.jsonable import to_jsonable

EXPECTED = {
    "lm_generate",
    "lm_score",
    "gateskip",
    "cold_steer",
    "hybrid_finetune",
    "emotion_hallucer",
    "grounding_reliability",
    "spatial_dise_question",
    "spatial_dise_grade",
    "spatial_dise_export",
    "peer_effects",
    "explain_features",
    "laplacian_attention_check",
    "parallel_decode",
    "token_perception",
    "compress_transformer",
    "navcraft_generate",
    "navcraft_evaluate",
    "video_upscale",
    "iqa_score",
}


@dataclass
class _RepeatArgs:
    """Arguments of the test tool."""

    text: str
    """What to repeat."""
    times: int = 2
    """How often."""
    weights: list[float] = field(default_factory=list)
    """Optional numbers."""


@tool("test_repeat")
def _repeat(args: _RepeatArgs, progress=None) -> dict:
    """Repeat a text.

    Second paragraph, not part of the description."""
    for i in range(args.times):
        progress(i + 1, args.times, "repeating")
    return {"text": args.text * args.times, "array": np.arange(3), "nan": float("nan")}


def test_a_typed_function_becomes_a_tool():
    t = get_tool("test_repeat")
    assert t.description == "Repeat a text." and t.reports_progress
    schema = t.input_schema()
    assert schema["required"] == ["text"] and schema["additionalProperties"] is False
    assert schema["properties"]["times"] == {
        "default": 2,
        "description": "How often.",
        "title": "Times",
        "type": "integer",
    }
    seen = []
    result = t.run({"text": "ab", "times": 3}, lambda d, total, m: seen.append((d, total)))
    assert result == {"text": "ababab", "array": [0, 1, 2], "nan": None}
    assert seen == [(1, 3), (2, 3), (3, 3)]


def test_bad_arguments_name_every_problem():
    with pytest.raises(ToolArgumentError) as error:
        call_tool("test_repeat", {"times": "many", "colour": "red", "weights": [1, "x"]})
    message = str(error.value)
    for expected in (
        "text: Field required",
        "times: Input should be a valid integer",
        "colour: Unexpected",
        "weights.1",
        "embodia tool schema test_repeat",
    ):
        assert expected in message
    with pytest.raises(ToolArgumentError, match="must be a JSON object"):
        call_tool("test_repeat", ["ab"])  # type: ignore[arg-type]


def test_unknown_tool_suggests_close_names():
    with pytest.raises(UnknownToolError, match="did you mean test_repeat"):
        get_tool("test_repeta")


def test_every_method_tool_is_registered_with_a_valid_schema():
    tools = {t.name: t for t in list_tools()}
    assert set(tools) >= EXPECTED
    for name in EXPECTED:
        schema = tools[name].input_schema()
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["type"] == "object" and tools[name].description
        assert all(p.get("description") for p in schema["properties"].values()), name
        defaults = {k: v["default"] for k, v in schema["properties"].items() if "default" in v}
        required = set(schema.get("required", []))
        if not required:  # a tool whose every argument has a default validates its defaults
            jsonschema.validate(defaults, schema)
            tools[name].validate(defaults)


def test_to_jsonable():
    assert to_jsonable({"a": torch.tensor([1.5]), "b": (np.float32(2.0), math.inf)}) == {
        "a": [1.5],
        "b": [2.0, None],
    }
    with pytest.raises(TypeError):
        to_jsonable(object())
