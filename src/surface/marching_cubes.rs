//! Parallel marching cubes over the sparse blocks of a [`LevelSet`].
//!
//! Lorensen & Cline 1987, with the table generated from one face rule in `table` so that the
//! output is closed, edge-manifold and outward-wound wherever the field is negative only inside
//! allocated blocks (true by construction: see [`super::sparse_grid`]).
//!
//! Vertices live on grid edges: the edge from point `g` along axis `a` is owned by the block
//! holding `g`, so each crossing yields exactly one vertex (welded by construction). Pass 1
//! (parallel over blocks) computes each block's vertices in scan order (`z, y, x`, then axis)
//! and its cube cases; a prefix sum gives each block's first global vertex index; pass 2
//! (parallel) emits triangles cube by cube. Block order is the dense order, so vertex and
//! triangle order, hence the PLY bytes, do not depend on the thread count.
//!
//! Vertex position: linear interpolation of `phi` along the edge. Normal: the normalised,
//! linearly interpolated central-difference gradient of `phi` at the edge's two end points.
//! Velocity: linear interpolation of the sampled velocity, or the one end's where no kernel
//! reached the other ([`LevelSet::edge_velocity`]).

mod table;

pub use table::cases;

use super::level_set::LevelSet;
use super::sparse_grid::{B, BP, NONE};
use crate::mesh::TriMesh;
use rayon::prelude::*;
use table::{EDGE_AXIS, EDGE_CORNER};

/// Padded block: local points `-1..=B+1` per axis.
const P: usize = B + 3;

fn pidx(x: usize, y: usize, z: usize) -> usize {
    // (x, y, z) already shifted by +1.
    x + P * (y + P * z)
}

struct BlockOut {
    positions: Vec<[f32; 3]>,
    normals: Vec<[f32; 3]>,
    velocities: Vec<[f32; 3]>,
    /// `local * 3 + axis` -> vertex index within this block, or NONE. Empty when no vertex.
    edge_vertex: Vec<u32>,
    /// Cube cases for cubes with min corner in this block (empty when no surface).
    cases: Vec<u8>,
}

/// Extracts the zero level set of `ls` as a welded triangle mesh.
pub fn extract(ls: &LevelSet) -> TriMesh {
    let g = &ls.grid;
    let nb = g.blocks.len();
    let pass1: Vec<BlockOut> = (0..nb)
        .into_par_iter()
        .map(|s| block_vertices(ls, s))
        .collect();
    let mut offsets = Vec::with_capacity(nb + 1);
    let mut total = 0u32;
    for b in &pass1 {
        offsets.push(total);
        total += b.positions.len() as u32;
    }
    let tris: Vec<Vec<[u32; 3]>> = (0..nb)
        .into_par_iter()
        .map(|s| block_triangles(ls, s, &pass1, &offsets))
        .collect();
    let mut mesh = TriMesh {
        positions: Vec::with_capacity(total as usize),
        normals: Vec::with_capacity(total as usize),
        velocities: Vec::with_capacity(total as usize),
        triangles: Vec::with_capacity(tris.iter().map(Vec::len).sum()),
    };
    for b in pass1 {
        mesh.positions.extend(b.positions);
        mesh.normals.extend(b.normals);
        mesh.velocities.extend(b.velocities);
    }
    for t in tris {
        mesh.triangles.extend(t);
    }
    mesh
}

/// `phi` of the block and its one-point (plus one more on the high side) halo.
fn padded_phi(ls: &LevelSet, s: usize) -> Box<[f32; P * P * P]> {
    let g = &ls.grid;
    let bc = g.coords(g.blocks[s]);
    let mut slots = [NONE; 27];
    for dz in 0..3 {
        for dy in 0..3 {
            for dx in 0..3 {
                slots[dx + 3 * (dy + 3 * dz)] = g.slot_at([
                    bc[0] + dx as i64 - 1,
                    bc[1] + dy as i64 - 1,
                    bc[2] + dz as i64 - 1,
                ]);
            }
        }
    }
    let mut out = Box::new([ls.outside; P * P * P]);
    // Map padded coordinate (0..P) to (neighbour offset 0..3, local coordinate).
    let split = |p: usize| -> (usize, usize) {
        if p == 0 {
            (0, B - 1)
        } else if p <= B {
            (1, p - 1)
        } else {
            (2, p - 1 - B)
        }
    };
    for z in 0..P {
        let (nz, lz) = split(z);
        for y in 0..P {
            let (ny, ly) = split(y);
            for x in 0..P {
                let (nx, lx) = split(x);
                let sl = slots[nx + 3 * (ny + 3 * nz)];
                if sl != NONE {
                    out[pidx(x, y, z)] = ls.phi[sl as usize * BP + lx + B * (ly + B * lz)];
                }
            }
        }
    }
    out
}

/// Whether every point of the +1 halo of block `s` (local coordinates `0..=B` with one of them
/// `B`: the first points of the +x, +y, +z neighbours) has `phi < 0` equal to `neg` (points of
/// unallocated blocks are `outside`).
fn halo_is(ls: &LevelSet, s: usize, neg: bool) -> bool {
    let g = &ls.grid;
    let bc = g.coords(g.blocks[s]);
    // Neighbour k: offset (k & 1, k >> 1 & 1, k >> 2 & 1).
    let slots: [u32; 8] = std::array::from_fn(|k| {
        g.slot_at([
            bc[0] + (k & 1) as i64,
            bc[1] + ((k >> 1) & 1) as i64,
            bc[2] + ((k >> 2) & 1) as i64,
        ])
    });
    let at = |l: [usize; 3]| -> f32 {
        let k = (l[0] == B) as usize | ((l[1] == B) as usize) << 1 | ((l[2] == B) as usize) << 2;
        let sl = slots[k];
        if sl == NONE {
            return ls.outside;
        }
        let q = l.map(|v| v % B);
        ls.phi[sl as usize * BP + q[0] + B * (q[1] + B * q[2])]
    };
    for z in 0..=B {
        for y in 0..=B {
            if z < B && y < B {
                if (at([B, y, z]) < 0.0) != neg {
                    return false;
                }
                continue;
            }
            for x in 0..=B {
                if (at([x, y, z]) < 0.0) != neg {
                    return false;
                }
            }
        }
    }
    true
}

/// Per point of a padded block: 1 where `phi < 0` (inside), and the edges to the next point
/// along each axis that cross the surface (bit `axis`: the end points' signs differ), for the
/// points whose three edges stay in the padded block (the others: 0). Whole rows at a time
/// (the compiler vectorises them), so that pass 1 visits only the points with a crossing.
fn signs(p: &[f32; P * P * P]) -> ([u8; P * P * P], [u8; P * P * P]) {
    let mut neg = [0u8; P * P * P];
    for (n, &v) in neg.iter_mut().zip(p.iter()) {
        *n = (v < 0.0) as u8;
    }
    let mut cross = [0u8; P * P * P];
    let n = P * P * P - P * P;
    for i in 0..n {
        cross[i] =
            (neg[i] ^ neg[i + 1]) | (neg[i] ^ neg[i + P]) << 1 | (neg[i] ^ neg[i + P * P]) << 2;
    }
    (neg, cross)
}

fn block_vertices(ls: &LevelSet, s: usize) -> BlockOut {
    let g = &ls.grid;
    let mut out = BlockOut {
        positions: Vec::new(),
        normals: Vec::new(),
        velocities: Vec::new(),
        edge_vertex: Vec::new(),
        cases: Vec::new(),
    };
    // Quick reject: own points and the +1 halo all on one side (the halo read from the
    // neighbour blocks directly: most blocks have no surface, and the padded copy is for those
    // that do).
    let own = &ls.phi[s * BP..(s + 1) * BP];
    let neg = own[0] < 0.0;
    if own.iter().all(|&v| (v < 0.0) == neg) && halo_is(ls, s, neg) {
        return out;
    }
    let p = padded_phi(ls, s);
    let bc = g.coords(g.blocks[s]);
    let first: [i64; 3] = std::array::from_fn(|a| g.origin[a] + bc[a] * B as i64);
    let c = g.cell;
    let grad = |x: usize, y: usize, z: usize| -> [f32; 3] {
        [
            p[pidx(x + 1, y, z)] - p[pidx(x - 1, y, z)],
            p[pidx(x, y + 1, z)] - p[pidx(x, y - 1, z)],
            p[pidx(x, y, z + 1)] - p[pidx(x, y, z - 1)],
        ]
    };
    out.edge_vertex = vec![NONE; BP * 3];
    let (neg, cross) = signs(&p);
    for z in 0..B {
        for y in 0..B {
            for x in 0..B {
                let (px, py, pz) = (x + 1, y + 1, z + 1);
                let crossed = cross[pidx(px, py, pz)];
                if crossed == 0 {
                    continue;
                }
                let a0 = p[pidx(px, py, pz)];
                for axis in 0..3 {
                    // The edge's end points on opposite sides (`(a0 < 0) != (a1 < 0)`).
                    if crossed >> axis & 1 == 0 {
                        continue;
                    }
                    let e = [
                        (axis == 0) as usize,
                        (axis == 1) as usize,
                        (axis == 2) as usize,
                    ];
                    let (qx, qy, qz) = (px + e[0], py + e[1], pz + e[2]);
                    let a1 = p[pidx(qx, qy, qz)];
                    let t = a0 / (a0 - a1);
                    let l = [x, y, z];
                    let pos: [f32; 3] = std::array::from_fn(|a| {
                        let gi = (first[a] + l[a] as i64) as f64
                            + if a == axis { t as f64 } else { 0.0 };
                        (gi * c) as f32
                    });
                    let g0 = grad(px, py, pz);
                    let g1 = grad(qx, qy, qz);
                    let mut n: [f32; 3] = std::array::from_fn(|a| g0[a] + t * (g1[a] - g0[a]));
                    let len = (n[0] * n[0] + n[1] * n[1] + n[2] * n[2]).sqrt();
                    if len > 0.0 && len.is_finite() {
                        n = n.map(|v| v / len);
                    } else {
                        // Degenerate gradient: the edge direction, from inside to outside.
                        n = [0.0; 3];
                        n[axis] = if a0 < 0.0 { 1.0 } else { -1.0 };
                    }
                    let gp = [
                        first[0] + x as i64,
                        first[1] + y as i64,
                        first[2] + z as i64,
                    ];
                    let mut gq = gp;
                    gq[axis] += 1;
                    let v = ls.edge_velocity(gp, gq, t);
                    out.edge_vertex[(x + B * (y + B * z)) * 3 + axis] = out.positions.len() as u32;
                    out.positions.push(pos);
                    out.normals.push(n);
                    out.velocities.push(v);
                }
            }
        }
    }
    // Corner `k` of the cube at padded point `i` is `i + (k & 1) + P (k >> 1 & 1) + P² (k >> 2)`:
    // the case's bits gathered axis by axis, whole rows at a time (vectorised).
    let (n1, n2) = (P * P * P - 1, P * P * P - 1 - P);
    let mut c = [0u8; P * P * P];
    for i in 0..n1 {
        c[i] = neg[i] | neg[i + 1] << 1;
    }
    for i in 0..n2 {
        c[i] |= c[i + P] << 2;
    }
    for i in 0..n2 - P * P {
        c[i] |= c[i + P * P] << 4;
    }
    out.cases = vec![0u8; BP];
    for z in 0..B {
        for y in 0..B {
            let row = pidx(1, y + 1, z + 1);
            out.cases[B * (y + B * z)..][..B].copy_from_slice(&c[row..row + B]);
        }
    }
    out
}

fn block_triangles(ls: &LevelSet, s: usize, pass1: &[BlockOut], offsets: &[u32]) -> Vec<[u32; 3]> {
    let me = &pass1[s];
    if me.cases.is_empty() {
        return Vec::new();
    }
    let g = &ls.grid;
    let bc = g.coords(g.blocks[s]);
    // Owner slots of the +x/+y/+z neighbours (index bit 0: +x, bit 1: +y, bit 2: +z).
    let owners: [u32; 8] = std::array::from_fn(|k| {
        if k == 0 {
            s as u32
        } else {
            g.slot_at([
                bc[0] + (k & 1) as i64,
                bc[1] + ((k >> 1) & 1) as i64,
                bc[2] + ((k >> 2) & 1) as i64,
            ])
        }
    });
    let table = cases();
    let mut tris = Vec::new();
    for z in 0..B {
        for y in 0..B {
            for x in 0..B {
                let case = me.cases[x + B * (y + B * z)];
                if case == 0 || case == 255 {
                    continue;
                }
                for t in table[case as usize].triangles() {
                    tris.push(t.map(|e| {
                        let cn = EDGE_CORNER[e as usize] as usize;
                        let axis = EDGE_AXIS[e as usize] as usize;
                        let mut l = [x + (cn & 1), y + ((cn >> 1) & 1), z + ((cn >> 2) & 1)];
                        let mut k = 0;
                        for (a, la) in l.iter_mut().enumerate() {
                            if *la == B {
                                *la = 0;
                                k |= 1 << a;
                            }
                        }
                        let o = owners[k];
                        assert_ne!(
                            o, NONE,
                            "marching cubes: edge owned by an unallocated block"
                        );
                        let ev = &pass1[o as usize].edge_vertex;
                        let v = ev[(l[0] + B * (l[1] + B * l[2])) * 3 + axis];
                        assert_ne!(v, NONE, "marching cubes: crossing without a vertex");
                        offsets[o as usize] + v
                    }));
                }
            }
        }
    }
    tris
}
