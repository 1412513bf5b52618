//! A level's diagonal: the diagonal `sum_f w_f` of every fluid cell and its inverse (the
//! smoother's factor and mask), by colour as `u` is, and with unit weights the open-face
//! counts they come from ([`Level::count`], one byte a cell). Where the diagonal is the count
//! ([`Level::int_diag`]: unit weights, no ghost-fluid terms) the AVX2 loops read the counts
//! instead of the two `f32` arrays and make `1 / d` from an 8-entry table and `d` by a
//! conversion, the same bits: a byte a cell rather than eight of the finest level's traffic
//! per smoothing and residual (`wavefront/avx.rs`).

use super::super::super::sync_ptr::SyncPtr;
use super::super::system::{fluid_span, is_cut};
use super::level::{FLUID, Level, SETUP_CELLS};
use rayon::prelude::*;

impl Level {
    /// Adds `extra[r]` to the diagonal of the fluid cell `cells[r]` (index in the simulation
    /// grid, inside the window `win`; strictly increasing) and updates its inverse: the
    /// ghost-fluid surface's air terms ([`super::super::system::System::add_air_terms`]) on
    /// the finest level; not at the rows whose bit is set in `skip` (cells not in the cycle).
    pub fn add_to_diagonal(
        &mut self,
        cells: &[u32],
        extra: &[f64],
        win: &super::window::Window,
        skip: Option<&[u64]>,
    ) {
        let (dg, inv) = (
            SyncPtr(self.diag.as_mut_ptr()),
            SyncPtr(self.invd.as_mut_ptr()),
        );
        let len = self.diag.len();
        // The diagonal is no longer the open-face count: the loops read `invd` and `diag`.
        self.int_diag = false;
        cells
            .par_iter()
            .zip(extra.par_iter())
            .enumerate()
            .with_min_len(SETUP_CELLS)
            .for_each(|(row, (&c, &e))| {
                if e == 0.0 || skip.is_some_and(|s| is_cut(s, row)) {
                    return;
                }
                let [i, j, k] = win.local(c as usize);
                let x = self.split(i, j, k);
                assert!(x < len);
                // SAFETY: in bounds (checked); the cells are distinct, so is their index.
                unsafe {
                    let d = dg.get(x);
                    *d += e as f32;
                    *inv.get(x) = 1.0 / *d;
                }
            });
    }

    /// The inverse diagonal and the diagonal (by colour, 0 on every entry of a compact row that
    /// is not a fluid cell), with unit weights also the open-face counts ([`Level::count`]),
    /// the fluid spans, and the rows' layout for them (`layout.rs`; `finer`: the finer level,
    /// for a coarse one).
    pub(super) fn finish_setup(&mut self, finer: Option<&Level>) {
        self.groups = [(0, 0, 0); 4];
        let n = self.n;
        let ny = n[1];
        let nx = n[0];
        // Only the previous segments' cells can hold non-zero values (set-up writes nothing
        // else): zero them in the previous layout, so that every entry outside the new
        // segments is 0 whatever the new layout.
        let fs = [&mut self.invd[..], &mut self.diag[..]];
        self.lay
            .zero(fs, Some(&mut self.count[..]), &self.seg, false);
        let per = self.rows_per_task(SETUP_CELLS);
        let label = &self.label;
        self.spans
            .par_iter_mut()
            .enumerate()
            .with_min_len(per)
            .for_each(|(row, span)| {
                *span = fluid_span(&label[nx * row..nx * (row + 1)])
                    .map_or([0, 0], |(lo, hi)| [lo as u32, hi as u32]);
            });
        self.seg.plan(&self.label, nx, &self.spans, per);
        let h = self.h;
        self.lay.plan(n, &self.seg, h, finer.map(|f| (&f.seg, f.n)));
        let lay = &self.lay;
        self.seg.place(ny, |r, x| lay.start(r, x));
        let len = 2 * self.lay.half + h;
        let alloc = self.alloc[0];
        for v in [
            &mut self.u,
            &mut self.b,
            &mut self.r,
            &mut self.invd,
            &mut self.diag,
        ] {
            super::redim::fit(v, len, alloc);
        }
        super::redim::fit(&mut self.count, len, alloc);
        let st = self.strides();
        let (label, w, unit, lay, seg) = (&self.label, &self.w, self.unit, &self.lay, &self.seg);
        let finest = finer.is_none();
        let (invp, dgp, ctp) = (
            SyncPtr(self.invd.as_mut_ptr()),
            SyncPtr(self.diag.as_mut_ptr()),
            SyncPtr(self.count.as_mut_ptr()),
        );
        // The counts are the diagonal where every weight is 1 (ghost-fluid terms added later
        // clear this again, `add_to_diagonal`).
        self.int_diag = unit;
        (0..self.spans.len())
            .into_par_iter()
            .with_min_len(per)
            .for_each(|row| {
                let segs = seg.of(row);
                if segs.is_empty() {
                    return;
                }
                let ((s0, rl), (s1, _)) = (lay.stored(0, row), lay.stored(1, row));
                assert!(s0.max(s1) + rl <= len);
                // The row's stored entries of both colours (its ranges, one after the other).
                // SAFETY: in bounds (asserted); rows' stored entries are disjoint, each
                // written by this task alone.
                let (i0, i1, d0, d1, c0, c1) = unsafe {
                    let f =
                        |p: SyncPtr<f32>, s: usize| std::slice::from_raw_parts_mut(p.get(s), rl);
                    let b = |s: usize| std::slice::from_raw_parts_mut(ctp.get(s), rl);
                    (
                        f(invp, s0),
                        f(invp, s1),
                        f(dgp, s0),
                        f(dgp, s1),
                        b(s0),
                        b(s1),
                    )
                };
                let o = nx * row;
                let l = &label[o..o + nx];
                let q = (row % n[1] + row / n[1]) & 1;
                let diag = |i: usize| -> f32 {
                    if l[i] != FLUID {
                        return 0.0;
                    }
                    // The face weights (the unit case is below).
                    let c = o + i;
                    let d = w[0][c]
                        + w[0][c + st[0]]
                        + w[1][c]
                        + w[1][c + st[1]]
                        + w[2][c]
                        + w[2][c + st[2]];
                    // A finest cell with every face closed is a row of its own with diagonal
                    // 1 in the system (`System::build_weights`): the same here, so that the
                    // cycle maps its residual to itself. With 0 (no inverse) the cycle gave
                    // it nothing, and CG could never remove a residual there (a warm start's
                    // old pressure in a cell a moving solid has just shut).
                    if finest && d == 0.0 { 1.0 } else { d }
                };
                // Natural cell i is at compact i / 2 of colour (i + q) % 2.
                let (mut inv, mut dg, mut ct) = if q == 0 {
                    ([i0, i1], [d0, d1], [c0, c1])
                } else {
                    ([i1, i0], [d1, d0], [c1, c0])
                };
                // Per segment (`segments.rs`): the cells of its range `v + i / 2` on from the
                // row's stored start (`layout.rs`).
                for sg in segs {
                    let [lo, hi] = sg.span.map(|x| x as usize);
                    // The segment's start (placed above) less the row's first entry.
                    let v = sg.st()[0].wrapping_sub(s0);
                    if unit {
                        // The open faces of the span's cells counted a line at a time over the
                        // six neighbours' label rows, then split by colour in pairs of cells, the
                        // inverses as `1 / d` (loops the compiler vectorises). The line runs over
                        // whole pairs (from an even cell to an even end: at most one cell past
                        // the span at each end, which is not fluid and gets 0, its value anyway,
                        // inside the compact range the next set-up clears).
                        let mut cnt = [0u8; 256];
                        let (mut a, end) = (lo & !1, (hi + 1) & !1);
                        while a < end {
                            let b = (a + cnt.len()).min(end);
                            let c = o + a;
                            let len = b - a;
                            let sl = |x: usize| &label[x..x + len];
                            // Zipped slices of one length (no bounds tests, byte lanes); a
                            // label is open unless SOLID (2), so `1 - (x >> 1)` counts it.
                            let it = cnt[..len]
                                .iter_mut()
                                .zip(sl(c))
                                .zip(sl(c - 1).iter().zip(sl(c + 1)))
                                .zip(sl(c - st[1]).iter().zip(sl(c + st[1])))
                                .zip(sl(c - st[2]).iter().zip(sl(c + st[2])));
                            for ((((n, &own), (&x0, &x1)), (&y0, &y1)), (&z0, &z1)) in it {
                                let solid = (x0 >> 1) + (x1 >> 1) + (y0 >> 1) + (y1 >> 1);
                                let open = 6 - (solid + (z0 >> 1) + (z1 >> 1));
                                *n = if own == FLUID { open } else { 0 };
                            }
                            // Natural cells 2m and 2m + 1 at compact m of parities 0 and 1.
                            let r = v.wrapping_add(a >> 1)..v.wrapping_add(b >> 1);
                            let [d0, d1] = &mut dg;
                            let [v0, v1] = &mut inv;
                            let [n0, n1] = &mut ct;
                            let out = (d0[r.clone()].iter_mut().zip(&mut d1[r.clone()]))
                                .zip(v0[r.clone()].iter_mut().zip(&mut v1[r.clone()]))
                                .zip(n0[r.clone()].iter_mut().zip(&mut n1[r]));
                            for (p, (((d0, d1), (v0, v1)), (n0, n1))) in
                                cnt[..len].chunks_exact(2).zip(out)
                            {
                                (*n0, *n1) = (p[0], p[1]);
                                let (e0, e1) = (p[0] as f32, p[1] as f32);
                                *d0 = e0;
                                *d1 = e1;
                                *v0 = if e0 > 0.0 { 1.0 / e0 } else { 0.0 };
                                *v1 = if e1 > 0.0 { 1.0 / e1 } else { 0.0 };
                            }
                            a = b;
                        }
                        continue;
                    }
                    for i in lo..hi {
                        let d = diag(i);
                        let x = v.wrapping_add(i >> 1);
                        dg[i & 1][x] = d;
                        inv[i & 1][x] = if d > 0.0 { 1.0 / d } else { 0.0 };
                    }
                }
            });
        if !unit {
            self.mark_unit_rows(per);
        }
    }

    /// [`Level::unit_rows`] from the labels, the spans and the weights: a row is unit where
    /// every face between a fluid cell of its span and a fluid neighbour has weight 1 (a face
    /// to an air or solid cell multiplies its `u` of 0, with or without its weight).
    fn mark_unit_rows(&mut self, per: usize) {
        let (n, st) = (self.n, self.strides());
        let (label, w, spans) = (&self.label, &self.w, &self.spans);
        self.unit_rows[..n[1] * n[2]]
            .par_iter_mut()
            .enumerate()
            .with_min_len(per)
            .for_each(|(row, unit)| {
                let [lo, hi] = spans[row].map(|x| x as usize);
                let o = n[0] * row;
                *unit = (o + lo..o + hi).all(|c| {
                    label[c] != FLUID
                        || (0..3).all(|a| {
                            let (down, up) = (c - st[a], c + st[a]);
                            (w[a][c] == 1.0 || label[down] != FLUID)
                                && (w[a][up] == 1.0 || label[up] != FLUID)
                        })
                });
            });
    }
}
