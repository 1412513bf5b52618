"""Readers shared by the peer benchmarks (numpy only): the enclosed volume and leading edge of a
binary PLY mesh as surge writes it, and counts from Mantaflow's `.uni` grid and particle files.
Used by `scripts/bench_mantaflow.py`."""

import gzip
import struct

import numpy as np


def enclosed_volume(verts, tris):
    """Signed volume of a closed triangle mesh (divergence theorem): sum of det(a, b, c) / 6."""
    if len(tris) == 0:
        return 0.0
    v = verts.astype(np.float64)
    a, b, c = v[tris[:, 0]], v[tris[:, 1]], v[tris[:, 2]]
    return float(np.einsum("ij,ij->i", a, np.cross(b, c)).sum() / 6.0)


def read_ply_mesh(path):
    """Vertices (N, 3) and triangles (F, 3) of a binary little-endian PLY as surge writes it."""
    types = {"char": "i1", "int8": "i1", "uchar": "u1", "uint8": "u1", "short": "<i2",
             "ushort": "<u2", "int": "<i4", "int32": "<i4", "uint": "<u4", "uint32": "<u4",
             "float": "<f4", "float32": "<f4", "double": "<f8", "float64": "<f8"}
    data = open(path, "rb").read()
    end = data.index(b"end_header\n") + len(b"end_header\n")
    elements = []
    for line in data[:end].decode("ascii").splitlines():
        w = line.split()
        if w and w[0] == "element":
            elements.append((w[1], int(w[2]), []))
        elif w and w[0] == "property":
            elements[-1][2].append(w[1:])
    off, verts, tris = end, np.zeros((0, 3), np.float32), np.zeros((0, 3), np.int64)
    for name, count, props in elements:
        if props[0][0] == "list":
            _, ct, it, _ = props[0]
            dt = np.dtype([("n", types[ct]), ("i", types[it], 3)])
            arr = np.frombuffer(data, dt, count, off)
            assert count == 0 or (arr["n"] == 3).all(), "triangles only"
            if name == "face":
                tris = arr["i"].astype(np.int64)
        else:
            dt = np.dtype([(p[1], types[p[0]]) for p in props])
            arr = np.frombuffer(data, dt, count, off)
            if name == "vertex":
                verts = np.stack([arr["x"], arr["y"], arr["z"]], axis=1)
        off += dt.itemsize * count
    return verts, tris


def front_x(verts):
    return float(verts[:, 0].max()) if len(verts) else float("nan")


def uni_fluid_cells(path):
    """Number of fluid cells in a Mantaflow `.uni` flag grid (gzip; header, then int32 flags)."""
    with gzip.open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"MNT3":
        return None
    nx, ny, nz, _, _, size = struct.unpack("<6i", data[4:28])
    n = nx * ny * nz
    flags = np.frombuffer(data, np.int32, n, len(data) - n * size)
    return int(np.count_nonzero(flags & 1))  # FlagFluid = 1


def uni_particle_count(path):
    """Particle count in a Mantaflow `.uni` particle file (gzip; 'PB02' + header, dim first)."""
    with gzip.open(path, "rb") as f:
        head = f.read(8)
    if head[:4] != b"PB02":
        return None
    return struct.unpack("<i", head[4:8])[0]
