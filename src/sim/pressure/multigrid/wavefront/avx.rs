//! The unit-weight red-black update and residual of one chunk of [`LANES`] compact cells
//! with AVX2 intrinsics: the same operations in the same order as the plain loops (no fused
//! multiply-adds), so the same bits.

use super::{LANES, Nb};
use std::arch::x86_64::*;

/// The natural-layout face weights of a level with fractional weights, and the natural
/// index of a chunk's first cell (its cells are every other natural cell from there).
#[derive(Clone, Copy)]
pub(super) struct Weights {
    pub w: [*const f32; 3],
    pub nx: usize,
    pub st2: usize,
    pub nat: usize,
}

/// A level's diagonal (or its inverse) as stored, `f`, and its open-face counts, `n`
/// (`diagonal.rs`): the loops read `n` when the diagonal is the count (their `INT`).
#[derive(Clone, Copy)]
pub(super) struct Diag {
    pub f: *const f32,
    pub n: *const u8,
}

/// `1 / k` for the counts `k` (0 for 0: not fluid), as the set-up computes it in `f32`.
const INVERSES: [f32; 8] = [
    0.0,
    1.0,
    1.0 / 2.0,
    1.0 / 3.0,
    1.0 / 4.0,
    1.0 / 5.0,
    1.0 / 6.0,
    1.0 / 7.0,
];

/// The 8 counts at `p`, as 32-bit lanes.
#[inline(always)]
unsafe fn counts8(p: *const u8) -> __m256i {
    // SAFETY: the caller's (8 bytes readable at `p`).
    unsafe { _mm256_cvtepu8_epi32(_mm_loadl_epi64(p as *const __m128i)) }
}

/// The 8 inverse diagonals at `x`: the stored ones, or from the counts (`INT`; the same bits).
#[inline(always)]
unsafe fn inverse8<const INT: bool>(d: Diag, x: usize) -> __m256 {
    // SAFETY: the caller's (8 entries at `x` of the arrays).
    unsafe {
        if INT {
            _mm256_permutevar8x32_ps(_mm256_loadu_ps(INVERSES.as_ptr()), counts8(d.n.add(x)))
        } else {
            _mm256_loadu_ps(d.f.add(x))
        }
    }
}

/// The 8 diagonals at `x`: the stored ones, or the counts converted (`INT`; exact).
#[inline(always)]
unsafe fn diagonal8<const INT: bool>(d: Diag, x: usize) -> __m256 {
    // SAFETY: the caller's (8 entries at `x` of the arrays).
    unsafe {
        if INT {
            _mm256_cvtepi32_ps(counts8(d.n.add(x)))
        } else {
            _mm256_loadu_ps(d.f.add(x))
        }
    }
}

/// Lanes 0, 2, .. 14 and 1, 3, .. 15 of the 16 floats at `p`.
#[inline(always)]
unsafe fn deinterleave(p: *const f32) -> (__m256, __m256) {
    // SAFETY: the caller's.
    unsafe {
        let (a, b) = (_mm256_loadu_ps(p), _mm256_loadu_ps(p.add(8)));
        let order =
            |x: __m256| _mm256_castpd_ps(_mm256_permute4x64_pd::<0xd8>(_mm256_castps_pd(x)));
        (
            order(_mm256_shuffle_ps::<0x88>(a, b)),
            order(_mm256_shuffle_ps::<0xdd>(a, b)),
        )
    }
}

/// `(x- + x+) + (y- + y+) + (z- + z+)` of the 8 cells at compact `m` of the neighbour rows
/// `nb`, each term times its face weight when `w` is given (the plain loops' order).
#[inline(always)]
unsafe fn sum8(u: *const f32, nb: &Nb, m: usize, w: Option<Weights>) -> __m256 {
    // SAFETY: the caller's; the weight arrays have spare entries past the grid.
    unsafe {
        let l = |x: usize| _mm256_loadu_ps(u.add(x + m));
        let Some(w) = w else {
            let x = _mm256_add_ps(l(nb.x), l(nb.x + 1));
            let y = _mm256_add_ps(l(nb.ym), l(nb.yp));
            let z = _mm256_add_ps(l(nb.zm), l(nb.zp));
            return _mm256_add_ps(_mm256_add_ps(x, y), z);
        };
        let c = w.nat;
        let (wx0, wx1) = deinterleave(w.w[0].add(c));
        let ev = |p: *const f32| deinterleave(p).0;
        let (wy0, wy1) = (ev(w.w[1].add(c)), ev(w.w[1].add(c + w.nx)));
        let (wz0, wz1) = (ev(w.w[2].add(c)), ev(w.w[2].add(c + w.st2)));
        let m = _mm256_mul_ps;
        let x = _mm256_add_ps(m(wx0, l(nb.x)), m(wx1, l(nb.x + 1)));
        let y = _mm256_add_ps(m(wy0, l(nb.ym)), m(wy1, l(nb.yp)));
        let z = _mm256_add_ps(m(wz0, l(nb.zm)), m(wz1, l(nb.zp)));
        _mm256_add_ps(_mm256_add_ps(x, y), z)
    }
}

/// `u[c ..] = inv (b + s)` on one chunk of compact cells starting at `c`, the chunk's
/// compact `m` in its row, the neighbour rows `nb` (`s = 0` from zero); `inv` from the counts
/// if `INT`.
///
/// # Safety
/// The CPU has AVX2; the chunk and its neighbours are in the arrays; no other task writes
/// the chunk or reads it meanwhile, nor writes the neighbours.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn sweep_chunk<const INT: bool>(
    u: *mut f32,
    b: &[f32],
    inv: Diag,
    c: usize,
    nb: &Nb,
    m: usize,
    from_zero: bool,
    w: Option<Weights>,
    omega: f32,
) {
    // SAFETY: the caller's.
    unsafe {
        for t in (0..LANES).step_by(8) {
            let s = if from_zero {
                _mm256_setzero_ps()
            } else {
                let w = w.map(|w| Weights {
                    nat: w.nat + 2 * t,
                    ..w
                });
                sum8(u, nb, m + t, w)
            };
            let bb = _mm256_loadu_ps(b.as_ptr().add(c + t));
            let iv = inverse8::<INT>(inv, c + t);
            let g = _mm256_mul_ps(iv, _mm256_add_ps(bb, s));
            let g = if omega == 1.0 {
                g
            } else {
                // Over-relaxed: `u + omega (g - u)`, as the plain loop.
                let o = _mm256_loadu_ps(u.add(c + t));
                _mm256_add_ps(o, _mm256_mul_ps(_mm256_set1_ps(omega), _mm256_sub_ps(g, o)))
            };
            _mm256_storeu_ps(u.add(c + t), g);
        }
    }
}

/// `line[2p] += w a[p]`, `line[2p + 1] += w b[p]` for `p < LANES` (the prolongation's
/// line of coarse cells from the two colours' compact rows).
///
/// # Safety
/// The CPU has AVX2; `line` has `2 LANES` entries, `a` and `b` `LANES`.
#[inline(always)]
pub(super) unsafe fn line_pairs(line: &mut [f32], a: &[f32], b: &[f32], w: f32) {
    debug_assert!(line.len() >= 2 * LANES && a.len() >= LANES && b.len() >= LANES);
    // SAFETY: the caller's.
    unsafe {
        let w = _mm256_set1_ps(w);
        for t in (0..LANES).step_by(8) {
            let x = _mm256_mul_ps(w, _mm256_loadu_ps(a.as_ptr().add(t)));
            let y = _mm256_mul_ps(w, _mm256_loadu_ps(b.as_ptr().add(t)));
            let lo = _mm256_unpacklo_ps(x, y);
            let hi = _mm256_unpackhi_ps(x, y);
            let l = line.as_mut_ptr().add(2 * t);
            let l0 = _mm256_add_ps(_mm256_loadu_ps(l), _mm256_permute2f128_ps::<0x20>(lo, hi));
            let l1 = _mm256_add_ps(
                _mm256_loadu_ps(l.add(8)),
                _mm256_permute2f128_ps::<0x31>(lo, hi),
            );
            _mm256_storeu_ps(l, l0);
            _mm256_storeu_ps(l.add(8), l1);
        }
    }
}

/// The residual `b - diag u + s` (0 where the diagonal is 0) of one chunk of compact cells
/// of both colours (`c[0]`: the colour of the row's even natural cells, `c[1]`: the odd
/// ones; `nb[e]` the neighbour rows of parity `e`'s cells, `m` the chunk's compact start),
/// stored by colour into `r` at the same compact entries.
///
/// # Safety
/// As [`sweep_chunk`]; `r`'s chunks at `c` are this task's alone. `w.nat`: the row's
/// natural cell `2 m0` (the chunk's even cells; the odd ones follow).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn residual_chunk<const INT: bool>(
    u: *mut f32,
    b: &[f32],
    diag: Diag,
    c: [usize; 2],
    nb: &[Nb; 2],
    m: usize,
    r: *mut f32,
    w: Option<Weights>,
) {
    // SAFETY: the caller's.
    unsafe {
        let u = u as *const f32;
        for t in (0..LANES).step_by(8) {
            for e in 0..2 {
                let own = c[e] + t;
                let w = w.map(|w| Weights {
                    nat: w.nat + 2 * t + e,
                    ..w
                });
                let s = sum8(u, &nb[e], m + t, w);
                let bb = _mm256_loadu_ps(b.as_ptr().add(own));
                let dg = diagonal8::<INT>(diag, own);
                let uc = _mm256_loadu_ps(u.add(own));
                let x = _mm256_add_ps(_mm256_sub_ps(bb, _mm256_mul_ps(dg, uc)), s);
                let m = _mm256_cmp_ps::<_CMP_NEQ_UQ>(dg, _mm256_setzero_ps());
                _mm256_storeu_ps(r.add(own), _mm256_and_ps(m, x));
            }
        }
    }
}
