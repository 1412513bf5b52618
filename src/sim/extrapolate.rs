//! Velocity extrapolation from the fluid faces into the air and into the wall layer.
//!
//! After the projection only faces touching a fluid cell ([`FaceKind::Fluid`]) carry a valid
//! velocity, and wall faces carry zero normal velocity. Particles near the surface interpolate
//! from faces beyond it, and the RK2 midpoint of a substep at CFL number `C` lies up to `C / 2`
//! cells out, so `ceil(C / 2) + 1` layers are filled, valid values spreading outwards layer by
//! layer: each pass sets every still-invalid free face
//! that has a valid neighbour (six neighbours in its own component's grid) to the mean of those
//! neighbours (Bridson, *Fluid Simulation for Computer Graphics*, 2nd ed., sec. 4.3; the
//! breadth-first "layers" of Foster & Fedkiw 2001). Each layer reads the previous layer's mask
//! only (Jacobi style), so the result does not depend on the order of evaluation or the threads.
//! The FLIP change `dv = v_new - v_old` is extrapolated with the same weights. Wall faces are
//! never written (zero normal velocity); faces no layer reaches get zero. The layer passes only
//! visit the fluid's bounding box grown by the number of layers (nothing else is reachable).

use super::mac_grid::{CellLabel, FaceKind, GridDims};
use rayon::prelude::*;

/// Scratch for extrapolation (one component at a time).
#[derive(Default)]
pub struct Extrapolator {
    valid: Vec<u8>,
    next: Vec<u8>,
    tmp_v: Vec<f32>,
    tmp_d: Vec<f32>,
}

impl Extrapolator {
    /// Buffers for up to `faces` faces per component.
    pub fn new(faces: usize) -> Self {
        Self {
            valid: vec![0; faces],
            next: vec![0; faces],
            tmp_v: vec![0.0; faces],
            tmp_d: vec![0.0; faces],
        }
    }

    /// Forms the FLIP change and extrapolates: `delta` holds the pre-projection velocity
    /// `v_old` on entry and `v_new - v_old` on return (computed in the same pass that resets
    /// the free faces); both it and `vel` are extrapolated by `layers` layers. Only faces
    /// within `layers + 1` of the fluid cells' bounding box can be reached, so the layer passes
    /// are restricted to that box.
    pub fn extrapolate(
        &mut self,
        d: &GridDims,
        labels: &[CellLabel],
        kinds: &[Vec<FaceKind>; 3],
        vel: &mut [Vec<f32>; 3],
        delta: &mut [Vec<f32>; 3],
        layers: u32,
    ) {
        let Some((blo, bhi)) = fluid_bounds(d, labels) else {
            for a in 0..3 {
                delta[a]
                    .iter_mut()
                    .zip(vel[a].iter())
                    .for_each(|(o, v)| *o = v - *o);
                vel[a].iter_mut().zip(kinds[a].iter()).for_each(|(v, k)| {
                    if *k == FaceKind::Free {
                        *v = 0.0;
                    }
                });
            }
            return;
        };
        let reach = layers as usize + 1;
        for a in 0..3 {
            let nf = d.faces(a);
            let m = d.face_n(a);
            let plane = m[0] * m[1];
            let kind = &kinds[a][..nf];
            let (v, dl) = (&mut vel[a][..nf], &mut delta[a][..nf]);
            let valid = &mut self.valid[..nf];
            let next = &mut self.next[..nf];
            let (tv, td) = (&mut self.tmp_v[..nf], &mut self.tmp_d[..nf]);
            let lo: [usize; 3] = std::array::from_fn(|b| blo[b].saturating_sub(reach));
            let hi: [usize; 3] = std::array::from_fn(|b| (bhi[b] + reach + 1).min(m[b] - 1));
            valid
                .par_iter_mut()
                .zip(next.par_iter_mut())
                .zip(v.par_iter_mut().zip(dl.par_iter_mut()))
                .zip(kind.par_iter())
                .with_min_len(4096)
                .for_each(|(((ok, nx), (v, dl)), k)| {
                    *ok = (*k == FaceKind::Fluid) as u8;
                    *nx = 0;
                    if *k == FaceKind::Free {
                        *v = 0.0;
                        *dl = 0.0;
                    } else {
                        *dl = *v - *dl;
                    }
                });
            for _ in 0..layers {
                let (vr, dr, okr) = (&*v, &*dl, &*valid);
                let (f0, f1) = (lo[2] * plane, ((hi[2] + 1) * plane).min(nf));
                next[f0..f1]
                    .par_chunks_mut(plane)
                    .zip(
                        tv[f0..f1]
                            .par_chunks_mut(plane)
                            .zip(td[f0..f1].par_chunks_mut(plane)),
                    )
                    .enumerate()
                    .for_each(|(kk, (np, (tvp, tdp)))| {
                        let k = lo[2] + kk;
                        for j in lo[1]..=hi[1] {
                            for i in lo[0]..=hi[0] {
                                let l = i + m[0] * j;
                                let f = l + plane * k;
                                np[l] = okr[f];
                                if okr[f] != 0 || kind[f] != FaceKind::Free {
                                    continue;
                                }
                                let (mut sv, mut sd, mut cnt) = (0.0f32, 0.0f32, 0u32);
                                let mut take = |g: usize| {
                                    if okr[g] != 0 {
                                        sv += vr[g];
                                        sd += dr[g];
                                        cnt += 1;
                                    }
                                };
                                if i > 0 {
                                    take(f - 1);
                                }
                                if i + 1 < m[0] {
                                    take(f + 1);
                                }
                                if j > 0 {
                                    take(f - m[0]);
                                }
                                if j + 1 < m[1] {
                                    take(f + m[0]);
                                }
                                if k > 0 {
                                    take(f - plane);
                                }
                                if k + 1 < m[2] {
                                    take(f + plane);
                                }
                                if cnt > 0 {
                                    let inv = 1.0 / cnt as f32;
                                    tvp[l] = sv * inv;
                                    tdp[l] = sd * inv;
                                    np[l] = 2;
                                }
                            }
                        }
                    });
                // Only the box's planes can hold new values.
                let (f0, f1) = (lo[2] * plane, ((hi[2] + 1) * plane).min(nf));
                let any = valid[f0..f1]
                    .par_iter_mut()
                    .zip(next[f0..f1].par_iter())
                    .zip(v[f0..f1].par_iter_mut().zip(dl[f0..f1].par_iter_mut()))
                    .zip(tv[f0..f1].par_iter().zip(td[f0..f1].par_iter()))
                    .with_min_len(8192)
                    .map(|(((ok, nx), (v, dl)), (tv, td))| {
                        if *nx == 2 {
                            *v = *tv;
                            *dl = *td;
                            *ok = 1;
                            true
                        } else {
                            false
                        }
                    })
                    .reduce(|| false, |a, b| a || b);
                if !any {
                    break;
                }
            }
        }
    }
}

/// Inclusive bounding box `(lo, hi)` of the fluid cells, or `None` without fluid.
#[allow(clippy::needless_range_loop)]
fn fluid_bounds(d: &GridDims, labels: &[CellLabel]) -> Option<([usize; 3], [usize; 3])> {
    let plane = d.n[0] * d.n[1];
    let none = ([usize::MAX; 3], [0usize; 3]);
    let (lo, hi) = labels
        .par_chunks(plane)
        .enumerate()
        .map(|(k, lp)| {
            let mut b = none;
            for (l, lab) in lp.iter().enumerate() {
                if *lab == CellLabel::Fluid {
                    let c = [l % d.n[0], l / d.n[0], k];
                    for x in 0..3 {
                        b.0[x] = b.0[x].min(c[x]);
                        b.1[x] = b.1[x].max(c[x]);
                    }
                }
            }
            b
        })
        .reduce(
            || none,
            |x, y| {
                (
                    std::array::from_fn(|i| x.0[i].min(y.0[i])),
                    std::array::from_fn(|i| x.1[i].max(y.1[i])),
                )
            },
        );
    (lo[0] != usize::MAX).then_some((lo, hi))
}
