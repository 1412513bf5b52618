//! Slivers: cells whose density kernel lies mostly in a solid obstacle.
//!
//! The density correction ([`super::density`]) compares the particle density splatted at a
//! cell centre, `rho_c = sum_p w(x_p - x_c)` with the trilinear hat kernel `w` (support one cell
//! either side per axis), with the seeding density, 8 per cell. Next to a solid obstacle
//! particles are kept [`PUSHOUT_CELLS`] cells out of it, so a cell whose kernel lies mostly in
//! the solid reads far under 8 however crowded its open part is, and is never corrected: it
//! becomes a sink. Measured on the sloshing glass of `tests/obstacles_glass.rs` (1.25 cm cells,
//! 1 cm base and wall): 24 particles (about 100 times the seeding density) in the open sliver
//! of a cell in the corner between base and wall after 300 frames (with an earlier form of
//! the thin-wall sealing of [`super::thin_walls`]).
//!
//! The share is the kernel-weighted fraction of the kernel's support where particles can be:
//! inside the domain's interior (not the wall layer) and at least the push-out distance from
//! every solid, sampled on `S^3` points (midpoints of a regular `S`-per-axis subdivision of the
//! `2h` cube, each weighted by the kernel): `s_c = sum_k w_k [open(x_k)] / sum_k w_k`. It uses
//! the solids' exact distance, not the grid nodes' trilinear interpolant, which misses walls
//! thinner than a cell. A cell with share below [`SLIVER_SHARE`] is corrected against the rest
//! density `8 s_c`, and only beyond [`SLIVER_SLACK`] over it: with few particles in reach, the
//! kernel sum of a correctly seeded sliver scatters by tens of percent around `8 s_c` (particles
//! sit on a lattice, the share is an integral), and correcting that scatter (over-density only,
//! as next to every obstacle) lifted the liquid at rest in the sphere and rotated-box containers
//! of `tests/obstacles.rs` by a third of a cell (share below 1 with slack 0.25) or stirred it
//! to 0.08 m/s (no slack). The thresholds are the measured compromise: with share below 0.3
//! and slack 0.5 those containers stay at rest (1e-7 m/s, surface within 0.04 cell) and the
//! mesh of the block thrown into the glass (then at the default step) stayed 0.7-6.0% below
//! its first frame, mean 3.9% (2.0-7.2% with the thin-wall sealing alone, drifting over the
//! first 6 s). Measured with an earlier, weaker form of the
//! sealing: share below 0.4 left a void over the glass's base
//! (`liquid_mesh_touches_the_glass_base`), slack 0.25 or 1.0 did less. Thicker kernels keep
//! the plain rest density.
//!
//! Cells whose centre is at least half a cell from every solid are not slivers (the share of a
//! kernel whose centre is half a cell from up to three perpendicular planes is above 0.5) and
//! get 1 without sampling, and so do cells too deep in the solid to hold a particle. `S = 8`
//! (a coarser `S = 4` changed which cells counted as slivers enough to turn the paddle test's
//! mean liquid velocity after 1 s from +0.03 m/s to -0.02).
//! Static obstacles are sampled once per run, each cell the first time it holds liquid (most
//! of a glass never does); moving ones at every density correction, fluid cells only.
//! Where the distance is exact (boxes, uniformly scaled spheres and cylinders: 1-Lipschitz),
//! the samples go in blocks of `2^3`: one evaluation at a block's centre decides every sample
//! of a block whose centre is farther than its half diagonal from the push-out level, on
//! either side, and only the samples of the other blocks are evaluated (the same open set,
//! summed in the same order: the same bits, in about a third of the evaluations for a cell
//! against a flat wall).

use super::mac_grid::{CellLabel, GridDims};
use crate::geometry::solid::PUSHOUT_CELLS;
use rayon::prelude::*;

/// Kernel share below which a cell is a sliver.
pub const SLIVER_SHARE: f32 = 0.3;

/// Relative over-density a sliver keeps before it is corrected.
pub const SLIVER_SLACK: f32 = 0.5;

/// Smallest share used (a cell whose kernel is almost all solid still has a finite rest
/// density).
pub const MIN_SHARE: f32 = 0.02;

/// Which cells [`kernel_open_share`] computes (the others get 1, or keep their value when
/// lazy).
#[derive(Clone, Copy)]
pub enum ShareCells<'a> {
    /// The cells labelled fluid (the density correction's rows).
    Fluid(&'a [CellLabel]),
    /// The fluid cells and their face neighbours that are not solid (the ghost-fluid surface's
    /// fill fractions, [`super::ghost_fluid`], are read on both sides of the surface).
    FluidAndNeighbours(&'a [CellLabel]),
}

impl ShareCells<'_> {
    fn wants(&self, d: &GridDims, c: usize) -> bool {
        match *self {
            ShareCells::Fluid(l) => l[c] == CellLabel::Fluid,
            ShareCells::FluidAndNeighbours(l) => {
                let n = d.n;
                let plane = n[0] * n[1];
                let (i, j, k) = (c % n[0], (c / n[0]) % n[1], c / plane);
                let inner = i > 0 && j > 0 && k > 0;
                let inner = inner && i + 1 < n[0] && j + 1 < n[1] && k + 1 < n[2];
                l[c] == CellLabel::Fluid
                    || (inner
                        && l[c] != CellLabel::Solid
                        && [1, n[0], plane]
                            .iter()
                            .any(|&s| l[c - s] == CellLabel::Fluid || l[c + s] == CellLabel::Fluid))
            }
        }
    }
}

/// Whether cell `c`, whose centre is `pc` from the solids (m; a lower bound is enough), has its
/// share sampled among the cells `only` names: a cell whose centre is at least half a cell
/// from every solid is not a sliver, and one deeper in the solid than its half diagonal plus
/// the push-out distance holds no particle (its share is never used); both get 1.
pub fn kernel_gate(d: &GridDims, only: ShareCells<'_>, c: usize, pc: f32) -> bool {
    let h = d.h as f64;
    let eps = PUSHOUT_CELLS as f64 * h;
    let far = 0.5 * d.h;
    let deep = -((0.75f64.sqrt() * h + eps) as f32);
    only.wants(d, c) && pc < far && pc > deep
}

/// The kernel-weighted share of cell `ijk`'s kernel support open to particles (in the
/// domain's interior and at least the push-out distance from every solid by the distance
/// `phi`, m), sampled on `samples^3` points. `exact`: `phi` is 1-Lipschitz (every solid's
/// distance exact), so blocks of samples far from the push-out level are decided from their
/// centre (see the module docs; the same value).
pub fn sample_share(
    d: &GridDims,
    phi: &(dyn Fn([f64; 3]) -> f64 + Sync),
    samples: usize,
    exact: bool,
    ijk: [usize; 3],
) -> f32 {
    let n = d.n;
    let h = d.h as f64;
    let eps = PUSHOUT_CELLS as f64 * h;
    let lo = d.lower.map(|x| x as f64);
    let s = samples.max(1);
    let c = ijk.map(|x| x as f64 + 0.5);
    let at = |g: [f64; 3]| [0, 1, 2].map(|a| lo[a] + g[a] * h);
    let offset = |k: usize| (k as f64 + 0.5) / s as f64 * 2.0 - 1.0;
    // Blocks of 2 samples per axis: their centres' offsets, the farthest sample from a centre
    // (half the spacing on each axis), and each block's verdict once found (0 not yet, 1 every
    // sample open, 2 every sample closed, 3 each sample its own).
    let blocks = exact && s.is_multiple_of(2) && s <= 2 * BLOCKS;
    let (mut verdict, half) = ([0u8; BLOCKS * BLOCKS * BLOCKS], 3f64.sqrt() / s as f64 * h);
    // Margin for the evaluations' rounding (far below any distance that matters).
    let slack = 1e-6 * h;
    let (mut open, mut total) = (0.0f64, 0.0f64);
    for sz in 0..s {
        let oz = offset(sz);
        for sy in 0..s {
            let oy = offset(sy);
            for sx in 0..s {
                let ox = offset(sx);
                let w = (1.0 - ox.abs()) * (1.0 - oy.abs()) * (1.0 - oz.abs());
                total += w;
                let g = [c[0] + ox, c[1] + oy, c[2] + oz];
                let inside = (0..3).all(|a| g[a] > 1.0 && g[a] < (n[a] - 1) as f64);
                if !inside {
                    continue;
                }
                let is_open = if blocks {
                    let b = [sx / 2, sy / 2, sz / 2];
                    let v = &mut verdict[b[0] + BLOCKS * (b[1] + BLOCKS * b[2])];
                    if *v == 0 {
                        let centre = b.map(|x| (2 * x + 1) as f64 / s as f64 * 2.0 - 1.0);
                        let pb = phi(at([0, 1, 2].map(|a| c[a] + centre[a])));
                        *v = if pb - half - slack >= eps {
                            1
                        } else if pb + half + slack < eps {
                            2
                        } else {
                            3
                        };
                    }
                    match *v {
                        1 => true,
                        2 => false,
                        _ => phi(at(g)) >= eps,
                    }
                } else {
                    phi(at(g)) >= eps
                };
                if is_open {
                    open += w;
                }
            }
        }
    }
    ((open / total) as f32).max(MIN_SHARE)
}

/// Most blocks per axis of [`sample_share`]'s blocked sampling (8 samples per axis).
const BLOCKS: usize = 4;

/// Fills `share` (one per cell) from the cell-centre distances `cell_phi` (m; a lower bound is
/// enough) and the solids' distance `phi` at a point (m), with `samples` points per axis, in
/// the cells `only` names (the others get 1, or keep their value when `lazy`); with `lazy`,
/// only cells still holding NaN (not computed yet) are computed. `exact`: as
/// [`sample_share`]'s.
pub fn kernel_open_share(
    d: &GridDims,
    cell_phi: &[f32],
    phi: &(dyn Fn([f64; 3]) -> f64 + Sync),
    (samples, exact): (usize, bool),
    only: ShareCells<'_>,
    lazy: bool,
    share: &mut [f32],
) {
    let n = d.n;
    share
        .par_chunks_mut(n[0])
        .zip(cell_phi.par_chunks(n[0]))
        .enumerate()
        .for_each(|(row, (out, cp))| {
            let (j, k) = (row % n[1], row / n[1]);
            for (i, (o, &pc)) in out.iter_mut().zip(cp).enumerate() {
                let c = i + n[0] * row;
                if !only.wants(d, c) || (lazy && !o.is_nan()) {
                    if !lazy {
                        *o = 1.0;
                    }
                    continue;
                }
                *o = if kernel_gate(d, only, c, pc) {
                    sample_share(d, phi, samples, exact, [i, j, k])
                } else {
                    1.0
                };
            }
        });
}
