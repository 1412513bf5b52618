//! Ghost-fluid free surface (`solver.free_surface = "ghost_fluid"`): the pressure's `p = 0`
//! condition placed where the liquid's surface actually is between a fluid cell's centre and
//! its air neighbour's, instead of at the air cell's centre (Gibou, Fedkiw, Cheng and Kang
//! 2002, "A second-order-accurate symmetric discretization of the Poisson equation on
//! irregular domains", J. Comput. Phys. 176; Enright, Nguyen, Gibou and Fedkiw 2003, "Using the
//! particle level set method and a second order accurate pressure boundary condition for free
//! surface flows"; Bridson 2015, sec. 5.4).
//!
//! With `theta` the fraction of the centre-to-centre distance from the fluid cell to the
//! surface, the ghost pressure in the air cell is `p_c (1 - 1 / theta)`, so the fluid row's
//! diagonal gains `1 / theta - 1` per air neighbour (the matrix stays symmetric positive
//! definite) and the face between them is updated with `(0 - p_c) / theta`. `theta` is clamped
//! to [`THETA_MIN`] (Enright et al.'s safeguard; 0.001 here, not the former 0.05, which
//! damps waves; a surface through the fluid cell's centre would give an infinite coefficient).
//!
//! The surface: a particle level set measured at the centres of the air cells next to the
//! liquid, `phi_a = min_p |x_a - x_p| - r` over the particles of the 3 x 3 x 3 cells around it,
//! `r = h / 4` (half the seeding spacing: the surface a flat layer of seeded particles makes
//! lies half a spacing beyond its outermost particles, Zhu & Bridson 2005). Outside the liquid
//! this distance is accurate; inside, the union-of-spheres distance is not (it is near zero
//! everywhere between particles), so the fluid side is taken as `phi_c = phi_a - h` (a
//! surface normal along the axis), which gives `theta = 1 - phi_a / h`: 1/2 for a flat
//! surface on the face between the cells, as the staircase has it, and from 3/4 (a particle
//! on the face) down to the clamp (the liquid barely in the fluid cell).

use super::cell_sort::SortedParticles;
use super::mac_grid::{CellLabel, GridDims};
use rayon::prelude::*;

/// Smallest `theta` (fraction of a cell from the fluid cell's centre to the surface). The
/// clamp moves a surface that lies closer than this to a fluid cell's centre out to it, which
/// happens every time a particle crosses into an air cell (the cell turns fluid with the
/// surface just past its centre) and takes energy from waves: the standing wave of
/// `scripts/sloshing.rs` (APIC, 64 cells per wavelength, mean of seeds 1-5, `cargo bench --bench
/// slosh_loss`) loses 17% of its mode per period at 0.2, 4.7% at 0.05 (the value before session 7), 3.5% at
/// 0.01 and 2.4% at 0.001 (the diagonal then gains up to 999; the solves still converge).
pub const THETA_MIN: f64 = 0.001;

/// `theta` of a fluid cell towards an air neighbour whose level set is `phi_air` (m).
#[inline]
pub fn theta(phi_air: f32, h: f32) -> f64 {
    (1.0 - phi_air as f64 / h as f64).clamp(THETA_MIN, 1.0)
}

/// The level set `phi` (m) at the centre of every air cell with a fluid neighbour across a
/// face; other cells get `h` (which gives `theta = 0`, clamped: never read).
pub fn air_level_set(d: &GridDims, sp: &SortedParticles, labels: &[CellLabel], phi: &mut [f32]) {
    let n = d.n;
    let plane = n[0] * n[1];
    let h = d.h;
    let r = 0.25 * h;
    let (px, py, pz) = (&sp.pos[0], &sp.pos[1], &sp.pos[2]);
    let starts = &sp.cell_start;
    phi.par_chunks_mut(plane)
        .enumerate()
        .with_min_len(1)
        .for_each(|(k, out)| {
            for j in 0..n[1] {
                for i in 0..n[0] {
                    let c = d.cell(i, j, k);
                    let o = &mut out[i + n[0] * j];
                    *o = h;
                    if labels[c] != CellLabel::Empty || d.is_wall_cell(i, j, k) {
                        continue;
                    }
                    let steps = [1, n[0], plane];
                    let near_fluid = (0..3).any(|a| {
                        labels[c - steps[a]] == CellLabel::Fluid
                            || labels[c + steps[a]] == CellLabel::Fluid
                    });
                    if !near_fluid {
                        continue;
                    }
                    let x = [
                        d.lower[0] + (i as f32 + 0.5) * h,
                        d.lower[1] + (j as f32 + 0.5) * h,
                        d.lower[2] + (k as f32 + 0.5) * h,
                    ];
                    let mut best = f32::INFINITY;
                    for kk in k - 1..=k + 1 {
                        for jj in j - 1..=j + 1 {
                            let c0 = d.cell(i - 1, jj, kk);
                            let (s0, s1) = (starts[c0] as usize, starts[c0 + 3] as usize);
                            for s in s0..s1 {
                                let (dx, dy, dz) = (px[s] - x[0], py[s] - x[1], pz[s] - x[2]);
                                best = best.min(dx * dx + dy * dy + dz * dz);
                            }
                        }
                    }
                    *o = best.sqrt() - r;
                }
            }
        });
}
