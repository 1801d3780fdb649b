"""Encoder folders: every built-in kind round-trips; foreign, corrupt and unknown folders are refused in one line."""

from __future__ import annotations

import json

import pytest
import torch

from embodia.perception.encoder_io import (
    EncoderFolderError,
    encoder_kinds,
    load_encoder,
    register_encoder_kind,
    save_encoder,
)
from embodia.perception.encoders import ConvEncoder


def test_round_trip_gives_the_same_outputs(tmp_path):
    torch.manual_seed(0)
    encoder = ConvEncoder(image_size=32, dim=16, depth=2).eval()
    save_encoder(encoder, tmp_path / "enc")
    loaded = load_encoder(tmp_path / "enc")
    x = torch.randn(2, 3, 32, 32)
    assert torch.equal(encoder(x).patches, loaded(x).patches)
    assert json.loads((tmp_path / "enc" / "config.json").read_text())["encoder"] == "conv"
    save_encoder(encoder, tmp_path / "enc")  # replacing an encoder folder is fine


def test_built_in_kinds_are_listed_without_importing_them():
    assert {"conv", "ver", "ver-library", "teacher-geometry", "teacher-contrastive", "teacher-state"} <= set(
        encoder_kinds()
    )
    with pytest.raises(ValueError, match="two encoder kinds"):
        register_encoder_kind("conv", "somewhere:Else")


def test_foreign_corrupt_and_unknown_folders_are_refused(tmp_path):
    foreign = tmp_path / "notes"
    foreign.mkdir()
    (foreign / "todo.txt").write_text("keep me")
    with pytest.raises(EncoderFolderError, match="holds other files"):
        save_encoder(ConvEncoder(32, 16, 2), foreign)
    assert (foreign / "todo.txt").read_text() == "keep me" and len(list(foreign.iterdir())) == 1

    with pytest.raises(EncoderFolderError, match="not a saved encoder"):
        load_encoder(tmp_path / "missing")

    save_encoder(ConvEncoder(32, 16, 2), tmp_path / "enc")
    (tmp_path / "enc" / "model.safetensors").write_bytes(b"not a tensor file")
    with pytest.raises(EncoderFolderError, match="corrupt") as error:
        load_encoder(tmp_path / "enc")
    assert "\n" not in str(error.value)

    (tmp_path / "odd").mkdir()
    (tmp_path / "odd" / "config.json").write_text(json.dumps({"encoder": "nope", "config": {}}))
    (tmp_path / "odd" / "model.safetensors").write_bytes(b"")
    with pytest.raises(EncoderFolderError, match="unknown encoder kind 'nope'"):
        load_encoder(tmp_path / "odd")
    with pytest.raises(EncoderFolderError, match="cannot load 'hf:"):
        load_encoder(f"hf:{tmp_path / 'no_model'}")
