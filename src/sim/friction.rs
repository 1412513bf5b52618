//! Tangential friction at the domain walls and at obstacles (issues 11 and 19).
//!
//! Free slip (friction 0, the default) leaves the tangential velocity alone: the pressure
//! projection only sets the normal component on wall faces (Bridson, *Fluid Simulation for
//! Computer Graphics*, 2nd ed., sec. 5.1). With friction `mu` in (0, 1], after the projection
//! every fluid face of component `a` that lies next to a solid across a perpendicular axis
//! (its neighbouring face of the same component is inside the solid: both cells solid, or the
//! face closed by an obstacle) has its velocity relative to the solid scaled by `1 - mu`:
//!
//! `u_f <- u_s + (1 - mu) (u_f - u_s)`,
//!
//! so `mu = 1` is the no-slip condition `u = u_s` imposed on the first layer of tangential
//! faces, half a cell from a grid-aligned wall (Bridson sec. 5.1's "no-slip": set the tangential
//! velocity of the faces at the solid to the solid's; Harlow & Welch 1965 impose it on the
//! same layer). The change reaches the particles through both the PIC and the FLIP parts of the
//! grid-to-particle transfer (`v_new - v_old` includes it), so a no-slip wall holds the liquid
//! next to it at the wall's velocity. A face next to solids of different frictions takes the
//! largest. Only the scenes that ask for friction run this pass.
//!
//! Layer 2 (sim): takes plain arrays (labels, face kinds, the obstacles' per-face data).

use super::mac_grid::{CellLabel, FaceKind, GridDims};
use rayon::prelude::*;

/// What the friction pass needs besides the grid.
#[derive(Clone, Copy)]
pub struct FrictionFaces<'a> {
    /// Friction of the domain's wall faces.
    pub walls: f32,
    /// The obstacles' open fraction per face (`None`: no obstacles).
    pub open: Option<&'a [Vec<f32>; 3]>,
    /// The friction of the obstacle covering each face (0 where none), with `open`.
    pub obstacle: Option<&'a [Vec<f32>; 3]>,
    /// The moving obstacles' velocity component per face (`None`: static, 0).
    pub solid_vel: Option<&'a [Vec<f32>; 3]>,
}

impl FrictionFaces<'_> {
    /// Whether any face has friction.
    pub fn any(&self) -> bool {
        self.walls > 0.0 || self.obstacle.is_some()
    }
}

/// Scales the tangential velocity relative to the solid on every fluid face next to a solid
/// with friction (see the module docs). Plane-parallel, each face written by its own plane's
/// task from read-only inputs: the same for any thread count.
pub fn apply(
    d: &GridDims,
    labels: &[CellLabel],
    kinds: &[Vec<FaceKind>; 3],
    vel: &mut [Vec<f32>; 3],
    f: FrictionFaces<'_>,
) {
    if !f.any() {
        return;
    }
    let n = d.n;
    let cell_stride = [1, n[0], n[0] * n[1]];
    for a in 0..3 {
        let m = d.face_n(a);
        let face_stride = [1, m[0], m[0] * m[1]];
        let kind = &kinds[a];
        vel[a]
            .par_chunks_mut(m[0] * m[1])
            .enumerate()
            .for_each(|(k, plane)| {
                for j in 0..m[1] {
                    for i in 0..m[0] {
                        let ijk = [i, j, k];
                        let fi = i + m[0] * (j + m[1] * k);
                        if kind[fi] != FaceKind::Fluid {
                            continue;
                        }
                        // Fluid faces lie between two interior cells c - e_a and c.
                        let c = i + n[0] * (j + n[1] * k);
                        let mut mu = 0.0f32;
                        let mut us = 0.0f32;
                        for b in (0..3).filter(|&b| b != a) {
                            for up in [false, true] {
                                if (!up && ijk[b] == 0) || (up && ijk[b] + 1 >= m[b]) {
                                    continue;
                                }
                                let (g, cn) = if up {
                                    (fi + face_stride[b], c + cell_stride[b])
                                } else {
                                    (fi - face_stride[b], c - cell_stride[b])
                                };
                                let both_solid = labels[cn] == CellLabel::Solid
                                    && labels[cn - cell_stride[a]] == CellLabel::Solid;
                                let nb = ijk[b] as isize + if up { 1 } else { -1 };
                                let domain_wall = nb == 0 || nb as usize + 1 == n[b];
                                let closed = f.open.is_some_and(|o| o[a][g] <= 0.0);
                                if domain_wall && both_solid && !closed {
                                    if f.walls > mu {
                                        (mu, us) = (f.walls, 0.0);
                                    }
                                } else if (both_solid || closed)
                                    && let Some(fr) = f.obstacle
                                    && fr[a][g] > mu
                                {
                                    mu = fr[a][g];
                                    // The solid's velocity on the covered face beside.
                                    us = f.solid_vel.map_or(0.0, |sv| sv[a][g]);
                                }
                            }
                        }
                        if mu > 0.0 {
                            let u = &mut plane[i + m[0] * j];
                            *u = us + (1.0 - mu) * (*u - us);
                        }
                    }
                }
            });
    }
}
