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
//! to [`THETA_MIN`] (Enright et al.'s safeguard; a surface through the fluid cell's centre
//! would give an infinite coefficient).
//!
//! Where the surface is: from the particles' density at the cell centres, the same trilinear
//! splat as the volume correction's (`super::density::splat_density`), as a fill fraction
//! `f_c = rho_c / rho_rest` (the rest density with the wall layer's share taken off, as there).
//! For liquid at rest density filling everything below a plane between the centres of a
//! fluid cell `c` and its air neighbour `a` (surface a distance `theta h` from `c`'s centre),
//! the hat kernel gives `f_c = 1 - (1 - theta)^2 / 2` and `f_a = theta^2 / 2`, so
//!
//! `theta = f_c + f_a - 1/2`,
//!
//! linear in the particles' weights: the surface moves continuously with the particles, and
//! the estimate averages the some twenty particles of the two kernels rather than taking the
//! nearest one. A cell is fluid for the pressure only while its centre is inside the liquid
//! (`f_c >= 1/2`): a surface cell (holding particles, with an air neighbour) whose fill is
//! below one half, next to a fluid cell whose fill is not, is labelled air for the substep
//! ([`demote_surface_slivers`]; its particles take the extrapolated velocity, as particles in
//! air do). So when the surface rises through an air cell's centre, that cell turns fluid just
//! as the `theta` towards it reaches 1, and its own `theta` towards the air above starts from
//! the clamp: `p = 0` is where the surface is on both sides of the change, and the projection
//! sees no jump.
//!
//! Next to an obstacle part of the kernel lies in the solid (or within the push-out distance
//! of it), where no particle can be, so the rest density is the seeding density times the
//! kernel's open share `s_c` ([`super::rest_share`], computed here at the fluid cells and
//! their neighbours), as the density correction's slivers use it: `f_c = rho_c / (8 s_c)`, a
//! kernel-normalised (Shepard) estimate, exact beside a solid wall perpendicular to the surface
//! (the kernel is a product, and the wall cuts only its horizontal factors). Without it
//! (before session 9's obstacle tests, `tests/obstacles_ghost_fluid.rs`) the liquid along an
//! obstacle read as a film: a cell a cell under the surface read a fill of 0.36, 8 to 26 liquid
//! cells along a box piercing the surface were labelled air, and that tank stirred to an rms
//! speed of 4.3e-3 m/s after 2 s; with it the fill there reads at least 0.72, no liquid cell
//! at the obstacle is labelled air, and the rms speed is 1.5e-3 m/s (the same tank without
//! the box: 6e-4 m/s at 3 s). Still open: the first frames' currents next to an obstacle peak
//! higher than without it (rms 1.06e-2 m/s at frame 2 around the box, 1.5e-2 in a sphere).
//!
//! Why this and not the particle level set of Zhu & Bridson (2005) it replaces (session 9,
//! issue 19): the former measured `phi_a = min_p |x_a - x_p| - h / 4` at the air cells and
//! took `theta = 1 - phi_a / h`, with any cell holding a particle fluid. A particle crossing
//! into an air cell turned it fluid with the surface moved to that cell's centre at once (the
//! `theta` towards its new air neighbour clamped), a jump of a quarter cell in the surface's
//! position, every time a particle crossed a face; each jump is a change of the projection's
//! domain, and projecting a field onto a new domain removes kinetic energy. On the standing
//! wave of `scripts/sloshing.rs` (APIC, 64 cells per wavelength, mean of seeds 1-5, `cargo
//! bench --bench slosh_loss`) that cost about 5% of the amplitude per period; see the README
//! ("Free surface") for the figures with this surface.

use super::cell_sort::SortedParticles;
use super::mac_grid::{CellLabel, GridDims};
use rayon::prelude::*;

/// Smallest `theta` (fraction of a cell from the fluid cell's centre to the surface): the
/// diagonal gains at most `1 / THETA_MIN - 1`. With the particle level set a clamp of 0.05
/// damped waves (the surface jumped to it whenever a particle crossed a face); with the fill
/// fraction `theta` reaches it only when a fluid cell holds a thin sheet or a drop.
pub const THETA_MIN: f64 = 0.001;

/// `theta` between a fluid cell of fill `f_fluid` and its air neighbour of fill `f_air`.
#[inline]
pub fn theta(f_fluid: f32, f_air: f32) -> f64 {
    (f_fluid as f64 + f_air as f64 - 0.5).clamp(THETA_MIN, 1.0)
}

/// Before the faces are classified: the particles' density `rho` splatted, every cell's
/// fill fraction, and the surface's slivers labelled air ([`fill_fraction`],
/// [`demote_surface_slivers`]; `mark` is their scratch).
pub fn place_surface(
    d: &GridDims,
    sp: &SortedParticles,
    share: Option<&[f32]>,
    rho: &mut [f32],
    fill: &mut [f32],
    labels: &mut [CellLabel],
    mark: &mut [bool],
) {
    super::density::splat_density(d, sp, rho);
    fill_fraction(d, rho, share, fill);
    demote_surface_slivers(d, fill, labels, mark);
}

/// The fill fraction `f = rho / rho_rest` of every cell from the splatted density `rho`:
/// `rho_rest` is the seeding density times the share of the cell's kernel open to particles,
/// 7/8 per axis along which the cell touches the wall layer (as in the volume correction) or,
/// next to an obstacle, `share` ([`super::rest_share`], which takes off the wall layer too;
/// 1 or NaN where not computed, far from the obstacles).
pub fn fill_fraction(d: &GridDims, rho: &[f32], share: Option<&[f32]>, fill: &mut [f32]) {
    let n = d.n;
    let plane = n[0] * n[1];
    let rest = super::density::REST_DENSITY;
    fill.par_chunks_mut(plane)
        .zip(rho.par_chunks(plane))
        .enumerate()
        .with_min_len(1)
        .for_each(|(k, (out, rp))| {
            for j in 0..n[1] {
                for i in 0..n[0] {
                    let c = i + n[0] * j;
                    let mut open = super::density::wall_open_share(n, [i, j, k]);
                    if let Some(s) = share.map(|s| s[c + plane * k])
                        && s < open
                    {
                        open = s;
                    }
                    out[c] = rp[c] / (rest * open);
                }
            }
        });
}

/// Labels air, for this substep, every fluid cell whose centre lies outside the liquid
/// (`fill < 1/2`) that touches an air cell across a face and a fluid cell whose centre is
/// inside (`fill >= 1/2`): the surface's slivers, not drops or thin sheets (whose cells keep
/// their own velocity). The decisions read `labels` as given (a cell demoted here does not
/// make its neighbour a surface cell); `mark` is scratch of one entry per cell.
pub fn demote_surface_slivers(
    d: &GridDims,
    fill: &[f32],
    labels: &mut [CellLabel],
    mark: &mut [bool],
) {
    let n = d.n;
    let plane = n[0] * n[1];
    let steps = [1, n[0], plane];
    {
        let labels = &*labels;
        mark.par_chunks_mut(plane)
            .enumerate()
            .with_min_len(1)
            .for_each(|(k, out)| {
                for j in 0..n[1] {
                    for i in 0..n[0] {
                        let c = d.cell(i, j, k);
                        let o = &mut out[i + n[0] * j];
                        *o = false;
                        if labels[c] != CellLabel::Fluid
                            || fill[c] >= 0.5
                            || d.is_wall_cell(i, j, k)
                        {
                            continue;
                        }
                        let nbs = steps.iter().flat_map(|&s| [c - s, c + s]);
                        let air = nbs.clone().any(|m| labels[m] == CellLabel::Empty);
                        let inside = nbs
                            .clone()
                            .any(|m| labels[m] == CellLabel::Fluid && fill[m] >= 0.5);
                        *o = air && inside;
                    }
                }
            });
    }
    labels
        .par_iter_mut()
        .zip(mark.par_iter())
        .with_min_len(4096)
        .for_each(|(l, &m)| {
            if m {
                *l = CellLabel::Empty;
            }
        });
}

#[cfg(test)]
mod tests {
    use super::theta;

    /// A flat surface at rest density between the centres of a fluid cell and the air cell
    /// above: the hat kernel's fills `1 - (1 - s)^2 / 2` and `s^2 / 2` give `theta = s` for
    /// every height `s` (cells) of the surface above the fluid cell's centre.
    #[test]
    fn theta_recovers_a_flat_surface() {
        for s in [0.01f64, 0.25, 0.5, 0.75, 0.99] {
            let fc = 1.0 - (1.0 - s) * (1.0 - s) / 2.0;
            let fa = s * s / 2.0;
            assert!((theta(fc as f32, fa as f32) - s).abs() < 1e-6, "{s}");
        }
        assert_eq!(theta(0.3, 0.0), super::THETA_MIN);
        assert_eq!(theta(1.2, 0.5), 1.0);
    }
}
