//! Where the CG loop's rows lie on the finest level: a table of their x-segments, built once
//! per set-up, that the passes of `pcg.rs` walk.
//!
//! The CG vectors are rows of fluid cells (`System`), the cycle's are the finest level's
//! arrays stored by colour (`level.rs`). Each pass that moves values between them (the
//! residual's scatter, `M^-1 r . r`, the next direction, the first application's gather)
//! needs, per row, its cell's two colour slots. Consecutive rows whose cells follow each other
//! along x are one segment of the finest level, so in one stored range (`layout.rs`): from
//! the segment's first cell `i0` and the range's two bases, cell `i0 + t` lies at
//! `base[(i0 + t) % 2] + (i0 + t) / 2`. Until session 25 each pass found that for every
//! run of [`System::runs`] (the product's runs, which also end where a row's y or z
//! neighbours change: 97,263 runs of 10.8 rows on the 8M dam break at frame 28, against
//! 54,977 segments of 19.2) from the run's first cell: two divisions for its `(i, j, k)`, a
//! search of its row's ranges per colour, a bit scan for its end and the checks of the writes'
//! safety, three or four passes per CG iteration. The table holds, per segment, its first
//! row, `i0` and bases (16 bytes; 0.9 MB at frame 28), found and checked once per set-up (the
//! density correction's solve reuses them), and per [`CHUNK`] rows the segment that holds
//! the chunk's first row, where a task starts.
//!
//! Its room is reserved once, for a segment per [`CELLS_PER_ENTRY`] cells of the grid (1 byte
//! a cell: 5.0 MB for the 8M dam break's 5.0M cells, which needs 55k of its 310k entries), so
//! that no substep allocates. A system with more segments (a spray of single cells, say) is
//! walked without the table: the iterator then finds each segment as the table's build does,
//! from the rows' cells (the same segments, slots and checks).

use super::super::super::sync_ptr::SyncPtr;
use super::super::reduce::CHUNK;
use super::super::system::System;
use super::drops::Drops;
use super::level::Level;
use super::window::Window;
use rayon::prelude::*;
use std::ops::Range;

/// `RunAt::base[0]` of a drop's segment (not in the cycle, `drops.rs`).
const DROP: u32 = u32::MAX;

/// The table has room for a segment per this many cells of the grid.
pub(super) const CELLS_PER_ENTRY: usize = 16;

/// One segment: rows `row..` (to the next entry's `row`), cells `i0 + t` of one x-line of the
/// finest level, whose colour slots start at `base` ([`Level::bases`]).
#[derive(Clone, Copy, Default)]
struct RunAt {
    row: u32,
    i0: u32,
    base: [u32; 2],
}

/// The segments of one system's rows on one set-up of the finest level.
#[derive(Default)]
pub(super) struct Runs {
    /// The segments in row order, then an entry at row `nf` (the end).
    at: Vec<RunAt>,
    /// Per chunk of [`CHUNK`] rows, the index in `at` of the segment holding its first row.
    first: Vec<u32>,
    /// Per chunk, the segments starting in it (the build's scratch).
    count: Vec<u32>,
    /// The system it was built for ([`System::stamp`]), `None` before the first build.
    stamp: Option<u64>,
    /// Whether the last build's segments fit the table's room (else the iterator finds them).
    fits: bool,
}

impl Runs {
    /// A table for a grid of `cells` cells, with room for `entries` segments (allocated now,
    /// with its per-chunk lists for every cell fluid: no build allocates).
    pub fn with_room(cells: usize, entries: usize) -> Self {
        let chunks = cells.div_ceil(CHUNK);
        Self {
            at: Vec::with_capacity(entries + 1),
            first: Vec::with_capacity(chunks),
            count: Vec::with_capacity(chunks),
            ..Self::default()
        }
    }

    /// Forgets the table (the levels it points into are being set up again): reading it
    /// panics until the next [`Self::build`].
    pub fn invalidate(&mut self) {
        self.stamp = None;
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        16 * self.at.capacity() + 4 * (self.first.capacity() + self.count.capacity())
    }

    /// The table for `sys`'s rows on the finest level `lv` of window `win`, `drops` marked.
    /// Panics unless every row's cell lies inside the window, the rows' cells increase, and
    /// each segment lies in one stored range of its row (so the rows' slots are distinct and
    /// in bounds, which the passes' parallel writes rely on).
    pub fn build(&mut self, sys: &System, lv: &Level, win: &Window, drops: &Drops) {
        let nf = sys.nf;
        let cell_of = &sys.cell_of[..nf];
        let chunks = nf.div_ceil(CHUNK);
        let starts = |r: usize| r == 0 || !follows(cell_of, r);
        self.count.resize(chunks, 0);
        self.count.par_iter_mut().enumerate().for_each(|(ci, n)| {
            let rows = ci * CHUNK..((ci + 1) * CHUNK).min(nf);
            assert!(
                rows.clone().all(|r| r == 0 || cell_of[r - 1] < cell_of[r]),
                "multigrid: the rows' cells must increase"
            );
            *n = rows.filter(|&r| starts(r)).count() as u32;
        });
        self.first.resize(chunks, 0);
        let mut total = 0u32;
        for (ci, (n, f)) in self.count.iter_mut().zip(self.first.iter_mut()).enumerate() {
            // The segment holding row `ci * CHUNK`: the last one starting at or before it.
            let own = starts(ci * CHUNK) as u32;
            *f = total + own - 1;
            std::mem::swap(n, &mut total);
            total += *n;
        }
        let total = total as usize;
        self.fits = total < self.at.capacity();
        if !self.fits {
            // No room: the iterator finds the segments (and checks them) itself.
            self.stamp = Some(sys.stamp);
            return;
        }
        self.at.resize(total + 1, RunAt::default());
        self.at[total] = RunAt {
            row: nf as u32,
            ..RunAt::default()
        };
        // `count` now holds each chunk's first segment's index: fill the chunks' entries.
        let (at, count) = (SyncPtr(self.at.as_mut_ptr()), &self.count);
        (0..chunks).into_par_iter().for_each(|ci| {
            // This chunk's entries: from its first segment's to the next chunk's.
            let hi = count.get(ci + 1).map_or(total, |&x| x as usize);
            let mut slots = count[ci] as usize..hi;
            // From segment to segment: the first starting in this chunk, then each's end.
            let (mut r, stop) = (ci * CHUNK, ((ci + 1) * CHUNK).min(nf));
            if !starts(r) {
                r = segment_end(cell_of, r, nf);
            }
            while r < stop {
                let end = segment_end(cell_of, r, nf);
                let e = segment(lv, win, drops, cell_of[r] as usize, r, end - r);
                r = end;
                let k = slots
                    .next()
                    .expect("multigrid: a chunk's segments as counted");
                // SAFETY: `k < hi <= total < at.len()`, and the chunks' ranges of entries
                // are disjoint (consecutive counts), each written by its chunk's task only.
                unsafe { *at.get(k) = e };
            }
        });
        self.stamp = Some(sys.stamp);
    }

    /// The segments' rows `a..b` within `rows`, in order (cut at the ends of `rows`), each
    /// with `Some((i0, base))`, or `None` for a drop's: the rows' cells are `i0 + t`
    /// (`t < b - a`) of one x-line of the finest level, cell `i` at `base[i % 2] + i / 2` of
    /// its arrays stored by colour. Panics unless the table was built for `sys`.
    /// (`lv`, `win`, `drops`: the set-up's, for a table without room.)
    #[inline(always)]
    pub fn iter<'a>(
        &'a self,
        sys: &'a System,
        rows: Range<usize>,
        (lv, win, drops): (&'a Level, &'a Window, &'a Drops),
    ) -> Iter<'a> {
        assert!(
            self.stamp == Some(sys.stamp) && rows.end <= sys.nf,
            "multigrid: the rows' table is not this system's"
        );
        if !self.fits {
            return Iter::Scan(ScanIter {
                cell_of: &sys.cell_of[..sys.nf],
                lv,
                win,
                drops,
                a: rows.start,
                end: rows.end,
            });
        }
        let at = &self.at[..];
        let mut k = 0;
        if !rows.is_empty() {
            k = self.first[rows.start / CHUNK] as usize;
            while at[k + 1].row as usize <= rows.start {
                k += 1;
            }
        }
        Iter::Table(TableIter {
            at,
            k,
            a: rows.start,
            end: rows.end,
        })
    }

    /// Whether the last build's segments fit the table (for tests).
    #[cfg(test)]
    pub fn fits(&self) -> bool {
        self.fits
    }
}

/// The segments of a range of rows ([`Runs::iter`]): from the table, or found from the rows'
/// cells where the table had no room. The passes walk either with [`each_run!`], a loop of
/// its own for each (a match per segment kept the dot product's lanes out of registers).
pub(super) enum Iter<'a> {
    Table(TableIter<'a>),
    Scan(ScanIter<'a>),
}

/// `for (run, at) in` the segments of `iter` ([`Iter`]) `{ body }`, the body compiled once
/// for the table's iterator and once for the scan's.
macro_rules! each_run {
    ($iter:expr, |$run:ident, $at:ident| $body:block) => {
        match $iter {
            $crate::sim::pressure::multigrid::runs::Iter::Table(it) => {
                for ($run, $at) in it $body
            }
            $crate::sim::pressure::multigrid::runs::Iter::Scan(it) => {
                for ($run, $at) in it $body
            }
        }
    };
}
pub(super) use each_run;

/// The segments of a range of rows from the table.
pub(super) struct TableIter<'a> {
    at: &'a [RunAt],
    k: usize,
    a: usize,
    end: usize,
}

impl Iterator for TableIter<'_> {
    type Item = (Range<usize>, Option<(usize, [usize; 2])>);

    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        if self.a >= self.end {
            return None;
        }
        let (e, from) = (self.at[self.k], self.a);
        let b = (self.at[self.k + 1].row as usize).min(self.end);
        self.a = b;
        self.k += 1;
        let at = (e.base[0] != DROP).then(|| {
            let i0 = e.i0 as usize + (from - e.row as usize);
            (i0, e.base.map(|x| x as usize))
        });
        Some((from..b, at))
    }
}

/// The segments of a range of rows found from the rows' cells.
pub(super) struct ScanIter<'a> {
    cell_of: &'a [u32],
    lv: &'a Level,
    win: &'a Window,
    drops: &'a Drops,
    a: usize,
    end: usize,
}

impl Iterator for ScanIter<'_> {
    type Item = (Range<usize>, Option<(usize, [usize; 2])>);

    fn next(&mut self) -> Option<Self::Item> {
        if self.a >= self.end {
            return None;
        }
        // The rows' cells increase: the build checked every row, with or without room.
        let (from, cell_of) = (self.a, self.cell_of);
        let b = segment_end(cell_of, from, self.end);
        self.a = b;
        let (c, len) = (cell_of[from] as usize, b - from);
        let e = segment(self.lv, self.win, self.drops, c, from, len);
        let at = (e.base[0] != DROP).then(|| (e.i0 as usize, e.base.map(|x| x as usize)));
        Some((from..b, at))
    }
}

/// Whether row `r`'s cell follows row `r - 1`'s along x (`r > 0`): the rows are one segment
/// there (a fluid cell is never on the grid's outermost layer, so consecutive cells share
/// their x-line).
#[inline(always)]
fn follows(cell_of: &[u32], r: usize) -> bool {
    cell_of[r] == cell_of[r - 1].wrapping_add(1)
}

/// The end of the segment of rows from row `r` (before `end`): the first row whose cell does
/// not follow the row before's.
#[inline(always)]
fn segment_end(cell_of: &[u32], r: usize, end: usize) -> usize {
    let mut b = r + 1;
    while b < end && follows(cell_of, b) {
        b += 1;
    }
    b
}

/// The entry of the segment of rows `row..row + len` from cell `c` of the simulation grid.
fn segment(lv: &Level, win: &Window, drops: &Drops, c: usize, row: usize, len: usize) -> RunAt {
    let row32 = row as u32;
    if drops.holds(row) {
        return RunAt {
            row: row32,
            i0: 0,
            base: [DROP; 2],
        };
    }
    assert!(
        win.holds(c) && win.holds(c + len - 1),
        "multigrid: the rows' cells must lie inside the liquid's box"
    );
    let [i0, j, k] = win.local(c);
    let (x0, end) = lv.lay.holding(j + lv.n[1] * k, i0);
    assert!(
        x0 <= i0 && i0 + len <= end,
        "multigrid: a segment of the rows must lie in one stored range"
    );
    let base = lv
        .bases(j, k, i0)
        .map(|b| u32::try_from(b).expect("level index in u32"));
    assert!(base[0] != DROP);
    RunAt {
        row: row32,
        i0: i0 as u32,
        base,
    }
}
