//! The V-cycle's grid transfers: restriction of the residual (stored by colour) to the coarse
//! right-hand side (stored by colour), and the prolongation's taps (the red-black sweeps, the
//! residual and the prolongation are in `wavefront.rs`); and, for the tests, the plain
//! per-cell residual and prolongation that the wavefront's fused stages must match. Every loop
//! writes each cell from values that no other task writes in the same loop (the transfers read
//! another level or another vector), so the result does not depend on the thread count.

use super::SyncPtr;
use super::level::{FLUID, Level};
#[cfg(test)]
use super::taps::coarse_taps;
use super::taps::{PAIRS, TAP, fine_taps};
use rayon::prelude::*;

/// Cells per rayon task of the V-cycle's loops.
const TASK_CELLS: usize = 16 * 1024;

/// Coarse cells per chunk of a transfer's line buffers.
const LINE: usize = 128;

/// `coarse.b = P^T fine.r / 2` on the coarse fluid cells (stored by colour), `P` the trilinear
/// prolongation: the full-weighting average of the fine residual (weights sum to 1) times 4,
/// since the integer-stencil operator of a grid of spacing `2h` is 4 times that of spacing `h`
/// (McAdams et al. 2010, sec. 4). Restriction is thus a constant times `P^T`, which keeps the
/// V-cycle symmetric. Per coarse row, the 16 fine rows around it are first combined (y and z
/// weights) into two line buffers, the even and the odd fine cells (the fine `r` is stored by
/// colour, so each is one compact row of the fine level as it is), then the x weights applied.
pub(super) fn restrict(fine: &Level, coarse: &mut Level) {
    let per = coarse.rows_per_task(TASK_CELLS / 8);
    let b = SyncPtr(coarse.b.as_mut_ptr());
    let (coarse, rows) = (&*coarse, coarse.spans.len());
    (0..rows.div_ceil(per)).into_par_iter().for_each(|t| {
        let rows = t * per..((t + 1) * per).min(rows);
        // SAFETY: `b` is `coarse.b`'s buffer; each task writes its rows' entries alone.
        unsafe { restrict_rows(fine, coarse, b.get(0), rows) }
    });
}

/// Coarse rows `rows` of [`restrict`] into the coarse right-hand side at `b` (the coarse
/// level's `b`, by colour): one team thread's share (`team.rs`).
///
/// # Safety
/// `b` is `coarse.b`'s buffer, and no other thread reads or writes these rows of it meanwhile.
pub(super) unsafe fn restrict_rows(
    fine: &Level,
    coarse: &Level,
    b: *mut f32,
    rows: std::ops::Range<usize>,
) {
    let avx2 = super::level::has_avx2();
    assert!(rows.end <= coarse.spans.len());
    for row in rows {
        for (s, fst) in coarse.seg.with_fine(row) {
            let (span, st) = (s.span, s.st());
            #[cfg(target_arch = "x86_64")]
            if avx2 {
                // SAFETY: the CPU has AVX2; the caller's for `b`.
                unsafe { restrict_avx2(fine, coarse, row, span, (st[0], fst), b) };
                continue;
            }
            let _ = avx2;
            // SAFETY: the caller's.
            unsafe { restrict_segment(fine, coarse, row, span, (st[0], fst), b) };
        }
    }
}

/// [`restrict_segment`] compiled for AVX2 (no fused multiply-adds: the same bits).
///
/// # Safety
/// As [`restrict_segment`], and the CPU has AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn restrict_avx2(
    fine: &Level,
    coarse: &Level,
    row: usize,
    span: [u32; 2],
    st: (usize, &[usize; 16]),
    b: *mut f32,
) {
    // SAFETY: the caller's.
    unsafe { restrict_segment(fine, coarse, row, span, st, b) };
}

/// Coarse row `row`'s segment `[lo, hi)` of [`restrict`] (the row's virtual start `st` in the
/// range that holds it, colour 0: `layout.rs`; `fst`, the 16 fine rows' starts where they
/// store the segment's fine cells, `segments.rs`), into `b`. Per block of coarse cells, the
/// 16 fine rows around the row (z tap outer, y tap inner) are summed with their y and z
/// weights into two line buffers, the even and the odd fine cells from fine x `2 i0 - 2` on
/// (fine compact `i0 - 1 + t` of each colour's row): eight pairs at a time over all 16 rows
/// where `fst` has them, else each fine row along its own segments only (its other cells are
/// not fluid, their residual 0: the same sums and bits as summing every cell); then the x
/// weights.
///
/// # Safety
/// `b` is the coarse level's `b`; no other thread reads or writes this row of it meanwhile.
#[inline(always)]
unsafe fn restrict_segment(
    fine: &Level,
    coarse: &Level,
    row: usize,
    [lo, hi]: [u32; 2],
    (st, fst): (usize, &[usize; 16]),
    b: *mut f32,
) {
    const L: usize = PAIRS;
    let n = coarse.n;
    let (j, k) = (row % n[1], row / n[1]);
    let (lo, hi) = (lo as usize, hi as usize);
    let (tj, tk) = (fine_taps(j, fine.n[1]), fine_taps(k, fine.n[2]));
    let label = &coarse.label[n[0] * row..][..n[0]];
    let (r, fh, ch) = (&fine.r, fine.lay.half, coarse.lay.half);
    let mut ev = [0.0f32; LINE + 2 * L];
    let mut od = [0.0f32; LINE + 2 * L];
    // The 16 fine rows' even and odd cells' virtual starts and weights, where they are kept.
    let mut rows = [(0usize, 0usize, 0.0f32); 16];
    let fast = fst[0] != usize::MAX;
    if fast {
        for (a, (&zk, wk)) in tk.iter().zip(TAP).enumerate() {
            for (b, (&yj, wj)) in tj.iter().zip(TAP).enumerate() {
                let (t, q) = (4 * a + b, (yj + zk) & 1);
                rows[t] = (q * fh + fst[t], (1 - q) * fh + fst[t], wj * wk);
            }
        }
    }
    let reach = rows.iter().map(|&(e, o, _)| e.max(o)).max().unwrap_or(0);
    let mut i0 = lo;
    while i0 < hi {
        let i1 = (i0 + LINE).min(hi);
        // Pairs t = 0 ..= i1 - i0 (the last coarse cell's taps reach pair i1 - 1 - i0 + 1):
        // fine compact m0 + t.
        let (m0, pairs) = (i0 - 1, i1 - i0 + 1);
        if fast {
            let pairs = pairs.next_multiple_of(L);
            // Each fine row's compact entries m0 .. m0 + pairs lie in its range and padding
            // (`segments.rs`); bounds-checked here, once per block for all 16 rows.
            assert!(reach + m0 + pairs <= r.len());
            for t in (0..pairs).step_by(L) {
                let (mut ae, mut ao) = ([0.0f32; L], [0.0f32; L]);
                for &(e, o, w) in &rows {
                    // SAFETY: e, o <= reach and t + L <= pairs: in bounds (asserted above).
                    let (re, ro) = unsafe {
                        let at =
                            |x: usize| std::slice::from_raw_parts(r.as_ptr().add(x + m0 + t), L);
                        (at(e), at(o))
                    };
                    for l in 0..L {
                        ae[l] += w * re[l];
                        ao[l] += w * ro[l];
                    }
                }
                ev[t..t + L].copy_from_slice(&ae);
                od[t..t + L].copy_from_slice(&ao);
            }
        } else {
            ev[..pairs].fill(0.0);
            od[..pairs].fill(0.0);
            for (&zk, wk) in tk.iter().zip(TAP) {
                for (&yj, wj) in tj.iter().zip(TAP) {
                    let (fr, q) = (yj + fine.n[1] * zk, (yj + zk) & 1);
                    let w = wj * wk;
                    for s in fine.seg.of(fr) {
                        let ([a, b], fst) = (s.span, s.st());
                        // The fine segment's pairs within the block's.
                        let (ma, mb) = (
                            (a as usize >> 1).max(m0),
                            ((b as usize + 1) >> 1).min(m0 + pairs),
                        );
                        if ma >= mb {
                            continue;
                        }
                        let (e, o) = (q * fh + fst[0], (1 - q) * fh + fst[0]);
                        let (re, ro) = (&r[e + ma..e + mb], &r[o + ma..o + mb]);
                        let (le, lo) = (&mut ev[ma - m0..mb - m0], &mut od[ma - m0..mb - m0]);
                        for (l, x) in le.iter_mut().zip(re) {
                            *l += w * x;
                        }
                        for (l, x) in lo.iter_mut().zip(ro) {
                            *l += w * x;
                        }
                    }
                }
            }
        }
        let len = i1 - i0;
        // The block's last entry of either colour is in `b` (so are the others).
        assert!(ch + st + ((i1 - 1) >> 1) < coarse.b.len());
        let (e0, o0, e1, o1) = (&ev[..len], &od[..len], &ev[1..len + 1], &od[1..len + 1]);
        for (t, (((e0, o0), e1), o1)) in e0.iter().zip(o0).zip(e1).zip(o1).enumerate() {
            let i = i0 + t;
            // Weights sum to 8: P^T r / 2 = 4 * (mean).
            let v = 0.5 * (TAP[0] * e0 + TAP[1] * o0 + TAP[2] * e1 + TAP[3] * o1);
            let x = ((i + j + k) & 1) * ch + st + (i >> 1);
            // SAFETY: in bounds (asserted for the block); this row's entries are this
            // thread's.
            unsafe { *b.add(x) = if label[i] == FLUID { v } else { 0.0 } };
        }
        i0 = i1;
    }
}

/// `r = b - A u` on the fluid cells of the spans (0 on the other cells of a span), one cell
/// at a time in the natural order: the reference of the wavefront's residual stage.
#[cfg(test)]
pub(super) fn residual(lv: &mut Level) {
    let n = lv.n;
    let st = lv.strides();
    for row in 0..lv.spans.len() {
        let [lo, hi] = lv.spans[row];
        let (j, k) = (row % n[1], row / n[1]);
        for i in lo as usize..hi as usize {
            let c = n[0] * row + i;
            let u = |i: usize, j: usize, k: usize| lv.u[lv.split(i, j, k)];
            let nb = [
                u(i - 1, j, k),
                u(i + 1, j, k),
                u(i, j - 1, k),
                u(i, j + 1, k),
                u(i, j, k - 1),
                u(i, j, k + 1),
            ];
            let s = if lv.unit {
                (nb[0] + nb[1]) + (nb[2] + nb[3]) + (nb[4] + nb[5])
            } else {
                let w = &lv.w;
                (w[0][c] * nb[0] + w[0][c + 1] * nb[1])
                    + (w[1][c] * nb[2] + w[1][c + st[1]] * nb[3])
                    + (w[2][c] * nb[4] + w[2][c + st[2]] * nb[5])
            };
            let x = lv.split(i, j, k);
            let d = lv.diag[x];
            lv.r[x] = if d != 0.0 {
                lv.b[x] - d * lv.u[x] + s
            } else {
                0.0
            };
        }
    }
}

/// `fine.u += P coarse.u` on the fine fluid cells (cell-centred trilinear interpolation; the
/// coarse `u` is 0 outside the coarse liquid), one cell at a time: per fine cell, the four
/// coarse rows around its row are summed with their y and z weights at the two coarse x taps,
/// then the x weights applied. The reference of the wavefront's prolongation stage.
#[cfg(test)]
pub(super) fn prolong_add(coarse: &Level, fine: &mut Level) {
    let n = fine.n;
    for row in 0..fine.spans.len() {
        let [lo, hi] = fine.spans[row];
        let (j, k) = (row % n[1], row / n[1]);
        let (jj, wj) = coarse_taps(j);
        let (kk, wk) = coarse_taps(k);
        let rows = [
            (jj[0], kk[0], wj[0] * wk[0]),
            (jj[1], kk[0], wj[1] * wk[0]),
            (jj[0], kk[1], wj[0] * wk[1]),
            (jj[1], kk[1], wj[1] * wk[1]),
        ];
        // The line of coarse cells x, summed over the four rows from 0.
        let line = |x: usize| {
            let mut l = 0.0f32;
            for &(cj, ck, wr) in &rows {
                l += wr * coarse.u[coarse.split(x, cj, ck)];
            }
            l
        };
        for i in lo as usize..hi as usize {
            let (pq, w) = coarse_taps(i);
            let v = w[0] * line(pq[0]) + w[1] * line(pq[1]);
            let x = fine.split(i, j, k);
            if fine.invd[x] != 0.0 {
                fine.u[x] += v;
            }
        }
    }
}
