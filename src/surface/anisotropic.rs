//! Anisotropic-kernel level set (Yu & Turk 2013) with thin-feature and wall-film floors.
//!
//! **Kernels: Yu & Turk 2013** ("Reconstructing surfaces of particle-based fluids using
//! anisotropic kernels", ACM TOG 32(1), sections 3-5):
//! 1. *Position smoothing* (kernel centre `x̄_i = (1 - λ) x_i + λ Σ w_ij x_j / Σ w_ij`): not
//!    done, `x̄_i = x_i`. Measured with the Zhu-Bridson form below on the default dam break
//!    (`cargo bench --bench surface_fidelity`), λ = 0.3 / 0.9 lowered the mesh volume at the
//!    splash (frame 20) from 0.83 to 0.79 / 0.68 N s^3, left more particles outside, and did not
//!    flatten a settled pool (RMS height 2.5 -> 2.8 / 2.9 mm at 0.05 m cells).
//! 2. *Covariance*: `C_i = Σ w_ij (x_j - x^w_i)(x_j - x^w_i)^T / Σ w_ij` about the weighted mean
//!    `x^w_i`; its eigen-decomposition (closed form, [`eigen`]) gives the neighbourhood's
//!    principal axes and spreads `σ_1 >= σ_2 >= σ_3`: one small σ on a sheet or a calm surface,
//!    two on a filament.
//! 3. *Stretched kernels*: particle `i`'s kernel is the ellipsoid with radii
//!    `ρ_k = R σ'_k / (σ'_1 σ'_2 σ'_3)^(1/3)`, `σ'_k = max(σ_k, σ_1 / k_r)` (the paper's clamp,
//!    `k_r = 4`; dividing by the geometric mean keeps the kernel's volume, where the paper scales
//!    by a constant `k_s`, so interior kernels stay spheres of radius `R`). Fewer than `N_ε`
//!    neighbours: an isotropic kernel of radius `k_n R` (the paper's isolated-particle rule).
//!
//! **Level set**: not the paper's SPH density iso-surface but the Zhu-Bridson form of
//! [`super::level_set`] with these kernels as weights, `k_i(x) = det(G_i) P(|G_i (x - x̄_i)|)`,
//! `P(q) = (1 - q²)^3`, `phi = |x - Σ k_i x̄_i / Σ k_i| - r`. Why: with a kernel support of about
//! two particle spacings (the default, for speed), the density sum fluctuates by ±30% inside a
//! seeded ball (measured: 0.65-1.22 of the rest value), which leaves air pockets and a bumpy
//! surface, while the normalised Zhu-Bridson average is steady.
//!
//! **Thin-feature floor** (our addition): the mesh lattice cannot carry a
//! feature thinner than its spacing `h` (a one-particle sheet between two lattice planes, a
//! droplet between eight points vanishes, and whether it does depends on the lattice offset).
//! Particles in sparse neighbourhoods (fewer than [`N_THIN`] within `R`: sheets, filaments,
//! droplets, spray) also contribute their own ellipsoid along the kernel's axes, with
//! semi-axes at least `0.75 h` across a sheet, `0.8 h` across a filament and `0.9 h` for a
//! droplet (above `h / 2`, `h / √2`, `√3 h / 2`, the half-thicknesses that always contain a
//! lattice point, with room for the joints between neighbours) and at least [`FLOOR_REACH`]
//! times the particle's volume radius scaled by the kernel's shape along the others;
//! `phi = min(phi, (|F (x - x̄)| - 1) a_min)`.
//!
//! **Wall films** (our addition): the liquid region's walls lie on lattice planes, which the
//! wall clip makes air, so a film thinner than one cell on a wall (the front running along the
//! floor, the sheet climbing the far wall of a dam break) had no inside sample and vanished.
//! A particle within one cell of a wall adds an axis-aligned ellipsoid that covers the first
//! lattice plane inside the wall ([`WALL_CENTRE`], [`WALL_ACROSS`], [`WALL_ALONG`]).
//!
//! **Cost** (a narrow band, as splashsurf's subdomains do; our own form): particles
//! are binned into the blocks of the sparse grid first; blocks deep inside the liquid
//! ([`is_deep`]: every 4³-cell density cube in and around the block at least [`DEEP_DENSITY`]
//! full) get `phi = -r` and their particles' mean velocity without a splat, blocks a cell or
//! more beyond a wall plane get air; kernels are only computed for particles next to a block
//! that is splatted. The neighbour
//! search walks cells of size `R` over positions copied in cell order (struct of arrays, one
//! contiguous slice per cell row); a first pass only counts neighbours and stops at
//! [`N_FULL`] (most particles: a sphere kernel, no covariance, no eigen-solve). A wall mirror's
//! kernel is its particle's reflected across the wall ([`MirrorOf`]; its neighbourhood is the
//! reflection of the particle's, short of the mirrors not made beyond the reach), with its own
//! wall film. Sphere kernels are tagged, not stored; the splat ([`splat`]) sums a block row at
//! a time, and only into the points within two cells of the liquid region (the mesh never reads
//! farther ones), so most of a mirror's support is skipped. Measured on frame 20 of the 1M
//! dam break (`cargo bench --bench surface`, 2 threads, machine otherwise idle): 2.40-2.54x
//! faster than splashsurf at the end of session 6 (issue 14's target is 3x), process CPU
//! 1.54 -> 0.95 s; session 7 (`surge mesh` of that frame, `/usr/bin/time`, 2 threads, ten runs
//! alternating with the session-6 binary): 0.95 -> 0.91 s (kernels decided per block);
//! session 8 (ten rounds alternating with the session-7 binary): median 0.915 -> 0.875 s (the
//! floor and the wall clip in the splat's own loop, the counting sorts parallel; same bytes).
//! A second splat pass for the velocities, over only the rows marching cubes reads
//! (28% of the splatted rows), was tried and dropped: the first pass got 55 ms cheaper, but the
//! second's walk over the 27 neighbour blocks' particles cost 130 ms. Session 9 (ten rounds
//! alternating with the session-8 binary, 2 threads, shared 2-core machine): median 0.850 ->
//! 0.810 s (huge pages for the big arrays: the binary's allocator, `cli/alloc.rs`; the position
//! copies in one pass; same bytes). Tried there and dropped (same bytes, no gain or a loss): a
//! row-major splat (per-row kernel lists, sums in registers: the splat is bound by the walk's
//! scattered reads of velocities and ellipsoids, not by the accumulator stores; 0.875 -> 0.95
//! s), and the velocities gathered once in binned order for the splat (the misses moved there).
//! Session 10 (`surge mesh` of that frame, callgrind at one thread): 6.83G -> 6.26G
//! instructions (the closed-form eigen-solve, [`eigen`]; the neighbour sums in AVX2
//! intrinsics; `array::map` calls that were not inlined into the AVX2 code; mesh bytes change
//! at rounding level, fidelity figures unchanged); process CPU (user + system, ten rounds
//! alternating with the session-9 binary, 2-core machine shared with other jobs, load ~7):
//! median 0.80 -> 0.78 s at one thread, 0.86 -> 0.82 s at two. Session 11: 6.30G -> 5.50G
//! instructions; ten rounds alternating with the session-10 binary, 2 threads: median wall
//! 0.475 -> 0.385 s, CPU 0.83 -> 0.70 s (one thread 0.85 -> 0.69 s); `cargo bench --bench
//! surface` alternating both: 2.74-3.05x -> 3.26-3.62x splashsurf's speed, five rounds
//! (sphere rows without cross terms; seven sums a row, not eight; AVX2 + POPCNT neighbour
//! counts; no zeroing of arrays written in full; same positions, normals, faces; see git log).
//!
//! Splatting works as in [`super::level_set`]: per block, particles in a fixed order, so the
//! bytes do not depend on the thread count.

use super::level_set::{LevelSet, Params};
use super::sparse_grid::{B, BP, Points, SparseGrid, assume_init, uninit};
use rayon::prelude::*;

mod cells;
mod deep;
mod eigen;
mod kernel;
mod splat;
use cells::Cells;
pub use deep::{CUBE, DEEP_DENSITY};
use deep::{cube_counts, is_deep};
use kernel::{Consts, kernel_of};

/// Largest ratio between a kernel's longest and shortest axis (Yu & Turk's k_r = 4).
pub const MAX_RATIO: f32 = 4.0;
/// Fewer neighbours (itself included) than this: isotropic kernel of radius `k_n R`. Two
/// particles already make a (short) filament; the clamp [`MAX_RATIO`] bounds the distortion
/// a noisy covariance of few neighbours can cause.
pub const N_EPS: usize = 2;
/// At least this many neighbours (a full neighbourhood holds about 33 at the default R of
/// two spacings, a calm surface's top layer about 20): an interior particle, whose kernel is
/// the sphere of radius R without computing the covariance's eigenvectors (most of the cost).
pub const N_FULL: usize = 28;
/// Floor semi-axes along a kernel's long axes, times the particle's volume radius and the
/// kernel's stretch: 1.3 makes neighbouring floors of a sheet or filament (one spacing apart,
/// jittered) overlap so that their joint is still thicker than the lattice needs.
pub const FLOOR_REACH: f32 = 1.3;
/// Isotropic kernel radius of isolated particles as a fraction of R (k_n): 0.5 at the default
/// R of about 2 particle spacings maximises a lone particle's blob (radius 0.56 spacing).
pub const ISOLATED_SCALE: f32 = 0.5;
/// Fewer neighbours than this: the particle also gets a thin-feature floor ellipsoid.
/// A single-layer sheet has about 12 within R, a calm surface particle 17 or more.
pub const N_THIN: usize = 15;
pub use super::level_set::MAX_STRETCH;
/// `∫ (1 - q²)^3` over the unit ball, `64 π / 315` (normalises the kernel weights so that
/// stretched and isotropic kernels weigh the same per particle).
const KERNEL_INTEGRAL: f32 = 0.638_278_5;

/// One particle's kernel: centre, metric `M` (`q² = dᵀ M d`, 1/m²), amplitude, floor
/// metric `F`, floor scale (m, 0 = no floor) and half-extents of the bounding box (m).
#[derive(Clone, Copy)]
struct Kernel {
    m: [f32; 6],
    amp: f32,
    f: [f32; 6],
    fs: f32,
    ext: [f32; 3],
    /// Half-extents of the kernel and floor alone (without the wall film).
    core_ext: [f32; 3],
    /// Wall film ellipsoid: axis (3 = none) and its centre's offset from the kernel centre
    /// along that axis (m; grid units once binned).
    wall_axis: u8,
    wall_offset: f32,
}

/// Wall film ellipsoid of a particle within one mesh cell of a wall, in cells: centre this far
/// from the wall, semi-axes across and along the wall. It covers the first lattice plane inside
/// the wall (1 cell) with an in-plane radius of 0.87 cells, so a one-particle film on a wall
/// is meshed and capped on the wall instead of vanishing between the wall plane and the next.
pub const WALL_CENTRE: f32 = 0.6;
pub const WALL_ACROSS: f32 = 0.8;
pub const WALL_ALONG: f32 = 1.0;

/// `dᵀ S d` for a symmetric `S` stored as `[xx, yy, zz, xy, xz, yz]`.
#[inline(always)]
fn quad(s: &[f32; 6], d: [f32; 3]) -> f32 {
    s[0] * d[0] * d[0]
        + s[1] * d[1] * d[1]
        + s[2] * d[2] * d[2]
        + 2.0 * (s[3] * d[0] * d[1] + s[4] * d[0] * d[2] + s[5] * d[1] * d[2])
}

/// Which input particles are wall mirrors ([`super::level_set::mirrored`]): the first
/// `originals` are the liquid's, mirror `j` (input `originals + j`) images particle
/// `source[j]` across the axes of `mask[j]`.
#[derive(Clone, Copy)]
pub struct MirrorOf<'a> {
    pub originals: usize,
    pub source: &'a [u32],
    pub mask: &'a [u8],
}

/// Kernel tag of a binned particle: no kernel (not near a splatted block).
const NO_KERNEL: u32 = u32::MAX;
/// Kernel tag: the sphere of radius R (a full neighbourhood; most particles).
const SPHERE: u32 = u32::MAX - 1;

/// Samples the anisotropic level set of `pos`/`vel` (wall mirrors already added by
/// [`super::level_set::mirrored`], described by `mirrors`), before any blur and the wall clip.
///
/// Order: bin the particles into blocks; mark the blocks that need no splat ([`Skip`]: deep
/// inside the liquid or beyond a wall); compute the kernels of the particles near a block that
/// does (in binned order, grid units); a wall mirror's kernel is its particle's reflected
/// across the walls (its neighbourhood is the reflection of the particle's, up to the mirrors
/// not made beyond the reach), with its own wall film; splat those blocks.
pub fn build(pos: Points, vel: Points, p: &Params, mirrors: Option<MirrorOf>) -> LevelSet {
    let reach = p.reach().max(p.cell);
    // Velocities are read in place, through `grid.order` (the splat reads them only for the
    // kernels it sums).
    let grid = SparseGrid::new(pos, None, p.cell, p.region_lo, p.region_hi, reach);
    let nb = grid.blocks.len();
    // Particles per mesh cell at rest density (one per `4/3 π r³`).
    let per_cell = (p.cell.powi(3) / (4.0 / 3.0 * std::f64::consts::PI * p.radius.powi(3))) as f32;
    let counts = cube_counts(&grid);
    let min = DEEP_DENSITY * per_cell * (CUBE * CUBE * CUBE) as f32;
    let skip: Vec<Skip> = (0..nb)
        .into_par_iter()
        .map(|s| {
            let dense = grid.blocks[s];
            let bc = grid.coords(dense);
            // Every point at least one cell beyond a wall plane (outside the liquid region).
            let beyond = (0..3).any(|a| {
                let first = (grid.origin[a] + bc[a] * B as i64) as f64 * p.cell;
                let last = first + (B - 1) as f64 * p.cell;
                last <= p.region_lo[a] - 0.999 * p.cell || first >= p.region_hi[a] + 0.999 * p.cell
            });
            if beyond {
                Skip::Beyond
            } else if per_cell >= 0.5 && is_deep(&grid, &counts, dense, min) {
                Skip::Deep
            } else {
                Skip::No
            }
        })
        .collect();
    drop(counts);
    // Particles in blocks next to a splatted one (a kernel reaches at most one block:
    // `reach < B` cells) need a kernel.
    let reach_g = (reach / p.cell) as f32;
    debug_assert!(reach_g < B as f32);
    let mut needed = vec![false; grid.particle_count()];
    block_slices(&grid, &mut needed)
        .into_par_iter()
        .enumerate()
        .for_each(|(s, out)| {
            let dense = grid.blocks[s];
            let bc = grid.coords(dense);
            let splatted = |c: [i64; 3]| {
                let n = grid.slot_at(c);
                n != super::sparse_grid::NONE && skip[n as usize] == Skip::No
            };
            // The particle's own block is always within its reach; a block with no splatted
            // neighbour has no particle that needs a kernel (the same answers as the test
            // below, without it for most blocks).
            if skip[s] == Skip::No {
                out.fill(true);
                return;
            }
            if !(-1..=1).any(|z| {
                (-1..=1).any(|y| (-1..=1).any(|x| splatted([bc[0] + x, bc[1] + y, bc[2] + z])))
            }) {
                return;
            }
            for (o, k) in out.iter_mut().zip(grid.particles_of(dense)) {
                // Blocks within the largest reach of the particle: is one of them splatted?
                let q: [f32; 3] = std::array::from_fn(|a| grid.pos[a][k]);
                let r: [(i64, i64); 3] = std::array::from_fn(|a| {
                    let lo = floor_i64((q[a] - reach_g) / B as f32);
                    let hi = floor_i64((q[a] + reach_g) / B as f32);
                    (lo.max(bc[a] - 1), hi.min(bc[a] + 1))
                });
                // Loops, not nested `any` (whose closure was not inlined: 2% of `surge mesh`'s
                // instructions on the 1M frame 20).
                *o = 'found: {
                    for z in r[2].0..=r[2].1 {
                        for y in r[1].0..=r[1].1 {
                            for x in r[0].0..=r[0].1 {
                                if splatted([x, y, z]) {
                                    break 'found true;
                                }
                            }
                        }
                    }
                    false
                };
            }
        });
    let cells = Cells::new(pos, p.kernel_radius as f32);
    let consts = Consts {
        big_r: p.kernel_radius as f32,
        h: p.cell as f32,
        vol_radius: p.radius as f32,
        volume: 4.0 / 3.0 * std::f32::consts::PI * (p.radius as f32).powi(3),
        inv_r: 1.0 / p.kernel_radius as f32,
    };
    let (tags, ells) = kernels(&grid, pos, &needed, &cells, &consts, p, mirrors);
    drop((cells, needed));
    let sphere = to_grid(
        kernel::sphere_kernel(consts.big_r, consts.volume),
        p.cell as f32,
    );
    let outside = reach as f32;
    let radius = p.radius as f32;
    let codes: Vec<u8> = (0..nb)
        .into_par_iter()
        .flat_map_iter(|s| {
            let bc = grid.coords(grid.blocks[s]);
            let (grid, tags, ells, sphere) = (&grid, &tags, &ells, &sphere);
            grid.particles_of(grid.blocks[s]).map(move |i| {
                let l = std::array::from_fn(|a| grid.pos[a][i] - (bc[a] * B as i64) as f32);
                splat::reach_code(l, tags[i], ells, sphere)
            })
        })
        .collect();
    let relevant = [p.region_lo, p.region_hi]
        .map(|w| std::array::from_fn(|a| (w[a] / p.cell - grid.origin[a] as f64) as f32));
    let ks = splat::Kernels {
        tags: &tags,
        codes: &codes,
        ells: &ells,
        sphere,
        relevant: [
            relevant[0].map(|v| v - 1.999),
            relevant[1].map(|v| v + 1.999),
        ],
        region: [p.region_lo, p.region_hi],
        vel,
    };
    // Every block writes all its points (not zeroed first: see `uninit`).
    let mut phi = uninit::<f32>(nb * BP);
    // Zeroed by the allocator: the blocks beyond a wall leave their pages untouched.
    let mut velo = vec![[0f32; 3]; nb * BP];
    phi.par_chunks_mut(BP)
        .zip(velo.par_chunks_mut(BP))
        .enumerate()
        .for_each(|(s, (phi, vel))| {
            let out = Out { phi, vel };
            let dense = grid.blocks[s];
            splat::splat_block(&grid, &ks, dense, radius, outside, skip[s], out)
        });
    // SAFETY: `splat_block` writes every point of its block, and the blocks tile `phi`.
    let phi = unsafe { assume_init(phi) };
    LevelSet {
        grid,
        phi,
        vel: velo,
        outside,
    }
}

/// `v.floor() as i64` for finite `v` without a libm call (x86-64's baseline has no rounding
/// instruction; this runs for every particle).
#[inline(always)]
fn floor_i64(v: f32) -> i64 {
    let t = v as i64;
    if (t as f32) > v { t - 1 } else { t }
}

/// A kernel in metres converted to the grid's units (cells).
fn to_grid(k: Kernel, h: f32) -> Kernel {
    let h2 = h * h;
    Kernel {
        m: k.m.map(|v| v * h2),
        f: k.f.map(|v| v * h2),
        ext: k.ext.map(|v| v / h),
        core_ext: k.core_ext.map(|v| v / h),
        wall_offset: k.wall_offset / h,
        ..k
    }
}

/// `k` reflected across the axes of `mask` (bit `a`: axis `a`): `D M D` with `D` the diagonal
/// of signs, for the kernel and the floor metric; the wall film is recomputed by the caller.
fn reflected(k: &Kernel, mask: u8) -> Kernel {
    let s = |a: usize| if mask >> a & 1 == 1 { -1.0f32 } else { 1.0 };
    let flip = |m: [f32; 6]| {
        [
            m[0],
            m[1],
            m[2],
            s(0) * s(1) * m[3],
            s(0) * s(2) * m[4],
            s(1) * s(2) * m[5],
        ]
    };
    Kernel {
        m: flip(k.m),
        f: flip(k.f),
        ..*k
    }
}

/// The kernel tags of the binned particles ([`NO_KERNEL`], [`SPHERE`] or an index into the
/// returned ellipsoids, grid units) where `needed` says so. Particles first (and those whose
/// mirror needs one), then mirrors: the reflection of their particle's kernel.
fn kernels(
    grid: &SparseGrid,
    pos: Points,
    needed: &[bool],
    cells: &Cells,
    consts: &Consts,
    p: &Params,
    mirrors: Option<MirrorOf>,
) -> (Vec<u32>, Vec<Kernel>) {
    use std::sync::atomic::{AtomicBool, AtomicU32, Ordering::Relaxed};
    let n_in = pos.len();
    let originals = mirrors.map_or(n_in, |m| m.originals);
    let nk = grid.order.len();
    // Binned index of each particle (not mirror), and the particles a needed mirror images
    // (parallel scatters: `order` is a permutation, and `want` is only ever set).
    let binned: Vec<AtomicU32> = (0..mirrors.map_or(0, |_| originals))
        .into_par_iter()
        .map(|_| AtomicU32::new(NO_KERNEL))
        .collect();
    let want: Vec<AtomicBool> = needed.par_iter().map(|&n| AtomicBool::new(n)).collect();
    if let Some(m) = mirrors {
        grid.order.par_iter().enumerate().for_each(|(k, &i)| {
            if (i as usize) < originals {
                binned[i as usize].store(k as u32, Relaxed);
            }
        });
        grid.order.par_iter().zip(needed).for_each(|(&i, &need)| {
            let i = i as usize;
            if need && i >= originals {
                let o = binned[m.source[i - originals] as usize].load(Relaxed);
                if o != NO_KERNEL {
                    want[o as usize].store(true, Relaxed);
                }
            }
        });
    }
    let at = |i: usize| pos.at(i);
    // Per block (its binned particles are one range; the ranges tile `0..nk` in slot order):
    // tags (block-local ellipsoid indices, then offset) and ellipsoids (metres).
    // Every particle's tag is written below (not filled first: a serial pass).
    let mut tags = uninit::<u32>(nk);
    let per_block: Vec<Vec<Kernel>> = block_slices(grid, &mut tags)
        .into_par_iter()
        .enumerate()
        // The ellipsoids go to a scratch list reused across blocks, then to one list of the
        // exact length (growing each block's list was 60 MB of copies for the 19 MB kept).
        .map_init(Vec::new, |e, (s, t)| {
            e.clear();
            for (t, k) in t.iter_mut().zip(grid.particles_of(grid.blocks[s])) {
                let i = grid.order[k] as usize;
                *t = std::mem::MaybeUninit::new(if !want[k].load(Relaxed) || i >= originals {
                    NO_KERNEL
                } else if let Some(kernel) = kernel_of(at(i), cells, consts, p) {
                    e.push(kernel);
                    e.len() as u32 - 1
                } else {
                    SPHERE
                });
            }
            e.to_vec()
        })
        .collect();
    drop(want);
    // SAFETY: the blocks' particle ranges tile `0..nk`, and each block wrote all of its tags.
    let mut tags = unsafe { assume_init(tags) };
    let bases = offset_tags(grid, &mut tags, &per_block);
    let Some(m) = mirrors else {
        let pieces: Vec<&[Kernel]> = per_block.iter().map(Vec::as_slice).collect();
        return (tags, assemble(&pieces, |k| to_grid(k, consts.h)));
    };
    let h = consts.h;
    let (tags_ref, per_block_ref, bases_ref) = (&tags, &per_block, &bases);
    // The particle's ellipsoid of global index `t` (metres), read where its block holds it:
    // the last block starting at or before `t` (empty blocks share the next one's start).
    let ellipsoid = |t: u32| -> &Kernel {
        let s = bases_ref.partition_point(|&b| b <= t) - 1;
        &per_block_ref[s][(t - bases_ref[s]) as usize]
    };
    // Per block: (binned index, tag: block-local ellipsoid index or SPHERE) of its needed
    // mirrors, and their ellipsoids.
    type Block = (Vec<(u32, u32)>, Vec<Kernel>);
    let mirror_blocks: Vec<Block> = (0..grid.blocks.len())
        .into_par_iter()
        .map(|s| {
            let (mut out, mut e) = (Vec::new(), Vec::new());
            for k in grid.particles_of(grid.blocks[s]) {
                let i = grid.order[k] as usize;
                if !needed[k] || i < originals {
                    continue;
                }
                let j = i - originals;
                let o = binned[m.source[j] as usize].load(Relaxed);
                let t = if o == NO_KERNEL {
                    NO_KERNEL
                } else {
                    tags_ref[o as usize]
                };
                let x = at(i);
                let kernel = match t {
                    SPHERE if !kernel::near_wall(x, h, p) => None,
                    t if t < SPHERE => {
                        let mut r = reflected(ellipsoid(t), m.mask[j]);
                        kernel::add_wall_film(&mut r, x, h, p);
                        Some(r)
                    }
                    // Its particle has no kernel, or a sphere while the mirror lies
                    // within a cell of a wall: its own.
                    _ => kernel_of(x, cells, consts, p),
                };
                out.push((
                    k as u32,
                    match kernel {
                        Some(kernel) => {
                            e.push(kernel);
                            e.len() as u32 - 1
                        }
                        None => SPHERE,
                    },
                ));
            }
            (out, e)
        })
        .collect();
    let particles_ells: usize = per_block.iter().map(Vec::len).sum();
    // The mirrors' ellipsoids follow the particles', in block order.
    let bases = running_starts(particles_ells, mirror_blocks.iter().map(|(_, e)| e.len()));
    let (lists, extra): (Vec<_>, Vec<_>) = mirror_blocks.into_iter().unzip();
    block_slices(grid, &mut tags)
        .into_par_iter()
        .zip(lists.par_iter().zip(&bases))
        .enumerate()
        .for_each(|(s, (t, (list, &b)))| {
            let first = grid.particles_of(grid.blocks[s]).start as u32;
            for &(k, tag) in list {
                t[(k - first) as usize] = if tag < SPHERE { tag + b } else { tag };
            }
        });
    let pieces: Vec<&[Kernel]> = per_block
        .iter()
        .chain(extra.iter())
        .map(Vec::as_slice)
        .collect();
    let ells = assemble(&pieces, |k| to_grid(k, h));
    (tags, ells)
}

/// `tags` split into the binned particle ranges of the blocks, in slot order (they tile it).
fn block_slices<'a, T>(grid: &SparseGrid, mut tags: &'a mut [T]) -> Vec<&'a mut [T]> {
    grid.blocks
        .iter()
        .map(|&dense| {
            let (head, tail) =
                std::mem::take(&mut tags).split_at_mut(grid.particles_of(dense).len());
            tags = tail;
            head
        })
        .collect()
}

/// Offsets each block's tags (block-local indices into its ellipsoids `per_block[s]`) by the
/// ellipsoids of the blocks before it; returns these offsets.
fn offset_tags(grid: &SparseGrid, tags: &mut [u32], per_block: &[Vec<Kernel>]) -> Vec<u32> {
    let bases = running_starts(0, per_block.iter().map(Vec::len));
    block_slices(grid, tags)
        .into_par_iter()
        .zip(bases.par_iter())
        .for_each(|(t, &b)| {
            for v in t.iter_mut().filter(|v| **v < SPHERE) {
                *v += b;
            }
        });
    bases
}

/// Where each of consecutive pieces of lengths `lens` starts, the first at `first`.
fn running_starts(first: usize, lens: impl Iterator<Item = usize>) -> Vec<u32> {
    lens.scan(first as u32, |at, n| {
        let b = *at;
        *at += n as u32;
        Some(b)
    })
    .collect()
}

/// `pieces` concatenated, each kernel mapped by `f`, copied in parallel (into memory not
/// initialised first: every element is written once).
fn assemble(pieces: &[&[Kernel]], f: impl Fn(Kernel) -> Kernel + Sync) -> Vec<Kernel> {
    let total = pieces.iter().map(|p| p.len()).sum();
    let mut out = uninit::<Kernel>(total);
    let mut rest = out.as_mut_slice();
    let dst: Vec<&mut [std::mem::MaybeUninit<Kernel>]> = pieces
        .iter()
        .map(|p| {
            let (head, tail) = std::mem::take(&mut rest).split_at_mut(p.len());
            rest = tail;
            head
        })
        .collect();
    dst.into_par_iter()
        .zip(pieces.par_iter())
        .for_each(|(d, s)| {
            for (d, s) in d.iter_mut().zip(s.iter()) {
                *d = std::mem::MaybeUninit::new(f(*s));
            }
        });
    // SAFETY: the pieces' destinations tile `out`, each written in full.
    unsafe { assume_init(out) }
}

/// One block's outputs.
pub(super) struct Out<'a> {
    /// Written in full by the splat.
    phi: &'a mut [std::mem::MaybeUninit<f32>],
    vel: &'a mut [[f32; 3]],
}

/// Blocks whose points need no splat.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Skip {
    No,
    /// Deep inside the liquid ([`is_deep`]): `phi = -r`, velocity the mean of its particles'
    /// (wall caps of deep water run through such blocks).
    Deep,
    /// Every point a cell or more beyond a wall plane: air after the wall clip.
    Beyond,
}
