#!/usr/bin/env python3
"""The liquid's pieces in a dumped pressure system, and what they cost the multigrid's layout.

Reads a label file that `BENCH_DUMP_LABELS=path cargo bench --bench bench_stepper` writes at
its pressure replay (three little-endian u32 dimensions, then one byte per cell: 0 empty,
1 fluid, 2 solid), and prints:

- the connected pieces of fluid (cells sharing a face), by a union-find over the x-segments
  of fluid (each grid row's runs of fluid cells), the largest and the rest;
- the entries per fluid cell that the multigrid's per-plane layout stores
  (`src/sim/pressure/multigrid/layout.rs`: each z-plane's rows store the x-range of the
  fluid of the planes within two of it, two cells wider to the left; modelled here without
  the rows' padding), for all the fluid and for the largest piece alone.

With `--drops-to-air OUT` it also writes the labels with every piece but the largest turned
to empty cells, for `MG_LABELS=OUT cargo bench --bench mg_cycle` (what the drops cost the
cycle). Session 21 (scripts/pressure_log.md, "Session 21"): the 8M dam break's frame-22 labels are 2,704
pieces, the largest 1,015,966 cells; 3.02 entries per fluid cell, 1.86 without the drops.

    .venv/bin/python scripts/mg_label_pieces.py LABELS [--drops-to-air OUT]
"""

import sys

import numpy as np


def load(path):
    data = open(path, "rb").read()
    n = np.frombuffer(data[:12], dtype="<u4").astype(int)
    labels = np.frombuffer(data[12:], dtype=np.uint8)
    if labels.size != n[0] * n[1] * n[2]:
        sys.exit(f"{path}: {labels.size} label bytes for a grid of {n.tolist()} cells")
    return data[:12], n, labels.reshape(n[2], n[1], n[0])


def segments(fluid):
    """Per grid row `(k, j)`, its runs of fluid cells `[lo, hi)` along x."""
    nz, ny, nx = fluid.shape
    padded = np.zeros((nz, ny, nx + 2), dtype=np.int8)
    padded[:, :, 1:-1] = fluid
    edges = np.diff(padded, axis=2)
    k, j, lo = np.nonzero(edges == 1)
    k2, j2, hi = np.nonzero(edges == -1)
    assert (k == k2).all() and (j == j2).all()
    return k, j, lo, hi


def pieces(fluid):
    """The piece of each x-segment (a root index) and the segments."""
    k, j, lo, hi = segments(fluid)
    parent = list(range(len(k)))

    def find(a):
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    # Segments in row order: k, then j, then lo. Index each row's segments.
    rows = {}
    for s in range(len(k)):
        rows.setdefault((k[s], j[s]), []).append(s)
    for (kk, jj), mine in rows.items():
        for other in (rows.get((kk, jj - 1), []), rows.get((kk - 1, jj), [])):
            a = b = 0
            while a < len(mine) and b < len(other):
                s, t = mine[a], other[b]
                if lo[s] < hi[t] and lo[t] < hi[s]:
                    rs, rt = find(s), find(t)
                    if rs != rt:
                        parent[max(rs, rt)] = min(rs, rt)
                if hi[s] <= hi[t]:
                    a += 1
                else:
                    b += 1
    roots = np.array([find(s) for s in range(len(k))])
    return roots, (k, j, lo, hi)


def stored_per_fluid(fluid):
    """Entries per fluid cell of the per-plane layout (without the rows' padding)."""
    nz, ny, nx = fluid.shape
    occupied = fluid.any(axis=1)
    stored = 0
    for kk in range(nz):
        around = occupied[max(0, kk - 2) : kk + 3].any(axis=0)
        xs = np.flatnonzero(around)
        if xs.size:
            stored += ny * (xs[-1] + 1 - max(xs[0] - 2, 0))
    return stored / fluid.sum()


def main():
    args = sys.argv[1:]
    if not args or args[0].startswith("-"):
        sys.exit(__doc__)
    head, n, labels = load(args[0])
    fluid = labels == 1
    roots, (k, j, lo, hi) = pieces(fluid)
    length = hi - lo
    ids, inverse = np.unique(roots, return_inverse=True)
    sizes = np.bincount(inverse, weights=length).astype(int)
    order = np.argsort(sizes)[::-1]
    total = int(fluid.sum())
    print(f"{args[0]}: grid {n.tolist()}, {total} fluid cells, {len(ids)} pieces")
    print(f"  largest pieces (cells): {sizes[order[:5]].tolist()}")
    print(f"  outside the largest: {total - sizes[order[0]]} cells in {len(ids) - 1} pieces,"
          f" the largest of them {sizes[order[1]] if len(ids) > 1 else 0} cells")
    main_piece = np.zeros_like(fluid)
    for s in np.flatnonzero(inverse == order[0]):
        main_piece[k[s], j[s], lo[s] : hi[s]] = True
    print(f"  per-plane layout, entries per fluid cell: all {stored_per_fluid(fluid):.2f},"
          f" the largest piece alone {stored_per_fluid(main_piece):.2f}")
    if len(args) == 3 and args[1] == "--drops-to-air":
        out = labels.copy()
        out[fluid & ~main_piece] = 0
        open(args[2], "wb").write(head + out.tobytes())
        print(f"  wrote {args[2]}: {int((out == 1).sum())} fluid cells")
    elif len(args) != 1:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
