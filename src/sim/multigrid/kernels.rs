//! The V-cycle's loops over one level's fluid spans: red-black Gauss-Seidel half-sweeps, the
//! residual, restriction and prolongation. Every loop writes each cell from values that no
//! other task writes in the same loop (a colour reads only the other colour; the transfers read
//! another level or another vector), so the result does not depend on the thread count.

use super::SyncPtr;
use super::level::{FLUID, Level};

/// Cells per rayon task of the V-cycle's loops.
const TASK_CELLS: usize = 16 * 1024;

/// `sum_f w_f u_nb(f)` around cell `c` (the off-diagonal part of `-A u`).
///
/// # Safety
/// `c` is a fluid cell (not in the border layer), `u` points at the level's `u`.
#[inline(always)]
unsafe fn neighbours(c: usize, st: [usize; 3], w: &[Vec<f32>; 3], u: *const f32) -> f32 {
    unsafe {
        let g = |i: usize| *u.add(i);
        let wx = w[0].get_unchecked(c) * g(c - 1) + w[0].get_unchecked(c + 1) * g(c + 1);
        let wy =
            w[1].get_unchecked(c) * g(c - st[1]) + w[1].get_unchecked(c + st[1]) * g(c + st[1]);
        let wz =
            w[2].get_unchecked(c) * g(c - st[2]) + w[2].get_unchecked(c + st[2]) * g(c + st[2]);
        wx + wy + wz
    }
}

/// One Gauss-Seidel half-sweep over the cells of colour `colour` (`(i + j + k) % 2`):
/// `u_c = (b_c + sum_f w_f u_nb) / diag_c` (0 on non-fluid cells, whose inverse diagonal is 0).
/// `from_zero`: the other colour is taken as 0 (the first sweep of a V-cycle, which starts from
/// `u = 0`; it thus never reads what the previous application left).
pub(super) fn half_sweep(lv: &mut Level, colour: usize, from_zero: bool) {
    let n = lv.n;
    let st = lv.strides();
    let up = SyncPtr(lv.u.as_mut_ptr());
    let (b, invd, w) = (&lv.b, &lv.invd, &lv.w);
    super::for_rows(
        n,
        &lv.spans,
        lv.rows_per_task(TASK_CELLS),
        |row, j, k, lo, hi| {
            let base = n[0] * row;
            let mut i = lo + ((lo + j + k + colour) & 1);
            while i < hi {
                let c = base + i;
                // SAFETY: cells of this colour are written by the task of their row only; the
                // neighbours read are of the other colour, which no task writes in this loop; `c`
                // lies in a fluid span, so it is not in the border layer.
                unsafe {
                    let s = if from_zero {
                        0.0
                    } else {
                        neighbours(c, st, w, up.0)
                    };
                    *up.get(c) = invd.get_unchecked(c) * (b.get_unchecked(c) + s);
                }
                i += 2;
            }
        },
    );
}

/// `r = b - A u` on the fluid cells of the spans (0 on the other cells of a span).
pub(super) fn residual(lv: &mut Level) {
    let n = lv.n;
    let st = lv.strides();
    let rp = SyncPtr(lv.r.as_mut_ptr());
    let (u, b, invd, w) = (&lv.u, &lv.b, &lv.invd, &lv.w);
    super::for_rows(
        n,
        &lv.spans,
        lv.rows_per_task(TASK_CELLS),
        |row, _, _, lo, hi| {
            let base = n[0] * row;
            for c in base + lo..base + hi {
                // SAFETY: the cells of this row are written by this task only; `c` lies in a fluid
                // span (not in the border layer).
                unsafe {
                    let r = if *invd.get_unchecked(c) != 0.0 {
                        let d = w[0].get_unchecked(c)
                            + w[0].get_unchecked(c + 1)
                            + w[1].get_unchecked(c)
                            + w[1].get_unchecked(c + st[1])
                            + w[2].get_unchecked(c)
                            + w[2].get_unchecked(c + st[2]);
                        b.get_unchecked(c) - d * u.get_unchecked(c)
                            + neighbours(c, st, w, u.as_ptr())
                    } else {
                        0.0
                    };
                    *rp.get(c) = r;
                }
            }
        },
    );
}

/// Per-axis weights of the cell-centred trilinear stencil: fine cells `2I-2, 2I-1, 2I, 2I+1`
/// (clamped to the fine grid: the clamped cell is a wall cell whose residual is 0) around
/// coarse cell `I`, weights `1, 3, 3, 1` / 4.
#[inline(always)]
fn fine_taps(ci: usize, m: usize) -> [usize; 4] {
    [2 * ci - 2, 2 * ci - 1, 2 * ci, (2 * ci + 1).min(m - 1)]
}
const TAP: [f32; 4] = [0.25, 0.75, 0.75, 0.25];

/// `coarse.b = P^T fine.r / 2` on the coarse fluid cells, `P` the trilinear prolongation: the
/// full-weighting average of the fine residual (weights sum to 1) times 4, since the
/// integer-stencil operator of a grid of spacing `2h` is 4 times that of spacing `h`
/// (McAdams et al. 2010, sec. 4). Restriction is thus a constant times `P^T`, which keeps the
/// V-cycle symmetric.
pub(super) fn restrict(fine: &Level, coarse: &mut Level) {
    let n = coarse.n;
    let fst = fine.strides();
    let bp = SyncPtr(coarse.b.as_mut_ptr());
    let (label, r) = (&coarse.label, &fine.r);
    super::for_rows(
        n,
        &coarse.spans,
        coarse.rows_per_task(TASK_CELLS / 8),
        |row, j, k, lo, hi| {
            let base = n[0] * row;
            let (tj, tk) = (fine_taps(j, fine.n[1]), fine_taps(k, fine.n[2]));
            for i in lo..hi {
                let c = base + i;
                let mut acc = 0.0f32;
                if label[c] == FLUID {
                    let ti = fine_taps(i, fine.n[0]);
                    for (zk, wk) in tk.iter().zip(TAP) {
                        let mut yz = 0.0f32;
                        for (yj, wj) in tj.iter().zip(TAP) {
                            let fb = yj * fst[1] + zk * fst[2];
                            let x = TAP[0] * r[fb + ti[0]]
                                + TAP[1] * r[fb + ti[1]]
                                + TAP[2] * r[fb + ti[2]]
                                + TAP[3] * r[fb + ti[3]];
                            yz += wj * x;
                        }
                        acc += wk * yz;
                    }
                    // Weights sum to 8: P^T r / 2 = 4 * (mean).
                    acc *= 0.5;
                }
                // SAFETY: the cells of this row are written by this task only.
                unsafe { *bp.get(c) = acc };
            }
        },
    );
}

/// Per-axis coarse neighbours and weights of fine cell `i`: its parent `(i + 1) / 2` (weight
/// 3/4) and the coarse cell on its side (1/4).
#[inline(always)]
fn coarse_taps(i: usize) -> ([usize; 2], [f32; 2]) {
    let p = (i + 1) / 2;
    let q = if i % 2 == 1 { p - 1 } else { p + 1 };
    ([p, q], [0.75, 0.25])
}

/// `fine.u += P coarse.u` on the fine fluid cells (cell-centred trilinear interpolation; the
/// coarse `u` is 0 outside the coarse liquid).
pub(super) fn prolong_add(coarse: &Level, fine: &mut Level) {
    let n = fine.n;
    let cst = coarse.strides();
    let up = SyncPtr(fine.u.as_mut_ptr());
    let (invd, cu) = (&fine.invd, &coarse.u);
    super::for_rows(
        n,
        &fine.spans,
        fine.rows_per_task(TASK_CELLS),
        |row, j, k, lo, hi| {
            let base = n[0] * row;
            let (jj, wj) = coarse_taps(j);
            let (kk, wk) = coarse_taps(k);
            // The four coarse rows around this fine row, with their weights.
            let rows = [
                (jj[0] * cst[1] + kk[0] * cst[2], wj[0] * wk[0]),
                (jj[1] * cst[1] + kk[0] * cst[2], wj[1] * wk[0]),
                (jj[0] * cst[1] + kk[1] * cst[2], wj[0] * wk[1]),
                (jj[1] * cst[1] + kk[1] * cst[2], wj[1] * wk[1]),
            ];
            for i in lo..hi {
                let c = base + i;
                if invd[c] == 0.0 {
                    continue;
                }
                let (ii, wi) = coarse_taps(i);
                let mut v = 0.0f32;
                for &(rb, wr) in &rows {
                    v += wr * (wi[0] * cu[rb + ii[0]] + wi[1] * cu[rb + ii[1]]);
                }
                // SAFETY: the cells of this row are written by this task only.
                unsafe { *up.get(c) += v };
            }
        },
    );
}
