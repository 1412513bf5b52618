//! The red-black Gauss-Seidel smoother of the V-cycle, as a wavefront over z-planes that runs
//! all the half-sweeps of one smoothing in one pass over the level (temporal blocking), and
//! optionally the residual after the pre-smoothing or the prolongation before the
//! post-smoothing in the same pass (one pass over the finest grid's planes fewer each). Every
//! stored value has the bits of the plain loops one after the other ([`half_sweep`],
//! [`super::kernels::residual`], [`super::kernels::prolong_add`]), whatever the thread count:
//! the residual and the prolongation here are vector loops (fixed-width chunks, pairs of fine
//! cells) doing the same operations per cell as those references.

use super::SyncPtr;
use super::kernels::prolong_row_pairs;
use super::level::Level;
use rayon::prelude::*;

/// Cells per rayon task (at least) of the wavefront's slabs.
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

/// Whether the CPU has AVX2 (always false off x86_64).
pub(super) fn has_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    return std::is_x86_feature_detected!("avx2");
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// What a Gauss-Seidel half-sweep reads and writes of one level.
struct Sweep<'a> {
    n: [usize; 3],
    st: [usize; 3],
    up: SyncPtr<f32>,
    /// The residual's output (`r`).
    rp: SyncPtr<f32>,
    b: &'a [f32],
    invd: &'a [f32],
    diag: &'a [f32],
    w: &'a [Vec<f32>; 3],
    unit: bool,
    spans: &'a [[u32; 2]],
    /// The CPU has AVX2 ([`Self::stage`]).
    avx2: bool,
}

impl<'a> Sweep<'a> {
    fn new(lv: &'a mut Level) -> Self {
        Self {
            n: lv.n,
            st: lv.strides(),
            up: SyncPtr(lv.u.as_mut_ptr()),
            rp: SyncPtr(lv.r.as_mut_ptr()),
            b: &lv.b,
            invd: &lv.invd,
            diag: &lv.diag,
            w: &lv.w,
            unit: lv.unit,
            spans: &lv.spans,
            avx2: has_avx2(),
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

    /// `r = b - A u` on the span of row `row` (0 on its non-fluid cells): the same operations
    /// in the same order as [`super::kernels::residual`].
    ///
    /// # Safety
    /// No other task writes `u` in this row's or its four neighbour rows' reach, nor this
    /// row's `r`, while this runs.
    #[inline(always)]
    unsafe fn residual_row(&self, row: usize) {
        let [lo, hi] = self.spans[row];
        let (lo, hi) = (lo as usize, hi as usize);
        if lo >= hi {
            return;
        }
        let st = self.st;
        let c0 = self.n[0] * row + lo;
        let len = hi - lo;
        // SAFETY: the span lies inside the walls, so every slice is in the grid; the caller's
        // for the rest (nothing writes what these slices cover while they live).
        unsafe {
            let u = self.up.0 as *const f32;
            let sl = |p: *const f32, o: usize, m: usize| std::slice::from_raw_parts(p.add(o), m);
            let out = std::slice::from_raw_parts_mut(self.rp.get(c0), len);
            let (bb, dg, uc) = (
                &self.b[c0..c0 + len],
                &self.diag[c0..c0 + len],
                sl(u, c0, len),
            );
            let ux = sl(u, c0 - 1, len + 2);
            let uy = [
                sl(u, c0 - st[1], len),
                sl(u, c0 + st[1], len),
                sl(u, c0 - st[2], len),
                sl(u, c0 + st[2], len),
            ];
            // Computed on every cell, then selected (0 where the diagonal is 0): a vector
            // select, where a conditional expression compiled to masked loads.
            let f = |t: usize, s: f32| {
                let x = bb[t] - dg[t] * uc[t] + s;
                if dg[t] != 0.0 { x } else { 0.0 }
            };
            if self.unit && len >= LANES {
                // LANES cells at a time, a vector loop with no scalar remainder (a span is
                // about 64 cells on the 1M dam break, so the remainder of a plain loop, up to
                // 31 cells one at a time, was much of it); the last chunk ends at the span's
                // end, and the cells it shares with the one before get the same values again.
                let mut t0 = 0;
                while t0 < len {
                    let a = t0.min(len - LANES);
                    for t in a..a + LANES {
                        let s = (ux[t] + ux[t + 2]) + (uy[0][t] + uy[1][t]) + (uy[2][t] + uy[3][t]);
                        out[t] = f(t, s);
                    }
                    t0 += LANES;
                }
            } else if self.unit {
                for t in 0..len {
                    let s = (ux[t] + ux[t + 2]) + (uy[0][t] + uy[1][t]) + (uy[2][t] + uy[3][t]);
                    out[t] = f(t, s);
                }
            } else {
                let w = &self.w;
                let wx = &w[0][c0..c0 + len + 1];
                let wyz = [
                    &w[1][c0..c0 + len],
                    &w[1][c0 + st[1]..c0 + st[1] + len],
                    &w[2][c0..c0 + len],
                    &w[2][c0 + st[2]..c0 + st[2] + len],
                ];
                for t in 0..len {
                    let s = (wx[t] * ux[t] + wx[t + 1] * ux[t + 2])
                        + (wyz[0][t] * uy[0][t] + wyz[1][t] * uy[1][t])
                        + (wyz[2][t] * uy[2][t] + wyz[3][t] * uy[3][t]);
                    out[t] = f(t, s);
                }
            }
        }
    }

    /// One stage of a wavefront on z-plane `k`: [`Self::stage_plain`], compiled for AVX2
    /// (eight lanes instead of SSE's four) when the CPU has it. No fused multiply-adds either
    /// way (Rust never contracts `a * b + c`), so the stored bits are the same.
    ///
    /// # Safety
    /// As [`Self::stage_plain`].
    #[inline(always)]
    unsafe fn stage(&self, stage: Stage, k: usize) {
        #[cfg(target_arch = "x86_64")]
        if self.avx2 {
            // SAFETY: the CPU has AVX2 (checked in `new`); the caller's for the rest.
            return unsafe { self.stage_avx2(stage, k) };
        }
        // SAFETY: the caller's.
        unsafe { self.stage_plain(stage, k) }
    }

    /// [`Self::stage_plain`] with AVX2 enabled.
    ///
    /// # Safety
    /// As [`Self::stage_plain`], and the CPU has AVX2.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn stage_avx2(&self, stage: Stage, k: usize) {
        // SAFETY: the caller's.
        unsafe { self.stage_plain(stage, k) }
    }

    /// One stage of a wavefront on z-plane `k`.
    ///
    /// # Safety
    /// As [`Self::row`] / [`Self::residual_row`] for the whole plane; a prolongation writes
    /// the plane's `u` and reads only the coarse level.
    #[inline(always)]
    unsafe fn stage_plain(&self, stage: Stage, k: usize) {
        let ny = self.n[1];
        match stage {
            // SAFETY: the caller's.
            Stage::Colour(c, z) => unsafe { self.plane(k, c, z) },
            Stage::Residual => {
                for j in 0..ny {
                    // SAFETY: the caller's.
                    unsafe { self.residual_row(j + ny * k) };
                }
            }
            Stage::Prolong(coarse) => {
                let nx = self.n[0];
                for j in 0..ny {
                    let row = j + ny * k;
                    let [lo, hi] = self.spans[row];
                    // SAFETY: the caller's: this row of `u` is this task's alone.
                    let u = unsafe { std::slice::from_raw_parts_mut(self.up.get(nx * row), nx) };
                    let inv = &self.invd[nx * row..][..nx];
                    prolong_row_pairs(coarse, self.n, inv, u, row, lo, hi);
                }
            }
        }
    }

    /// Every row of z-plane `k`.
    ///
    /// # Safety
    /// As [`Self::row`], for the whole plane.
    #[inline(always)]
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

/// What a wavefront does besides the half-sweeps.
#[derive(Clone, Copy)]
pub(super) enum Extra<'a> {
    /// Nothing.
    None,
    /// The residual `r = b - A u` after the last half-sweep.
    Residual,
    /// `u += P coarse.u` before the first half-sweep.
    Prolong(&'a Level),
}

/// One stage of a wavefront.
#[derive(Clone, Copy)]
enum Stage<'a> {
    /// A half-sweep of a colour (`from_zero` or not).
    Colour(usize, bool),
    Residual,
    Prolong(&'a Level),
}

/// `sweeps` whole red-black Gauss-Seidel sweeps, colour `first` then the other, in one pass
/// over the level (`from_zero`: the first half-sweep starts from `u = 0`), after the
/// prolongation or followed by the residual (`extra`). The half-sweeps are stages (colour
/// `first + h` mod 2), the prolongation a stage before them, the residual one after; stage `h`
/// on plane `p` needs stage `h - 1` on planes `p - 1 ..= p + 1` and must come before stage
/// `h + 1` there, so a wavefront does, at step `t`, stage `h` on plane `t - h` for every `h` in
/// order: each plane is read from memory about once for all the stages, rather than once per
/// stage (temporal blocking).
///
/// In parallel over slabs of at least `2 (stages + 1)` planes: first each slab `[ka, kb)`
/// runs the wavefront on the planes whose dependencies lie inside it (stage `h` on its planes
/// `ka + 1 + h ..= kb - 1 - h`, a trapezoid that leaves the slab's first plane alone, so that
/// no two slabs touch a common plane: a slab reads planes `ka ..= kb` and writes
/// `ka + 1 .. kb`), then, in parallel over the slab boundaries `B`, the stages left near each
/// (stage `h` on planes `B - h ..= B + h`), stage by stage. Each half-sweep reads only the
/// other colour, so every cell gets exactly what the stages one after the other give
/// ([`half_sweep`], [`super::kernels::residual`], [`super::kernels::prolong_add`]), whatever
/// the slabs: the bits do not depend on the thread count.
pub(super) fn rb_sweeps(
    lv: &mut Level,
    sweeps: usize,
    first: usize,
    from_zero: bool,
    extra: Extra,
) {
    let (ny, nz) = (lv.n[1], lv.n[2]);
    let has = |k: usize| (0..ny).any(|j| lv.spans[j + ny * k][0] < lv.spans[j + ny * k][1]);
    let Some(k0) = (0..nz).find(|&k| has(k)) else {
        return;
    };
    if sweeps == 0 {
        return;
    }
    let pre = matches!(extra, Extra::Prolong(_)) as usize;
    let stages = 2 * sweeps + pre + matches!(extra, Extra::Residual) as usize;
    let stage = |h: usize| -> Stage {
        match extra {
            Extra::Prolong(c) if h == 0 => Stage::Prolong(c),
            Extra::Residual if h + 1 == stages => Stage::Residual,
            _ => Stage::Colour((first + h - pre) % 2, from_zero && h == pre),
        }
    };
    let k1 = (0..nz).rev().find(|&k| has(k)).map_or(k0, |k| k + 1);
    let threads = rayon::current_num_threads();
    let (plan, starts) = slab_plan(lv, k0, k1, stages, threads);
    let sw = Sweep::new(lv);
    // SAFETY (all the `stage` calls): in the first pass slab `[ka, kb)` writes planes
    // `ka + 1 .. kb` only and reads `ka ..= kb` (a prolongation also reads the coarse level,
    // which nothing writes here): no other slab writes a plane it reads. In the second pass
    // boundary `B` writes planes `B - (stages - 1) ..= B + stages - 1` and reads one more each
    // side: disjoint from the other boundaries', as slabs are at least `2 stages + 2` planes.
    // The order of the stages makes each read see the value the stages one after the other
    // would.
    let slabs = match plan {
        Plan::Serial => {
            for t in k0..k1 + stages {
                for h in 0..stages.min(t + 1) {
                    let p = t - h;
                    if (k0..k1).contains(&p) {
                        unsafe { sw.stage(stage(h), p) };
                    }
                }
            }
            return;
        }
        Plan::Stagewise(min_planes) => {
            // Each stage reads only what the stage before it wrote: one parallel loop per
            // stage over the planes gives the bits of the stages one after the other.
            for h in 0..stages {
                (k0..k1)
                    .into_par_iter()
                    .with_min_len(min_planes)
                    .for_each(|p| unsafe { sw.stage(stage(h), p) });
            }
            return;
        }
        Plan::Slabs(slabs) => slabs,
    };
    let start = |s: usize| starts[s] as usize;
    (0..slabs).into_par_iter().for_each(|s| {
        let (ka, kb) = (start(s), start(s + 1));
        for t in ka..kb + stages {
            for h in 0..stages.min(t + 1) {
                let p = t - h;
                if p > ka + h && p + h < kb {
                    unsafe { sw.stage(stage(h), p) };
                }
            }
        }
    });
    (0..=slabs).into_par_iter().for_each(|s| {
        let b = start(s);
        for h in 0..stages {
            for p in b.saturating_sub(h).max(k0)..(b + h + 1).min(k1) {
                unsafe { sw.stage(stage(h), p) };
            }
        }
    });
}

/// Most slabs of a wavefront ([`slab_plan`]).
pub(super) const MAX_SLABS: usize = 64;

/// How [`rb_sweeps`] spreads a wavefront over the threads.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Plan {
    /// One wavefront over all the planes, on this thread.
    Serial,
    /// Stage by stage, each stage one parallel loop over the planes (tasks of at least this
    /// many planes): every stage is a pass over the level, but all the threads work.
    Stagewise(usize),
    /// This many slabs of planes, each a wavefront of its own, then their boundaries.
    Slabs(usize),
}

/// The plan of a wavefront of `stages` stages over planes `k0..k1` of `lv` on `threads`
/// threads, and the slabs' first planes (`starts[0] = k0`, `starts[slabs] = k1`).
///
/// A slab needs at least `2 stages + 2` planes (and [`TASK_CELLS`] cells), which caps the
/// slabs of a shallow level; the slabs are cut where the fluid cells (plus a row's cost) fall
/// evenly, not the planes, since the liquid fills some planes more than others (a dam break's
/// lower planes hold the spread water). Their number is a multiple of the thread count where
/// possible (3 slabs on 2 threads leave one thread idle half the time), up to 4 per thread.
/// With fewer possible slabs than threads the stages run one after the other, each over all
/// the planes in parallel. None of this changes a bit of the result (see [`rb_sweeps`]).
pub(super) fn slab_plan(
    lv: &Level,
    k0: usize,
    k1: usize,
    stages: usize,
    threads: usize,
) -> (Plan, [u32; MAX_SLABS + 1]) {
    let mut starts = [0u32; MAX_SLABS + 1];
    let (planes, plane_cells) = (k1 - k0, lv.n[0] * lv.n[1]);
    let min_per = (2 * stages + 2).max(TASK_CELLS.div_ceil(plane_cells));
    let possible = (planes / min_per).min(MAX_SLABS);
    if threads < 2 || planes < 2 {
        return (Plan::Serial, starts);
    }
    if possible < threads.min(MAX_SLABS) {
        let min_planes = TASK_CELLS.div_ceil(plane_cells).max(1);
        return if planes >= 2 * min_planes {
            (Plan::Stagewise(min_planes), starts)
        } else {
            (Plan::Serial, starts)
        };
    }
    let slabs = if possible >= 4 * threads {
        4 * threads
    } else {
        possible - possible % threads
    };
    // Cost of plane k: its fluid cells and a few cells' worth per row visited.
    let ny = lv.n[1];
    let cost = |k: usize| -> u64 {
        (0..ny)
            .map(|j| {
                let [a, b] = lv.spans[j + ny * k];
                if a < b { (b - a) as u64 + 8 } else { 0 }
            })
            .sum()
    };
    let total: u64 = (k0..k1).map(cost).sum();
    starts[0] = k0 as u32;
    let (mut k, mut acc) = (k0, 0u64);
    for s in 1..slabs {
        let target = total * s as u64 / slabs as u64;
        let lo = starts[s - 1] as usize + min_per;
        let hi = k1 - (slabs - s) * min_per;
        while k < hi && (k < lo || acc < target) {
            acc += cost(k);
            k += 1;
        }
        starts[s] = k as u32;
    }
    starts[slabs] = k1 as u32;
    (Plan::Slabs(slabs), starts)
}
