//! The V-cycle's loops over one level's fluid spans: damped Jacobi sweeps, the residual,
//! restriction and prolongation (the red-black sweeps, which may fuse the residual or the
//! prolongation, are in `wavefront.rs`). Every loop writes each cell from values that no other
//! task writes in the same loop (the transfers read another level or another vector), so the
//! result does not depend on the thread count.

use super::level::{FLUID, Level};
use rayon::prelude::*;

/// Cells per rayon task of the V-cycle's loops.
const TASK_CELLS: usize = 16 * 1024;

/// The rows of one span of a level: the slices a stencil loop over cells `lo..hi` of row
/// `row` reads, each starting at cell `lo` (the x-neighbour slices one cell before).
struct RowSlices<'a> {
    /// `u` from `lo - 1` to `hi + 1`.
    ux: &'a [f32],
    /// `u` of the rows `-y, +y, -z, +z`.
    uy: [&'a [f32]; 4],
    /// Lower-face weights along x from `lo` to `hi + 1`, along y and z of this row and of
    /// the `+y` / `+z` rows (`[y, y+, z, z+]`).
    wx: &'a [f32],
    wyz: [&'a [f32]; 4],
}

impl<'a> RowSlices<'a> {
    #[inline(always)]
    fn new(lv: &'a Level, u: &'a [f32], row: usize, lo: usize, hi: usize) -> Self {
        let st = lv.strides();
        let o = lv.n[0] * row;
        let (a, b) = (o + lo, o + hi);
        let w = &lv.w;
        Self {
            ux: &u[a - 1..b + 1],
            uy: [
                &u[a - st[1]..b - st[1]],
                &u[a + st[1]..b + st[1]],
                &u[a - st[2]..b - st[2]],
                &u[a + st[2]..b + st[2]],
            ],
            wx: &w[0][a..b + 1],
            wyz: [
                &w[1][a..b],
                &w[1][a + st[1]..b + st[1]],
                &w[2][a..b],
                &w[2][a + st[2]..b + st[2]],
            ],
        }
    }

    /// `sum_f w_f u_nb` at offset `t` of the span; `unit`: all weights 1 (not read).
    ///
    /// # Safety
    /// `t < hi - lo`.
    #[inline(always)]
    unsafe fn sum(&self, t: usize, unit: bool) -> f32 {
        unsafe {
            let u = |s: &[f32], i: usize| *s.get_unchecked(i);
            if unit {
                (u(self.ux, t) + u(self.ux, t + 2))
                    + (u(self.uy[0], t) + u(self.uy[1], t))
                    + (u(self.uy[2], t) + u(self.uy[3], t))
            } else {
                let w = |s: &[f32]| *s.get_unchecked(t);
                (w(self.wx) * u(self.ux, t) + *self.wx.get_unchecked(t + 1) * u(self.ux, t + 2))
                    + (w(self.wyz[0]) * u(self.uy[0], t) + w(self.wyz[1]) * u(self.uy[1], t))
                    + (w(self.wyz[2]) * u(self.uy[2], t) + w(self.wyz[3]) * u(self.uy[3], t))
            }
        }
    }
}

/// Two damped Jacobi sweeps from `u = 0` in one pass: the first gives `v = omega b / diag`,
/// which the second reads at the six neighbours as `omega (b / diag)` computed on the fly
/// (so `v` is never stored): `u <- (1 - omega) v + omega (b + sum_f w_f v_nb) / diag`. The same
/// operations as [`jacobi`] twice, up to rounding (`omega (inv b)` is formed per neighbour).
/// Cells next to a span but outside it hold `b = 0`, so their `v` is 0 whatever their stale
/// inverse diagonal.
pub(super) fn jacobi_twice_from_zero(lv: &mut Level, omega: f32) {
    let n = lv.n;
    let per = lv.rows_per_task(TASK_CELLS);
    let mut out = std::mem::take(&mut lv.u);
    {
        let lv = &*lv;
        let (b, invd) = (&lv.b, &lv.invd);
        out.par_chunks_mut(n[0])
            .zip(lv.spans.par_iter())
            .enumerate()
            .with_min_len(per)
            .for_each(|(row, (o, &[lo, hi]))| {
                let (lo, hi) = (lo as usize, hi as usize);
                if lo >= hi {
                    return;
                }
                let c0 = n[0] * row + lo;
                let len = hi - lo;
                let (o, bb, inv) = (&mut o[lo..hi], &b[c0..c0 + len], &invd[c0..c0 + len]);
                let rb = RowSlices::new(lv, b, row, lo, hi);
                let ri = RowSlices::new(lv, invd, row, lo, hi);
                let keep = 1.0 - omega;
                let v = |x: &[f32], y: &[f32], t: usize| {
                    // SAFETY: t + 2 <= len + 2 = x.len() for the x rows, t < len otherwise.
                    unsafe { x.get_unchecked(t) * y.get_unchecked(t) }
                };
                if lv.unit {
                    for t in 0..len {
                        let s = (v(rb.ux, ri.ux, t) + v(rb.ux, ri.ux, t + 2))
                            + (v(rb.uy[0], ri.uy[0], t) + v(rb.uy[1], ri.uy[1], t))
                            + (v(rb.uy[2], ri.uy[2], t) + v(rb.uy[3], ri.uy[3], t));
                        let v0 = omega * inv[t] * bb[t];
                        o[t] = keep * v0 + omega * inv[t] * (bb[t] + omega * s);
                    }
                } else {
                    let w = |x: &[f32], t: usize| unsafe { *x.get_unchecked(t) };
                    for t in 0..len {
                        let s = (w(rb.wx, t) * v(rb.ux, ri.ux, t)
                            + w(rb.wx, t + 1) * v(rb.ux, ri.ux, t + 2))
                            + (w(rb.wyz[0], t) * v(rb.uy[0], ri.uy[0], t)
                                + w(rb.wyz[1], t) * v(rb.uy[1], ri.uy[1], t))
                            + (w(rb.wyz[2], t) * v(rb.uy[2], ri.uy[2], t)
                                + w(rb.wyz[3], t) * v(rb.uy[3], ri.uy[3], t));
                        let v0 = omega * inv[t] * bb[t];
                        o[t] = keep * v0 + omega * inv[t] * (bb[t] + omega * s);
                    }
                }
            });
    }
    lv.u = out;
}

/// One damped Jacobi sweep `u <- (1 - omega) u + omega (b + sum_f w_f u_nb) / diag` on the
/// fluid cells (`u` stays 0 elsewhere: its inverse diagonal is 0), computed into `r` and
/// swapped with `u`. `from_zero`: `u` is taken as 0 (`u <- omega b / diag`), the first sweep
/// of a V-cycle. Each cell reads only the old `u`, so the loop is order-free and vectorises.
pub(super) fn jacobi(lv: &mut Level, omega: f32, from_zero: bool) {
    let n = lv.n;
    let per = lv.rows_per_task(TASK_CELLS);
    let mut out = std::mem::take(&mut lv.r);
    {
        let lv = &*lv;
        let (u, b, invd) = (&lv.u, &lv.b, &lv.invd);
        out.par_chunks_mut(n[0])
            .zip(lv.spans.par_iter())
            .enumerate()
            .with_min_len(per)
            .for_each(|(row, (o, &[lo, hi]))| {
                let (lo, hi) = (lo as usize, hi as usize);
                if lo >= hi {
                    return;
                }
                let c0 = n[0] * row + lo;
                let len = hi - lo;
                let (o, bb, inv) = (&mut o[lo..hi], &b[c0..c0 + len], &invd[c0..c0 + len]);
                if from_zero {
                    for t in 0..len {
                        o[t] = omega * inv[t] * bb[t];
                    }
                    return;
                }
                let rs = RowSlices::new(lv, u, row, lo, hi);
                let uc = &u[c0..c0 + len];
                let keep = 1.0 - omega;
                // Two loops so that the unit-weight one is a separate vector loop.
                if lv.unit {
                    for t in 0..len {
                        // SAFETY: t < len.
                        let s = unsafe { rs.sum(t, true) };
                        o[t] = keep * uc[t] + omega * inv[t] * (bb[t] + s);
                    }
                } else {
                    for t in 0..len {
                        // SAFETY: t < len.
                        let s = unsafe { rs.sum(t, false) };
                        o[t] = keep * uc[t] + omega * inv[t] * (bb[t] + s);
                    }
                }
            });
    }
    lv.r = std::mem::replace(&mut lv.u, out);
}

/// `r = b - A u` on the fluid cells of the spans (0 on the other cells of a span).
#[allow(clippy::needless_range_loop)] // the index also selects the stencil's slices
pub(super) fn residual(lv: &mut Level) {
    let n = lv.n;
    let per = lv.rows_per_task(TASK_CELLS);
    let mut out = std::mem::take(&mut lv.r);
    {
        let lv = &*lv;
        let (u, b, diag) = (&lv.u, &lv.b, &lv.diag);
        out.par_chunks_mut(n[0])
            .zip(lv.spans.par_iter())
            .enumerate()
            .with_min_len(per)
            .for_each(|(row, (o, &[lo, hi]))| {
                let (lo, hi) = (lo as usize, hi as usize);
                if lo >= hi {
                    return;
                }
                let c0 = n[0] * row + lo;
                let len = hi - lo;
                let (o, bb, dg, uc) = (
                    &mut o[lo..hi],
                    &b[c0..c0 + len],
                    &diag[c0..c0 + len],
                    &u[c0..c0 + len],
                );
                let rs = RowSlices::new(lv, u, row, lo, hi);
                let f = |t: usize, s: f32| {
                    if dg[t] != 0.0 {
                        bb[t] - dg[t] * uc[t] + s
                    } else {
                        0.0
                    }
                };
                if lv.unit {
                    for t in 0..len {
                        // SAFETY: t < len.
                        o[t] = f(t, unsafe { rs.sum(t, true) });
                    }
                } else {
                    for t in 0..len {
                        // SAFETY: t < len.
                        o[t] = f(t, unsafe { rs.sum(t, false) });
                    }
                }
            });
    }
    lv.r = out;
}

/// Per-axis fine cells `2I - 2, 2I - 1, 2I, 2I + 1` of coarse cell `I`'s restriction stencil
/// (weights 1, 3, 3, 1 over 4), the last clamped to the fine grid: it is then a wall cell, whose
/// residual is 0.
#[inline(always)]
fn fine_taps(ci: usize, m: usize) -> [usize; 4] {
    [2 * ci - 2, 2 * ci - 1, 2 * ci, (2 * ci + 1).min(m - 1)]
}
const TAP: [f32; 4] = [0.25, 0.75, 0.75, 0.25];
/// Coarse cells per chunk of a transfer's line buffer.
const LINE: usize = 128;

/// `coarse.b = P^T fine.r / 2` on the coarse fluid cells, `P` the trilinear prolongation: the
/// full-weighting average of the fine residual (weights sum to 1) times 4, since the
/// integer-stencil operator of a grid of spacing `2h` is 4 times that of spacing `h`
/// (McAdams et al. 2010, sec. 4). Restriction is thus a constant times `P^T`, which keeps the
/// V-cycle symmetric. Per coarse row, the 16 fine rows around it are first combined (y and z
/// weights) into a line buffer, then the x weights are applied.
pub(super) fn restrict(fine: &Level, coarse: &mut Level) {
    let n = coarse.n;
    let fst = fine.strides();
    let fnx = fine.n[0];
    let per = coarse.rows_per_task(TASK_CELLS / 8);
    let (label, r) = (&coarse.label, &fine.r);
    coarse
        .b
        .par_chunks_mut(n[0])
        .zip(coarse.spans.par_iter())
        .enumerate()
        .with_min_len(per)
        .for_each(|(row, (out, &[lo, hi]))| {
            let (lo, hi) = (lo as usize, hi as usize);
            if lo >= hi {
                return;
            }
            let (j, k) = (row % n[1], row / n[1]);
            let (tj, tk) = (fine_taps(j, fine.n[1]), fine_taps(k, fine.n[2]));
            let mut line = [0.0f32; 2 * LINE + 4];
            let mut i0 = lo;
            while i0 < hi {
                let i1 = (i0 + LINE).min(hi);
                // Fine x from 2 i0 - 2 to 2 i1 - 1 (clamped to the grid; beyond it r is 0).
                let f0 = 2 * i0 - 2;
                let f1 = (2 * i1).min(fnx);
                let len = f1 - f0;
                line[..len + 2].fill(0.0);
                for (zk, wk) in tk.iter().zip(TAP) {
                    for (yj, wj) in tj.iter().zip(TAP) {
                        let wr = wj * wk;
                        let src = &r[yj * fst[1] + zk * fst[2] + f0..][..len];
                        for (l, x) in line[..len].iter_mut().zip(src) {
                            *l += wr * x;
                        }
                    }
                }
                for i in i0..i1 {
                    let t = 2 * (i - i0);
                    // Weights sum to 8: P^T r / 2 = 4 * (mean).
                    let v = 0.5
                        * (TAP[0] * line[t]
                            + TAP[1] * line[t + 1]
                            + TAP[2] * line[t + 2]
                            + TAP[3] * line[t + 3]);
                    out[i] = if label[n[0] * row + i] == FLUID {
                        v
                    } else {
                        0.0
                    };
                }
                i0 = i1;
            }
        });
}

/// Per-axis coarse neighbours and weights of fine cell `i`: its parent `(i + 1) / 2` (weight
/// 3/4) and the coarse cell on its side (1/4).
#[inline(always)]
fn coarse_taps(i: usize) -> ([usize; 2], [f32; 2]) {
    let p = i.div_ceil(2);
    let q = if i % 2 == 1 { p - 1 } else { p + 1 };
    ([p, q], [0.75, 0.25])
}

/// `fine.u += P coarse.u` on the fine fluid cells (cell-centred trilinear interpolation; the
/// coarse `u` is 0 outside the coarse liquid). Per fine row, the four coarse rows around it
/// are first combined (y and z weights) into a line buffer, then interpolated along x.
pub(super) fn prolong_add(coarse: &Level, fine: &mut Level) {
    let n = fine.n;
    let per = fine.rows_per_task(TASK_CELLS);
    let invd = &fine.invd;
    fine.u
        .par_chunks_mut(n[0])
        .zip(fine.spans.par_iter())
        .enumerate()
        .with_min_len(per)
        .for_each(|(row, (u, &[lo, hi]))| {
            prolong_row(coarse, n, &invd[n[0] * row..][..n[0]], u, row, lo, hi);
        });
}

/// [`prolong_add`] on row `row` of a fine grid of `n` cells per axis (`inv`, `u`: the row's
/// inverse diagonal and `u`), cells `lo .. hi`.
#[inline(always)]
pub(super) fn prolong_row(
    coarse: &Level,
    n: [usize; 3],
    inv: &[f32],
    u: &mut [f32],
    row: usize,
    lo: u32,
    hi: u32,
) {
    let (lo, hi) = (lo as usize, hi as usize);
    if lo >= hi {
        return;
    }
    let (cst, cu) = (coarse.strides(), &coarse.u);
    let (j, k) = (row % n[1], row / n[1]);
    let (jj, wj) = coarse_taps(j);
    let (kk, wk) = coarse_taps(k);
    let rows = [
        (jj[0] * cst[1] + kk[0] * cst[2], wj[0] * wk[0]),
        (jj[1] * cst[1] + kk[0] * cst[2], wj[1] * wk[0]),
        (jj[0] * cst[1] + kk[1] * cst[2], wj[0] * wk[1]),
        (jj[1] * cst[1] + kk[1] * cst[2], wj[1] * wk[1]),
    ];
    let mut line = [0.0f32; LINE + 4];
    let mut i0 = lo;
    while i0 < hi {
        let i1 = (i0 + 2 * LINE).min(hi);
        // Coarse x from p(i0) - 1 to p(i1 - 1) + 1.
        let p0 = i0.div_ceil(2) - 1;
        let p1 = i1 / 2 + 2;
        let len = p1 - p0;
        line[..len].fill(0.0);
        for &(rb, wr) in &rows {
            for (l, x) in line[..len].iter_mut().zip(&cu[rb + p0..rb + p1]) {
                *l += wr * x;
            }
        }
        for i in i0..i1 {
            let (pq, w) = coarse_taps(i);
            let v = w[0] * line[pq[0] - p0] + w[1] * line[pq[1] - p0];
            if inv[i] != 0.0 {
                u[i] += v;
            }
        }
        i0 = i1;
    }
}

/// [`prolong_row`] as vector loops (the wavefront's prolongation; 6-11% less time per
/// post-smoothing pass on the 1M dam break's finest level than the per-cell loop, whose
/// parity-dependent taps do not vectorise): along x, fine cell `2m` gets `3/4 L[m] + 1/4 L[m + 1]` and
/// fine cell `2m + 1` gets `3/4 L[m + 1] + 1/4 L[m]` of the line `L` of coarse cells
/// `m = p0 ..` (the same products and sum as [`coarse_taps`]' weights give), computed for
/// every pair of fine cells and then added where the inverse diagonal is not 0: the same bits.
#[inline(always)]
pub(super) fn prolong_row_pairs(
    coarse: &Level,
    n: [usize; 3],
    inv: &[f32],
    u: &mut [f32],
    row: usize,
    lo: u32,
    hi: u32,
) {
    let (lo, hi) = (lo as usize, hi as usize);
    if lo >= hi {
        return;
    }
    let (cst, cu) = (coarse.strides(), &coarse.u);
    let (j, k) = (row % n[1], row / n[1]);
    let (jj, wj) = coarse_taps(j);
    let (kk, wk) = coarse_taps(k);
    let rows = [
        (jj[0] * cst[1] + kk[0] * cst[2], wj[0] * wk[0]),
        (jj[1] * cst[1] + kk[0] * cst[2], wj[1] * wk[0]),
        (jj[0] * cst[1] + kk[1] * cst[2], wj[0] * wk[1]),
        (jj[1] * cst[1] + kk[1] * cst[2], wj[1] * wk[1]),
    ];
    // Fine cells from the even cell e0 <= lo, in pairs (2m, 2m + 1) for coarse m = e0 / 2 ..
    let mut line = [0.0f32; LINE + 2];
    let mut v = [0.0f32; 2 * LINE];
    let mut e0 = lo & !1;
    while e0 < hi {
        let e1 = (e0 + 2 * LINE).min(hi + (hi & 1));
        let m0 = e0 / 2;
        let pairs = (e1 - e0) / 2;
        // Coarse cells m0 ..= m0 + pairs (each pair reads m and m + 1).
        let len = pairs + 1;
        line[..len].fill(0.0);
        for &(rb, wr) in &rows {
            for (l, x) in line[..len].iter_mut().zip(&cu[rb + m0..rb + m0 + len]) {
                *l += wr * x;
            }
        }
        for m in 0..pairs {
            v[2 * m] = 0.75 * line[m] + 0.25 * line[m + 1];
            v[2 * m + 1] = 0.75 * line[m + 1] + 0.25 * line[m];
        }
        let (a, b) = (e0.max(lo), e1.min(hi));
        let (v, inv, u) = (&v[a - e0..b - e0], &inv[a..b], &mut u[a..b]);
        for ((u, v), inv) in u.iter_mut().zip(v).zip(inv) {
            let s = *u + v;
            *u = if *inv != 0.0 { s } else { *u };
        }
        e0 = e1;
    }
}
