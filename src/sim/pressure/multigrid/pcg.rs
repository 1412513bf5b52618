//! The multigrid as the CG loop's preconditioner (MGPCG, McAdams et al. 2010): the
//! [`Preconditioner`] implementation, and the passes over the CG vectors that read the cycle's
//! result where it lies, on the finest level's grid. The passes find each row's cell in the
//! finest level's arrays by segments of rows (consecutive cells of one x-line), from the table
//! of the rows' segments that each set-up builds (`runs.rs`, walked with [`each_run!`]: each
//! segment's first cell and colour bases, found and checked once a set-up rather than in
//! every pass), rather than from a per-row index: 4 bytes a row and pass fewer (the index,
//! [`Multigrid::map_rows`], serves [`Multigrid::apply`] without a system). A
//! run's cells alternate colours, so in the arrays stored by colour they are two contiguous
//! slices, which each pass takes once a run and walks in pairs ([`halves`]; a per-row
//! closure computing each index, not inlined, took 7.7% of the replayed 8M frame-28 solve in
//! the next-direction pass alone, session 24). The drops' runs (`drops.rs`) are not in the
//! cycle: the passes skip them when they move values to and from the grid, and read their
//! `M^-1 r` from the CG vector `z`, where the drops' sweeps write it (in `step_and_apply` `z`
//! held `A s`, spent by then).

use super::super::super::mac_grid::CellLabel;
use super::super::super::sync_ptr::SyncPtr;
use super::super::preconditioner::Preconditioner;
use super::super::reduce::{CHUNK, LANES, Lanes};
use super::super::system::System;
use super::runs::{Iter, each_run};
use super::{Multigrid, ROWS_PER_TASK};
use rayon::prelude::*;
use std::ops::Range;

/// Where a run's cells `i0 + t` (`t < len`) lie in the arrays stored by colour (`base` from
/// [`super::level::Level::bases`]): the even `t` at `e + t / 2`, the odd `t` at `o + t / 2`,
/// `[e, o]` returned with the counts `[ceil(len / 2), floor(len / 2)]`. The loops over a run
/// take those two ranges as slices, checked once a run, and walk them in pairs.
#[inline(always)]
fn halves(i0: usize, base: [usize; 2], len: usize) -> ([usize; 2], [usize; 2]) {
    let (a, par) = (i0 >> 1, i0 & 1);
    (
        [base[par] + a, base[1 - par] + a + par],
        [len.div_ceil(2), len / 2],
    )
}

/// The two colours' slices of a run ([`halves`]) in `u`.
#[inline(always)]
fn run_of(u: &[f32], i0: usize, base: [usize; 2], len: usize) -> (&[f32], &[f32]) {
    let ([e, o], [ne, no]) = halves(i0, base, len);
    (&u[e..e + ne], &u[o..o + no])
}

/// `b` at a run's cells from `r` (the run's rows, in order), through the raw pointer to the
/// finest level's `b` of length `len_b`.
///
/// # Safety
/// No other task reads or writes the run's cells meanwhile.
#[inline(always)]
unsafe fn scatter_run(bp: SyncPtr<f32>, len_b: usize, i0: usize, base: [usize; 2], r: &[f64]) {
    let ([e, o], [ne, no]) = halves(i0, base, r.len());
    assert!(e + ne <= len_b && o + no <= len_b);
    // SAFETY: in bounds (above); the two colours' ranges are disjoint, and the caller's.
    let (be, bo) = unsafe {
        (
            std::slice::from_raw_parts_mut(bp.get(e), ne),
            std::slice::from_raw_parts_mut(bp.get(o), no),
        )
    };
    let mut r2 = r.chunks_exact(2);
    for ((r, be), bo) in (&mut r2).zip(be.iter_mut()).zip(bo.iter_mut()) {
        *be = r[0] as f32;
        *bo = r[1] as f32;
    }
    if let [x] = r2.remainder() {
        be[ne - 1] = *x as f32;
    }
}

/// `acc.add(row, x)` ([`Lanes::add`]) by a constant index, so that the lanes of a loop that
/// also adds four at a time stay in registers (an array indexed by a variable lives in
/// memory: each add then waited for the last store).
#[inline(always)]
fn into_lane(acc: &mut Lanes, row: usize, x: f64) {
    const _: () = assert!(LANES == 4);
    match row % LANES {
        0 => acc.0[0] += x,
        1 => acc.0[1] += x,
        2 => acc.0[2] += x,
        _ => acc.0[3] += x,
    }
}

impl Multigrid {
    /// The CG rows' segments within `rows` ([`super::runs::Runs::iter`]).
    #[inline(always)]
    pub(super) fn runs_of<'a>(&'a self, sys: &'a System, rows: Range<usize>) -> Iter<'a> {
        let parts = (&self.levels[0], &self.window, &self.drops);
        self.runs.iter(sys, rows, parts)
    }

    /// `M^-1 r . r` with `M^-1 r` the finest level's `u` at the rows' cells (after a cycle)
    /// and `zd` at the drops' rows, summed in fixed chunks by lanes (as `reduce::dot` sums),
    /// without writing `M^-1 r` anywhere else: `next_direction` reads it from `u` again.
    fn dot_u(&self, sys: &System, r: &[f64], zd: &[f64], partials: &mut [f64]) -> f64 {
        let nf = sys.nf;
        let u = &self.levels[0].u;
        let chunks = nf.div_ceil(CHUNK);
        partials[..chunks]
            .par_iter_mut()
            .enumerate()
            .with_min_len(ROWS_PER_TASK / CHUNK)
            .for_each(|(ci, p)| {
                let mut acc = Lanes::default();
                let rows = ci * CHUNK..((ci + 1) * CHUNK).min(nf);
                each_run!(self.runs_of(sys, rows), |run, at| {
                    let Some((i0, base)) = at else {
                        run.for_each(|row| into_lane(&mut acc, row, zd[row] * r[row]));
                        continue;
                    };
                    // Row `row` into lane `row % 4`, the rows in order (the same sums as
                    // `reduce::dot`): rows to a multiple of four one by one, then four at a
                    // time into the four lanes by constant index (kept in registers), their
                    // `u` from the run's two colour slices (two of each colour, the first
                    // even or odd as the group's offset in the run).
                    let (ue, uo) = run_of(u, i0, base, run.len());
                    let one = |acc: &mut Lanes, row: usize| {
                        let t = row - run.start;
                        let x = if t & 1 == 0 { ue[t >> 1] } else { uo[t >> 1] };
                        into_lane(acc, row, x as f64 * r[row]);
                    };
                    let mut row = run.start;
                    let body = run.end.min(row.next_multiple_of(LANES));
                    while row < body {
                        one(&mut acc, row);
                        row += 1;
                    }
                    while row + LANES <= run.end {
                        let (t, rr) = (row - run.start, &r[row..row + LANES]);
                        let h = t >> 1;
                        let v = if t & 1 == 0 {
                            [ue[h], uo[h], ue[h + 1], uo[h + 1]]
                        } else {
                            [uo[h], ue[h + 1], uo[h + 1], ue[h + 2]]
                        };
                        for l in 0..LANES {
                            acc.0[l] += v[l] as f64 * rr[l];
                        }
                        row += LANES;
                    }
                    while row < run.end {
                        one(&mut acc, row);
                        row += 1;
                    }
                });
                *p = acc.sum();
            });
        partials[..chunks].iter().sum()
    }

    /// The rows' `r` into the finest level's `b` at their cells.
    fn scatter_rows(&mut self, sys: &System, r: &[f64]) {
        let (bp, len_b) = (
            SyncPtr(self.levels[0].b.as_mut_ptr()),
            self.levels[0].b.len(),
        );
        let this = &*self;
        (0..sys.nf.div_ceil(ROWS_PER_TASK))
            .into_par_iter()
            .for_each(|t| {
                let rows = t * ROWS_PER_TASK..((t + 1) * ROWS_PER_TASK).min(sys.nf);
                each_run!(this.runs_of(sys, rows), |run, at| {
                    if let Some((i0, base)) = at {
                        // SAFETY: the rows' cells are distinct and their slots in bounds
                        // (checked by the table's build, `runs.rs`), so the runs' cells are,
                        // each written by the task of its rows.
                        unsafe { scatter_run(bp, len_b, i0, base, &r[run]) };
                    }
                });
            });
    }
}

/// The V-cycle as the CG loop's preconditioner: each solve re-labels the levels from the
/// grid's labels (the density correction's solve reuses them: same cells and matrix); each
/// application scatters the residual onto the grid, cycles in f32 and gathers `z` back, then
/// `z . r` from the grid. Within the CG loop the step `r -= alpha A s` scatters the new
/// residual in its own pass (one pass over `r` and the rows' cells fewer per iteration), the
/// dot product reads `M^-1 r` from the grid without writing it, and `next_direction` updates
/// `q` and `s` in one pass reading it from the grid again (`q` and `z` are not touched by the
/// step: 136 bytes per row and iteration instead of 152, the same bits).
impl Preconditioner for Multigrid {
    fn setup(&mut self, sys: &System, labels: &[CellLabel], open: Option<&[Vec<f32>; 3]>) {
        let open = open.filter(|_| sys.fractional);
        if self.drops.label(sys, labels, self.settings.drop_cells) > 0 {
            // The cycle sees the drops' cells as air (`drops.rs`).
            let held = std::mem::take(&mut self.drops.labels);
            self.setup_levels(&held, open);
            self.drops.labels = held;
        } else {
            self.setup_levels(labels, open);
        }
        if sys.has_air {
            // Ghost fluid: the finest level's diagonal takes the rows' air terms, so that its
            // operator is the system's (the coarse levels keep the staircase's); not the
            // drops', which are not in the cycle.
            let win = self.window;
            let skip = (!self.drops.rows.is_empty()).then_some(&self.drops.bits[..]);
            let (cells, air) = (&sys.cell_of[..sys.nf], &sys.air[..sys.nf]);
            self.levels[0].add_to_diagonal(cells, air, &win, skip);
        }
        self.runs
            .build(sys, &self.levels[0], &self.window, &self.drops);
    }

    fn apply(&mut self, sys: &System, r: &[f64], z: &mut [f64], partials: &mut [f64]) -> f64 {
        let nf = sys.nf;
        self.scatter_rows(sys, r);
        self.vcycle();
        let u = &self.levels[0].u;
        let this = &*self;
        z[..nf]
            .par_chunks_mut(ROWS_PER_TASK)
            .enumerate()
            .for_each(|(t, zc)| {
                let r0 = t * ROWS_PER_TASK;
                each_run!(this.runs_of(sys, r0..r0 + zc.len()), |run, at| {
                    if let Some((i0, base)) = at {
                        let (ue, uo) = run_of(u, i0, base, run.len());
                        let z = &mut zc[run.start - r0..run.end - r0];
                        let mut z2 = z.chunks_exact_mut(2);
                        for ((z, &e), &o) in (&mut z2).zip(ue).zip(uo) {
                            z[0] = e as f64;
                            z[1] = o as f64;
                        }
                        if let [x] = z2.into_remainder() {
                            *x = ue[ue.len() - 1] as f64;
                        }
                    }
                });
            });
        self.drops.smooth(r, z, self.settings.drop_sweeps);
        self.dot_u(sys, r, z, partials)
    }

    /// `r -= alpha z` with `max |r|` and the scatter of the new `r` in one pass, then the
    /// cycle and `r . M^-1 r`; `q` and `z` are left alone: [`Self::next_direction`] adds
    /// `alpha s` to `q` in its pass over `s` and reads `M^-1 r` from the finest level's `u`
    /// (on the 8M dam break 16 MB less memory traffic per iteration; the same bits).
    #[allow(clippy::too_many_arguments)]
    fn step_and_apply(
        &mut self,
        sys: &System,
        alpha: f64,
        _q: &mut [f64],
        _s: &[f64],
        r: &mut [f64],
        z: &mut [f64],
        partials: &mut [f64],
        stop_at: f64,
    ) -> (f64, f64) {
        let nf = sys.nf;
        let (bp, len_b) = (
            SyncPtr(self.levels[0].b.as_mut_ptr()),
            self.levels[0].b.len(),
        );
        const T: usize = ROWS_PER_TASK;
        let this = &*self;
        let rmax = r[..nf]
            .par_chunks_mut(T)
            .zip(z[..nf].par_chunks(T))
            .enumerate()
            .map(|(t, (r, z))| {
                // The update in whole lanes of four rows (vectorised; `max` is exact in any
                // order, so four running maxima give the same value), then the scatter.
                let mut m = [0.0f64; 4];
                let (mut r4, mut z4) = (r.chunks_exact_mut(4), z.chunks_exact(4));
                for (r, z) in (&mut r4).zip(&mut z4) {
                    for l in 0..4 {
                        r[l] -= alpha * z[l];
                        m[l] = m[l].max(r[l].abs());
                    }
                }
                for (r, z) in r4.into_remainder().iter_mut().zip(z4.remainder()) {
                    *r -= alpha * z;
                    m[0] = m[0].max(r.abs());
                }
                let r0 = t * T;
                each_run!(this.runs_of(sys, r0..r0 + r.len()), |run, at| {
                    if let Some((i0, base)) = at {
                        // SAFETY: as in `scatter_rows`.
                        unsafe {
                            scatter_run(bp, len_b, i0, base, &r[run.start - r0..run.end - r0])
                        };
                    }
                });
                m[0].max(m[1]).max(m[2].max(m[3]))
            })
            .reduce(|| 0.0, f64::max);
        if rmax <= stop_at {
            return (0.0, rmax);
        }
        self.vcycle();
        // `z` (`A s`) is spent: it takes the drops' `M^-1 r`.
        self.drops.smooth(r, z, self.settings.drop_sweeps);
        (self.dot_u(sys, r, z, partials), rmax)
    }

    /// `q += alpha s`, then `s = M^-1 r + beta s` with `M^-1 r` read from the finest level's
    /// `u` (the last cycle's result) at the rows' cells, in one pass; the dummy row's `s`
    /// stays 0.
    fn next_direction(
        &mut self,
        sys: &System,
        alpha: f64,
        beta: f64,
        q: &mut [f64],
        s: &mut [f64],
        z: &[f64],
    ) {
        let nf = sys.nf;
        let u = &self.levels[0].u;
        q[..nf]
            .par_chunks_mut(ROWS_PER_TASK)
            .zip(s[..nf].par_chunks_mut(ROWS_PER_TASK))
            .enumerate()
            .for_each(|(t, (q, s))| {
                let r0 = t * ROWS_PER_TASK;
                let step = |q: &mut f64, s: &mut f64, m: f64| {
                    *q += alpha * *s;
                    *s = m + beta * *s;
                };
                each_run!(self.runs_of(sys, r0..r0 + q.len()), |run, at| {
                    let (q, s) = (
                        &mut q[run.start - r0..run.end - r0],
                        &mut s[run.start - r0..run.end - r0],
                    );
                    let Some((i0, base)) = at else {
                        for ((q, s), &m) in q.iter_mut().zip(s.iter_mut()).zip(&z[run]) {
                            step(q, s, m);
                        }
                        continue;
                    };
                    let (ue, uo) = run_of(u, i0, base, run.len());
                    let (mut q2, mut s2) = (q.chunks_exact_mut(2), s.chunks_exact_mut(2));
                    for ((q, s), (&e, &o)) in (&mut q2).zip(&mut s2).zip(ue.iter().zip(uo)) {
                        step(&mut q[0], &mut s[0], e as f64);
                        step(&mut q[1], &mut s[1], o as f64);
                    }
                    if let ([q], [s]) = (q2.into_remainder(), s2.into_remainder()) {
                        step(q, s, ue[ue.len() - 1] as f64);
                    }
                });
            });
    }

    fn end_solve(&mut self, sys: &System, alpha: f64, q: &mut [f64], s: &[f64]) {
        q[..sys.nf]
            .par_iter_mut()
            .zip(s[..sys.nf].par_iter())
            .with_min_len(ROWS_PER_TASK)
            .for_each(|(q, s)| *q += alpha * s);
    }
}
