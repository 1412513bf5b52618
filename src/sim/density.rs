//! Density correction: keeping the particles' volume.
//!
//! FLIP keeps the grid velocity divergence-free, but nothing keeps the particles evenly spread:
//! interpolation and time-stepping errors let them drift together, so over seconds a pool packs
//! denser (the liquid "loses volume", about 10% in 3 s of a dam break at CFL 3 without this)
//! while its top turns to sparse froth. Following Kugelstadt, Longva, Thuerey & Bender (2019),
//! "Implicit density projection for volume conserving liquids", IEEE TVCG 27(4), each substep
//! also solves a Poisson problem for a position correction:
//!
//! - the particle density at cell centres is splatted with the velocity splat's trilinear
//!   weights, `rho_c = sum_p w(x_p - x_c)` ([`splat_density`]); the rest density is the seeding
//!   density, 8 per cell, times 7/8 per axis along which the cell touches the wall layer (the
//!   kernel's share that falls in the wall, where no particle can be); a sliver next to an
//!   obstacle (a cell whose kernel lies mostly in the solid) has its own rest density from its
//!   kernel's open share, with slack ([`super::rest_share`]);
//! - `A q = e_c h` with the pressure matrix `A` (same cells, walls Neumann, air `q = 0`) and
//!   `e_c = rho_c / rho_rest - 1`, taken both ways in cells whose neighbours are all liquid or
//!   wall and only when positive (over-dense) at the surface, where the kernel sees air;
//! - particles move by the displacement `-grad q` (m) interpolated from the faces, which makes
//!   each cell's net outflow of volume equal to its excess `e_c h^3`. Velocities are untouched,
//!   so the correction adds no momentum or energy.
//!
//! The solve reuses the projection's preconditioner (`solver.pressure_preconditioner`, the
//! multigrid by default) and is stopped at a relative
//! residual of [`TOLERANCE`] or after [`MAX_ITERATIONS`]: it is a correction, applied again in
//! every substep (or every `solver.volume_correction_interval` of simulated time, see
//! [`correction_due`]), measured and applied where the particles were splatted, before they
//! move; so it depends on simulated time, not on the frame rate (issue 19). Its strength
//! `solver.volume_correction` scales the displacement (1 moves each cell's whole excess; 0 is
//! off).
//!
//! Why this rather than what other FLIP solvers add: Mantaflow keeps each cell's particle count
//! between bounds by deleting particles from crowded cells and seeding new ones in sparse ones
//! (`adjustNumber`), and Houdini's FLIP reseeds by particle separation; both change the particle
//! count (surge's particles are its state: checkpoints, exact resume and the tests count them)
//! and reseeding invents velocities. The position correction keeps the count, the momentum and
//! the determinism, and it is the same Poisson matrix as the projection. What it does not stop:
//! a crowd made within one substep (a splash thrown against a wall, clamped onto the wall
//! margin) is only spread by the next substeps' corrections, so a frame could still show a few
//! cells at several times the seeding density; [`super::crowding`] bounds those (moving the
//! excess to emptier cells nearby, or removing it; README, "Volume").
//!
//! Standing waves (issue 19, session 9): the correction was suspected of damping a small
//! sloshing wave, since the wave lost more with the multigrid preconditioner (which brings this
//! solve to its tolerance in 3-4 iterations) than with MIC(0) (which often stops at the cap).
//! It was not the damper: with the ghost-fluid surface read from the fill fractions
//! ([`super::ghost_fluid`]) the wave loses 0.43% of its amplitude per period at 64 cells per
//! wavelength with either preconditioner, and 2.49% with the correction off (`cargo bench
//! --bench slosh_loss`, APIC, mean of five seeds): it keeps the particles evenly spread, which
//! the surface's fill fractions rely on. So the correction is unchanged: no dead band (a
//! settled pool's density noise is what it removes, and the surface reads it), no fixed
//! iteration count. The ghost-fluid surface splats the density before the projection, and the
//! correction then reuses that splat (the particles have not moved).

use super::cell_sort::SortedParticles;
use super::mac_grid::GridDims;
use super::sync_ptr::SyncPtr;
use rayon::prelude::*;

/// Rest density: particles per cell as seeded (2 x 2 x 2).
pub const REST_DENSITY: f32 = 8.0;

/// The share of a cell's density kernel open to particles next to the domain's wall layer:
/// the kernel reaches 1/8 of its mass into an adjacent wall layer per axis, where no particle
/// can be, so 7/8 per axis along which cell `ijk` of a grid of `n` cells touches it.
/// The powers `0.875^w` are exact in `f32` (`7^w / 8^w`), so a table gives the same bits as
/// `0.875f32.powi(w)` without the call.
#[inline]
pub fn wall_open_share(n: [usize; 3], ijk: [usize; 3]) -> f32 {
    const SHARE: [f32; 4] = [1.0, 0.875, 0.875 * 0.875, 0.875 * 0.875 * 0.875];
    let walls: usize = (0..3)
        .map(|a| (ijk[a] == 1 || ijk[a] + 2 == n[a]) as usize)
        .sum();
    SHARE[walls]
}

/// Relative tolerance of the correction's Poisson solve.
pub const TOLERANCE: f64 = 1e-3;

/// Iteration cap of the correction's solve. The correction runs every substep, so what one
/// solve leaves is taken up by the next: without the cap the solve took 25 iterations on
/// average on the 1M-particle dam break (its right-hand side is small once the liquid is
/// corrected, and the tolerance is relative), with it 8 at most, and the volume and the
/// collapsing column came out the same (`cargo bench --bench validate_physics`).
pub const MAX_ITERATIONS: u32 = 8;

/// Whether the substep from time `ta` to `tb` (s, absolute simulated time) makes a volume
/// correction (after its projection, where the particles were splatted): every substep when
/// `solver.volume_correction_interval` is 0, otherwise the substeps that reach a multiple of the
/// interval `every` (so the corrections follow simulated time, whatever the frame rate); never
/// when the `strength` (`solver.volume_correction`) is 0.
pub fn correction_due(strength: f64, every: f64, ta: f64, tb: f64) -> bool {
    if strength <= 0.0 {
        return false;
    }
    if every <= 0.0 {
        return true;
    }
    // Multiples reached; the small offset makes a substep that ends on a multiple (to rounding)
    // count it, and the next one not.
    let k = |t: f64| (t / every + 1e-6).floor();
    k(tb) > k(ta)
}

/// Particle density at cell centres: `rho_c = sum_p w(x_p - x_c)`, the same trilinear hat
/// weights as the velocity splat (so a cell seeded with 2 x 2 x 2 particles, surrounded by like
/// cells, has `rho = 8`). Each particle is visited once, in sorted order, and adds to the eight
/// cell centres around it, which lie in the z-planes `c - 1 ..= c + 1` of its cell plane `c`;
/// the cell planes run in three colours (`c mod 3`) whose planes write disjoint z-planes, in
/// parallel within a colour, so every cell sums its contributions in the same order for any
/// thread count.
#[allow(clippy::needless_range_loop)]
pub fn splat_density(d: &GridDims, sp: &SortedParticles, rho: &mut [f32]) {
    let plane = d.n[0] * d.n[1];
    let nz = d.n[2];
    let pos = &sp.pos;
    rho.par_chunks_mut(plane)
        .for_each(|rp| rp.iter_mut().for_each(|x| *x = 0.0));
    // Every particle lies inside the wall layer, `g` (its position in cell-centre units) in
    // `[0.5, n - 1.5]` per axis, so its lower stencil corner is at most cell n - 2 and all
    // eight corners are in the grid; `g` is clamped to that range all the same (a no-op for
    // such particles) so that no position can write out of bounds, checked once here rather
    // than per write.
    let top = d.n.map(|n| n as f32 - 1.5);
    assert!(
        d.n.iter().all(|&n| n >= 2) && rho.len() >= d.cells(),
        "splat_density: density grid smaller than the cells"
    );
    let out = SyncPtr(rho.as_mut_ptr());
    #[cfg(target_arch = "x86_64")]
    let vector = std::is_x86_feature_detected!("avx2") && d.cells() < i32::MAX as usize;
    for colour in 0..3 {
        let planes = (nz + 2 - colour) / 3;
        // One task per plane, so that a free thread takes the next plane: the planes' counts
        // differ widely (the liquid's bottom against its sparse top), and the default split
        // into one half per thread left one thread waiting at every colour.
        (0..planes).into_par_iter().with_max_len(1).for_each(|m| {
            let c = colour + 3 * m;
            let s0 = sp.cell_start[d.cell(0, 0, c)] as usize;
            let s1 = sp.cell_start[d.cell(0, 0, c + 1)] as usize;
            #[allow(unused_mut)]
            let mut done = s0;
            #[cfg(target_arch = "x86_64")]
            if vector {
                // SAFETY: the CPU has AVX2, the cell indices fit in i32 (both checked above);
                // the writes as below.
                done += unsafe { super::displace_avx2::splat_density8(d, pos, s0, s1, top, out) };
            }
            // SAFETY: the grid holds d.cells() (checked above); a particle of cell plane c
            // writes only z-planes c - 1 ..= c + 1, and the planes of one colour are three
            // apart, so no two tasks of a colour write the same cell.
            unsafe { splat_particles(d, pos, done, s1, top, out) };
        });
    }
}

/// The density splat of the particles in slots `s0..s1` (the scalar loop): `g` (the position
/// in cell-centre units) clamped to `[0, top]`, the eight cell centres around it each get
/// their trilinear weight, in the order `(z, y, x)` corner by corner.
///
/// # Safety
/// `out` holds the grid's cells, `top[a] <= n[a] - 1.5`, and no task running at the same time
/// writes the cells these particles reach.
#[inline(always)]
pub(super) unsafe fn splat_particles(
    d: &GridDims,
    pos: &[Vec<f32>; 3],
    s0: usize,
    s1: usize,
    top: [f32; 3],
    out: SyncPtr<f32>,
) {
    let inv = 1.0 / d.h;
    let (nx, plane) = (d.n[0], d.n[0] * d.n[1]);
    let (px, py, pz) = (&pos[0][s0..s1], &pos[1][s0..s1], &pos[2][s0..s1]);
    for ((&x, &y), &z) in px.iter().zip(py).zip(pz) {
        let g = |p: f32, a: usize| ((p - d.lower[a]) * inv - 0.5).max(0.0).min(top[a]);
        let (gx, gy, gz) = (g(x, 0), g(y, 1), g(z, 2));
        // SAFETY: each g is in [0, n - 1.5] (clamped; NaN became 0), so the truncation is
        // exact and in range. Particles are inside the wall layer, so g >= 0.5: truncation is
        // floor.
        let (i0, j0, k0) = unsafe {
            (
                gx.to_int_unchecked::<u32>() as usize,
                gy.to_int_unchecked::<u32>() as usize,
                gz.to_int_unchecked::<u32>() as usize,
            )
        };
        let (fx, fy, fz) = (gx - i0 as f32, gy - j0 as f32, gz - k0 as f32);
        let base = i0 + nx * j0 + plane * k0;
        let w = [
            (1.0 - fx) * (1.0 - fy),
            fx * (1.0 - fy),
            (1.0 - fx) * fy,
            fx * fy,
        ];
        let offs = [0, 1, nx, nx + 1];
        for (kz, wz) in [(0, 1.0 - fz), (plane, fz)] {
            for q in 0..4 {
                // SAFETY: in bounds (the corner is at most n - 2 per axis); exclusive (the
                // caller's contract).
                unsafe { *out.get(base + kz + offs[q]) += wz * w[q] };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::correction_due;

    /// The table of `wall_open_share` holds `0.875^w` bit for bit.
    #[test]
    fn wall_share_table_is_the_power() {
        let n = [10, 10, 10];
        for (ijk, w) in [
            ([4, 4, 4], 0),
            ([1, 4, 4], 1),
            ([1, 8, 4], 2),
            ([8, 1, 1], 3),
        ] {
            let s = super::wall_open_share(n, ijk);
            assert_eq!(s.to_bits(), 0.875f32.powi(w).to_bits(), "{ijk:?}");
        }
    }

    /// With an interval, the corrections follow simulated time: over 1 s cut into substeps
    /// of any length no longer than the interval, there is one per multiple of it; off means
    /// none, 0 means every substep.
    #[test]
    fn corrections_follow_simulated_time() {
        for (frames_per_s, subs) in [(24u32, [5u32, 7]), (60, [2, 3]), (400, [1, 3])] {
            for sub in subs {
                let n = frames_per_s * sub;
                let dt = 1.0 / n as f64;
                let count = (0..n)
                    .filter(|&i| correction_due(1.0, 0.01, i as f64 * dt, (i + 1) as f64 * dt))
                    .count();
                assert_eq!(count, 100, "{frames_per_s} fps x {sub} substeps");
                let every = (0..n)
                    .filter(|&i| correction_due(0.5, 0.0, i as f64 * dt, (i + 1) as f64 * dt))
                    .count();
                assert_eq!(every, n as usize);
                assert!(!(0..n).any(|i| correction_due(0.0, 0.0, i as f64 * dt, 1.0)));
            }
        }
    }
}
