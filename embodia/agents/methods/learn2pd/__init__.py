"""Learn2PD: learned parallel decoding for a small masked-diffusion language model.

Paper: W. Bao, Z. Chen, D. Xu and Y. Shang, "Learning to Parallel: Accelerating Diffusion Large Language
Models via Learnable Parallel Decoding", arXiv:2509.25188 (2025). A small filter predicts, per masked
position, whether the model's current prediction already equals the final one; accepted positions are
unmasked in parallel, and End-of-Text Prediction (EoTP) stops decoding once [EOT] is accepted. Reported:
up to 22.58x speed-up without a performance drop on LLaDA (57.51x with a KV cache).

Modules: :mod:`.tasks` (tasks with checkable answers), :mod:`.model` (the masked-diffusion LM and its
loss), :mod:`.decode` (``parallel_decode`` and its strategies), :mod:`.filter` (decoding traces and the
learned acceptance filter), :mod:`.pipeline` (train, save / load, compare strategies).
"""

from embodia.agents.methods.learn2pd.decode import STRATEGIES, DecodeResult, parallel_decode
from embodia.agents.methods.learn2pd.filter import AcceptFilter, collect_traces, train_filter
from embodia.agents.methods.learn2pd.model import (
    MaskedDiffusionLM,
    diffusion_loss,
    load_model,
    save_model,
    train_lm,
)
from embodia.agents.methods.learn2pd.tasks import TASKS, Vocab, make_batch

__all__ = [
    "STRATEGIES",
    "TASKS",
    "AcceptFilter",
    "DecodeResult",
    "MaskedDiffusionLM",
    "Vocab",
    "collect_traces",
    "diffusion_loss",
    "load_model",
    "make_batch",
    "parallel_decode",
    "save_model",
    "train_filter",
    "train_lm",
]
