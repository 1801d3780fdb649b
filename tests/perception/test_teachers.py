"""The three VER teachers: ImageEncoder shapes, falling losses on a tiny set, encoder folders round-trip."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from embodia.perception.datasets import LabelledFrames
from embodia.perception.encoder_io import load_encoder, register_encoder_kind, save_encoder
from embodia.perception.encoders import prepare
from embodia.perception.teachers import (
    TEACHERS,
    ContrastiveTeacher,
    GeometryTeacher,
    StateTeacher,
    TeacherError,
    TeacherTrainConfig,
    augment,
    linear_cka,
    nt_xent,
    train_teacher,
)

torch.set_num_threads(1)

# The lead adds these to encoder_io's built-in table; until then the tests register them.
for _cls in (GeometryTeacher, ContrastiveTeacher, StateTeacher):
    register_encoder_kind(_cls.kind, f"embodia.perception.teachers:{_cls.__name__}")


def synthetic_frames(n: int = 40, seed: int = 0) -> LabelledFrames:
    """A red square on a grey floor with a purple 'gripper' bar: labels consistent with the pictures."""
    rng = np.random.default_rng(seed)
    rgb = np.full((n, 64, 64, 3), 60, dtype=np.uint8)
    seg = np.ones((n, 64, 64), dtype=np.uint8)
    depth = np.tile(np.linspace(1.4, 0.6, 64, dtype=np.float32)[:, None], (n, 1, 64))
    cube = rng.uniform(-0.2, 0.2, (n, 3)).astype(np.float32)
    effector = rng.uniform(-0.2, 0.2, (n, 3)).astype(np.float32)
    for i in range(n):
        r, c = (32 + cube[i, :2] * 120).astype(int)
        rgb[i, r - 3 : r + 3, c - 3 : c + 3] = (230, 60, 80)
        seg[i, r - 3 : r + 3, c - 3 : c + 3] = 3
        depth[i, r - 3 : r + 3, c - 3 : c + 3] -= 0.05
        er, ec = (32 + effector[i, :2] * 120).astype(int)
        rgb[i, max(0, er - 12) : er, ec - 2 : ec + 2] = (140, 60, 200)
        seg[i, max(0, er - 12) : er, ec - 2 : ec + 2] = 2
    opening = rng.uniform(0, 0.6, n).astype(np.float32)
    return LabelledFrames(
        rgb=rgb, depth=depth, segmentation=seg, cube_pos=cube, effector_pos=effector, gripper_opening=opening,
        phase=(2 * (cube[:, 0] > 0) + (cube[:, 1] > 0)).astype(np.int8), episode=np.zeros(n, np.int32), step=np.arange(n, dtype=np.int32),
    )  # fmt: skip


@pytest.fixture(scope="module")
def frames():
    return synthetic_frames()


@pytest.mark.parametrize(("cls", "grid"), [(GeometryTeacher, 16), (ContrastiveTeacher, 8), (StateTeacher, 8)])
def test_image_encoder_shapes(cls, grid, frames):
    teacher = cls().eval()
    x = prepare(frames.rgb[:3], teacher)
    out = teacher(x)
    assert teacher.image_size == 64 and teacher.grid == grid
    assert out.patches.shape == (3, grid * grid, teacher.dim)
    assert out.pooled.shape == (3, teacher.dim)
    if cls is not StateTeacher:  # the state teacher pools with a learned map of the whole grid
        assert torch.allclose(out.pooled, out.patches.mean(1), atol=1e-6)


@pytest.mark.parametrize("kind", TEACHERS)
def test_loss_falls_on_a_tiny_set(kind, frames):
    config = TeacherTrainConfig(steps=30, batch_size=16, lr=3e-3, log_every=5, seed=0)
    teacher, history = train_teacher(kind, frames, config)
    first = np.mean([e["loss"] for e in history[:2]])
    last = np.mean([e["loss"] for e in history[-2:]])
    assert last < 0.9 * first, history
    heldout = history[-1]["heldout"]
    expected = {"geometry": "depth_l1_m", "contrastive": "retrieval_top1", "state": "phase_acc"}[kind]
    assert np.isfinite(heldout[expected]) and history[-1]["seconds"] > 0
    assert not teacher.training


def test_geometry_teacher_learns_depth_and_segmentation(frames):
    teacher, history = train_teacher("geometry", frames, TeacherTrainConfig(steps=60, batch_size=16, lr=3e-3))
    heldout = history[-1]["heldout"]
    assert heldout["depth_l1_m"] < 0.15  # the depth ramp spans 0.8 m
    assert heldout["seg_pixel_acc"] > 0.9


@pytest.mark.parametrize("cls", [GeometryTeacher, ContrastiveTeacher, StateTeacher])
def test_encoder_folder_round_trip(cls, frames, tmp_path):
    torch.manual_seed(1)
    teacher = cls().eval()
    if isinstance(teacher, StateTeacher):
        teacher.target_mean.fill_(0.3)  # buffers travel with the weights
    folder = save_encoder(teacher, tmp_path / cls.kind)
    loaded = load_encoder(folder)
    assert type(loaded) is cls and loaded.encoder_config() == teacher.encoder_config()
    x = prepare(frames.rgb[:4], teacher)
    with torch.no_grad():
        a, b = teacher(x), loaded(x)
    assert torch.equal(a.patches, b.patches) and torch.equal(a.pooled, b.pooled)
    if isinstance(teacher, StateTeacher):
        assert torch.equal(loaded.target_mean, teacher.target_mean)


def test_nt_xent_prefers_matching_views():
    z = torch.randn(8, 16)
    assert nt_xent(z, z, 0.1) < nt_xent(z, torch.randn(8, 16), 0.1)


def test_augment_keeps_range_and_changes_pixels(frames):
    x = torch.as_tensor(frames.rgb[:4]).permute(0, 3, 1, 2).float() / 255
    y = augment(x, torch.Generator().manual_seed(0))
    assert y.shape == x.shape and y.min() >= 0 and y.max() <= 1 and not torch.allclose(x, y)


def test_linear_cka_is_one_for_rotations_and_low_for_independent_features():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 10))
    rotation, _ = np.linalg.qr(rng.normal(size=(10, 10)))
    assert linear_cka(x, 3 * x @ rotation) == pytest.approx(1.0)
    assert linear_cka(x, rng.normal(size=(200, 10))) < 0.2


def test_unknown_kind_is_refused(frames):
    with pytest.raises(TeacherError, match="unknown teacher"):
        train_teacher("dino", frames)
