//! Volume-preserving mesh smoothing.
//!
//! Taubin 1995 ("A signal processing approach to fair surface design"): alternate a shrinking
//! umbrella step `x += lambda * L(x)` and an inflating one `x += mu * L(x)`, `mu < -lambda < 0`,
//! with `L(x_i) = mean(x_j over neighbours j) - x_i`. This low-pass filter removes the
//! particle-scale bumps of a particle level set while barely changing the volume; the small
//! remaining change is then undone exactly to first order by moving every vertex along its
//! area-weighted normal by `(V_before - V_after) / area`.
//!
//! Vertices on a wall cap (within 1e-3 cells of the liquid region's box) keep their coordinate
//! across that wall, so caps stay flat on the wall. Updates are Jacobi-style (each step reads
//! the previous positions only) over a neighbour list built in triangle order: deterministic for
//! any thread count.

use crate::mesh::{TriMesh, face_normal};
use rayon::prelude::*;

/// Taubin's pass-band parameters (k_PB ~ 0.1).
const LAMBDA: f32 = 0.5;
const MU: f32 = -0.53;

/// Smooths `mesh` in place with `iterations` (lambda, mu) pairs; `region_lo/hi` is the liquid
/// box (m) whose faces pin cap vertices, `cell` the grid spacing (m).
pub fn taubin(
    mesh: &mut TriMesh,
    iterations: u32,
    region_lo: [f64; 3],
    region_hi: [f64; 3],
    cell: f64,
) {
    if iterations == 0 || mesh.triangles.is_empty() {
        return;
    }
    let n = mesh.positions.len();
    // Neighbours: each directed edge a -> b of a closed, oriented mesh appears once.
    let mut start = vec![0u32; n + 1];
    for t in &mesh.triangles {
        for k in 0..3 {
            start[t[k] as usize + 1] += 1;
        }
    }
    for i in 0..n {
        start[i + 1] += start[i];
    }
    let mut nbr = vec![0u32; start[n] as usize];
    let mut fill = start.clone();
    for t in &mesh.triangles {
        for k in 0..3 {
            let a = t[k] as usize;
            nbr[fill[a] as usize] = t[(k + 1) % 3];
            fill[a] += 1;
        }
    }
    let tol = 1e-3 * cell;
    let pinned: Vec<[bool; 3]> = mesh
        .positions
        .par_iter()
        .map(|p| {
            std::array::from_fn(|a| {
                let x = p[a] as f64;
                (x - region_lo[a]).abs() < tol || (x - region_hi[a]).abs() < tol
            })
        })
        .collect();
    let v0 = mesh.volume();
    let mut cur = std::mem::take(&mut mesh.positions);
    let mut next = cur.clone();
    for _ in 0..iterations {
        for f in [LAMBDA, MU] {
            next.par_iter_mut().enumerate().for_each(|(i, out)| {
                let (s, e) = (start[i] as usize, start[i + 1] as usize);
                let p = cur[i];
                if s == e {
                    *out = p;
                    return;
                }
                let mut m = [0f32; 3];
                for &j in &nbr[s..e] {
                    let q = cur[j as usize];
                    m[0] += q[0];
                    m[1] += q[1];
                    m[2] += q[2];
                }
                let inv = 1.0 / (e - s) as f32;
                *out = std::array::from_fn(|a| {
                    if pinned[i][a] {
                        p[a]
                    } else {
                        p[a] + f * (m[a] * inv - p[a])
                    }
                });
            });
            std::mem::swap(&mut cur, &mut next);
        }
    }
    mesh.positions = cur;
    // Restore the volume along area-weighted vertex normals.
    let v1 = mesh.volume();
    let area = mesh.area();
    if area > 0.0 {
        let delta = ((v0 - v1) / area) as f32;
        let mut vn = vec![[0f32; 3]; n];
        for t in &mesh.triangles {
            let fnrm = face_normal(t.map(|v| mesh.positions[v as usize]));
            for &v in t {
                for a in 0..3 {
                    vn[v as usize][a] += fnrm[a];
                }
            }
        }
        mesh.positions
            .par_iter_mut()
            .zip(vn.par_iter())
            .zip(pinned.par_iter())
            .for_each(|((p, nv), pin)| {
                let len = (nv[0] * nv[0] + nv[1] * nv[1] + nv[2] * nv[2]).sqrt();
                if len > 0.0 {
                    for a in 0..3 {
                        if !pin[a] {
                            p[a] += delta * nv[a] / len;
                        }
                    }
                }
            });
    }
}
