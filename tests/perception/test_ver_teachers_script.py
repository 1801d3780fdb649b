"""scripts/ver_teachers.py --quick renders frames, trains and saves the three teachers, and reports them."""

from __future__ import annotations

import json

import numpy as np
import torch

from embodia.core.results import layout_differences, read_results
from embodia.perception.datasets import load_frames
from embodia.perception.encoder_io import load_encoder, register_encoder_kind
from embodia.perception.encoders import prepare
from embodia.perception.teachers import TEACHERS, ContrastiveTeacher, GeometryTeacher, StateTeacher
from tests.conftest import ROOT
from tests.perception.conftest import run_script

torch.set_num_threads(1)

for _cls in (GeometryTeacher, ContrastiveTeacher, StateTeacher):  # until encoder_io's table lists them
    register_encoder_kind(_cls.kind, f"embodia.perception.teachers:{_cls.__name__}")


def test_quick_run_writes_frames_teachers_and_summary(tmp_path, capsys):
    results = tmp_path / "ver_teachers.json"
    assert run_script("ver_teachers", "--quick", "--out", str(tmp_path), "--results", str(results)) == 0
    printed = capsys.readouterr().out
    assert "| geometry |" in printed and "linear CKA" in printed
    # the committed results file (docs/guides/perception.md) has the layout this script writes
    committed = read_results(ROOT / "results" / "perception" / "ver_teachers.json")
    assert layout_differences(read_results(results), committed) == []

    frames = load_frames(tmp_path / "frames.zarr")
    assert len(frames) > 10 and frames.rgb.shape[1:] == (64, 64, 3)

    summary = json.loads((tmp_path / "teachers.json").read_text())
    assert set(summary["teachers"]) == set(TEACHERS)
    assert summary["frames"]["count"] == len(frames)
    for kind, result in summary["teachers"].items():
        assert result["params"] > 0 and result["train_seconds"] > 0 and result["ms_per_image"] > 0
        assert result["heldout"] and all(np.isfinite(v) for v in result["heldout"].values() if v == v)
        teacher = load_encoder(tmp_path / kind)
        assert teacher.kind == result["kind"] == f"teacher-{kind}"
        out = teacher(prepare(frames.rgb[:2], teacher))
        assert out.patches.shape == (2, teacher.grid**2, teacher.dim)
    cka = np.array([[summary["cka"][a][b] for b in TEACHERS] for a in TEACHERS])
    assert np.allclose(np.diag(cka), 1.0) and np.allclose(cka, cka.T)
    assert ((cka >= -1e-6) & (cka <= 1 + 1e-6)).all()
