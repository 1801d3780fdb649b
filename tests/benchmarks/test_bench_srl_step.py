"""``python -m benchmarks.bench_srl_step --quick``: runs every loss set in both precisions, and the shared
log-softmax against the loss before it, and writes the committed file's layout (timings not asserted)."""

from __future__ import annotations

import torch

from benchmarks.bench_srl_step import LOSS_SETS, _two_log_softmax_deblurring, _two_log_softmax_denoising, main
from embodia.core.results import RESULTS_DIR, layout_differences, read_results
from embodia.perception.srl import losses


def test_quick_run_writes_the_committed_layout(tmp_path):
    path = tmp_path / "srl_step.json"
    assert main(["--quick", "--results", str(path)]) == 0
    written = read_results(path)
    committed = read_results(RESULTS_DIR / "benchmarks" / "srl_step.json")
    assert layout_differences(written, committed) == []
    rows = written["tables"]["precision"]["rows"]
    assert [r["losses"] for r in rows] == list(LOSS_SETS)
    assert all(r["float32"] > 0 and r["bfloat16"] > 0 and r["ratio"] > 0 for r in rows)
    (shared,) = written["tables"]["shared_log_softmax"]["rows"]
    assert shared["before"] > 0 and shared["after"] > 0


def test_the_before_losses_equal_the_current_ones():
    """The benchmark's "before" must compute the same losses, or its ratio compares different work."""
    gen = torch.Generator().manual_seed(0)
    b, t, n, k, c = 2, 4, 16, 3, 8
    recon, target = torch.randn(b, t, n, c, generator=gen), torch.randn(b, t, n, c, generator=gen)
    masks = torch.randn(b, t, k, n, generator=gen).softmax(dim=2)
    features = torch.randn(b, t, n, 12, generator=gen)
    assert torch.allclose(
        _two_log_softmax_deblurring(recon, target, masks),
        losses.deblurring_loss(recon, target, masks),
        atol=1e-6,
    )
    assert torch.allclose(
        _two_log_softmax_denoising(recon, features, masks),
        losses.denoising_loss(recon, features, masks),
        atol=1e-6,
    )
