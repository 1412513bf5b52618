//! The anisotropic method's splat (see [`super`]): per block, the kernels of the particles in
//! the block and its 26 neighbours, in binned order, are summed into the block's points
//! (weights, weighted positions and velocities, the thin-feature floor), then turned into the
//! Zhu-Bridson `phi = |x - Σ k_i x̄_i / Σ k_i| - r` (floored by the thin-feature floor and
//! clipped at the walls in the same loop: this method has no blur in between) and the weighted
//! velocity. The order of the sums is fixed by the binning, so the bytes do not depend on the
//! thread count.
//!
//! Most particles carry the sphere kernel (a full neighbourhood): they are tagged, not stored,
//! so the walk over a neighbour block reads 16 bytes per particle (position and tag) and the
//! sums of a sphere run without the ellipsoid's cross terms. Accumulators are struct of arrays.

use super::super::level_set::ceil_pos;
use super::super::sparse_grid::{B, BP, Points, SparseGrid};
use super::{Kernel, NO_KERNEL, Out, SPHERE, Skip, WALL_ACROSS, WALL_ALONG, quad};
use std::mem::MaybeUninit;

/// The kernels of the binned particles (grid units): a tag per particle ([`NO_KERNEL`],
/// [`SPHERE`] or an index into `ells`).
pub(super) struct Kernels<'a> {
    pub(super) tags: &'a [u32],
    /// Per particle: [`reach_code`].
    pub(super) codes: &'a [u8],
    pub(super) ells: &'a [Kernel],
    pub(super) sphere: Kernel,
    /// The points that can matter (grid units): within two cells of the liquid region. Beyond,
    /// the wall clip makes every point air at least two cells from the region, and neither a
    /// marching-cubes edge crossing the surface nor the gradient at its end points reaches
    /// there (the edge's outer point lies less than a cell beyond a wall, its gradient reads
    /// one more), so a wall mirror's kernel is only summed where the mesh can see it.
    pub(super) relevant: [[f32; 3]; 2],
    /// The liquid region (m), for the wall clip.
    pub(super) region: [[f64; 3]; 2],
    /// The input particles' velocities (binned particle `i`'s at `grid.order[i]`).
    pub(super) vel: Points<'a>,
}

impl Kernels<'_> {
    /// The velocity of binned particle `i`.
    #[inline(always)]
    fn velocity(&self, g: &SparseGrid, i: usize) -> [f32; 3] {
        self.vel.at(g.order[i] as usize)
    }
}

/// [`reach_code`] bit: the particle has a kernel.
const HAS_KERNEL: u8 = 64;

/// Which neighbour blocks the kernel of a particle at `l` in its block (grid units from the
/// block's first point) may reach: bit `a` when its box
/// reaches below its block's first plane along axis `a`, bit `3 + a` past its last, and
/// [`HAS_KERNEL`]. A prefilter (a small slack), the exact test follows; most of a neighbour
/// block's particles are thus skipped on one byte.
pub(super) fn reach_code(l: [f32; 3], tag: u32, ells: &[Kernel], sphere: &Kernel) -> u8 {
    if tag == NO_KERNEL {
        return 0;
    }
    let ext = if tag == SPHERE {
        sphere.ext
    } else {
        ells[tag as usize].ext
    };
    // The previous block's last points are at -1, the next block's first at B.
    (0..3).fold(HAS_KERNEL, |c, a| {
        let lo = if l[a] - ext[a] <= -1.0 + 1e-3 {
            1 << a
        } else {
            0
        };
        let hi = if l[a] + ext[a] >= B as f32 - 1e-3 {
            8 << a
        } else {
            0
        };
        c | lo | hi
    })
}

/// Points per block row (the x axis): the lanes of the row-wise sums.
const R: usize = B;
/// Rows per block.
const ROWS: usize = B * B;
/// x of each lane.
const LANE_X: [f32; R] = {
    let mut x = [0f32; R];
    let mut i = 0;
    while i < R {
        x[i] = i as f32;
        i += 1;
    }
    x
};

/// One block's sums, row by row (`y + B z`), lane `x`.
struct Sums {
    w: [[f32; R]; ROWS],
    wx: [[[f32; R]; ROWS]; 3],
    wv: [[[f32; R]; ROWS]; 3],
    /// The floors' tiny velocity weights (where only a floor reaches, the velocity is still
    /// defined): the velocity weight is `w + fvs`. Kept apart from `w` so that the kernels
    /// without a floor (most) add to seven sums, not eight; where no floor reaches, `fvs` is 0
    /// and the velocity weight `w` has the bits of the single sum it replaced.
    fvs: [[f32; R]; ROWS],
    floor: [[f32; R]; ROWS],
}

/// Splats one block (see the module docs); AVX2 where the CPU has it (the same operations
/// lane by lane, so the same bits as without).
pub(super) fn splat_block(
    g: &SparseGrid,
    ks: &Kernels,
    dense: u32,
    radius: f32,
    outside: f32,
    skip: Skip,
    out: Out,
) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2 (checked just above).
        unsafe { splat_block_avx2(g, ks, dense, radius, outside, skip, out) };
        return;
    }
    splat_block_any(g, ks, dense, radius, outside, skip, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn splat_block_avx2(
    g: &SparseGrid,
    ks: &Kernels,
    dense: u32,
    radius: f32,
    outside: f32,
    skip: Skip,
    out: Out,
) {
    splat_block_any(g, ks, dense, radius, outside, skip, out)
}

#[inline(always)]
fn splat_block_any(
    g: &SparseGrid,
    ks: &Kernels,
    dense: u32,
    radius: f32,
    outside: f32,
    skip: Skip,
    out: Out,
) {
    let bc = g.coords(dense);
    if skip != Skip::No {
        // Deep: inside; beyond a wall: the wall clip makes it air whatever is splatted. (No
        // floor reaches these points: it would be `outside`, above both values.)
        let mut phi = [if skip == Skip::Deep { -radius } else { 0.0 }; BP];
        clip_block(g, &ks.region, bc, &mut phi);
        write(out.phi, &phi);
        // A deep block's points carry the mean velocity of its particles (mirrors included):
        // the wall caps of deep water run through such blocks, and their vertices read it.
        // Beyond a wall the velocity is zero, as `out.vel` comes (zeroed by the allocator, so
        // the pages of these blocks are not even touched).
        if skip == Skip::Deep {
            out.vel.fill(mean_velocity(g, ks, dense));
        }
        return;
    }
    let fo: [f32; 3] = std::array::from_fn(|a| (bc[a] * B as i64) as f32);
    // This block's points that can matter (see [`Kernels::relevant`]).
    let bmin: [f32; 3] = std::array::from_fn(|a| (ks.relevant[0][a] - fo[a]).max(0.0));
    let bmax: [f32; 3] = std::array::from_fn(|a| (ks.relevant[1][a] - fo[a]).min((B - 1) as f32));
    let h = g.cell as f32;
    let mut s = Sums {
        w: [[0.0; R]; ROWS],
        wx: [[[0.0; R]; ROWS]; 3],
        wv: [[[0.0; R]; ROWS]; 3],
        fvs: [[0.0; R]; ROWS],
        floor: [[f32::MAX; R]; ROWS],
    };
    let se = ks.sphere.ext;
    for dz in -1..=1 {
        for dy in -1..=1 {
            for dx in -1..=1 {
                let Some(nd) = g.dense([bc[0] + dx, bc[1] + dy, bc[2] + dz]) else {
                    continue;
                };
                // Reach bits this block needs of a particle of block `nd` ([`reach_code`]).
                let o = [dx, dy, dz];
                let need = (0..3).fold(HAS_KERNEL, |n, a| match o[a] {
                    1 => n | 1 << a,
                    -1 => n | 8 << a,
                    _ => n,
                });
                // The particles whose code has every needed bit, in binned order, found 16
                // codes at a time ([`reaching`]).
                let range = g.particles_of(nd);
                let mut base = range.start;
                while base < range.end {
                    let step = (range.end - base).min(CHUNK);
                    let mut bits = reaching(&ks.codes[base..base + step], need);
                    let first = base;
                    base += step;
                    while bits != 0 {
                        let i = first + bits.trailing_zeros() as usize;
                        bits &= bits - 1;
                        let tag = ks.tags[i];
                        let q = [
                            g.pos[0][i] - fo[0],
                            g.pos[1][i] - fo[1],
                            g.pos[2][i] - fo[2],
                        ];
                        let k = if tag == SPHERE {
                            if (0..3).any(|a| q[a] + se[a] < bmin[a] || q[a] - se[a] > bmax[a]) {
                                continue;
                            }
                            &ks.sphere
                        } else {
                            let k = &ks.ells[tag as usize];
                            if (0..3)
                                .any(|a| q[a] + k.ext[a] < bmin[a] || q[a] - k.ext[a] > bmax[a])
                            {
                                continue;
                            }
                            k
                        };
                        let lo: [usize; 3] =
                            std::array::from_fn(|a| ceil_pos(max(q[a] - k.ext[a], bmin[a])));
                        // Through i32 (`as usize` from f32 takes several instructions): the same
                        // values (negatives and NaN give 0 either way; all below 2^31).
                        let hi: [usize; 3] = std::array::from_fn(|a| {
                            (max(min(q[a] + k.ext[a], bmax[a]), 0.0) as i32) as usize
                        });
                        if (0..3).any(|a| lo[a] > hi[a]) {
                            continue;
                        }
                        let v = ks.velocity(g, i);
                        if tag == SPHERE {
                            sphere_only(&mut s, k, q, v, lo, hi);
                        } else if k.fs == 0.0 && k.wall_axis == 3 {
                            kernel_only(&mut s, k, q, v, lo, hi);
                        } else {
                            with_floor(&mut s, k, q, v, lo, hi, h);
                        }
                    }
                }
            }
        }
    }
    let Sums {
        w,
        wx,
        wv,
        fvs,
        floor,
    } = &s;
    // Row by row, every lane computing both sides of each choice and selecting (vectorised;
    // the selected values are the same operations, so the same bits).
    let mut phi = [0f32; BP];
    for r in 0..ROWS {
        let (y, z) = ((r % B) as f32, (r / B) as f32);
        let (mut ph, mut vel) = ([0f32; R], [[0f32; R]; 3]);
        for x in 0..R {
            let wr = w[r][x];
            let d = [
                LANE_X[x] - wx[0][r][x] / wr,
                y - wx[1][r][x] / wr,
                z - wx[2][r][x] / wr,
            ];
            let d2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
            let zb = if wr > 0.0 {
                d2.sqrt() * h - radius
            } else {
                outside
            };
            // The thin-feature floor (applied before the wall clip, as the other methods'
            // blur would come before it; this method has none).
            ph[x] = zb.min(floor[r][x].min(outside));
            let ws = wr + fvs[r][x];
            // No kernel reaches the point: no velocity (NaN, see `LevelSet::vel`).
            for a in 0..3 {
                vel[a][x] = if ws > 0.0 { wv[a][r][x] / ws } else { f32::NAN };
            }
        }
        phi[r * R..][..R].copy_from_slice(&ph);
        for (x, v) in out.vel[r * R..][..R].iter_mut().enumerate() {
            *v = [vel[0][x], vel[1][x], vel[2][x]];
        }
    }
    clip_block(g, &ks.region, bc, &mut phi);
    write(out.phi, &phi);
}

/// `a.min(b)` as one compare and select (`f32::min` also orders NaN and the two zeros, which
/// takes several instructions): the same value where it is used (bounds turned into lattice
/// indices, where `-0` and `+0` give 0; a NaN `a` gives `b` either way).
#[inline(always)]
fn min(a: f32, b: f32) -> f32 {
    if a < b { a } else { b }
}

/// `a.max(b)`, as [`min`].
#[inline(always)]
fn max(a: f32, b: f32) -> f32 {
    if a > b { a } else { b }
}

/// Codes per chunk of [`reaching`].
const CHUNK: usize = 16;

/// Bit `j` set where `codes[j]` has every bit of `need` (at most [`CHUNK`] codes): the walk
/// over a neighbour block's particles skips most of them (all but the few whose kernel
/// reaches this block) 16 at a time instead of one byte test and branch each (SSE2, part of
/// x86-64's baseline; the same bits as the loop below).
#[inline(always)]
fn reaching(codes: &[u8], need: u8) -> u32 {
    #[cfg(target_arch = "x86_64")]
    if codes.len() == CHUNK {
        use std::arch::x86_64::*;
        // SAFETY: SSE2 is part of the x86-64 baseline; 16 bytes in bounds (the length just
        // checked), an unaligned load.
        return unsafe {
            let v = _mm_loadu_si128(codes.as_ptr().cast());
            let n = _mm_set1_epi8(need as i8);
            _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_and_si128(v, n), n)) as u32
        };
    }
    codes
        .iter()
        .enumerate()
        .fold(0, |m, (j, &c)| m | ((c & need == need) as u32) << j)
}

/// Writes a block's `phi` into its (uninitialised) output.
#[inline(always)]
fn write(out: &mut [MaybeUninit<f32>], phi: &[f32; BP]) {
    for (o, &v) in out.iter_mut().zip(phi) {
        *o = MaybeUninit::new(v);
    }
}

/// The wall clip `phi = max(phi, d_box + eps)` of [`super::super::level_set::LevelSet::clip_walls`]
/// at the points of block `bc` of `g` (the same operations, so the same bits).
fn clip_block(g: &SparseGrid, region: &[[f64; 3]; 2], bc: [i64; 3], phi: &mut [f32]) {
    let h = g.cell;
    let eps = 1e-4 * h as f32;
    // Per axis and local coordinate: how far the point lies outside the region along the axis.
    let d: [[f64; B]; 3] = std::array::from_fn(|a| {
        let first = g.origin[a] + bc[a] * B as i64;
        std::array::from_fn(|l| {
            let w = (first + l as i64) as f64 * h;
            (region[0][a] - w).max(w - region[1][a])
        })
    });
    // Every point's clip value is at most the block's largest (the f64 maximum, rounding and
    // `+ eps` are monotonic): at or below the block's smallest `phi`, no point changes.
    let top = d
        .iter()
        .map(|a| a.iter().fold(f64::MIN, |m, &v| m.max(v)))
        .fold(f64::MIN, f64::max) as f32
        + eps;
    if top <= phi.iter().fold(f32::MAX, |m, &v| m.min(v)) {
        return;
    }
    // Row by row (the lanes vectorise), the same operations per point.
    for (r, row) in phi.chunks_exact_mut(B).enumerate() {
        let (y, z) = (r % B, r / B);
        for (x, v) in row.iter_mut().enumerate() {
            let wall = f64::MIN.max(d[0][x]).max(d[1][y]).max(d[2][z]) as f32 + eps;
            *v = if wall > *v { wall } else { *v };
        }
    }
}

/// The mean velocity of the particles binned in block `dense` (in binned order: the same bits
/// for any thread count); zero for an empty block.
fn mean_velocity(g: &SparseGrid, ks: &Kernels, dense: u32) -> [f32; 3] {
    let range = g.particles_of(dense);
    let n = range.len();
    if n == 0 {
        return [0.0; 3];
    }
    // One pass, three sums (each in binned order, as three passes would add them).
    let mut sum = [0f64; 3];
    for &i in &g.order[range] {
        for (s, v) in sum.iter_mut().zip(ks.vel.at(i as usize)) {
            *s += v as f64;
        }
    }
    sum.map(|s| (s / n as f64) as f32)
}

/// Adds weights `wk` (0 where nothing is added) to row `r`'s sums.
#[inline(always)]
fn add_row(s: &mut Sums, r: usize, wk: &[f32; R], q: [f32; 3], v: [f32; 3]) {
    for (j, &wk) in wk.iter().enumerate() {
        s.w[r][j] += wk;
        s.wx[0][r][j] += wk * q[0];
        s.wx[1][r][j] += wk * q[1];
        s.wx[2][r][j] += wk * q[2];
        s.wv[0][r][j] += wk * v[0];
        s.wv[1][r][j] += wk * v[1];
        s.wv[2][r][j] += wk * v[2];
    }
}

/// A kernel without floor nor wall film: each row that the ellipsoid crosses (its minimum of
/// `q²` along the row below 1), all of it at once, with a weight of 0 outside the ellipsoid
/// (`1 - q²` clamped at 0; adding 0 leaves a sum's bits unchanged).
#[inline(always)]
fn kernel_only(s: &mut Sums, k: &Kernel, q: [f32; 3], v: [f32; 3], lo: [usize; 3], hi: [usize; 3]) {
    let m = &k.m;
    let dx: [f32; R] = std::array::from_fn(|j| LANE_X[j] - q[0]);
    for z in lo[2]..hi[2] + 1 {
        let dz = z as f32 - q[2];
        for y in lo[1]..hi[1] + 1 {
            let dy = y as f32 - q[1];
            let b = m[3] * dy + m[4] * dz;
            let c = m[1] * dy * dy + m[2] * dz * dz + 2.0 * m[5] * dy * dz;
            if b * b - m[0] * (c - 1.0) <= 0.0 {
                continue;
            }
            let mut wk = [0f32; R];
            for j in 0..R {
                let q2 = m[0] * dx[j] * dx[j] + 2.0 * b * dx[j] + c;
                let t = (1.0 - q2).max(0.0);
                wk[j] = k.amp * t * t * t;
            }
            add_row(s, y + B * z, &wk, q, v);
        }
    }
}

/// [`kernel_only`] for the sphere kernel (most particles), whose metric is diagonal with equal
/// entries `m`: the cross terms are zero (`b = 0`: `m (x - q)²` plus the row's `c`, the same
/// bits as the general form, whose zero terms add nothing), and a row is crossed where `c < 1`.
#[inline(always)]
fn sphere_only(s: &mut Sums, k: &Kernel, q: [f32; 3], v: [f32; 3], lo: [usize; 3], hi: [usize; 3]) {
    let m = k.m[0];
    let mdx2: [f32; R] = std::array::from_fn(|j| {
        let dx = LANE_X[j] - q[0];
        m * dx * dx
    });
    for z in lo[2]..hi[2] + 1 {
        let dz = z as f32 - q[2];
        let cz = m * dz * dz;
        for y in lo[1]..hi[1] + 1 {
            let dy = y as f32 - q[1];
            let c = m * dy * dy + cz;
            if c >= 1.0 {
                continue;
            }
            let mut wk = [0f32; R];
            for j in 0..R {
                let t = (1.0 - (mdx2[j] + c)).max(0.0);
                wk[j] = k.amp * t * t * t;
            }
            add_row(s, y + B * z, &wk, q, v);
        }
    }
}

/// A kernel with a thin-feature floor or a wall film: every point of the bounding box.
#[inline(always)]
fn with_floor(
    s: &mut Sums,
    k: &Kernel,
    q: [f32; 3],
    v: [f32; 3],
    lo: [usize; 3],
    hi: [usize; 3],
    h: f32,
) {
    let dx: [f32; R] = std::array::from_fn(|j| LANE_X[j] - q[0]);
    let inbox: [bool; R] = std::array::from_fn(|j| j >= lo[0] && j <= hi[0]);
    let mask: [f32; R] = inbox.map(|b| b as u32 as f32);
    let (m, f) = (&k.m, &k.f);
    for z in lo[2]..hi[2] + 1 {
        let dz = z as f32 - q[2];
        for y in lo[1]..hi[1] + 1 {
            let dy = y as f32 - q[1];
            let r = y + B * z;
            let mut wk = [0f32; R];
            for j in 0..R {
                let t = (1.0 - quad(m, [dx[j], dy, dz])).max(0.0);
                wk[j] = k.amp * t * t * t * mask[j];
            }
            add_row(s, r, &wk, q, v);
            if k.fs > 0.0 {
                for j in 0..R {
                    let fl = (quad(f, [dx[j], dy, dz]).sqrt() - 1.0) * k.fs;
                    if inbox[j] {
                        s.floor[r][j] = s.floor[r][j].min(fl);
                        // A small velocity weight where only the floor reaches.
                        let e = 1e-6 * (1.0 - fl / (2.0 * k.fs)).max(0.0);
                        s.fvs[r][j] += e;
                        for (wv, va) in s.wv.iter_mut().zip(v) {
                            wv[r][j] += e * va;
                        }
                    }
                }
            }
            if k.wall_axis < 3 {
                let wa = k.wall_axis as usize;
                let (o, rr) = (k.wall_offset, WALL_ACROSS);
                let d = [dy, dz];
                // Squared terms of the two axes along the wall and of the one across.
                let along: f32 = (0..3)
                    .filter(|&a| a != wa && a != 0)
                    .map(|a| (d[a - 1] / WALL_ALONG).powi(2))
                    .sum();
                // The axis test out of the lane loops, and a select for the box, so that the
                // lanes vectorise (the same operations per lane).
                let mut e2 = [0f32; R];
                if wa == 0 {
                    for j in 0..R {
                        e2[j] = ((dx[j] - o) / rr).powi(2) + along;
                    }
                } else {
                    let across = (d[wa - 1] - o) / rr;
                    for j in 0..R {
                        e2[j] = (dx[j] / WALL_ALONG).powi(2) + along + across * across;
                    }
                }
                // The square roots in a loop of their own, the box as the float mask: so
                // written, the lanes stay vectorised (the same operations per lane).
                let mut fl = [0f32; R];
                for j in 0..R {
                    fl[j] = (e2[j].sqrt() - 1.0) * WALL_ACROSS * h;
                }
                for j in 0..R {
                    let now = s.floor[r][j];
                    s.floor[r][j] = if mask[j] > 0.0 { now.min(fl[j]) } else { now };
                }
            }
        }
    }
}
