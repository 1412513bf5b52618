//! Volume-preserving mesh smoothing.
//!
//! Taubin 1995 ("A signal processing approach to fair surface design"): alternate a shrinking
//! umbrella step `x += lambda * L(x)` and an inflating one `x += mu * L(x)`, `mu < -lambda < 0`,
//! with `L(x_i) = mean(x_j over neighbours j) - x_i`. This low-pass filter removes the
//! particle-scale bumps of a particle level set while barely changing the volume; the small
//! remaining change is then undone exactly to first order by moving every vertex along its
//! area-weighted normal by `(V_before - V_after) / area`.
//!
//! **Calm water** (issue 14): Taubin's filter passes long wavelengths by design, so a pool at
//! rest keeps the few-cell undulation of its top particles (measured on a pool settled for 1 s:
//! RMS height 0.04 cell, normals off by 4 degrees: "hammered metal" in a render). Where the
//! liquid is at rest and the surface faces up, [`Calm`] then diffuses the vertices' *heights*
//! only (`z += w (mean z of calm neighbours - z)`, Jacobi: a convex combination, so no height
//! leaves the range of its neighbours'; a full step, not a half one, flattens as much in half
//! the passes), `w` going from 1 to 0 as the vertex speed (the mesh's
//! velocity attribute) rises from half of `calm_speed` to `calm_speed`, and as its normal tilts
//! from 10 to 14 degrees off vertical. The tilt is read from the smoothed mesh's own vertex
//! normals averaged over the one-ring, not from the level-set gradient (the normal attribute):
//! the `anisotropic` level set has no blur, and its gradient tilts more than 14 degrees at 18%
//! of a settled pool's top vertices (particle-scale bumps), which then stayed unflattened and
//! kept their tilted normals (measured 0.012 cell, 1.4 degrees, normal attribute 4.2 degrees;
//! now 0.0067 cell, 0.23 degree). The low-passed normal also allows a narrower gate (it was 14
//! to 26 degrees on the gradient): liquid at rest with a curved top (a source's ball before it
//! falls) has only its crown within 10-14 degrees of vertical flattened (a seeded 0.3 m ball at
//! 0.05 m cells loses 3.8 mm of its crown; 15 mm with the old gate on the gradient), while the pool
//! still meets the target. Heights only, so a flat region cannot shrink sideways; moving
//! water (waves, splashes, falling drops) and steep faces (droplet sides, sheets, walls) are
//! untouched. The flattened vertices' normals are blended, by `w`, towards the area-weighted
//! normals of the flattened faces. This is the "flat region" treatment the peers apply in some
//! form (splashsurf weights its mesh smoothing by particle neighbour counts so only the bulk is
//! smoothed hard; FLIP Fluids smooths its meshes per vertex with a weight from the particle
//! distance); height-only diffusion over the calm region is the cheapest way found here to
//! reach the 0.01 cell and 0.5 degree.
//!
//! Vertices on a wall cap (within 1e-3 cells of the liquid region's box) keep their coordinate
//! across that wall, so caps stay flat on the wall, and no vertex is moved out of that box (a
//! vertex just off the floor cap, not pinned, was smoothed 1.3e-3 cells through the floor in a
//! small dam break once its substeps changed: `anisotropic_keeps_the_stage_invariants`). Updates are Jacobi-style (each step reads
//! the previous positions only) over a neighbour list built in triangle order: deterministic for
//! any thread count.

use super::sparse_grid::counting_sort;
use crate::mesh::{TriMesh, face_normal};
use rayon::prelude::*;

/// Taubin's pass-band parameters (k_PB ~ 0.1).
const LAMBDA: f32 = 0.5;
const MU: f32 = -0.53;

/// Calm-water flattening settings (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Calm {
    /// Height-diffusion passes; 0 turns it off.
    pub iterations: u32,
    /// Vertex speed (m/s) at and above which a vertex is not calm.
    pub speed: f32,
}

impl Calm {
    /// No flattening.
    pub const OFF: Calm = Calm {
        iterations: 0,
        speed: 0.0,
    };
}

/// Normal z-components between which the calm weight ramps from 0 to 1: `cos 14` and `cos 10`
/// degrees (see the module docs for the measured choice).
const CALM_COS_ZERO: f32 = 0.970_296;
const CALM_COS_FULL: f32 = 0.984_808;

/// Smooths `mesh` in place with `iterations` (lambda, mu) pairs; `region_lo/hi` is the liquid
/// box (m) whose faces pin cap vertices, `cell` the grid spacing (m).
pub fn taubin(
    mesh: &mut TriMesh,
    iterations: u32,
    region_lo: [f64; 3],
    region_hi: [f64; 3],
    cell: f64,
) {
    smooth(mesh, iterations, Calm::OFF, region_lo, region_hi, cell);
}

/// [`taubin`], then the calm-water flattening `calm` (see the module docs), then the volume
/// restored.
pub fn smooth(
    mesh: &mut TriMesh,
    iterations: u32,
    calm: Calm,
    region_lo: [f64; 3],
    region_hi: [f64; 3],
    cell: f64,
) {
    let flatten =
        calm.iterations > 0 && calm.speed > 0.0 && mesh.velocities.len() == mesh.positions.len();
    if (iterations == 0 && !flatten) || mesh.triangles.is_empty() {
        return;
    }
    let n = mesh.positions.len();
    // Neighbours: each directed edge a -> b of a closed, oriented mesh appears once. Per
    // vertex, in triangle order: the next vertex of each of its triangles, and the triangle
    // (the sums over a vertex's triangles then add in triangle order, as a serial scatter over
    // the triangles would: the same bits, in parallel). The corners `3 f + k` sorted by vertex
    // with the stable parallel counting sort are exactly the serial fill's order (it was a
    // serial pass over the triangles, twice).
    let corners = mesh.triangles.as_flattened();
    let (start, order) = counting_sort(corners, n);
    let (nbr, tri): (Vec<u32>, Vec<u32>) = order
        .par_iter()
        .map(|&e| {
            let (f, k) = (e as usize / 3, e as usize % 3);
            (corners[3 * f + (k + 1) % 3], f as u32)
        })
        .unzip();
    drop(order);
    let ring = Ring {
        start: &start,
        nbr: &nbr,
        tri: &tri,
    };
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
    // No vertex leaves the liquid region's box: a vertex just off a wall cap (not pinned) would
    // otherwise be smoothed through the wall.
    let (lo, hi) = (region_lo.map(|x| x as f32), region_hi.map(|x| x as f32));
    let clamp = |x: f32, a: usize| x.max(lo[a]).min(hi[a]);
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
                        clamp(p[a] + f * (m[a] * inv - p[a]), a)
                    }
                });
            });
            std::mem::swap(&mut cur, &mut next);
        }
    }
    if flatten {
        flatten_calm(mesh, &mut cur, &ring, &pinned, calm);
    }
    mesh.positions = cur;
    // Restore the volume along area-weighted vertex normals.
    let v1 = mesh.volume();
    let area = mesh.area();
    if area > 0.0 {
        let delta = ((v0 - v1) / area) as f32;
        let faces = face_normals(&mesh.triangles, &mesh.positions, |_| true);
        let vn = ring.vertex_sums(&faces);
        mesh.positions
            .par_iter_mut()
            .zip(vn.par_iter())
            .zip(pinned.par_iter())
            .for_each(|((p, nv), pin)| {
                let len = (nv[0] * nv[0] + nv[1] * nv[1] + nv[2] * nv[2]).sqrt();
                if len > 0.0 {
                    for a in 0..3 {
                        if !pin[a] {
                            p[a] = clamp(p[a] + delta * nv[a] / len, a);
                        }
                    }
                }
            });
    }
}

/// The calm-water pass of [`smooth`] on the positions `cur`, with the mesh's normals and
/// velocities for the weights.
fn flatten_calm(
    mesh: &mut TriMesh,
    cur: &mut [[f32; 3]],
    ring: &Ring,
    pinned: &[[bool; 3]],
    calm: Calm,
) {
    let (start, nbr) = (ring.start, ring.nbr);
    let half = 0.5 * calm.speed;
    // The tilt gate reads the smoothed surface's own normals, averaged over the one-ring, not
    // the level-set gradient (the `normals` attribute): a particle-scale bump must not read as
    // a steep face (see the module docs).
    let normals = ring_normals(&mesh.triangles, cur, ring);
    let weight: Vec<f32> = (normals.par_iter())
        .zip(mesh.velocities.par_iter())
        .zip(pinned.par_iter())
        .map(|((n, v), pin)| {
            if pin[2] {
                return 0.0;
            }
            let nl = (n[0] * n[0] + n[1] * n[1] + n[2] * n[2]).sqrt();
            let up = if nl > 0.0 { n[2] / nl } else { 0.0 };
            let a = ((up - CALM_COS_ZERO) / (CALM_COS_FULL - CALM_COS_ZERO)).clamp(0.0, 1.0);
            let sp = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
            let b = (1.0 - (sp - half) / (calm.speed - half)).clamp(0.0, 1.0);
            a * b
        })
        .collect();
    // Only the calm vertices are visited (most of a splash has none).
    let calm_idx: Vec<u32> = (0..weight.len() as u32)
        .filter(|&i| weight[i as usize] > 0.0)
        .collect();
    if calm_idx.is_empty() {
        return;
    }
    let mut z = vec![0f32; calm_idx.len()];
    for _ in 0..calm.iterations {
        z.par_iter_mut()
            .zip(calm_idx.par_iter())
            .with_min_len(1024)
            .for_each(|(out, &i)| {
                let i = i as usize;
                let p = cur[i][2];
                let (mut sum, mut count) = (0f32, 0u32);
                for &j in &nbr[start[i] as usize..start[i + 1] as usize] {
                    if weight[j as usize] > 0.0 {
                        sum += cur[j as usize][2];
                        count += 1;
                    }
                }
                *out = if count > 0 {
                    p + weight[i] * (sum / count as f32 - p)
                } else {
                    p
                };
            });
        for (&i, &v) in calm_idx.iter().zip(&z) {
            cur[i as usize][2] = v;
        }
    }
    // Normals of the flattened faces, blended in by the weight.
    let faces = face_normals(&mesh.triangles, cur, |t| {
        t.iter().any(|&v| weight[v as usize] != 0.0)
    });
    let vn = ring.vertex_sums(&faces);
    mesh.normals
        .par_iter_mut()
        .zip(vn.par_iter())
        .zip(weight.par_iter())
        .for_each(|((n, f), &w)| {
            let fl = (f[0] * f[0] + f[1] * f[1] + f[2] * f[2]).sqrt();
            if w == 0.0 || fl == 0.0 {
                return;
            }
            let m: [f32; 3] = std::array::from_fn(|a| (1.0 - w) * n[a] + w * f[a] / fl);
            let ml = (m[0] * m[0] + m[1] * m[1] + m[2] * m[2]).sqrt();
            if ml > 0.0 {
                *n = m.map(|c| c / ml);
            }
        });
}

/// Unit area-weighted vertex normals of the surface `pos`, each then averaged with its
/// neighbours' (one ring): a normal low-passed over about two mesh cells, so a particle-scale
/// bump does not read as a steep face while a droplet's or a wave's side still does.
fn ring_normals(triangles: &[[u32; 3]], pos: &[[f32; 3]], ring: &Ring) -> Vec<[f32; 3]> {
    let (start, nbr) = (ring.start, ring.nbr);
    let vn = ring.vertex_sums(&face_normals(triangles, pos, |_| true));
    let unit = |v: [f32; 3]| {
        let l = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
        if l > 0.0 { v.map(|c| c / l) } else { v }
    };
    let vn: Vec<[f32; 3]> = vn.par_iter().map(|&v| unit(v)).collect();
    (0..pos.len())
        .into_par_iter()
        .map(|i| {
            let mut m = vn[i];
            for &j in &nbr[start[i] as usize..start[i + 1] as usize] {
                for a in 0..3 {
                    m[a] += vn[j as usize][a];
                }
            }
            unit(m)
        })
        .collect()
}

/// The one-ring of each vertex ([`smooth`]): `start[v]..start[v + 1]` indexes its entries, one
/// per triangle of `v` in triangle order: the next vertex (`nbr`) and the triangle (`tri`).
struct Ring<'a> {
    start: &'a [u32],
    nbr: &'a [u32],
    tri: &'a [u32],
}

impl Ring<'_> {
    /// Per vertex, the sum of `face` over its triangles, added in triangle order from zero:
    /// the bits of a serial scatter of `face` over the triangles in order, computed in parallel.
    fn vertex_sums(&self, face: &[[f32; 3]]) -> Vec<[f32; 3]> {
        (0..self.start.len() - 1)
            .into_par_iter()
            .map(|v| {
                let mut s = [0f32; 3];
                for &f in &self.tri[self.start[v] as usize..self.start[v + 1] as usize] {
                    for a in 0..3 {
                        s[a] += face[f as usize][a];
                    }
                }
                s
            })
            .collect()
    }
}

/// Area-weighted normals of the triangles of `pos` where `keep` holds, zero elsewhere.
fn face_normals(
    triangles: &[[u32; 3]],
    pos: &[[f32; 3]],
    keep: impl Fn(&[u32; 3]) -> bool + Sync,
) -> Vec<[f32; 3]> {
    triangles
        .par_iter()
        .map(|t| {
            if keep(t) {
                face_normal(t.map(|v| pos[v as usize]))
            } else {
                [0.0; 3]
            }
        })
        .collect()
}
