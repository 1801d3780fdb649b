"""Training steps/s of SRL (``embodia.perception.srl``) in float32 and under bfloat16 autocast, per loss set,
and what computing the deblurring / denoising log-softmax once (instead of once per SupCon term) buys.

The model and batch are the headline table's (``results/perception/srl.json``): K = 7 slots of 32, a decoder
of 64, clips of 4 frames, batch 32, frozen features of 8x8 patches x 64 channels (the ConvEncoder's tokens
after 2x2 pooling; random here: a step's cost does not depend on their values). One step is what
``train_srl`` does per step: the active losses under autocast when bfloat16, backward, gradient clip, Adam.

The loss sets are the three phases a full-SRL run goes through: reconstruction + slot contrast (the ``base``
variant, throughout); + the slot regulariser (``reg`` and ``srl``, the first 10 % of steps); + deblurring and
denoising (``srl`` after 20 % of steps, most of its run).

The second table (``shared_log_softmax``) pairs the synergy phase with the loss as it was before both SupCon
terms of deblurring and of denoising shared one log-softmax (each term computed its own; values and
gradients equal), float32, interleaved.

    python -m benchmarks.bench_srl_step [--quick] [--results PATH]

Interleaved in one process, one torch thread (the experiment's setting). Writes
``results/benchmarks/srl_step.json`` (``--quick``: under ``runs/quick-results/``).
"""

from __future__ import annotations

import argparse
from contextlib import contextmanager
from dataclasses import replace

import torch
from torch import nn

from benchmarks._common import interleaved, save_results
from embodia.core.results import Column, Table
from embodia.perception.encoders import ConvEncoder
from embodia.perception.srl import losses
from embodia.perception.srl.train import SRLConfig, build_model, compute_losses
from embodia.policies.networks import cpu_has_bfloat16

GRID, FEATURE_DIM = 8, 64
PATCHES = GRID * GRID

#: loss set -> (config switches, a step at which exactly that set is active in a 100-step schedule)
LOSS_SETS = {
    "reconstruction + slot contrast (base)": ({}, 50),
    "+ slot regulariser (reg / srl, first 10 % of steps)": ({"use_reg": True}, 0),
    "+ deblurring and denoising (srl after 20 % of steps)": ({"use_reg": True, "use_synergy": True}, 50),
}


def _two_log_softmax_deblurring(
    recon_proj, target_proj, enc_masks, temperature=0.1, group_frames=4, base_temperature=losses.TAU_BASE
):
    """Deblurring as before the shared log-softmax: each SupCon term normalises the logits itself."""
    u = nn.functional.normalize(losses._group(recon_proj, group_frames), dim=-1)
    v = nn.functional.normalize(losses._group(target_proj.detach(), group_frames), dim=-1)
    labels = losses._group(enc_masks.detach().argmax(dim=2).unsqueeze(-1), group_frames).squeeze(-1)
    logits = u @ v.transpose(1, 2) / temperature
    same = labels.unsqueeze(-1) == labels.unsqueeze(-2)
    eye = torch.eye(u.shape[1], dtype=torch.bool, device=u.device).expand_as(same)
    factor = losses.supcon_factor(temperature, base_temperature)
    every = torch.ones_like(same)
    return (
        losses._supcon(logits, eye, every, factor) + losses._supcon(logits, same | eye, every, factor)
    ) / 2


def _two_log_softmax_denoising(
    adapted_proj,
    features,
    dec_masks,
    temperature=0.1,
    topk=8,
    group_frames=4,
    base_temperature=losses.TAU_BASE,
):
    """Denoising as before the shared log-softmax."""
    w = nn.functional.normalize(losses._group(adapted_proj, group_frames), dim=-1)
    x = nn.functional.normalize(losses._group(features.detach(), group_frames), dim=-1)
    labels = losses._group(dec_masks.detach().argmax(dim=2).unsqueeze(-1), group_frames).squeeze(-1)
    size = w.shape[1]
    frames = size // features.shape[2]
    others = ~torch.eye(size, dtype=torch.bool, device=w.device).expand(w.shape[0], size, size)
    selfsim = x @ x.transpose(1, 2)
    near = selfsim >= selfsim.topk(min(topk * frames, size), dim=-1).values[..., -1:]
    same = labels.unsqueeze(-1) == labels.unsqueeze(-2)
    logits = w @ w.transpose(1, 2) / temperature
    factor = losses.supcon_factor(temperature, base_temperature)
    return (losses._supcon(logits, near, others, factor) + losses._supcon(logits, same, others, factor)) / 2


@contextmanager
def two_log_softmaxes():
    """Within the block, ``compute_losses`` uses the deblurring / denoising losses from before the change."""
    saved = losses.deblurring_loss, losses.denoising_loss
    losses.deblurring_loss, losses.denoising_loss = _two_log_softmax_deblurring, _two_log_softmax_denoising
    try:
        yield
    finally:
        losses.deblurring_loss, losses.denoising_loss = saved


class Trainer:
    """One SRL model and optimiser, stepping on random batches of frozen features, as ``train_srl`` does."""

    def __init__(self, config: SRLConfig, at_step: int, pool: torch.Tensor, before: bool = False) -> None:
        torch.manual_seed(0)
        self.config, self.at_step, self.pool, self.before = config, at_step, pool, before
        # an encoder of the table's token shape (8x8 patches of 64: what the pooled 16x16 ConvEncoder gives)
        self.model = build_model(ConvEncoder(GRID * 4, FEATURE_DIM, depth=2), config)
        self.opt = torch.optim.Adam(self.model.parameters(), lr=config.lr)
        self.gen = torch.Generator().manual_seed(0)

    def step(self) -> None:
        config = self.config
        idx = torch.randint(len(self.pool), (config.batch_size,), generator=self.gen)
        low = config.matmul_precision == "bfloat16"
        with torch.autocast("cpu", torch.bfloat16, enabled=low):
            if self.before:
                with two_log_softmaxes():
                    terms = compute_losses(self.model, self.pool[idx], config, self.at_step)
            else:
                terms = compute_losses(self.model, self.pool[idx], config, self.at_step)
        self.opt.zero_grad()
        terms["total"].backward()
        nn.utils.clip_grad_norm_(self.model.parameters(), config.grad_clip)
        self.opt.step()

    def runner(self, steps: int):
        def run() -> float:
            for _ in range(steps):
                self.step()
            return steps

        return run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--results", default=None, help="results file (default: results/benchmarks/srl_step.json)"
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    steps, repeats, batch = (2, 2, 4) if args.quick else (10, 7, 32)
    pool = torch.randn(64, 4, PATCHES, FEATURE_DIM, generator=torch.Generator().manual_seed(0))
    base = SRLConfig(steps=100, batch_size=batch, standardize=True)

    precision = Table(
        [
            Column("losses", f"active losses (batch {batch} clips of 4 frames, K = 7)"),
            Column("float32", "steps/s, float32", ".2f"),
            Column("bfloat16", "steps/s, bfloat16 autocast", ".2f"),
            Column("ratio", "bfloat16 / float32 (paired median)", ".2f"),
        ]
    )
    rates = {}
    for name, (switches, at_step) in LOSS_SETS.items():
        trainers = {
            p: Trainer(replace(base, matmul_precision=p, **switches), at_step, pool)
            for p in ("float32", "bfloat16")
        }
        measured = interleaved({p: t.runner(steps) for p, t in trainers.items()}, repeats)
        rates[name] = measured
        precision.add(
            losses=name,
            float32=measured["float32"],
            bfloat16=measured["bfloat16"],
            ratio=measured["bfloat16/float32"],
        )
    print(precision.markdown())

    synergy_name = list(LOSS_SETS)[-1]
    switches, at_step = LOSS_SETS[synergy_name]
    synergy = replace(base, **switches)
    shared = interleaved(
        {
            "before": Trainer(synergy, at_step, pool, before=True).runner(steps),
            "after": Trainer(synergy, at_step, pool).runner(steps),
        },
        repeats,
    )
    shared_table = Table(
        [
            Column("losses", "active losses (float32)"),
            Column("before", "steps/s, a log-softmax per SupCon term (before)", ".2f"),
            Column("after", "steps/s, one shared log-softmax (after)", ".2f"),
            Column("ratio", "after / before (paired median)", ".2f"),
        ]
    )
    shared_table.add(
        losses=synergy_name, before=shared["before"], after=shared["after"], ratio=shared["after/before"]
    )
    print(shared_table.markdown())
    save_results(
        "srl_step",
        {"precision": precision, "shared_log_softmax": shared_table},
        quick=args.quick,
        path=args.results,
        data={
            "rates": rates,
            "shared_log_softmax_rates": shared,
            "batch": batch,
            "steps_per_repeat": steps,
            "repeats": repeats,
            "cpu_has_bfloat16": cpu_has_bfloat16(),
        },
        title="Training steps/s of SRL: float32 against bfloat16, and the shared log-softmax (one process, one thread)",
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
