"""Image encoders as folders: ``config.json`` (``{"encoder": kind, "config": {...}}``) + ``model.safetensors``.

Every encoder trained here (the CNN, the teachers, the VER expert library) is saved and loaded through this
one format, so a policy folder, the IQA database builder and the CLI can name an encoder by folder. An
encoder class registers its kind next to its definition::

    register_encoder_kind("conv", "embodia.perception.encoders:ConvEncoder")

and has ``encoder_config() -> dict`` (JSON values) such that ``Class(**encoder_config())`` rebuilds it
before the weights are loaded. A user's own vision transformer (DINOv2, CLIP, SigLIP saved with
``save_pretrained``) is named ``hf:FOLDER`` and loaded by :class:`~.encoders.HuggingFaceEncoder`.
"""

from __future__ import annotations

import importlib
import json
import os
from pathlib import Path
from typing import Any

from torch import nn

from embodia.core.errors import EmbodiaError


class EncoderFolderError(EmbodiaError):
    """A folder that is not a saved encoder, or an unknown encoder kind."""


_KINDS: dict[str, str] = {
    "conv": "embodia.perception.encoders:ConvEncoder",
    "ver-library": "embodia.perception.ver.model:VisionExpertLibrary",
    "ver": "embodia.perception.ver.encoder:VEREncoder",
    "teacher-geometry": "embodia.perception.teachers:GeometryTeacher",
    "teacher-contrastive": "embodia.perception.teachers:ContrastiveTeacher",
    "teacher-state": "embodia.perception.teachers:StateTeacher",
}


def register_encoder_kind(kind: str, target: str) -> None:
    """Register an encoder class (``"module:Class"``, imported on load) under ``kind``."""
    if kind in _KINDS and _KINDS[kind] != target:
        raise ValueError(f"two encoder kinds are named {kind!r}: {_KINDS[kind]} and {target}")
    _KINDS[kind] = target


def encoder_kinds() -> list[str]:
    return sorted(_KINDS)


def encoder_class(kind: str) -> type:
    if kind not in _KINDS:
        raise EncoderFolderError(f"unknown encoder kind {kind!r}; known: {', '.join(encoder_kinds())}")
    module, _, attr = _KINDS[kind].partition(":")
    return getattr(importlib.import_module(module), attr)


def encoder_spec(encoder: nn.Module) -> dict[str, Any]:
    """``{"encoder": kind, "config": kwargs}`` of a registered encoder instance."""
    kind = getattr(encoder, "kind", None)
    if kind is None or not hasattr(encoder, "encoder_config"):
        raise EncoderFolderError(
            f"{type(encoder).__name__} has no `kind` and `encoder_config()`; cannot save it"
        )
    return {"encoder": kind, "config": encoder.encoder_config()}


def build_encoder(spec: dict[str, Any]) -> nn.Module:
    """A fresh (untrained) encoder from ``{"encoder": kind, "config": kwargs}``."""
    try:
        return encoder_class(spec["encoder"])(**spec.get("config", {}))
    except (KeyError, TypeError) as error:
        raise EncoderFolderError(f"encoder spec {spec} cannot build an encoder: {error}") from None


def save_encoder(encoder: nn.Module, folder: str | Path, extra: dict[str, Any] | None = None) -> Path:
    """Write ``encoder`` to ``folder`` (created); weights first, then the config, each replaced atomically."""
    from safetensors.torch import save_file

    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise EncoderFolderError(f"cannot save an encoder to {str(folder)!r}: it is a file")
    if folder.is_dir() and any(folder.iterdir()) and not (folder / "config.json").is_file():
        raise EncoderFolderError(
            f"cannot save an encoder to {str(folder)!r}: the folder holds other files; choose a new path"
        )
    folder.mkdir(parents=True, exist_ok=True)
    config = {**encoder_spec(encoder), **(extra or {})}
    tensors = {k: v.detach().contiguous() for k, v in encoder.state_dict().items()}
    save_file(tensors, str(folder / "model.safetensors.tmp"))
    (folder / "config.json.tmp").write_text(json.dumps(config, indent=2) + "\n")
    os.replace(folder / "model.safetensors.tmp", folder / "model.safetensors")
    os.replace(folder / "config.json.tmp", folder / "config.json")
    return folder


def load_encoder(name: str | Path) -> nn.Module:
    """The encoder saved in folder ``name`` (in eval mode), or ``hf:FOLDER`` for a user's transformers model.

    Raises:
        EncoderFolderError: the folder is missing, is not a saved encoder, or its weights do not match.
    """
    text = str(name)
    if text.startswith("hf:"):
        from embodia.perception.encoders import HuggingFaceEncoder

        try:
            return HuggingFaceEncoder(text[3:]).eval()
        except (OSError, ValueError) as error:
            raise EncoderFolderError(f"cannot load {text!r}: {error}") from None
    from safetensors.torch import load_file

    folder = Path(text)
    config_file, weights = folder / "config.json", folder / "model.safetensors"
    if not config_file.is_file() or not weights.is_file():
        raise EncoderFolderError(
            f"{text!r} is not a saved encoder (needs config.json and model.safetensors); "
            "train one, or name a transformers model as hf:FOLDER"
        )
    try:
        spec = json.loads(config_file.read_text())
        encoder = build_encoder(spec)
        encoder.load_state_dict(load_file(str(weights)))
    except EncoderFolderError:
        raise
    except Exception as error:  # JSON, config fields, a truncated safetensors file, a state-dict mismatch
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise EncoderFolderError(
            f"encoder folder {text!r} is corrupt or does not match its config: {first}"
        ) from None
    return encoder.eval()
