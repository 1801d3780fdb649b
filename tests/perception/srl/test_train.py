"""SRL learns on a tiny configuration, and the experiment's quick mode runs."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from embodia.core.results import layout_differences, read_results
from embodia.perception.srl import (
    SRLConfig,
    SRLConfigError,
    evaluate,
    predict_masks,
    train_srl,
    variant_config,
)
from embodia.perception.srl.model import SRLModel
from embodia.perception.srl.train import (
    _normalised_frames,
    build_model,
    compute_losses,
    mask_confidence,
    pretrain_encoder,
    regulariser_active,
    slot_similarity,
    synergy_active,
)
from embodia.perception.video import render_videos
from tests.conftest import ROOT
from tests.perception.conftest import run_script

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def tiny():
    return render_videos("tiny", 4, seed=0)


@pytest.mark.parametrize("precision", ["float32", "bfloat16"])
def test_full_srl_loss_falls_on_tiny_videos(tiny, precision):
    config = variant_config(
        SRLConfig(num_slots=4, slot_dim=16, decoder_hidden=32, proj_dim=16, encoder_dim=16, steps=20,
                  batch_size=4, lr=1e-3, reg_end=1.0, synergy_start=0.0, pretrain_steps=10,
                  matmul_precision=precision),
        "srl",
    )  # fmt: skip
    model, encoder, log = train_srl(tiny.rgb, config)
    trained = [e for e in log if "total" in e]
    first, last = trained[0], trained[-1]
    assert {"rec", "sc", "reg"} <= set(first) and {"rec", "sc", "reg", "deblur", "denoise"} <= set(last)
    assert last["rec"] < first["rec"] and last["sc"] < first["sc"]
    labels = predict_masks(model, encoder, tiny.rgb)
    assert labels.shape == tiny.masks.shape and labels.max() < 4
    scores = evaluate(model, encoder, tiny.rgb, tiny.masks)
    assert -1 <= scores["fg_ari"] <= 1 and 0 <= scores["mbo"] <= 1
    assert -1 <= scores["slot_similarity"] <= 1 and 1 / 4 <= scores["mask_confidence"] <= 1


def test_collapse_diagnostics_on_hand_made_slots_and_masks():
    collapsed = torch.tensor([1.0, 2.0, -1.0]).expand(1, 2, 4, 3)  # (B, T, K, S): every slot the same vector
    assert slot_similarity(collapsed) == pytest.approx(1.0)
    assert slot_similarity(torch.eye(4).expand(1, 2, 4, 4)) == pytest.approx(0.0)  # orthogonal slots
    opposite = torch.tensor([[[1.0, 0.0], [-1.0, 0.0]]])  # two slots pointing opposite ways
    assert slot_similarity(opposite) == pytest.approx(-1.0)
    uniform = torch.full((1, 2, 4, 9), 0.25)  # (B, T, K, N), normalised over K
    assert mask_confidence(uniform) == pytest.approx(0.25)
    owners = torch.nn.functional.one_hot(torch.arange(9) % 4, 4).T.float().expand(1, 2, 4, 9)
    assert mask_confidence(owners) == pytest.approx(1.0)


def test_the_authors_schedule_regulariser_first_10_percent_synergy_after_20_percent():
    config = variant_config(SRLConfig(steps=100_000), "srl")  # the authors' MOVi-C run: 100k steps
    assert [regulariser_active(config, s) for s in (0, 10_000, 10_001)] == [True, True, False]
    assert [synergy_active(config, s) for s in (10_001, 20_000, 20_001, 99_999)] == [False, False, True, True]
    base = variant_config(config, "base")
    assert not regulariser_active(base, 0) and not synergy_active(base, 99_999)


def test_schedule_switches_losses_on_and_off(tiny):
    config = variant_config(
        SRLConfig(num_slots=3, slot_dim=8, decoder_hidden=16, proj_dim=8, encoder_dim=16, steps=10, batch_size=2,
                  pretrain_steps=1),
        "srl",
    )  # fmt: skip
    encoder = pretrain_encoder(tiny.rgb, config)
    features = SRLModel.encode(encoder, _normalised_frames(tiny.rgb[:2, :4], encoder))
    model = build_model(encoder, config)
    assert set(compute_losses(model, features, config, 1)) == {"rec", "sc", "reg", "total"}
    assert set(compute_losses(model, features, config, 2)) == {"rec", "sc", "total"}
    assert set(compute_losses(model, features, config, 3)) == {"rec", "sc", "deblur", "denoise", "total"}
    base = variant_config(config, "base")
    assert set(compute_losses(model, features, base, 0)) == {"rec", "sc", "total"}
    with pytest.raises(SRLConfigError):
        variant_config(config, "nope")
    with pytest.raises(SRLConfigError, match="matmul_precision"):
        SRLConfig(matmul_precision="float16")


def test_quick_experiment_writes_json_and_picture(tmp_path):
    out, written = tmp_path / "srl.json", tmp_path / "srl_results.json"
    assert run_script("srl_experiment", "--quick", "--out", str(out), "--results", str(written)) == 0
    result = json.loads(out.read_text())
    assert [r["variant"] for r in result["summary"]] == ["base", "reg", "srl"]
    assert all(np.isfinite(r["fg_ari"]["mean"]) for r in result["summary"])
    assert (tmp_path / "srl.png").is_file()
    # the committed results file (docs/guides/video.md) has the layout this script writes
    committed = read_results(ROOT / "results" / "perception" / "srl.json")
    assert layout_differences(read_results(written), committed) == []


def test_a_table_run_in_parts_merges_and_other_settings_are_refused(tmp_path, capsys):
    out, written = tmp_path / "srl.json", tmp_path / "srl_results.json"
    common = ("--quick", "--out", str(out), "--results", str(written))
    assert run_script("srl_experiment", *common, "--variants", "base", "srl") == 0
    first = {(r["variant"], r["seed"]): r["fg_ari"] for r in json.loads(out.read_text())["runs"]}
    assert run_script("srl_experiment", *common, "--variants", "reg", "--merge") == 0
    merged = json.loads(out.read_text())
    assert [r["variant"] for r in merged["summary"]] == ["base", "reg", "srl"]
    assert {(r["variant"], r["seed"]): r["fg_ari"] for r in merged["runs"] if r["variant"] != "reg"} == first
    results = read_results(written)
    assert [r["variant"] for r in results["tables"]["variants"]["rows"]] == ["base", "reg", "srl"]
    assert len(results["command"].split(" ; ")) == 2  # both parts' commands
    assert set(np.load(out.with_suffix(".masks.npz"))) == {"base", "reg", "srl"}  # the picture has every row
    # a part with another slot width is refused before it trains, and the runs stay as they were
    before = out.read_text()
    assert run_script("srl_experiment", *common, "--variants", "reg", "--merge", "--slot-dim", "16") == 2
    assert "other settings (config)" in capsys.readouterr().err
    assert out.read_text() == before


def test_a_merge_into_corrupt_runs_is_refused_with_one_line(tmp_path, capsys):
    out = tmp_path / "srl.json"
    out.write_text("{not json")
    args = ("--quick", "--out", str(out), "--results", str(tmp_path / "r.json"), "--variants", "base")
    args = (*args, "--merge")
    assert run_script("srl_experiment", *args) == 2
    assert "is not a readable runs file" in capsys.readouterr().err
    assert out.read_text() == "{not json"  # left as it was
    out.unlink()
    assert run_script("srl_experiment", *args) == 0
    out.with_suffix(".masks.npz").write_bytes(b"garbage")
    assert run_script("srl_experiment", *args) == 2
    assert "is corrupt" in capsys.readouterr().err
