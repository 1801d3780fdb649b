"""Export a navigation scene's geometry as binary glTF (``.glb``) in Habitat's Y-up frame.

habitat-sim loads scenes from ``.glb`` files and builds its own navigation mesh from their triangles
(``Simulator.recompute_navmesh``); this is how an embodia scene reaches the habitat-sim back end, and how
episodes generated on the MuJoCo back end can be replayed there. Every geom of the selected groups
(floors, walls, furniture, door leaves; not robots or ceilings) is triangulated - boxes as 12
triangles, cylinders and ellipsoids as 16-sided prisms and 8x16 spheres - moved to its world pose,
converted to Habitat coordinates (``(x, y, z)`` -> ``(x, z, -y)``) and grouped into one glTF mesh
primitive per colour (``baseColorFactor``; textures are not exported).

The layout follows the glTF 2.0 binary container: a 12-byte header (``glTF``, version 2, length), a
JSON chunk padded with spaces to 4 bytes, and a BIN chunk with float32 positions and normals and
uint32 indices, each referenced by a bufferView and an accessor (positions with min/max).
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import mujoco
import numpy as np

from embodia.envs.habitat.mjcf import GROUP_DOOR, GROUP_FLOOR, GROUP_OBJECT, GROUP_WALL

EXPORT_GROUPS = (GROUP_FLOOR, GROUP_WALL, GROUP_OBJECT, GROUP_DOOR)
_SEGMENTS = 16


def _box() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    positions, normals, indices = [], [], []
    for axis in range(3):
        for sign in (-1.0, 1.0):
            n = np.zeros(3)
            n[axis] = sign
            u, v = np.eye(3)[(axis + 1) % 3], np.eye(3)[(axis + 2) % 3]
            base = len(positions)
            for a, b in ((-1, -1), (1, -1), (1, 1), (-1, 1)):
                positions.append(n + a * u + b * v)
                normals.append(n)
            quad = [base, base + 1, base + 2, base, base + 2, base + 3]
            indices += quad if sign > 0 else [quad[0], quad[2], quad[1], quad[3], quad[5], quad[4]]
    return np.array(positions), np.array(normals), np.array(indices)


def _cylinder() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    angles = np.linspace(0.0, 2 * np.pi, _SEGMENTS, endpoint=False)
    ring = np.stack([np.cos(angles), np.sin(angles), np.zeros_like(angles)], axis=1)
    positions = np.vstack([ring + [0, 0, -1], ring + [0, 0, 1], [[0, 0, -1]], [[0, 0, 1]]])
    normals = np.vstack([ring, ring, [[0, 0, -1]], [[0, 0, 1]]])
    indices = []
    n = _SEGMENTS
    for k in range(n):
        j = (k + 1) % n
        indices += [k, j, n + j, k, n + j, n + k, 2 * n, j, k, 2 * n + 1, n + k, n + j]
    return positions, normals, np.array(indices)


def _sphere(rings: int = 8) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    theta = np.linspace(0.0, np.pi, rings + 1)
    phi = np.linspace(0.0, 2 * np.pi, _SEGMENTS, endpoint=False)
    t, p = np.meshgrid(theta, phi, indexing="ij")
    positions = np.stack([np.sin(t) * np.cos(p), np.sin(t) * np.sin(p), np.cos(t)], axis=-1).reshape(-1, 3)
    indices = []
    for r in range(rings):
        for k in range(_SEGMENTS):
            a, b = r * _SEGMENTS + k, r * _SEGMENTS + (k + 1) % _SEGMENTS
            c, d = a + _SEGMENTS, b + _SEGMENTS
            indices += [a, c, b, b, c, d]
    return positions, positions.copy(), np.array(indices)


_SHAPES = {
    int(mujoco.mjtGeom.mjGEOM_BOX): _box(),
    int(mujoco.mjtGeom.mjGEOM_CYLINDER): _cylinder(),
    int(mujoco.mjtGeom.mjGEOM_SPHERE): _sphere(),
    int(mujoco.mjtGeom.mjGEOM_ELLIPSOID): _sphere(),
    int(mujoco.mjtGeom.mjGEOM_CAPSULE): _cylinder(),
}
_TO_HABITAT = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0]])


def _geom_color(model: mujoco.MjModel, geom: int) -> tuple[float, float, float, float]:
    rgba = model.geom_rgba[geom]
    material = model.geom_matid[geom]
    if material >= 0 and np.allclose(rgba, [0.5, 0.5, 0.5, 1.0]):
        rgba = model.mat_rgba[material]
        texture = model.mat_texid[material][mujoco.mjtTextureRole.mjTEXROLE_RGB]
        if texture >= 0 and np.allclose(rgba, 1.0):  # textured white: use a mid grey of the texture
            rgba = np.array([0.75, 0.72, 0.68, 1.0])
    return tuple(round(float(c), 3) for c in rgba)


def scene_triangles(model: mujoco.MjModel, data: mujoco.MjData, groups=EXPORT_GROUPS) -> dict:
    """``{rgba: (positions, normals, indices)}`` in Habitat's frame for the geoms of ``groups``."""
    meshes: dict[tuple, list] = {}
    for geom in range(model.ngeom):
        kind = int(model.geom_type[geom])
        if int(model.geom_group[geom]) not in groups or kind not in _SHAPES:
            continue
        positions, normals, indices = _SHAPES[kind]
        size = model.geom_size[geom]
        if kind == int(mujoco.mjtGeom.mjGEOM_BOX) or kind == int(mujoco.mjtGeom.mjGEOM_ELLIPSOID):
            scale = size[:3]
        elif kind == int(mujoco.mjtGeom.mjGEOM_SPHERE):
            scale = np.full(3, size[0])
        elif kind == int(mujoco.mjtGeom.mjGEOM_CAPSULE):
            scale = np.array([size[0], size[0], size[1] + size[0]])
        else:
            scale = np.array([size[0], size[0], size[1]])
        rotation = data.geom_xmat[geom].reshape(3, 3)
        world = (positions * scale) @ rotation.T + data.geom_xpos[geom]
        world_normals = (normals / np.where(scale > 0, scale, 1.0)) @ rotation.T
        world_normals /= np.linalg.norm(world_normals, axis=1, keepdims=True) + 1e-12
        meshes.setdefault(_geom_color(model, geom), []).append(
            (world @ _TO_HABITAT.T, world_normals @ _TO_HABITAT.T, indices)
        )
    merged = {}
    for color, parts in meshes.items():
        offset, pos, nor, idx = 0, [], [], []
        for p, n, i in parts:
            pos.append(p)
            nor.append(n)
            idx.append(i + offset)
            offset += len(p)
        merged[color] = (
            np.vstack(pos).astype(np.float32),
            np.vstack(nor).astype(np.float32),
            np.concatenate(idx).astype(np.uint32),
        )
    return merged


def write_glb(model: mujoco.MjModel, data: mujoco.MjData, path: str | Path, groups=EXPORT_GROUPS) -> Path:
    """Write the geoms of ``groups`` (current pose; run ``mj_kinematics`` first) to ``path`` as glTF 2.0 binary."""
    meshes = scene_triangles(model, data, groups)
    blob = bytearray()
    views, accessors, materials, primitives = [], [], [], []

    def add_view(array: np.ndarray, target: int) -> int:
        while len(blob) % 4:
            blob.append(0)
        views.append({"buffer": 0, "byteOffset": len(blob), "byteLength": array.nbytes, "target": target})
        blob.extend(array.tobytes())
        return len(views) - 1

    for color, (positions, normals, indices) in meshes.items():
        accessors.append(
            {
                "bufferView": add_view(positions, 34962),
                "componentType": 5126,
                "count": len(positions),
                "type": "VEC3",
                "min": positions.min(axis=0).tolist(),
                "max": positions.max(axis=0).tolist(),
            }
        )
        accessors.append(
            {
                "bufferView": add_view(normals, 34962),
                "componentType": 5126,
                "count": len(normals),
                "type": "VEC3",
            }
        )
        accessors.append(
            {
                "bufferView": add_view(indices, 34963),
                "componentType": 5125,
                "count": len(indices),
                "type": "SCALAR",
            }
        )
        materials.append(
            {
                "pbrMetallicRoughness": {
                    "baseColorFactor": list(color),
                    "metallicFactor": 0.0,
                    "roughnessFactor": 0.9,
                }
            }
        )
        primitives.append(
            {
                "attributes": {"POSITION": len(accessors) - 3, "NORMAL": len(accessors) - 2},
                "indices": len(accessors) - 1,
                "material": len(materials) - 1,
            }
        )
    while len(blob) % 4:
        blob.append(0)
    document = {
        "asset": {"version": "2.0", "generator": "embodia nav scene export"},
        "scene": 0,
        "scenes": [{"nodes": [0]}],
        "nodes": [{"mesh": 0, "name": "scene"}],
        "meshes": [{"primitives": primitives}],
        "materials": materials,
        "accessors": accessors,
        "bufferViews": views,
        "buffers": [{"byteLength": len(blob)}],
    }
    text = json.dumps(document, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 4)
    total = 12 + 8 + len(text) + 8 + len(blob)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as handle:
        handle.write(struct.pack("<4sII", b"glTF", 2, total))
        handle.write(struct.pack("<I4s", len(text), b"JSON") + text)
        handle.write(struct.pack("<I4s", len(blob), b"BIN\x00") + bytes(blob))
    return path


def read_glb(path: str | Path) -> tuple[dict, bytes]:
    """The JSON document and binary chunk of a ``.glb`` file (checks the container)."""
    raw = Path(path).read_bytes()
    magic, version, length = struct.unpack_from("<4sII", raw, 0)
    if magic != b"glTF" or version != 2 or length != len(raw):
        raise ValueError(f"{path} is not a glTF 2.0 binary file")
    json_length, json_type = struct.unpack_from("<I4s", raw, 12)
    if json_type != b"JSON":
        raise ValueError(f"{path}: first chunk is not JSON")
    document = json.loads(raw[20 : 20 + json_length])
    bin_length, bin_type = struct.unpack_from("<I4s", raw, 20 + json_length)
    if bin_type != b"BIN\x00":
        raise ValueError(f"{path}: second chunk is not BIN")
    start = 28 + json_length
    return document, raw[start : start + bin_length]
