"""Back-end selection, and the glTF export that carries embodia scenes to habitat-sim.

habitat-sim itself cannot be installed on this platform (no wheel for Python 3.11; see README), so its back end is not run here;
what it relies on from embodia - selection, the .glb export in Habitat's frame - is tested.
"""

from __future__ import annotations

import numpy as np
import pytest

import embodia.envs.habitat.backend as backend_module
from embodia.envs.habitat.backend import make_backend, resolve_backend
from embodia.envs.habitat.errors import NavBackendError
from embodia.envs.habitat.glb import read_glb, write_glb
from embodia.envs.habitat.mujoco_backend import MuJoCoBackend
from embodia.envs.habitat.scene import load_scene


def test_auto_selects_habitat_sim_only_when_it_imports(monkeypatch):
    assert backend_module.habitat_sim_available() is False  # not installable here
    assert resolve_backend("auto") == "mujoco"
    with pytest.raises(NavBackendError, match="not installed"):
        resolve_backend("habitat_sim")
    with pytest.raises(NavBackendError, match="unknown navigation back end"):
        resolve_backend("bullet")
    monkeypatch.setattr(backend_module, "habitat_sim_available", lambda: True)
    assert resolve_backend("auto") == "habitat_sim"
    assert resolve_backend("mujoco") == "mujoco"


def test_make_backend_gives_a_working_mujoco_backend():
    backend = make_backend("auto", load_scene("apartment_1"), num_robots=2)
    try:
        assert isinstance(backend, MuJoCoBackend) and backend.name == "mujoco"
        point = backend.pathfinder.get_random_navigable_point(island_index=0, rng=np.random.default_rng(0))
        backend.set_pose(1, point, 0.7)
        position, yaw = backend.get_pose(1)
        np.testing.assert_allclose(position, point)
        assert yaw == pytest.approx(0.7)
        rgb, depth = backend.render(1, 48, 32)
        assert rgb.shape == (32, 48, 3) and depth.shape == (32, 48) and depth.min() > 0.0
        state = backend.get_state()
        backend.set_pose(1, point + np.array([0.1, 0.0, 0.0]), 0.0)
        backend.set_state(state)
        np.testing.assert_array_equal(backend.get_state(), state)
    finally:
        backend.close()


def test_glb_export_is_valid_gltf_in_habitat_frame(tmp_path):
    scene = load_scene("apartment_0")
    backend = MuJoCoBackend(scene, num_robots=1)
    try:
        path = write_glb(backend.model, backend.data, tmp_path / "apartment_0.glb")
    finally:
        backend.close()
    document, blob = read_glb(path)
    assert document["asset"]["version"] == "2.0"
    primitives = document["meshes"][0]["primitives"]
    assert len(primitives) == len(document["materials"]) >= 5
    low = np.min([document["accessors"][p["attributes"]["POSITION"]]["min"] for p in primitives], axis=0)
    high = np.max([document["accessors"][p["attributes"]["POSITION"]]["max"] for p in primitives], axis=0)
    x0, y0, x1, y1 = scene.bounds
    t = scene.wall_thickness
    # Habitat frame: x = x, up = z, z = -y; the walls bound everything, floors sit just below 0
    np.testing.assert_allclose(low, [x0 - t / 2, -0.02, -(y1 + t / 2)], atol=1e-4)
    np.testing.assert_allclose(high, [x1 + t / 2, scene.wall_height, -(y0 - t / 2)], atol=1e-4)
    for primitive in primitives:  # indices are triangles that point at existing vertices
        positions = document["accessors"][primitive["attributes"]["POSITION"]]
        indices = document["accessors"][primitive["indices"]]
        view = document["bufferViews"][indices["bufferView"]]
        values = np.frombuffer(blob, dtype=np.uint32, count=indices["count"], offset=view["byteOffset"])
        assert indices["count"] % 3 == 0 and values.max() < positions["count"]
    # the robot is not part of the scene mesh
    assert all(p["material"] < len(document["materials"]) for p in primitives)


def test_habitat_sim_backend_exports_each_door_state_once(tmp_path, monkeypatch):
    from embodia.envs.habitat import habitat_sim_backend

    monkeypatch.setattr(habitat_sim_backend, "CACHE", tmp_path)
    scene = load_scene("apartment_2")
    first = habitat_sim_backend.export_scene_glb(scene)
    assert habitat_sim_backend.export_scene_glb(scene) == first  # cached by scene digest and door states
    closed = habitat_sim_backend.export_scene_glb(scene, {scene.doors[0].id: False})
    assert closed != first and len(list(tmp_path.glob("*.glb"))) == 2
    # a closed door's leaf blocks a line across its opening in the exported mesh; open, nothing does
    door = scene.doors[0]
    cx, cy = door.center
    normal = (
        np.array([0.0, 0.0, 1.0]) if door.axis == "x" else np.array([1.0, 0.0, 0.0])
    )  # across the wall (Habitat)
    centre = np.array([cx, 1.0, -cy])
    assert segment_hits_mesh(closed, centre - 0.3 * normal, centre + 0.3 * normal)
    assert not segment_hits_mesh(first, centre - 0.3 * normal, centre + 0.3 * normal)


def segment_hits_mesh(path, a: np.ndarray, b: np.ndarray) -> bool:
    """Whether segment a-b crosses a triangle of the .glb (Moller-Trumbore, all triangles at once)."""
    document, blob = read_glb(path)
    direction = b - a
    for primitive in document["meshes"][0]["primitives"]:
        positions = document["accessors"][primitive["attributes"]["POSITION"]]
        indices = document["accessors"][primitive["indices"]]
        pv, iv = (document["bufferViews"][x["bufferView"]] for x in (positions, indices))
        xyz = (
            np.frombuffer(blob, np.float32, positions["count"] * 3, pv["byteOffset"])
            .reshape(-1, 3)
            .astype(float)
        )
        tri = xyz[np.frombuffer(blob, np.uint32, indices["count"], iv["byteOffset"]).reshape(-1, 3)]
        e1, e2 = tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]
        p = np.cross(direction, e2)
        det = np.einsum("ij,ij->i", e1, p)
        ok = np.abs(det) > 1e-12
        inv = np.where(ok, 1.0 / np.where(ok, det, 1.0), 0.0)
        t_vec = a - tri[:, 0]
        u = np.einsum("ij,ij->i", t_vec, p) * inv
        q = np.cross(t_vec, e1)
        v = (q @ direction) * inv
        t = np.einsum("ij,ij->i", e2, q) * inv
        if np.any(ok & (u >= 0) & (v >= 0) & (u + v <= 1) & (t >= 0) & (t <= 1)):
            return True
    return False
