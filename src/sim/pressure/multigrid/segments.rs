//! A level's rows cut into segments at their long gaps: the unit of the V-cycle's loops, and
//! what each loop reads per segment.
//!
//! Each row keeps the span `[lo, hi)` of its fluid cells (`level.rs`). Where the liquid climbs
//! two walls at once (a dam break's wave running back, a tank sloshing), a row holds a sheet at
//! each end and its span runs the whole tank (the 8M dam break's frame 28: 3.3 cells per fluid
//! cell). A row's span is cut wherever a run of non-fluid cells holds a whole block of [`GAP`]
//! cells; each row stores only the ranges its own and its neighbours' segments need
//! (`layout.rs`), and the smoother, the residual, the prolongation (`wavefront.rs`) and the
//! restriction (`kernels.rs`) visit the segments only. The cells of a gap are air or solid:
//! the loops would write 0 there (their inverse diagonal and diagonal are 0, the prolongation
//! is masked, the restriction writes 0 off the liquid), and every cell holds 0 after a set-up
//! (`Level::clear_spans`), so skipping them leaves every value's bits as they were. A
//! segment's vector chunks may run up to [`super::level::LANES`] compact cells past its end,
//! into its range's padding.
//!
//! Per segment the set-up keeps where each loop reads it ([`Seg`]): its row's and its four
//! neighbour rows' virtual starts in the ranges that hold it, 32 bytes with the span and the
//! row; the four coarse rows' starts its prolongation reads; on a coarse level, the 16 fine
//! rows' starts its restriction reads, where each of them stores the segment's fine cells in
//! one range. The segments are stored by rows, each row's in order (compressed rows), so that
//! a plane's stage is one loop over the plane's segments: a loop over the rows looking up
//! each row's segments cost 10% more at the 8M dam break's frame 2 (`mg_cycle`, 1 thread).

use super::super::super::mac_grid::CellLabel;
use super::taps::{PAIRS, coarse_taps, fine_taps};
use rayon::prelude::*;

/// A run of cells that are not fluid cuts a span where it holds a whole block of this many
/// cells (so it is at least this long).
pub(super) const GAP: usize = 32;

/// What a level keeps per segment of its rows, in the order of the rows (compressed rows:
/// row `row`'s segments are entries `first[row] .. first[row + 1]`).
pub(super) struct Segments {
    /// Per row, and one past the last: its first segment.
    first: Vec<u32>,
    /// The segments, each row's in order along x.
    segs: Vec<Seg>,
    /// Per segment: the coarse level's virtual starts (colour 0) of the four coarse rows its
    /// prolongation reads, in the stored range that holds its cells' parents
    /// ([`Self::place_prolong`]).
    pro: Vec<[usize; 4]>,
    /// Per segment of a coarse level: the finer level's virtual starts (colour 0) of the 16
    /// fine rows its restriction reads (z tap outer, y tap inner), where each of them stores
    /// the segment's fine cells `2 lo - 2 .. 2 hi` in one range, which the reads' padding
    /// stays inside; `[usize::MAX; 16]` where one does not ([`Self::place_restrict`]: the
    /// restriction then reads the fine rows along their segments).
    rst: Vec<[usize; 16]>,
}

/// A segment `[lo, hi)` of a row, and the virtual starts (colour 0, `layout.rs`) of its row
/// and of the rows `row - 1`, `row + 1`, `row - ny`, `row + ny` in the stored range that
/// holds it ([`Segments::place`]): what a loop over the segment reads, in one line.
#[derive(Clone, Copy, Default)]
pub(super) struct Seg {
    pub span: [u32; 2],
    st: [u32; 5],
    /// Its row (`j + ny k`).
    pub row: u32,
}

impl Seg {
    /// The virtual starts (32 bits each: a level's arrays are shorter, asserted where they
    /// are placed; half the bytes a row's loops read besides the level's vectors).
    #[inline(always)]
    pub fn st(&self) -> [usize; 5] {
        self.st.map(|x| x as usize)
    }
}

/// Most segments of `rows` rows of `nx` cells each.
fn most(rows: usize, nx: usize) -> usize {
    rows * (1 + nx / (GAP + 1))
}

impl Segments {
    /// Room for `n[1] n[2]` rows of at most `n[0]` cells.
    pub fn new(n: [usize; 3]) -> Self {
        let rows = n[1] * n[2];
        let m = most(rows, n[0]);
        let mut s = Self {
            first: Vec::with_capacity(rows + 1),
            segs: vec![Seg::default(); m],
            pro: vec![[0; 4]; m],
            rst: vec![[0; 16]; m],
        };
        s.clear(rows);
        s
    }

    /// No segment in any of `rows` rows (within the room [`Self::new`] gave).
    pub fn clear(&mut self, rows: usize) {
        assert!(rows < self.first.capacity());
        self.first.clear();
        self.first.resize(rows + 1, 0);
    }

    /// Row `row`'s segments, in order along x (none if its span is empty), with their rows'
    /// starts.
    #[inline(always)]
    pub fn of(&self, row: usize) -> &[Seg] {
        self.rows(row..row + 1)
    }

    /// The entries of the segments of the rows `rows`.
    #[inline(always)]
    fn entries(&self, rows: std::ops::Range<usize>) -> std::ops::Range<usize> {
        self.first[rows.start] as usize..self.first[rows.end] as usize
    }

    /// The segments of the rows `rows`, in order (a loop over them visits no empty row).
    #[inline(always)]
    pub fn rows(&self, rows: std::ops::Range<usize>) -> &[Seg] {
        &self.segs[self.entries(rows)]
    }

    /// The segments of the rows `rows` with the coarse rows' starts
    /// ([`Self::place_prolong`]).
    #[inline(always)]
    pub fn with_coarse(
        &self,
        rows: std::ops::Range<usize>,
    ) -> impl Iterator<Item = (&Seg, &[usize; 4])> {
        let r = self.entries(rows);
        self.segs[r.clone()].iter().zip(&self.pro[r])
    }

    /// Row `row`'s segments with their rows' starts and the fine rows' starts
    /// ([`Self::place_restrict`]).
    #[inline(always)]
    pub fn with_fine(&self, row: usize) -> impl Iterator<Item = (&Seg, &[usize; 16])> {
        let r = self.entries(row..row + 1);
        self.segs[r.clone()].iter().zip(&self.rst[r])
    }

    /// Each row's entries of `v` (one per segment), with the row, in parallel.
    fn rows_of<'a, T: Send>(
        first: &'a [u32],
        v: &'a mut [T],
    ) -> impl IndexedParallelIterator<Item = (usize, &'a mut [T])> {
        let rows = first.len() - 1;
        let p = super::SyncPtr(v.as_mut_ptr());
        (0..rows).into_par_iter().with_min_len(64).map(move |row| {
            let (a, b) = (first[row] as usize, first[row + 1] as usize);
            // SAFETY: the rows' entries are disjoint ranges inside `v` (`first` increases and
            // its last entry is at most `v.len()`, asserted in `plan`).
            (row, unsafe {
                std::slice::from_raw_parts_mut(p.get(a), b - a)
            })
        })
    }

    /// Each segment's starts of its row and its four neighbour rows (`ny` rows a plane) in
    /// this level's layout: `start(row, x)`, the virtual start of `row` in its range that
    /// holds cell `x` (`Layout::start`).
    pub fn place(&mut self, ny: usize, start: impl Fn(usize, usize) -> usize + Sync) {
        let Self { first, segs, .. } = self;
        Self::rows_of(first, segs).for_each(|(row, segs)| {
            for s in segs {
                s.row = row as u32;
                let x = s.span[0] as usize;
                // An interior row's (the only ones with fluid cells) neighbours exist.
                s.st = [row, row - 1, row + 1, row - ny, row + ny].map(|r| {
                    u32::try_from(start(r, x)).expect("multigrid: a level of 2^32 entries")
                });
            }
        });
    }

    /// Each segment's starts of the four coarse rows its prolongation reads in the next level
    /// (`cn` cells per axis; `start` its `Layout::start`), in the range that holds the parent
    /// of its first cell: the order of `wavefront.rs`'s prolongation. This level has `n` cells
    /// per axis.
    pub fn place_prolong(
        &mut self,
        n: [usize; 3],
        cn: [usize; 3],
        start: impl Fn(usize, usize) -> usize + Sync,
    ) {
        let Self {
            first, segs, pro, ..
        } = self;
        Self::rows_of(first, pro).for_each(|(row, pro)| {
            let (j, k) = (row % n[1], row / n[1]);
            let (jj, _) = coarse_taps(j);
            let (kk, _) = coarse_taps(k);
            let cr = |a: usize, b: usize| jj[a] + cn[1] * kk[b];
            for (p, &Seg { span: [lo, _], .. }) in pro.iter_mut().zip(&segs[first[row] as usize..])
            {
                let x = (lo as usize).div_ceil(2);
                *p = [cr(0, 0), cr(1, 0), cr(0, 1), cr(1, 1)].map(|r| start(r, x));
            }
        });
    }

    /// Each (coarse) segment's starts of the 16 fine rows its restriction reads in the finer
    /// level (`fnn` cells per axis; `reach` its `Layout::reach`), where each stores the
    /// segment's fine cells in one range that the reads stay inside (else `usize::MAX`). This
    /// level has `n` cells per axis.
    pub fn place_restrict(
        &mut self,
        n: [usize; 3],
        fnn: [usize; 3],
        reach: impl Fn(usize, usize) -> (usize, usize, usize, usize) + Sync,
    ) {
        let Self {
            first, segs, rst, ..
        } = self;
        Self::rows_of(first, rst).for_each(|(row, rst)| {
            let (j, k) = (row % n[1], row / n[1]);
            let (tj, tk) = (fine_taps(j, fnn[1]), fine_taps(k, fnn[2]));
            for (f, &Seg { span: [lo, hi], .. }) in rst.iter_mut().zip(&segs[first[row] as usize..])
            {
                // The restriction reads fine compact entries lo - 1 .. hi + PAIRS of each
                // colour (whole chunks of pairs), of which the cells up to 2 hi - 1 count: they
                // must be in the range's entries, and no other range may hold a cell below 2 hi.
                let (lo, hi) = (lo as usize, hi as usize);
                let x0 = 2 * lo - 2;
                let mut all = true;
                for (t, fr) in tk
                    .iter()
                    .flat_map(|&zk| tj.map(|yj| yj + fnn[1] * zk))
                    .enumerate()
                {
                    let (s, stored, next, start) = reach(fr, x0);
                    all &= s <= x0 && 2 * (hi + PAIRS) <= stored && next >= 2 * hi;
                    f[t] = start;
                }
                if !all {
                    *f = [usize::MAX; 16];
                }
            }
        });
    }

    /// The coarse segments whose restriction reads the 16 fine rows at once, and the others.
    #[cfg(test)]
    pub fn restrict_paths(&self) -> (usize, usize) {
        let n = self.first[self.first.len() - 1] as usize;
        let fast = self.rst[..n].iter().filter(|f| f[0] != usize::MAX).count();
        (fast, n - fast)
    }

    /// Every segment's restriction by fine segments ([`Self::place_restrict`] undone).
    #[cfg(test)]
    pub fn forget_restrict(&mut self) {
        let n = self.first[self.first.len() - 1] as usize;
        self.rst[..n].fill([usize::MAX; 16]);
    }

    /// Cuts each row's span (`spans`, rows of `nx` cells of `label`) at its gaps of [`GAP`]
    /// cells or more.
    pub fn plan(&mut self, label: &[u8], nx: usize, spans: &[[u32; 2]], per_task: usize) {
        let rows = spans.len();
        self.clear(rows);
        let row = |r: usize| &label[nx * r..nx * (r + 1)];
        // Counts, then where each row's segments begin, then the segments.
        self.first[1..]
            .par_iter_mut()
            .zip(spans.par_iter())
            .enumerate()
            .with_min_len(per_task)
            .for_each(|(r, (c, &[lo, hi]))| {
                *c = if lo < hi {
                    split(row(r), lo as usize, hi as usize, |_| ()) as u32
                } else {
                    0
                };
            });
        for r in 0..rows {
            self.first[r + 1] += self.first[r];
        }
        assert!(self.first[rows] as usize <= self.segs.len());
        let Self { first, segs, .. } = self;
        Self::rows_of(first, segs).for_each(|(r, out)| {
            let [lo, hi] = spans[r];
            if lo < hi {
                let mut n = 0;
                split(row(r), lo as usize, hi as usize, |s| {
                    out[n].span = s;
                    n += 1;
                });
            }
        });
    }
}

/// The segments of the span `[lo, hi)` of the row `l` (fluid at `lo` and `hi - 1`) to
/// `out`, in order; their count. The span is cut at each run of cells that are not fluid and
/// that holds a whole block of [`GAP`] cells (blocks from `lo` on): a block is tested at once
/// (the labels' bit 0 is set on fluid cells only, as `fluid_span` tests them), and only the
/// blocks around a cut are searched cell by cell.
fn split(l: &[u8], lo: usize, hi: usize, mut out: impl FnMut([u32; 2])) -> usize {
    const F: u8 = CellLabel::Fluid as u8;
    const _: () = assert!(CellLabel::Empty as u8 & F == 0 && CellLabel::Solid as u8 & F == 0);
    let has = |b: &[u8]| b.iter().fold(0u8, |a, &x| a | x) & F != 0;
    let (mut n, mut start) = (0, lo);
    // The last block with a fluid cell, and whether a block without one came after it.
    let (mut prev, mut gap) = ((lo, lo), false);
    let mut a = lo;
    while a < hi {
        let b = (a + GAP).min(hi);
        if has(&l[a..b]) {
            if gap {
                let last = prev.0 + l[prev.0..prev.1].iter().rposition(|&x| x == F).unwrap_or(0);
                let first = a + l[a..b].iter().position(|&x| x == F).unwrap_or(0);
                out([start as u32, last as u32 + 1]);
                n += 1;
                start = first;
                gap = false;
            }
            prev = (a, b);
        } else {
            gap = true;
        }
        a = b;
    }
    out([start as u32, hi as u32]);
    n + 1
}
