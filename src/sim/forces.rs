//! Body forces and solid boundary conditions on the MAC grid.
//!
//! Gravity is added to every face, `u_a += g_a dt` (forward Euler, exact for a constant force).
//! Walls are static and free-slip: a face with a solid cell on exactly one side
//! ([`FaceKind::Wall`]) gets zero normal velocity, `u . n = 0` (Bridson, *Fluid Simulation for
//! Computer Graphics*, 2nd ed., sec. 5.1). Tangential velocity is left free; faces inside the
//! wall layer are filled by extrapolation so particles next to a wall interpolate slip velocity.

use super::mac_grid::{CellLabel, FaceKind, GridDims};
use rayon::prelude::*;

/// Classifies every face of every component from the cell labels (plane-parallel).
pub fn classify_faces(d: &GridDims, labels: &[CellLabel], kinds: &mut [Vec<FaceKind>; 3]) {
    let n = d.n;
    for (a, kind) in kinds.iter_mut().enumerate() {
        let m = d.face_n(a);
        let stride = [1, n[0], n[0] * n[1]][a];
        kind.par_chunks_mut(m[0] * m[1])
            .enumerate()
            .for_each(|(k, kp)| {
                for j in 0..m[1] {
                    let row = &mut kp[m[0] * j..m[0] * (j + 1)];
                    let ijk_in = |i: usize| {
                        let c = [i, j, k];
                        (c[a] >= 1, c[a] < n[a])
                    };
                    for (i, out) in row.iter_mut().enumerate() {
                        let (lo_in, hi_in) = ijk_in(i);
                        if !(lo_in && hi_in) {
                            // Faces on the box boundary lie between a wall cell and the outside.
                            *out = FaceKind::Free;
                            continue;
                        }
                        let c = d.cell(i, j, k);
                        *out = kind_between(labels[c - stride], labels[c]);
                    }
                }
            });
    }
}

/// Kind of the face between cells labelled `la` and `lb`.
#[inline(always)]
fn kind_between(la: CellLabel, lb: CellLabel) -> FaceKind {
    let sa = la == CellLabel::Solid;
    let sb = lb == CellLabel::Solid;
    if sa != sb {
        FaceKind::Wall
    } else if !sa && (la == CellLabel::Fluid || lb == CellLabel::Fluid) {
        FaceKind::Fluid
    } else {
        FaceKind::Free
    }
}

/// Keeps the splatted velocity in `old`, then adds `g dt` to every face velocity and zeroes the
/// normal velocity on wall faces, in one pass per component.
pub fn apply_forces(
    vel: &mut [Vec<f32>; 3],
    old: &mut [Vec<f32>; 3],
    kinds: &[Vec<FaceKind>; 3],
    g: [f32; 3],
    dt: f32,
) {
    for a in 0..3 {
        let dv = g[a] * dt;
        vel[a]
            .par_iter_mut()
            .zip(old[a].par_iter_mut())
            .zip(kinds[a].par_iter())
            .with_min_len(4096)
            .for_each(|((v, o), k)| {
                *o = *v;
                *v = if *k == FaceKind::Wall { 0.0 } else { *v + dv };
            });
    }
}
