//! One particle's kernel for the anisotropic level set (Yu & Turk 2013, sections 3-4; see
//! [`super`] for the method): a sphere of radius R for a full neighbourhood, else the
//! ellipsoid of the weighted covariance's principal axes, with the thin-feature floor and the
//! wall film where they apply.

use super::cells::{Cells, has_neighbours};
use super::eigen::sym_eigen;
use super::{
    FLOOR_REACH, ISOLATED_SCALE, KERNEL_INTEGRAL, Kernel, MAX_RATIO, N_EPS, N_FULL, N_THIN,
    WALL_ACROSS, WALL_ALONG, WALL_CENTRE,
};
use crate::surface::level_set::Params;
use nalgebra::{Matrix3, Vector3};

/// `Q diag(v) Q^T` as `[xx, yy, zz, xy, xz, yz]`.
fn sym(q: &Matrix3<f32>, v: [f32; 3]) -> [f32; 6] {
    let e = |i: usize, j: usize| (0..3).map(|k| q[(i, k)] * v[k] * q[(j, k)]).sum::<f32>();
    [e(0, 0), e(1, 1), e(2, 2), e(0, 1), e(0, 2), e(1, 2)]
}

/// The kernel of a particle with a full neighbourhood: the sphere of radius R.
pub(super) fn sphere_kernel(big_r: f32, volume: f32) -> Kernel {
    let m = 1.0 / (big_r * big_r);
    Kernel {
        m: [m, m, m, 0.0, 0.0, 0.0],
        amp: volume / (KERNEL_INTEGRAL * big_r * big_r * big_r),
        f: [0.0; 6],
        fs: 0.0,
        ext: [big_r; 3],
        core_ext: [big_r; 3],
        wall_axis: 3,
        wall_offset: 0.0,
    }
}

/// Per-frame constants of the kernels (metres).
pub(super) struct Consts {
    pub(super) big_r: f32,
    pub(super) h: f32,
    pub(super) vol_radius: f32,
    pub(super) volume: f32,
    pub(super) inv_r: f32,
}

/// The kernel (metres) of the particle at `xi`, `None` for the sphere of radius R
/// ([`sphere_kernel`]). Most particles have full neighbourhoods (at least [`N_FULL`] within
/// R): a first pass only counts their neighbours and stops there; the covariance pass runs for
/// the others.
pub(super) fn kernel_of(xi: [f32; 3], cells: &Cells, k: &Consts, p: &Params) -> Option<Kernel> {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("popcnt") {
        // SAFETY: the CPU supports AVX2 and POPCNT (checked just above).
        return unsafe { kernel_of_avx2(xi, cells, k, p) };
    }
    kernel_of_any::<false>(xi, cells, k, p)
}

/// [`kernel_of`] compiled for AVX2 (the same operations lane by lane: the same bits), and
/// POPCNT for the neighbour counts (`count_ones` was a dozen instructions without it: 1.4% of
/// `surge mesh`'s instructions on frame 20 of the 1M dam break).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt")]
unsafe fn kernel_of_avx2(xi: [f32; 3], cells: &Cells, k: &Consts, p: &Params) -> Option<Kernel> {
    kernel_of_any::<true>(xi, cells, k, p)
}

/// Lanes of the neighbour sums.
const L: usize = 8;

/// The kernel-weighted sums over the neighbours within R of `xi` (in the rows `rows` of cells
/// around it): `Σ w`, `Σ w d`,
/// `Σ w d dᵀ` (`[xx, yy, zz, xy, xz, yz]`) with `d` the offset and `w = 1 - (|d| / R)^3`, and
/// the neighbour count. Summed in [`L`] lanes (candidates `L` at a time, no branch), then the
/// lanes in order: vectorised, and the same bits on any CPU.
#[inline(always)]
fn weighted_sums<const AVX2: bool>(
    cells: &Cells,
    rows: &[std::ops::Range<usize>; 9],
    xi: [f32; 3],
    inv_r: f32,
) -> (f32, [f32; 3], [f32; 6], usize) {
    let mut acc = [[0f32; L]; 10];
    let mut count = 0usize;
    for r in rows.iter().cloned() {
        let [rx, ry, rz] = cells.row(r);
        let (cx, cy, cz) = (rx.chunks_exact(L), ry.chunks_exact(L), rz.chunks_exact(L));
        let (tx, ty, tz) = (cx.remainder(), cy.remainder(), cz.remainder());
        for ((x, y), z) in cx.zip(cy).zip(cz) {
            let p = [x, y, z].map(|v| -> [f32; L] { v.try_into().unwrap() });
            count += lanes_of::<AVX2>(&mut acc, &p, xi, inv_r);
        }
        if !tx.is_empty() {
            // The tail, padded with points far outside R (weight 0).
            // (Copies, not `array::map`: not inlined into the AVX2 code, 1.7% of `surge
            // mesh`'s instructions on the 1M frame 20.)
            let mut p = [[1e18f32; L]; 3];
            for (d, t) in p.iter_mut().zip([tx, ty, tz]) {
                d[..t.len()].copy_from_slice(t);
            }
            count += lanes_of::<AVX2>(&mut acc, &p, xi, inv_r);
        }
    }
    let sum = |a: &[f32; L]| a.iter().fold(0f32, |s, v| s + v);
    let sw = sum(&acc[0]);
    let mean = [sum(&acc[1]), sum(&acc[2]), sum(&acc[3])];
    let c = std::array::from_fn(|k| sum(&acc[4 + k]));
    (sw, mean, c, count)
}

/// [`weighted_sums`] of [`L`] candidates `p`, one per lane; returns how many lie within R.
#[inline(always)]
fn lanes(acc: &mut [[f32; L]; 10], p: &[[f32; L]; 3], xi: [f32; 3], inv_r: f32) -> usize {
    let mut n = 0u32;
    for j in 0..L {
        let d = [p[0][j] - xi[0], p[1][j] - xi[1], p[2][j] - xi[2]];
        let r2 = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]) * inv_r * inv_r;
        let inside = r2 < 1.0;
        let w = if inside { 1.0 - r2 * r2.sqrt() } else { 0.0 };
        n += inside as u32;
        let wd = [w * d[0], w * d[1], w * d[2]];
        acc[0][j] += w;
        acc[1][j] += wd[0];
        acc[2][j] += wd[1];
        acc[3][j] += wd[2];
        acc[4][j] += wd[0] * d[0];
        acc[5][j] += wd[1] * d[1];
        acc[6][j] += wd[2] * d[2];
        acc[7][j] += wd[0] * d[1];
        acc[8][j] += wd[0] * d[2];
        acc[9][j] += wd[1] * d[2];
    }
    n as usize
}

/// [`lanes`], in AVX2 intrinsics where `AVX2` (the caller runs with AVX2 enabled).
#[inline(always)]
fn lanes_of<const AVX2: bool>(
    acc: &mut [[f32; L]; 10],
    p: &[[f32; L]; 3],
    xi: [f32; 3],
    inv_r: f32,
) -> usize {
    #[cfg(target_arch = "x86_64")]
    if AVX2 {
        // SAFETY: `AVX2` is only set by `kernel_of_avx2`, which runs on a CPU with AVX2.
        return unsafe { lanes_avx2(acc, p, xi, inv_r) };
    }
    lanes(acc, p, xi, inv_r)
}

/// [`lanes`] in AVX2 intrinsics: the same operations lane by lane in the same order (IEEE
/// `sqrt`, no fused multiply-add), so the same bits. Why: the compiler vectorised the plain
/// loop across the ten sums instead of across the lanes, taking the accumulators apart and
/// putting them back lane by lane on every call (measured with callgrind, `surge mesh` of the
/// 1M frame 20 on one thread: the sums' instructions 400M -> 214M, of 6.6G in all).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt")]
#[inline]
fn lanes_avx2(acc: &mut [[f32; L]; 10], p: &[[f32; L]; 3], xi: [f32; 3], inv_r: f32) -> usize {
    use std::arch::x86_64::*;
    // SAFETY (all loads and stores): `[f32; L]` is 8 contiguous f32, unaligned accesses.
    let ld = |a: &[f32; L]| unsafe { _mm256_loadu_ps(a.as_ptr()) };
    let d: [__m256; 3] = std::array::from_fn(|a| _mm256_sub_ps(ld(&p[a]), _mm256_set1_ps(xi[a])));
    let sq = |v: __m256| _mm256_mul_ps(v, v);
    let inv = _mm256_set1_ps(inv_r);
    let r2 = _mm256_add_ps(_mm256_add_ps(sq(d[0]), sq(d[1])), sq(d[2]));
    let r2 = _mm256_mul_ps(_mm256_mul_ps(r2, inv), inv);
    let one = _mm256_set1_ps(1.0);
    let inside = _mm256_cmp_ps::<_CMP_LT_OQ>(r2, one);
    let w = _mm256_and_ps(
        inside,
        _mm256_sub_ps(one, _mm256_mul_ps(r2, _mm256_sqrt_ps(r2))),
    );
    let wd = d.map(|v| _mm256_mul_ps(w, v));
    let terms = [
        w,
        wd[0],
        wd[1],
        wd[2],
        _mm256_mul_ps(wd[0], d[0]),
        _mm256_mul_ps(wd[1], d[1]),
        _mm256_mul_ps(wd[2], d[2]),
        _mm256_mul_ps(wd[0], d[1]),
        _mm256_mul_ps(wd[0], d[2]),
        _mm256_mul_ps(wd[1], d[2]),
    ];
    for (a, t) in acc.iter_mut().zip(terms) {
        unsafe { _mm256_storeu_ps(a.as_mut_ptr(), _mm256_add_ps(ld(a), t)) };
    }
    (_mm256_movemask_ps(inside) as u32).count_ones() as usize
}

#[inline(always)]
fn kernel_of_any<const AVX2: bool>(
    xi: [f32; 3],
    cells: &Cells,
    k: &Consts,
    p: &Params,
) -> Option<Kernel> {
    let Consts {
        big_r,
        h,
        vol_radius,
        volume,
        inv_r,
    } = *k;
    // Within one cell of a wall: the wall film too (below).
    // The rows of neighbour cells, once for both passes.
    let rows = cells.rows_near(xi);
    if !near_wall(xi, h, p) && has_neighbours::<AVX2>(cells, &rows, xi, big_r * big_r, N_FULL) {
        return None;
    }
    // One pass: weighted sums of the offsets and of their outer products; the
    // covariance about the weighted mean is `S2 / Σw - mean meanᵀ` (offsets from x_i
    // are at most R, so f32 keeps its precision).
    let (sw, mean, c, count) = weighted_sums::<AVX2>(cells, &rows, xi, inv_r);
    let mean = mean.map(|v| v / sw);
    let c = [
        c[0] / sw - mean[0] * mean[0],
        c[1] / sw - mean[1] * mean[1],
        c[2] / sw - mean[2] * mean[2],
        c[3] / sw - mean[0] * mean[1],
        c[4] / sw - mean[0] * mean[2],
        c[5] / sw - mean[1] * mean[2],
    ];
    let centre = xi;
    // Principal axes (columns of q) and radii, longest first.
    let (q, rho) = if count >= N_FULL {
        (Matrix3::identity(), [big_r; 3])
    } else if count >= N_EPS {
        // Closed form ([`sym_eigen`]), largest first.
        let (values, vectors) = sym_eigen(c);
        let sig = values.map(|v| (v as f32).max(0.0).sqrt());
        let q = Matrix3::from_columns(&vectors.map(|v| Vector3::from(v.map(|x| x as f32))));
        if sig[0] > 0.0 {
            let s = sig.map(|v| v.max(sig[0] / MAX_RATIO));
            let g = (s[0] * s[1] * s[2]).cbrt();
            (q, s.map(|v| big_r * v / g))
        } else {
            (Matrix3::identity(), [ISOLATED_SCALE * big_r; 3])
        }
    } else {
        (Matrix3::identity(), [ISOLATED_SCALE * big_r; 3])
    };
    let m = sym(&q, rho.map(|v| 1.0 / (v * v)));
    let amp = volume / (KERNEL_INTEGRAL * rho[0] * rho[1] * rho[2]);
    let mut ext: [f32; 3] = std::array::from_fn(|a| {
        (0..3)
            .map(|k| (rho[k] * q[(a, k)]).powi(2))
            .sum::<f32>()
            .sqrt()
    });
    let (mut f, mut fs) = ([0f32; 6], 0f32);
    if count < N_THIN {
        let gm = (rho[0] * rho[1] * rho[2]).cbrt();
        let thin: [bool; 3] = std::array::from_fn(|k| rho[k] < 0.75 * rho[0]);
        let n_thin = thin.iter().filter(|t| **t).count();
        let axes: [f32; 3] = std::array::from_fn(|k| {
            let min = match (thin[k], n_thin) {
                (false, _) => 0.9,
                (true, 1) => 0.75,
                (true, _) => 0.8,
            };
            (min * h).max(FLOOR_REACH * vol_radius * rho[k] / gm)
        });
        f = sym(&q, axes.map(|v| 1.0 / (v * v)));
        fs = axes.iter().copied().fold(f32::MAX, f32::min);
        for a in 0..3 {
            let e = (0..3)
                .map(|k| ((axes[k] + 1.5 * h) * q[(a, k)]).powi(2))
                .sum::<f32>()
                .sqrt();
            ext[a] = ext[a].max(e);
        }
    }
    let mut k = Kernel {
        m,
        amp,
        f,
        fs,
        ext,
        core_ext: ext,
        wall_axis: 3,
        wall_offset: 0.0,
    };
    add_wall_film(&mut k, centre, h, p);
    Some(k)
}

/// Whether `x` lies within one cell `h` inside a wall of the liquid region (a wall film's
/// particle, whose kernel is always the covariance's).
pub(super) fn near_wall(x: [f32; 3], h: f32, p: &Params) -> bool {
    (0..3).any(|a| {
        (0.0..h).contains(&(x[a] - p.region_lo[a] as f32))
            || (0.0..h).contains(&(p.region_hi[a] as f32 - x[a]))
    })
}

/// Sets the wall film of kernel `k` centred at `centre` (metres): the nearest wall of the
/// liquid region within one cell inside, if any, and widens the bounding box to cover it.
pub(super) fn add_wall_film(k: &mut Kernel, centre: [f32; 3], h: f32, p: &Params) {
    let (mut wall_axis, mut wall_offset, mut best) = (3u8, 0f32, h);
    #[allow(clippy::needless_range_loop)] // `a` names the axis of two arrays and the wall
    for a in 0..3 {
        for (wall, sign) in [
            (p.region_lo[a] as f32, 1.0f32),
            (p.region_hi[a] as f32, -1.0),
        ] {
            let dist = sign * (centre[a] - wall);
            if (0.0..best).contains(&dist) {
                best = dist;
                wall_axis = a as u8;
                wall_offset = wall + sign * WALL_CENTRE * h - centre[a];
            }
        }
    }
    k.ext = k.core_ext;
    k.wall_axis = wall_axis;
    k.wall_offset = wall_offset;
    if wall_axis < 3 {
        #[allow(clippy::needless_range_loop)] // `a` is compared with the wall's axis
        for a in 0..3 {
            let e = if a == wall_axis as usize {
                wall_offset.abs() + (WALL_ACROSS + 1.5) * h
            } else {
                (WALL_ALONG + 1.5) * h
            };
            k.ext[a] = k.ext[a].max(e);
        }
    }
}
