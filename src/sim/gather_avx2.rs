//! The grid-to-particle transfer and RK2 advection of [`super::transfer`] and of
//! [`super::apic`] ([`apic_gather_and_advect8`]), eight particles at a time with AVX2 (x86_64
//! only, chosen at run time), and the stencils and weights of their particle-to-grid splat
//! ([`splat8`]).
//!
//! Every lane performs exactly the operations of the scalar loop, in the same order, with no
//! fused multiply-adds (an IEEE add or multiply rounds the same in a vector lane as in a scalar
//! register), so the results are bit-identical to the scalar path; a unit test checks this on
//! random particles and fields. The eight corner values of each trilinear interpolation are
//! fetched with gathers, which is where the time of the scalar loop went: nine interpolations
//! of eight values per particle. The corners come in pairs of x neighbours, adjacent in memory,
//! so each pair is one 8-byte element of a four-lane gather ([`gather_pair`]): half the gathered
//! elements, the same values. On the 1M-particle dam break that took the grid-to-particle stage
//! from 12.6-13.2 to 10.0-10.2 ms per substep on 2 threads (24.0-25.3 to 19.0-19.2 on 1; the
//! same result checksums; session 42, `BENCH_SKIP_TUTORIAL=1 BENCH_DAM_PEER=0
//! BENCH_COMPARE_PRECONDITIONERS=0 BENCH_REPLAY_FRAMES=0 BENCH_PEERS=0 cargo bench --bench
//! bench_stepper`, the binaries before and after alternated).

use super::mac_grid::GridDims;
use std::arch::x86_64::*;

/// Lanes per vector.
pub const LANES: usize = 8;

/// Interpolation weights of eight points on the three face grids: per component, the flat
/// index of the lower corner node and the fractions along x, y, z (as [`super::mac_grid::Stencil`]).
pub(super) struct Stencil8 {
    base: [__m256i; 3],
    frac: [[__m256; 3]; 3],
}

/// Whether the vector loop may run on these grids: at least two cells per axis (so every
/// stencil corner is inside the grid, as the scalar loop's bounds check asserts), grids `f`
/// covering the face grids of `d`, and every face index within the gathers' 32-bit offsets.
pub fn fits(d: &GridDims, grids: [&[Vec<f32>; 3]; 2]) -> bool {
    (0..3).all(|a| {
        d.n[a] >= 2
            && d.faces(a) < i32::MAX as usize
            && grids.iter().all(|g| g[a].len() >= d.faces(a))
    })
}

/// [`GridDims::stencil`] of eight points.
#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn stencil8(d: &GridDims, p: [__m256; 3]) -> Stencil8 {
    let inv = 1.0 / d.h;
    let zero = _mm256_setzero_ps();
    let mut own = [(_mm256_setzero_si256(), zero); 3];
    let mut across = [(_mm256_setzero_si256(), zero); 3];
    for b in 0..3 {
        let n = d.n[b];
        let g = _mm256_mul_ps(
            _mm256_sub_ps(p[b], _mm256_set1_ps(d.lower[b])),
            _mm256_set1_ps(inv),
        );
        // `max(g, 0)` returns 0 for a NaN `g`, as `f32::max` does.
        let go = _mm256_min_ps(_mm256_max_ps(g, zero), _mm256_set1_ps(n as f32 - 1e-3));
        let ga = _mm256_min_ps(
            _mm256_max_ps(_mm256_sub_ps(g, _mm256_set1_ps(0.5)), zero),
            _mm256_set1_ps(n as f32 - 1.0 - 1e-3),
        );
        let (io, ia) = (_mm256_cvttps_epi32(go), _mm256_cvttps_epi32(ga));
        own[b] = (io, _mm256_sub_ps(go, _mm256_cvtepi32_ps(io)));
        across[b] = (ia, _mm256_sub_ps(ga, _mm256_cvtepi32_ps(ia)));
    }
    let mut st = Stencil8 {
        base: [_mm256_setzero_si256(); 3],
        frac: [[zero; 3]; 3],
    };
    for a in 0..3 {
        let m = d.face_n(a);
        let mut idx = [_mm256_setzero_si256(); 3];
        for b in 0..3 {
            let (i, f) = if a == b { own[b] } else { across[b] };
            idx[b] = i;
            st.frac[a][b] = f;
        }
        let (m0, m1) = (
            _mm256_set1_epi32(m[0] as i32),
            _mm256_set1_epi32(m[1] as i32),
        );
        st.base[a] = _mm256_add_epi32(
            idx[0],
            _mm256_mullo_epi32(m0, _mm256_add_epi32(idx[1], _mm256_mullo_epi32(m1, idx[2]))),
        );
    }
    st
}

/// `a0 + (a1 - a0) t`, as the scalar lerp.
#[inline]
#[target_feature(enable = "avx2")]
fn lerp(a0: __m256, a1: __m256, t: __m256) -> __m256 {
    _mm256_add_ps(a0, _mm256_mul_ps(_mm256_sub_ps(a1, a0), t))
}

/// [`GridDims::interp`] of component `a` (values `f`) at eight points.
///
/// # Safety
/// `f` has component `a`'s grid size (the stencil keeps every corner inside it).
#[inline]
#[target_feature(enable = "avx2")]
pub(super) unsafe fn interp8(d: &GridDims, st: &Stencil8, a: usize, f: &[f32]) -> __m256 {
    let m = d.face_n(a);
    let (sy, sz) = (m[0] as i32, (m[0] * m[1]) as i32);
    debug_assert!(f.len() >= d.faces(a));
    let b = st.base[a];
    let [fx, fy, fz] = st.frac[a];
    // SAFETY: the stencil's corners lie inside component a's grid, which `f` covers.
    let g = |off: i32| unsafe { gather_pair(f, _mm256_add_epi32(b, _mm256_set1_epi32(off))) };
    let c00 = lerp_pair(g(0), fx);
    let c10 = lerp_pair(g(sy), fx);
    let c01 = lerp_pair(g(sz), fx);
    let c11 = lerp_pair(g(sz + sy), fx);
    lerp(lerp(c00, c10, fy), lerp(c01, c11, fy), fz)
}

/// `lerp` of a pair from [`gather_pair`].
#[inline]
#[target_feature(enable = "avx2")]
fn lerp_pair((a0, a1): (__m256, __m256), t: __m256) -> __m256 {
    lerp(a0, a1, t)
}

/// `(f[i], f[i + 1])` for the eight lanes' indices `i`: each pair of neighbours along x is one
/// 8-byte element of two four-lane gathers (half the elements of two eight-lane gathers of
/// `f[i]` and `f[i + 1]`), then sorted into lane order. The same values, so the same bits.
///
/// # Safety
/// `f[i]` and `f[i + 1]` are in bounds for every lane.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn gather_pair(f: &[f32], i: __m256i) -> (__m256, __m256) {
    let p = f.as_ptr() as *const f64;
    // SAFETY: each lane reads the 8 bytes of f[i], f[i + 1] (the caller's contract); gathers
    // need no alignment.
    let (lo, hi) = unsafe {
        (
            _mm256_i32gather_pd::<4>(p, _mm256_castsi256_si128(i)),
            _mm256_i32gather_pd::<4>(p, _mm256_extracti128_si256::<1>(i)),
        )
    };
    // lo = a0 b0 a1 b1 | a2 b2 a3 b3 and hi = a4 b4 a5 b5 | a6 b6 a7 b7 (a = f[i], b = f[i+1]).
    let (lo, hi) = (_mm256_castpd_ps(lo), _mm256_castpd_ps(hi));
    // a0 a1 a4 a5 | a2 a3 a6 a7, then the middle 8-byte pairs swapped: a0 .. a7.
    let a = _mm256_shuffle_ps::<0b10_00_10_00>(lo, hi);
    let b = _mm256_shuffle_ps::<0b11_01_11_01>(lo, hi);
    let order =
        |v: __m256| _mm256_castpd_ps(_mm256_permute4x64_pd::<0b11_01_10_00>(_mm256_castps_pd(v)));
    (order(a), order(b))
}

/// `x.clamp(lo, hi)` per lane, with `f32::clamp`'s NaN behaviour (a NaN stays NaN).
#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn clamp8(x: __m256, lo: f32, hi: f32) -> __m256 {
    let (lo, hi) = (_mm256_set1_ps(lo), _mm256_set1_ps(hi));
    let below = _mm256_cmp_ps::<_CMP_LT_OQ>(x, lo);
    let above = _mm256_cmp_ps::<_CMP_GT_OQ>(x, hi);
    _mm256_blendv_ps(_mm256_blendv_ps(x, hi, above), lo, below)
}

/// [`super::advect::reflect`] per lane: a coordinate past `lo` (`hi`) is mirrored back inside
/// (`2 lo - x`, at most `hi`; `2 hi - x`, at least `lo`); a NaN stays NaN.
#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn reflect8(x: __m256, lo: f32, hi: f32, open: [bool; 2]) -> __m256 {
    let (lov, hiv) = (_mm256_set1_ps(lo), _mm256_set1_ps(hi));
    let below = _mm256_cmp_ps::<_CMP_LT_OQ>(x, lov);
    let above = _mm256_cmp_ps::<_CMP_GT_OQ>(x, hiv);
    // An open side clamps (as the scalar `reflect`).
    let rb = if open[0] {
        lov
    } else {
        _mm256_min_ps(_mm256_sub_ps(_mm256_set1_ps(lo + lo), x), hiv)
    };
    let ra = if open[1] {
        hiv
    } else {
        _mm256_max_ps(_mm256_sub_ps(_mm256_set1_ps(hi + hi), x), lov)
    };
    _mm256_blendv_ps(_mm256_blendv_ps(x, ra, above), rb, below)
}

/// The RK2 (midpoint) step of eight particles at `p` whose velocity there is `vn`: the
/// midpoint `p + h vn` clamped into `[lo, hi]`, the velocity there, and the end point
/// `p + dt u_mid` mirrored off walls (clamped on open faces), as the scalar loops do;
/// `[h, dt]` are `dt / 2` and `dt` in every lane.
///
/// # Safety
/// `vel_new` fits the grid ([`fits`]).
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn rk2_step8(
    d: &GridDims,
    vel_new: &[Vec<f32>; 3],
    p: [__m256; 3],
    vn: [__m256; 3],
    [h, dtv]: [__m256; 2],
    lo: [f32; 3],
    hi: [f32; 3],
) -> [__m256; 3] {
    let mid: [__m256; 3] =
        std::array::from_fn(|a| clamp8(_mm256_add_ps(p[a], _mm256_mul_ps(h, vn[a])), lo[a], hi[a]));
    let sm = stencil8(d, mid);
    // SAFETY: `vel_new` fits the grid (the caller's contract).
    let um = unsafe {
        [
            interp8(d, &sm, 0, &vel_new[0]),
            interp8(d, &sm, 1, &vel_new[1]),
            interp8(d, &sm, 2, &vel_new[2]),
        ]
    };
    std::array::from_fn(|a| {
        reflect8(
            _mm256_add_ps(p[a], _mm256_mul_ps(dtv, um[a])),
            lo[a],
            hi[a],
            d.open[a],
        )
    })
}

/// The blend and RK2 step of [`super::transfer::gather_and_advect`] for the first whole groups
/// of [`LANES`] particles (of the shortest slice); returns how many it did (the caller does
/// the rest with the scalar loop).
///
/// # Safety
/// The CPU has AVX2 and [`fits`]`(d, [vel_new, delta])`.
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx2")]
pub unsafe fn gather_and_advect8(
    d: &GridDims,
    vel_new: &[Vec<f32>; 3],
    delta: &[Vec<f32>; 3],
    flip: f32,
    dt: f32,
    lo: [f32; 3],
    hi: [f32; 3],
    pos: [&mut [f32]; 3],
    vel: [&mut [f32]; 3],
) -> usize {
    let shortest = pos.iter().chain(&vel).map(|s| s.len()).min().unwrap_or(0);
    let n = shortest / LANES * LANES;
    let (fl, omf) = (_mm256_set1_ps(flip), _mm256_set1_ps(1.0 - flip));
    let (h, dtv) = (_mm256_set1_ps(0.5 * dt), _mm256_set1_ps(dt));
    let [px, py, pz] = pos;
    let [vx, vy, vz] = vel;
    let mut i = 0;
    while i < n {
        // SAFETY: i + LANES <= len of every slice.
        unsafe {
            let load = |s: &[f32]| _mm256_loadu_ps(s.as_ptr().add(i));
            let p = [load(px), load(py), load(pz)];
            let st = stencil8(d, p);
            // Written out, not `[0, 1, 2].map(..)`: a closure does not inherit this function's AVX2
            // target feature, so the compiler may leave it an out-of-line call per lane group
            // (seen: about 4 ms more per 1M-particle substep).
            let vn = [
                interp8(d, &st, 0, &vel_new[0]),
                interp8(d, &st, 1, &vel_new[1]),
                interp8(d, &st, 2, &vel_new[2]),
            ];
            let dv = [
                interp8(d, &st, 0, &delta[0]),
                interp8(d, &st, 1, &delta[1]),
                interp8(d, &st, 2, &delta[2]),
            ];
            let blend = |v: __m256, a: usize| {
                _mm256_add_ps(
                    _mm256_mul_ps(fl, _mm256_add_ps(v, dv[a])),
                    _mm256_mul_ps(omf, vn[a]),
                )
            };
            let v = [blend(load(vx), 0), blend(load(vy), 1), blend(load(vz), 2)];
            _mm256_storeu_ps(vx.as_mut_ptr().add(i), v[0]);
            _mm256_storeu_ps(vy.as_mut_ptr().add(i), v[1]);
            _mm256_storeu_ps(vz.as_mut_ptr().add(i), v[2]);
            let q = rk2_step8(d, vel_new, p, vn, [h, dtv], lo, hi);
            _mm256_storeu_ps(px.as_mut_ptr().add(i), q[0]);
            _mm256_storeu_ps(py.as_mut_ptr().add(i), q[1]);
            _mm256_storeu_ps(pz.as_mut_ptr().add(i), q[2]);
        }
        i += LANES;
    }
    n
}

/// The particle-to-grid splat of [`super::transfer::splat`] (and, with `aff`, of
/// [`super::apic`]) for the first whole groups of [`LANES`] particles in slots `s0..s1`:
/// stencils, weights and corner velocities are computed eight lanes at a time (the scalar
/// loop's operations, lane by lane), then added to the accumulators particle by particle and
/// corner by corner in the scalar loop's order, so the sums are bit-identical. Each lane's
/// adds to the two faces of a pair of x-neighbour corners are one 16-byte add, its four floats
/// put in place by shuffles (unpacking the weights with the weighted velocities) rather than
/// element by element: the splat stage 8.8 -> 7.4 ms per substep on the 1M-particle dam break
/// at 2 threads, 18.8 -> 15.4 on 1 (session 42, the bench's checksums unchanged). Returns how
/// many particles it did.
///
/// # Safety
/// The CPU has AVX2; every grid axis has at least two cells and `acc[a]` covers component
/// `a`'s faces; no other task writes the faces these particles reach while this runs.
#[allow(clippy::needless_range_loop)]
#[target_feature(enable = "avx2")]
pub unsafe fn splat8(
    d: &GridDims,
    pos: &[Vec<f32>; 3],
    vel: &[Vec<f32>; 3],
    aff: Option<&[Vec<f32>; 9]>,
    s0: usize,
    s1: usize,
    acc: [super::sync_ptr::SyncPtr<[f32; 2]>; 3],
) -> usize {
    let n = (s1 - s0) / LANES * LANES;
    let (one, zero, hv) = (
        _mm256_set1_ps(1.0),
        _mm256_setzero_ps(),
        _mm256_set1_ps(d.h),
    );
    // Per component and pair of x-neighbour corners (c, c + 1), the four floats each lane adds
    // to the two faces' accumulators, `[w_c v_c, w_c, w_c+1 v_c+1, w_c+1]`: `adds[a][c / 2][q]`
    // holds lanes q (first four floats) and q + 4 (last four), from interleaving shuffles.
    let mut adds = [[[[0.0f32; 8]; 4]; 4]; 3];
    let mut base = [[0i32; LANES]; 3];
    let mut s = s0;
    while s < s0 + n {
        // SAFETY: the loads read 8 elements of slices checked to hold them (`s..s + LANES`);
        // the stores write whole local arrays.
        unsafe {
            let p = [0, 1, 2].map(|a| _mm256_loadu_ps(pos[a][s..s + LANES].as_ptr()));
            let st = stencil8(d, p);
            for a in 0..3 {
                let v = _mm256_loadu_ps(vel[a][s..s + LANES].as_ptr());
                let [fx, fy, fz] = st.frac[a];
                let wz = [_mm256_sub_ps(one, fz), fz];
                let wy = [_mm256_sub_ps(one, fy), fy];
                let wx = [_mm256_sub_ps(one, fx), fx];
                // APIC: corner (x, y, z)'s velocity `v0 + u_x + u_y + u_z`, `v0 = v - c . frac`
                // and `u_b` 0 or `c_b = h C[a][b]` (as `apic::splat_particles`, op by op);
                // PIC/FLIP: `v` at every corner.
                let affine = aff.map(|m| {
                    let c = [0, 1, 2].map(|b| {
                        let row = _mm256_loadu_ps(m[3 * a + b][s..s + LANES].as_ptr());
                        _mm256_mul_ps(hv, row)
                    });
                    let v0 = _mm256_sub_ps(
                        _mm256_sub_ps(
                            _mm256_sub_ps(v, _mm256_mul_ps(c[0], fx)),
                            _mm256_mul_ps(c[1], fy),
                        ),
                        _mm256_mul_ps(c[2], fz),
                    );
                    (v0, [[zero, c[0]], [zero, c[1]], [zero, c[2]]])
                });
                // Corner c = (z, y, x) bits, in the scalar loop's nesting order: its weight
                // and weighted velocity, interleaved per lane as `[w v, w]`.
                let corner = |c: usize| {
                    let (x, y, z) = (c & 1, (c >> 1) & 1, c >> 2);
                    let wc = _mm256_mul_ps(_mm256_mul_ps(wx[x], wy[y]), wz[z]);
                    let vc = match affine {
                        Some((v0, u)) => _mm256_add_ps(
                            _mm256_add_ps(_mm256_add_ps(v0, u[0][x]), u[1][y]),
                            u[2][z],
                        ),
                        None => v,
                    };
                    let wv = _mm256_mul_ps(wc, vc);
                    // Lanes 0, 1 | 4, 5 and 2, 3 | 6, 7.
                    let (lo, hi) = (_mm256_unpacklo_ps(wv, wc), _mm256_unpackhi_ps(wv, wc));
                    (_mm256_castps_pd(lo), _mm256_castps_pd(hi))
                };
                for (pair, out) in adds[a].iter_mut().enumerate() {
                    let ((lo0, hi0), (lo1, hi1)) = (corner(2 * pair), corner(2 * pair + 1));
                    let lanes = [
                        _mm256_unpacklo_pd(lo0, lo1),
                        _mm256_unpackhi_pd(lo0, lo1),
                        _mm256_unpacklo_pd(hi0, hi1),
                        _mm256_unpackhi_pd(hi0, hi1),
                    ];
                    for (q, l) in lanes.into_iter().enumerate() {
                        _mm256_storeu_ps(out[q].as_mut_ptr(), _mm256_castpd_ps(l));
                    }
                }
                _mm256_storeu_si256(base[a].as_mut_ptr().cast(), st.base[a]);
            }
        }
        let offsets: [[usize; 8]; 3] = std::array::from_fn(|a| {
            let m = d.face_n(a);
            let (sy, sz) = (m[0], m[0] * m[1]);
            [0, 1, sy, sy + 1, sz, sz + 1, sz + sy, sz + sy + 1]
        });
        for lane in 0..LANES {
            let (q, half) = (lane % 4, 4 * (lane / 4));
            for a in 0..3 {
                let b = base[a][lane] as usize;
                for (pair, add) in adds[a].iter().enumerate() {
                    // The faces of corners 2 pair and 2 pair + 1 are neighbours: one 16-byte
                    // add, each float the scalar loop's add in its order.
                    // SAFETY: the caller's exclusivity; `b + offsets` and the face after it are
                    // inside the grid (the stencil clamps into it and every axis has two cells
                    // or more); SSE is part of AVX2.
                    unsafe {
                        let f = acc[a].get(b + offsets[a][2 * pair]) as *mut f32;
                        let v = _mm_loadu_ps(add[q][half..half + 4].as_ptr());
                        _mm_storeu_ps(f, _mm_add_ps(_mm_loadu_ps(f), v));
                    }
                }
            }
        }
        s += LANES;
    }
    n
}

/// [`super::apic::interp_grad`] of component `a` (values `f`) at eight points: the value and
/// its gradient, the scalar function's operations lane by lane.
///
/// # Safety
/// As [`interp8`].
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn interp_grad8(d: &GridDims, st: &Stencil8, a: usize, f: &[f32]) -> (__m256, [__m256; 3]) {
    let m = d.face_n(a);
    let (sy, sz) = (m[0] as i32, (m[0] * m[1]) as i32);
    let b = st.base[a];
    let [fx, fy, fz] = st.frac[a];
    // SAFETY: the stencil's corners lie inside component a's grid, which `f` covers.
    let g = |off: i32| unsafe { gather_pair(f, _mm256_add_epi32(b, _mm256_set1_epi32(off))) };
    let ((g000, g100), (g010, g110)) = (g(0), g(sy));
    let ((g001, g101), (g011, g111)) = (g(sz), g(sz + sy));
    let c00 = lerp(g000, g100, fx);
    let c10 = lerp(g010, g110, fx);
    let c01 = lerp(g001, g101, fx);
    let c11 = lerp(g011, g111, fx);
    let c0 = lerp(c00, c10, fy);
    let c1 = lerp(c01, c11, fy);
    let value = lerp(c0, c1, fz);
    let inv = _mm256_set1_ps(1.0 / d.h);
    let sub = |x, y| _mm256_sub_ps(x, y);
    let gx = lerp(
        lerp(sub(g100, g000), sub(g110, g010), fy),
        lerp(sub(g101, g001), sub(g111, g011), fy),
        fz,
    );
    let gy = lerp(sub(c10, c00), sub(c11, c01), fz);
    let gz = sub(c1, c0);
    let scale = |x| _mm256_mul_ps(x, inv);
    (value, [scale(gx), scale(gy), scale(gz)])
}

/// The APIC gather and RK2 step of [`super::apic::gather_and_advect`] for the first whole
/// groups of [`LANES`] particles (of the shortest slice): `v = v_new(x)`, the affine rows
/// `aff[3 a + b] = d v_a / d x_b` there, then the step; returns how many it did (the caller
/// does the rest with the scalar loop).
///
/// # Safety
/// The CPU has AVX2 and [`fits`]`(d, [vel_new, vel_new])`.
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx2")]
pub unsafe fn apic_gather_and_advect8(
    d: &GridDims,
    vel_new: &[Vec<f32>; 3],
    dt: f32,
    lo: [f32; 3],
    hi: [f32; 3],
    pos: [&mut [f32]; 3],
    vel: [&mut [f32]; 3],
    aff: [&mut [f32]; 9],
) -> usize {
    let lens = pos.iter().chain(&vel).chain(&aff).map(|s| s.len());
    let n = lens.min().unwrap_or(0) / LANES * LANES;
    let steps = [_mm256_set1_ps(0.5 * dt), _mm256_set1_ps(dt)];
    let mut i = 0;
    while i < n {
        // SAFETY: i + LANES <= len of every slice; `vel_new` fits (the caller's contract).
        unsafe {
            let p = [0, 1, 2].map(|a| _mm256_loadu_ps(pos[a].as_ptr().add(i)));
            let st = stencil8(d, p);
            // Written out (see `gather_and_advect8`).
            let g = [
                interp_grad8(d, &st, 0, &vel_new[0]),
                interp_grad8(d, &st, 1, &vel_new[1]),
                interp_grad8(d, &st, 2, &vel_new[2]),
            ];
            for a in 0..3 {
                _mm256_storeu_ps(vel[a].as_mut_ptr().add(i), g[a].0);
                for b in 0..3 {
                    _mm256_storeu_ps(aff[3 * a + b].as_mut_ptr().add(i), g[a].1[b]);
                }
            }
            let vn = [g[0].0, g[1].0, g[2].0];
            let q = rk2_step8(d, vel_new, p, vn, steps, lo, hi);
            for a in 0..3 {
                _mm256_storeu_ps(pos[a].as_mut_ptr().add(i), q[a]);
            }
        }
        i += LANES;
    }
    n
}
