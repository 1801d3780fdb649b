"""Flow-of-ranks: low-rank compression of time-series transformers with depth-increasing rank schedules.

Paper: A. Yu, D. C. Maddix, B. Han, X. Zhang, A. F. Ansari, O. Shchur, C. Faloutsos, A. G. Wilson,
M. W. Mahoney and Y. Wang, "Understanding Transformers for Time Series: Rank Structure, Flow-of-ranks, and
Compressibility", arXiv:2510.03358 (2025). Time-series patch embeddings have sharply decaying singular
spectra, so the Q/K/V projections acting on them admit accurate low-rank approximations; nonlinear mixing
across depth inflates the rank (flow-of-ranks), so early layers compress best and ranks should grow with
depth. Reported: Chronos compressed with 65% less inference time and 81% less memory without loss of
accuracy.

The paper's protocol, from the authors' code (``amazon-science/TSFM-Compression``): pretrain with Q/K/V
inner widths per head ``d_kv(l) = nearest_power_of_two(base (l + 1)^beta)`` (:mod:`.pretrain`), and compare
post hoc by truncating each attention projection at ``#{i : s_i / s_1 >= epsilon}`` (:mod:`.threshold`).
:func:`compress_transformer` (all in-block linears, schedule and budget, optionally activation-aware) is
embodia's own variant.

Equations: a linear layer ``W = U diag(s) V^T`` is replaced by ``(U_r diag(sqrt s_r)) (diag(sqrt s_r) V_r^T)``
with ``||W - W_r||_F^2 = sum_{i>r} s_i^2`` (Eckart-Young); effective rank ``exp(-sum p_i log p_i)``,
``p_i = s_i / sum s``; ranks ``r_i = clip(floor(c g_i r_full_i))`` with one c meeting the parameter budget.

Modules: :mod:`.spectra` (spectra, effective / energy rank, activations on calibration data),
:mod:`.factorize` (``LowRankLinear``, ``factorize_linear``), :mod:`.compress` (``compress_transformer`` and
the schedules, embodia's variant), :mod:`.threshold` (the authors' post-hoc truncation), :mod:`.pretrain`
(the depth power law), :mod:`.model` (a patch time-series transformer, synthetic series, MASE, memory).
"""

from embodia.agents.methods.flow_of_ranks.compress import (
    SCHEDULES,
    Compression,
    compress_transformer,
    find_targets,
)
from embodia.agents.methods.flow_of_ranks.factorize import LowRankLinear, factorize_linear
from embodia.agents.methods.flow_of_ranks.model import (
    ForecasterConfig,
    PatchForecaster,
    mase,
    train_forecaster,
)
from embodia.agents.methods.flow_of_ranks.pretrain import (
    attention_params,
    depth_power_law,
    nearest_power_of_two,
    uniform_widths,
)
from embodia.agents.methods.flow_of_ranks.spectra import effective_rank, energy_rank, singular_values
from embodia.agents.methods.flow_of_ranks.threshold import threshold_rank, truncate_attention

__all__ = [
    "SCHEDULES",
    "Compression",
    "ForecasterConfig",
    "LowRankLinear",
    "PatchForecaster",
    "attention_params",
    "compress_transformer",
    "depth_power_law",
    "effective_rank",
    "energy_rank",
    "factorize_linear",
    "find_targets",
    "mase",
    "nearest_power_of_two",
    "singular_values",
    "threshold_rank",
    "train_forecaster",
    "truncate_attention",
    "uniform_widths",
]
