#!/usr/bin/env python3
"""Writes the drinking-glass mesh of the glass scene (inputs/glass.obj).

An open-topped cylindrical cup standing on z = 0 around the z axis (z is up): outer radius
0.08 m, height 0.15 m, wall and base 0.01 m thick. The mesh is the closed shell of the glass
material, a surface of revolution of the profile (r, z):

    (0, 0) -> (R, 0) -> (R, H) -> (R - t, H) -> (R - t, b) -> (0, b)

revolved in N segments. The two profile points on the axis become single vertices (the centres
of the outer and inner base), so every edge is shared by exactly two triangles (watertight) and
all triangles are wound counter-clockwise seen from outside the material (outward normals).
Python 3 standard library only.

Usage: python3 scripts/make_glass.py [--radius 0.08] [--height 0.15] [--wall 0.01]
       [--base 0.01] [--segments 96] [--out inputs/glass.obj]
"""

import argparse
import math


def glass(radius, height, wall, base, segments):
    """Vertices [(x, y, z)] and triangles [(a, b, c)] (0-based) of the glass shell."""
    profile = [
        (radius, 0.0),
        (radius, height),
        (radius - wall, height),
        (radius - wall, base),
    ]
    verts = [(0.0, 0.0, 0.0)]  # outer base centre
    for s in range(segments):
        a = 2.0 * math.pi * s / segments
        c, d = math.cos(a), math.sin(a)
        for r, z in profile:
            verts.append((r * c, r * d, z))
    top = len(verts)
    verts.append((0.0, 0.0, base))  # inner base centre
    m = len(profile)

    def ring(s, p):
        return 1 + (s % segments) * m + p

    tris = []
    for s in range(segments):
        # Outer base: fan around the bottom centre, seen from below (normal -z).
        tris.append((0, ring(s + 1, 0), ring(s, 0)))
        # Profile bands: quad between profile points p and p + 1 of segments s and s + 1.
        for p in range(m - 1):
            a, b = ring(s, p), ring(s + 1, p)
            c, d = ring(s + 1, p + 1), ring(s, p + 1)
            tris.append((a, b, c))
            tris.append((a, c, d))
        # Inner base: fan around the inner centre, seen from above (normal +z).
        tris.append((top, ring(s, m - 1), ring(s + 1, m - 1)))
    return verts, tris


def signed_volume(verts, tris):
    v = 0.0
    for a, b, c in tris:
        (ax, ay, az), (bx, by, bz), (cx, cy, cz) = verts[a], verts[b], verts[c]
        v += ax * (by * cz - bz * cy) - ay * (bx * cz - bz * cx) + az * (bx * cy - by * cx)
    return v / 6.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--radius", type=float, default=0.08)
    ap.add_argument("--height", type=float, default=0.15)
    ap.add_argument("--wall", type=float, default=0.01)
    ap.add_argument("--base", type=float, default=0.01)
    ap.add_argument("--segments", type=int, default=96)
    ap.add_argument("--out", default="inputs/glass.obj")
    a = ap.parse_args()
    if not (0 < a.wall < a.radius and 0 < a.base < a.height and a.segments >= 3):
        ap.error("need 0 < wall < radius, 0 < base < height and segments >= 3")
    verts, tris = glass(a.radius, a.height, a.wall, a.base, a.segments)
    # Closed and consistently wound: every directed edge appears once, its reverse once.
    edges = {}
    for t in tris:
        for k in range(3):
            e = (t[k], t[(k + 1) % 3])
            edges[e] = edges.get(e, 0) + 1
    assert all(n == 1 and edges.get((b, a), 0) == 1 for (a, b), n in edges.items())
    vol = signed_volume(verts, tris)
    # The material: outer prism minus the cavity, each a regular polygon of `segments` sides
    # inscribed in its circle (area n r^2 sin(2 pi / n) / 2).
    poly = a.segments * math.sin(2 * math.pi / a.segments) / 2
    want = poly * (a.radius**2 * a.height - (a.radius - a.wall) ** 2 * (a.height - a.base))
    assert abs(vol - want) <= 1e-9 * want, (vol, want)
    with open(a.out, "w", newline="\n") as f:
        f.write("# surge glass: open-topped cup, z up, base on z = 0, metres\n")
        f.write(
            f"# python3 scripts/make_glass.py --radius {a.radius} --height {a.height} "
            f"--wall {a.wall} --base {a.base} --segments {a.segments}\n"
        )
        for x, y, z in verts:
            f.write(f"v {x:.6f} {y:.6f} {z:.6f}\n")
        for t in tris:
            f.write("f {} {} {}\n".format(*(i + 1 for i in t)))
    print(f"{a.out}: {len(verts)} vertices, {len(tris)} triangles, material volume {vol:.6e} m^3")


if __name__ == "__main__":
    main()
