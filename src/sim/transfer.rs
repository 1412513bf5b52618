//! Particle <-> grid transfers of PIC/FLIP.
//!
//! Zhu & Bridson (2005), "Animating sand as a fluid", ACM TOG 24(3) (PIC/FLIP blend on a MAC
//! grid); Brackbill & Ruppel (1986), "FLIP: a method for adaptively zoned, particle-in-cell
//! calculations of fluid flows in two dimensions", J. Comput. Phys. 65.
//!
//! **Particle to grid.** Each face value is the trilinear-weighted average of the velocities of
//! the particles within one cell of it: `u_f = sum_p w_pf v_p / sum_p w_pf`, `w_pf` the product
//! of hat functions `max(0, 1 - |x_p - x_f| / h)` per axis (weight normalisation), 0 where no
//! particle reaches. The splat runs one z-plane of faces per task: a plane's contributors are the
//! particles of two or three consecutive z-planes of cells, a contiguous range of the cell-sorted
//! particles (see [`super::cell_sort`]); each task scans them in sorted order and adds into its
//! own plane only. So every face's sum has a fixed order whatever the thread count.
//!
//! **Grid to particle.** `v_p <- f (v_p + dv(x_p)) + (1 - f) v_new(x_p)`, which is the brief's
//! `v_p = f (v_p - v_old) + v_new` with `dv = v_new - v_old` kept as its own (extrapolated) grid,
//! `f` = `flip_ratio`.

use super::cell_sort::SortedParticles;
use super::mac_grid::{CellLabel, GridDims};
use rayon::prelude::*;

/// Splats particle velocities onto the three face grids (`vel`), with the weight sums in
/// `weight`.
pub fn splat(
    d: &GridDims,
    sp: &SortedParticles,
    vel: &mut [Vec<f32>; 3],
    weight: &mut [Vec<f32>; 3],
) {
    let inv = 1.0 / d.h;
    for a in 0..3 {
        let m = d.face_n(a);
        let off = GridDims::face_offset(a);
        let plane = m[0] * m[1];
        let (pos, pv) = (&sp.pos, &sp.vel[a]);
        vel[a]
            .par_chunks_mut(plane)
            .zip(weight[a].par_chunks_mut(plane))
            .enumerate()
            .for_each(|(kk, (vp, wp))| {
                vp.iter_mut().for_each(|x| *x = 0.0);
                wp.iter_mut().for_each(|x| *x = 0.0);
                // Cell planes whose particles may reach this face plane.
                let k0 = kk.saturating_sub(1);
                let k1 = if a == 2 { kk } else { kk + 1 }.min(d.n[2] - 1);
                if k0 > k1 {
                    return;
                }
                let s0 = sp.cell_start[d.cell(0, 0, k0)] as usize;
                let s1 = sp.cell_start[d.cell(0, 0, k1 + 1)] as usize;
                for s in s0..s1 {
                    let gz = (pos[2][s] - d.lower[2]) * inv - off[2];
                    let wz = 1.0 - (gz - kk as f32).abs();
                    if wz <= 0.0 {
                        continue;
                    }
                    let gx = (pos[0][s] - d.lower[0]) * inv - off[0];
                    let gy = (pos[1][s] - d.lower[1]) * inv - off[1];
                    let (i0, j0) = (gx.floor(), gy.floor());
                    let (fx, fy) = (gx - i0, gy - j0);
                    let (i0, j0) = (i0 as usize, j0 as usize);
                    let base = i0 + m[0] * j0;
                    let v = pv[s];
                    let ws = [
                        (base, (1.0 - fx) * (1.0 - fy)),
                        (base + 1, fx * (1.0 - fy)),
                        (base + m[0], (1.0 - fx) * fy),
                        (base + m[0] + 1, fx * fy),
                    ];
                    for (f, w) in ws {
                        let w = w * wz;
                        vp[f] += w * v;
                        wp[f] += w;
                    }
                }
                for (v, w) in vp.iter_mut().zip(wp.iter()) {
                    if *w > 0.0 {
                        *v /= *w;
                    }
                }
            });
    }
}

/// Cell labels: wall layer solid, a cell holding a particle fluid, the rest empty.
pub fn label_cells(d: &GridDims, sp: &SortedParticles, labels: &mut [CellLabel]) {
    let plane = d.n[0] * d.n[1];
    labels
        .par_chunks_mut(plane)
        .enumerate()
        .for_each(|(k, lp)| {
            for j in 0..d.n[1] {
                for i in 0..d.n[0] {
                    let c = d.cell(i, j, k);
                    lp[i + d.n[0] * j] = if d.is_wall_cell(i, j, k) {
                        CellLabel::Solid
                    } else if sp.cell_start[c + 1] > sp.cell_start[c] {
                        CellLabel::Fluid
                    } else {
                        CellLabel::Empty
                    };
                }
            }
        });
}

/// Grid to particle: the PIC/FLIP blend with FLIP share `flip`.
pub fn gather(
    d: &GridDims,
    sp: &mut SortedParticles,
    vel_new: &[Vec<f32>; 3],
    delta: &[Vec<f32>; 3],
    flip: f32,
) {
    let pos = &sp.pos;
    let [vx, vy, vz] = &mut sp.vel;
    vx.par_iter_mut()
        .zip(vy.par_iter_mut())
        .zip(vz.par_iter_mut())
        .enumerate()
        .with_min_len(1024)
        .for_each(|(s, ((vx, vy), vz))| {
            let p = [pos[0][s], pos[1][s], pos[2][s]];
            let vn = d.sample_velocity(vel_new, p);
            let dv = d.sample_velocity(delta, p);
            *vx = flip * (*vx + dv[0]) + (1.0 - flip) * vn[0];
            *vy = flip * (*vy + dv[1]) + (1.0 - flip) * vn[1];
            *vz = flip * (*vz + dv[2]) + (1.0 - flip) * vn[2];
        });
}
