//! The V-cycle's loops over one level's fluid spans: red-black Gauss-Seidel half-sweeps, the
//! residual, restriction and prolongation. Every loop writes each cell from values that no
//! other task writes in the same loop (a colour reads only the other colour; the transfers read
//! another level or another vector), so the result does not depend on the thread count.

use super::SyncPtr;
use super::level::{FLUID, Level};
use rayon::prelude::*;

/// Cells per rayon task of the V-cycle's loops.
const TASK_CELLS: usize = 16 * 1024;

/// Cells per chunk of a vectorised red-black row ([`Sweep::row`]; even).
const LANES: usize = 16;

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

/// What a Gauss-Seidel half-sweep reads and writes of one level.
struct Sweep<'a> {
    n: [usize; 3],
    st: [usize; 3],
    up: SyncPtr<f32>,
    b: &'a [f32],
    invd: &'a [f32],
    w: &'a [Vec<f32>; 3],
    unit: bool,
    spans: &'a [[u32; 2]],
}

impl<'a> Sweep<'a> {
    fn new(lv: &'a mut Level) -> Self {
        Self {
            n: lv.n,
            st: lv.strides(),
            up: SyncPtr(lv.u.as_mut_ptr()),
            b: &lv.b,
            invd: &lv.invd,
            w: &lv.w,
            unit: lv.unit,
            spans: &lv.spans,
        }
    }

    /// The cells of colour `colour` in the span of row `row` (`j`, `k`), one at a time: the
    /// reference of [`Self::row`] (tests).
    ///
    /// # Safety
    /// No other task writes this row's cells of `colour`, nor any cell of the other colour
    /// in the six neighbouring rows' reach, while this runs.
    #[cfg(test)]
    #[inline(always)]
    unsafe fn row_scalar(&self, row: usize, j: usize, k: usize, colour: usize, from_zero: bool) {
        let [lo, hi] = self.spans[row];
        let (lo, hi) = (lo as usize, hi as usize);
        let i = lo + ((lo + j + k + colour) & 1);
        // SAFETY: the caller's.
        unsafe { self.cells(self.n[0] * row, i, hi, from_zero) };
    }

    /// Cells `i, i + 2, ...` below `hi` of the row starting at grid cell `base`, one at a time.
    ///
    /// # Safety
    /// As [`Self::row`].
    #[inline(always)]
    unsafe fn cells(&self, base: usize, mut i: usize, hi: usize, from_zero: bool) {
        let (st, up) = (self.st, self.up);
        while i < hi {
            let c = base + i;
            // SAFETY: the caller's; `c` lies in a fluid span, so not in the border layer.
            unsafe {
                let s = if from_zero {
                    0.0
                } else if self.unit {
                    let g = |i: usize| *up.get(i);
                    (g(c - 1) + g(c + 1))
                        + (g(c - st[1]) + g(c + st[1]))
                        + (g(c - st[2]) + g(c + st[2]))
                } else {
                    neighbours(c, st, self.w, up.0)
                };
                *up.get(c) = self.invd.get_unchecked(c) * (self.b.get_unchecked(c) + s);
            }
            i += 2;
        }
    }

    /// The cells of colour `colour` in the span of row `row` (`j`, `k`), [`LANES`] cells at a
    /// time: the update is computed for every cell of a chunk (a vector loop) and stored at the
    /// chunk's cells of this colour only (even lanes), the others keeping their value. A cell of
    /// this colour reads only cells of the other colour, which this half-sweep does not write,
    /// so every stored value has exactly the bits of [`Self::row_scalar`]'s (same operations in
    /// the same order; the odd lanes' values are discarded). The chunks stay inside the row
    /// (`hi` is at most `nx - 1`, the last cell being a wall); the tail goes one cell at a time.
    ///
    /// # Safety
    /// No other task writes this row's cells, nor any cell in the six neighbouring rows'
    /// reach, while this runs (the odd lanes also read neighbours of this colour).
    #[inline(always)]
    unsafe fn row(&self, row: usize, j: usize, k: usize, colour: usize, from_zero: bool) {
        let [lo, hi] = self.spans[row];
        let (lo, hi) = (lo as usize, hi as usize);
        let (st, up) = (self.st, self.up);
        let base = self.n[0] * row;
        let mut i = lo + ((lo + j + k + colour) & 1);
        // Lanes 0, 2, .. LANES - 2 are written: the chunk ends at cell i + LANES - 1 <= hi.
        while i + LANES <= hi + 1 {
            let c = base + i;
            let mut v = [0.0f32; LANES];
            // SAFETY: cells c - st[2] - 1 ..= c + LANES + st[2] are in the grid (the span is
            // inside the walls and the chunk inside the row); the caller's for the rest.
            unsafe {
                let b = std::slice::from_raw_parts(self.b.as_ptr().add(c), LANES);
                let inv = std::slice::from_raw_parts(self.invd.as_ptr().add(c), LANES);
                if from_zero {
                    for t in 0..LANES {
                        v[t] = inv[t] * (b[t] + 0.0);
                    }
                } else {
                    let sl = |o: usize| std::slice::from_raw_parts(up.0.add(o), LANES + 2);
                    let (ux, um1, up1, um2, up2) = (
                        sl(c - 1),
                        sl(c - st[1]),
                        sl(c + st[1]),
                        sl(c - st[2]),
                        sl(c + st[2]),
                    );
                    if self.unit {
                        for t in 0..LANES {
                            let s = (ux[t] + ux[t + 2]) + (um1[t] + up1[t]) + (um2[t] + up2[t]);
                            v[t] = inv[t] * (b[t] + s);
                        }
                    } else {
                        let w = |a: usize, o: usize| {
                            std::slice::from_raw_parts(self.w[a].as_ptr().add(o), LANES + 1)
                        };
                        let (wx, wy0, wy1, wz0, wz1) =
                            (w(0, c), w(1, c), w(1, c + st[1]), w(2, c), w(2, c + st[2]));
                        for t in 0..LANES {
                            let s = (wx[t] * ux[t] + wx[t + 1] * ux[t + 2])
                                + (wy0[t] * um1[t] + wy1[t] * up1[t])
                                + (wz0[t] * um2[t] + wz1[t] * up2[t]);
                            v[t] = inv[t] * (b[t] + s);
                        }
                    }
                }
                let out = std::slice::from_raw_parts_mut(up.get(c), LANES);
                for t in 0..LANES {
                    out[t] = if t % 2 == 0 { v[t] } else { out[t] };
                }
            }
            i += LANES;
        }
        // SAFETY: the caller's.
        unsafe { self.cells(base, i, hi, from_zero) };
    }

    /// Every row of z-plane `k`.
    ///
    /// # Safety
    /// As [`Self::row`], for the whole plane.
    unsafe fn plane(&self, k: usize, colour: usize, from_zero: bool) {
        for j in 0..self.n[1] {
            // SAFETY: the caller's.
            unsafe { self.row(j + self.n[1] * k, j, k, colour, from_zero) };
        }
    }
}

/// One Gauss-Seidel half-sweep over the cells of colour `colour` (`(i + j + k) % 2`):
/// `u_c = (b_c + sum_f w_f u_nb) / diag_c` (0 on non-fluid cells, whose inverse diagonal is 0).
/// `from_zero`: the other colour is taken as 0 (the first sweep of a V-cycle, which starts from
/// `u = 0`; it thus never reads what the previous application left). The reference for
/// [`rb_sweeps`], which fuses several of these.
#[cfg(test)]
pub(super) fn half_sweep(lv: &mut Level, colour: usize, from_zero: bool) {
    let (n, per) = (lv.n, lv.rows_per_task(TASK_CELLS));
    let spans = lv.spans.clone();
    let sw = Sweep::new(lv);
    super::for_rows(n, &spans, per, |row, j, k, _, _| {
        // SAFETY: cells of this colour are written by the task of their row only; the
        // neighbours read are of the other colour, which no task writes in this loop.
        unsafe { sw.row_scalar(row, j, k, colour, from_zero) }
    });
}

/// `sweeps` whole red-black Gauss-Seidel sweeps, colour `first` then the other, in one pass
/// over the level (`from_zero`: the first half-sweep starts from `u = 0`). The half-sweeps are
/// stages `h = 0 .. 2 sweeps` (colour `first + h` mod 2); stage `h` on plane `p` needs stage
/// `h - 1` on planes `p - 1 ..= p + 1`, so a wavefront does, at step `t`, stage `h` on plane
/// `t - h` for every `h` in order: each plane is read from memory about once for all the
/// sweeps, rather than once per half-sweep (temporal blocking).
///
/// In parallel over slabs of at least `2 (2 sweeps + 1)` planes: first each slab `[ka, kb)`
/// runs the wavefront on the planes whose dependencies lie inside it (stage `h` on its planes
/// `ka + 1 + h ..= kb - 1 - h`, a trapezoid that leaves the slab's first plane alone, so that
/// no two slabs touch a common plane: a slab reads planes `ka ..= kb` and writes
/// `ka + 1 .. kb`), then, in parallel over the slab boundaries `B`, the stages left near each
/// (stage `h` on planes `B - h ..= B + h`), stage by stage. Each half-sweep reads only the
/// other colour, so every cell gets exactly what the half-sweeps one after the other give
/// ([`half_sweep`]), whatever the slabs: the bits do not depend on the thread count.
pub(super) fn rb_sweeps(lv: &mut Level, sweeps: usize, first: usize, from_zero: bool) {
    let stages = 2 * sweeps;
    let (ny, nz) = (lv.n[1], lv.n[2]);
    let has = |k: usize| (0..ny).any(|j| lv.spans[j + ny * k][0] < lv.spans[j + ny * k][1]);
    let Some(k0) = (0..nz).find(|&k| has(k)) else {
        return;
    };
    if stages == 0 {
        return;
    }
    let k1 = (0..nz).rev().find(|&k| has(k)).map_or(k0, |k| k + 1);
    let planes = k1 - k0;
    let plane_cells = lv.n[0] * ny;
    let per = planes
        .div_ceil(4 * rayon::current_num_threads())
        .max(2 * stages + 2)
        .max(TASK_CELLS.div_ceil(plane_cells));
    let slabs = planes / per;
    let colour = |h: usize| (first + h) % 2;
    let sw = Sweep::new(lv);
    // SAFETY (all the `plane` calls): in the first pass slab `[ka, kb)` writes planes
    // `ka + 1 .. kb` only and reads `ka ..= kb`: no other slab writes a plane it reads. In the
    // second pass boundary `B` writes planes `B - (stages - 1) ..= B + stages - 1` and reads one
    // more each side: disjoint from the other boundaries', as slabs are at least
    // `2 stages + 2` planes. The order of the stages makes each read see the value the
    // sequential half-sweeps would.
    if slabs < 2 {
        for t in k0..k1 + stages {
            for h in 0..stages.min(t + 1) {
                let p = t - h;
                if (k0..k1).contains(&p) {
                    unsafe { sw.plane(p, colour(h), from_zero && h == 0) };
                }
            }
        }
        return;
    }
    let start = |s: usize| k0 + s * planes / slabs;
    (0..slabs).into_par_iter().for_each(|s| {
        let (ka, kb) = (start(s), start(s + 1));
        for t in ka..kb + stages {
            for h in 0..stages.min(t + 1) {
                let p = t - h;
                if p > ka + h && p + h < kb {
                    unsafe { sw.plane(p, colour(h), from_zero && h == 0) };
                }
            }
        }
    });
    (0..=slabs).into_par_iter().for_each(|s| {
        let b = start(s);
        for h in 0..stages {
            for p in b.saturating_sub(h).max(k0)..(b + h + 1).min(k1) {
                unsafe { sw.plane(p, colour(h), from_zero && h == 0) };
            }
        }
    });
}

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
    let cst = coarse.strides();
    let per = fine.rows_per_task(TASK_CELLS);
    let (invd, cu) = (&fine.invd, &coarse.u);
    fine.u
        .par_chunks_mut(n[0])
        .zip(fine.spans.par_iter())
        .enumerate()
        .with_min_len(per)
        .for_each(|(row, (u, &[lo, hi]))| {
            let (lo, hi) = (lo as usize, hi as usize);
            if lo >= hi {
                return;
            }
            let (j, k) = (row % n[1], row / n[1]);
            let (jj, wj) = coarse_taps(j);
            let (kk, wk) = coarse_taps(k);
            let rows = [
                (jj[0] * cst[1] + kk[0] * cst[2], wj[0] * wk[0]),
                (jj[1] * cst[1] + kk[0] * cst[2], wj[1] * wk[0]),
                (jj[0] * cst[1] + kk[1] * cst[2], wj[0] * wk[1]),
                (jj[1] * cst[1] + kk[1] * cst[2], wj[1] * wk[1]),
            ];
            let inv = &invd[n[0] * row..][..n[0]];
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
        });
}
