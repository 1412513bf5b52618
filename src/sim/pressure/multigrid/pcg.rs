//! The multigrid as the CG loop's preconditioner (MGPCG, McAdams et al. 2010): the
//! [`Preconditioner`] implementation, and the passes over the CG vectors that read the cycle's
//! result where it lies, on the finest level's grid.

use super::super::super::mac_grid::CellLabel;
use super::super::super::sync_ptr::SyncPtr;
use super::super::preconditioner::Preconditioner;
use super::super::system::System;
use super::{Multigrid, ROWS_PER_TASK};
use rayon::prelude::*;

impl Multigrid {
    /// `M^-1 r . r` with `M^-1 r` the finest level's `u` at the rows' cells (after a cycle),
    /// summed in fixed chunks, without writing `M^-1 r` anywhere: `next_direction` reads it
    /// from `u` again.
    pub(super) fn dot_u(&self, r: &[f64], partials: &mut [f64]) -> f64 {
        use super::super::reduce::CHUNK;
        let nf = self.split_len.unwrap_or(0);
        let (u, sr) = (&self.levels[0].u, &self.split_rows[..nf]);
        let chunks = nf.div_ceil(CHUNK);
        sr.par_chunks(CHUNK)
            .zip(r[..nf].par_chunks(CHUNK))
            .zip(partials[..chunks].par_iter_mut())
            .with_min_len(ROWS_PER_TASK / CHUNK)
            .for_each(|((c, r), p)| {
                let mut acc = 0.0f64;
                for (&c, r) in c.iter().zip(r) {
                    acc += u[c as usize] as f64 * r;
                }
                *p = acc;
            });
        partials[..chunks].iter().sum()
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
        Multigrid::setup(self, labels, open.filter(|_| sys.fractional));
        if sys.has_air {
            // Ghost fluid: the finest level's diagonal takes the rows' air terms, so that its
            // operator is the system's (the coarse levels keep the staircase's).
            let win = self.window;
            self.levels[0].add_to_diagonal(&sys.cell_of[..sys.nf], &sys.air[..sys.nf], &win);
        }
    }

    fn apply(&mut self, sys: &System, r: &[f64], z: &mut [f64], partials: &mut [f64]) -> f64 {
        self.apply_dot(&sys.cell_of[..sys.nf], r, z, partials)
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
        self.map_rows(&sys.cell_of[..nf]);
        let sr = &self.split_rows[..nf];
        let bp = SyncPtr(self.levels[0].b.as_mut_ptr());
        const T: usize = ROWS_PER_TASK;
        let rmax = r[..nf]
            .par_chunks_mut(T)
            .zip(z[..nf].par_chunks(T))
            .zip(sr.par_chunks(T))
            .map(|((r, z), c)| {
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
                for (r, &c) in r.iter().zip(c) {
                    // SAFETY: the rows' split cells are distinct and in bounds
                    // ([`Self::map_rows`]), each written by the task of its row.
                    unsafe { *bp.get(c as usize) = *r as f32 };
                }
                m[0].max(m[1]).max(m[2].max(m[3]))
            })
            .reduce(|| 0.0, f64::max);
        if rmax <= stop_at {
            return (0.0, rmax);
        }
        self.vcycle();
        (self.dot_u(r, partials), rmax)
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
        _z: &[f64],
    ) {
        let nf = sys.nf;
        let (u, sr) = (&self.levels[0].u, &self.split_rows[..nf]);
        q[..nf]
            .par_chunks_mut(ROWS_PER_TASK)
            .zip(s[..nf].par_chunks_mut(ROWS_PER_TASK))
            .zip(sr.par_chunks(ROWS_PER_TASK))
            .for_each(|((q, s), c)| {
                for ((q, s), &c) in q.iter_mut().zip(s.iter_mut()).zip(c) {
                    *q += alpha * *s;
                    *s = u[c as usize] as f64 + beta * *s;
                }
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
