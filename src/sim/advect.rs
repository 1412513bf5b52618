//! Particle advection through the grid velocity.
//!
//! Third-order Runge-Kutta (Ralston's, as Bridson, *Fluid Simulation for Computer Graphics*,
//! 2nd ed., sec. 3.1, recommends for particles): `k1 = u(x)`, `k2 = u(x + dt/2 k1)`,
//! `k3 = u(x + 3dt/4 k2)`, `x' = x + dt (2 k1 + 3 k2 + 4 k3) / 9`, with `u` the projected and
//! extrapolated grid velocity interpolated trilinearly. Both stages are clamped into the
//! interior box, `margin` inside the wall layer (the tutorial uses `h + 1e-4` m from the outer
//! box; surge uses `h + 0.01 h`), so no particle ever ends inside a solid cell or outside the
//! domain. The particle's own velocity is not used here: with PIC/FLIP the grid carries the
//! motion and the particle velocity only its FLIP memory.

use super::cell_sort::SortedParticles;
use super::mac_grid::GridDims;
use rayon::prelude::*;

/// Fraction of a cell particles keep from the wall layer.
pub const WALL_MARGIN: f32 = 0.01;

/// Moves every particle by one RK3 step of `dt` through `vel`.
pub fn advect(d: &GridDims, sp: &mut SortedParticles, vel: &[Vec<f32>; 3], dt: f32) {
    let (lo, hi) = d.interior_bounds(WALL_MARGIN * d.h);
    let clamp = |p: [f32; 3]| -> [f32; 3] { std::array::from_fn(|a| p[a].clamp(lo[a], hi[a])) };
    let [px, py, pz] = &mut sp.pos;
    px.par_iter_mut()
        .zip(py.par_iter_mut())
        .zip(pz.par_iter_mut())
        .with_min_len(1024)
        .for_each(|((x, y), z)| {
            let p = [*x, *y, *z];
            let k1 = d.sample_velocity(vel, p);
            let p2 = clamp(std::array::from_fn(|a| p[a] + 0.5 * dt * k1[a]));
            let k2 = d.sample_velocity(vel, p2);
            let p3 = clamp(std::array::from_fn(|a| p[a] + 0.75 * dt * k2[a]));
            let k3 = d.sample_velocity(vel, p3);
            let q = clamp(std::array::from_fn(|a| {
                p[a] + dt * ((2.0 / 9.0) * k1[a] + (3.0 / 9.0) * k2[a] + (4.0 / 9.0) * k3[a])
            }));
            (*x, *y, *z) = (q[0], q[1], q[2]);
        });
}

/// Clamps every particle into the interior box (used once when a simulation starts, so input
/// particles on a wall are moved off it).
pub fn clamp_inside(d: &GridDims, sp: &mut SortedParticles) {
    let (lo, hi) = d.interior_bounds(WALL_MARGIN * d.h);
    for a in 0..3 {
        sp.pos[a]
            .par_iter_mut()
            .with_min_len(4096)
            .for_each(|x| *x = x.clamp(lo[a], hi[a]));
    }
}

/// Moves every particle by the displacement field `disp` (m, on the faces), clamped inside.
pub fn displace(d: &GridDims, sp: &mut SortedParticles, disp: &[Vec<f32>; 3]) {
    let (lo, hi) = d.interior_bounds(WALL_MARGIN * d.h);
    let [px, py, pz] = &mut sp.pos;
    px.par_iter_mut()
        .zip(py.par_iter_mut())
        .zip(pz.par_iter_mut())
        .with_min_len(1024)
        .for_each(|((x, y), z)| {
            let p = [*x, *y, *z];
            let u = d.sample_velocity(disp, p);
            *x = (p[0] + u[0]).clamp(lo[0], hi[0]);
            *y = (p[1] + u[1]).clamp(lo[1], hi[1]);
            *z = (p[2] + u[2]).clamp(lo[2], hi[2]);
        });
}
