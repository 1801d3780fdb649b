"""Which optional part of embodia a third-party module belongs to, so that a missing one is one clear line.

embodia installs in parts (``pyproject.toml``): the base (``import embodia``, the command line), ``robot``
(ROS 2, ONNX Runtime, bags: no torch), ``sim`` (simulators, torch, learning), ``agents`` (language models,
MCP) and ``ray`` (parallel runs); ``all`` is everything. A command that needs a part that is not installed fails with
:class:`MissingExtraError` naming the part and the pip command, never with an import traceback.
"""

from __future__ import annotations

from embodia.core.errors import EmbodiaError

#: top-level module -> the extra that installs it
MODULE_EXTRAS = {
    "torch": "sim",
    "mujoco": "sim",
    "dm_control": "sim",
    "ogbench": "sim",
    "robosuite": "sim",
    "matplotlib": "sim",
    "scipy": "sim",
    "networkx": "sim",
    "imageio_ffmpeg": "sim",
    "av": "sim",
    "onnx": "sim",
    "rerun": "sim",
    "transformers": "agents",
    "gguf": "agents",
    "accelerate": "agents",
    "mcp": "agents",
    "mcp_types": "agents",
    "PIL": "agents",
    "torch_geometric": "agents",
    "captum": "agents",
    "sklearn": "agents",
    "rclpy": "robot",
    "rosbags": "robot",
    "mcap": "robot",
    "onnxruntime": "robot",
    "zarr": "robot",
    "safetensors": "robot",
    "imageio": "robot",
    "ray": "ray",
}


class MissingExtraError(EmbodiaError, ModuleNotFoundError):
    """A part of embodia that this installation does not have."""


def missing_extra(error: ModuleNotFoundError) -> MissingExtraError | None:
    """The one-line error for an import that failed because an optional part is not installed (else None)."""
    top = (error.name or "").split(".")[0]
    extra = MODULE_EXTRAS.get(top)
    if extra is None:
        return None
    return MissingExtraError(
        f"this needs the {extra!r} part of embodia, which is not installed here (no module {top!r}): "
        f"pip install 'embodia[{extra}]' (or 'embodia[all]')"
    )
