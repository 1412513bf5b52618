//! Where a level keeps each compact row of its vectors (`u`, `b`, `r`, the diagonals and the
//! counts, stored by colour: `level.rs`): each row stores the ranges of x that its own and its
//! neighbours' loops read, not the level's window's width.
//!
//! Why: a row's loops visit only its segments (`segments.rs`), yet they cost in proportion to
//! the entries the rows *store* (most likely the hardware prefetchers streaming on through the
//! rest of a row; the measuring machine exposes no counters to confirm it). Measured (session
//! 20, `mg_cycle` on 1 thread, the 8M dam break's frame-2 labels, the same 1.0M fluid cells):
//! padding every row by 16, 40 and 120 entries made the finest level's smoothing 1.33x, 1.84x
//! and 2.7x as slow and the restriction 1.5x, 2.3x, 3.1x, in proportion to the stored entries.
//! Session 20 gave each z-plane's rows the length its liquid needs (the dam break's frame-10
//! cycle 0.7x); later the liquid climbs both end walls, a row holds a sheet at each end, and a
//! plane's rows stored 4.7 entries per fluid cell at frame 28 (session 22), where the cycle
//! cost 3.2x per fluid cell what it did at frame 2 (1.44 entries), in proportion (`mg_cycle`,
//! 1 thread: 63 ms plus 116 ms per million entries a colour fits frames 2, 28 and frame 28
//! with its right half's sheets mirrored to the left). So since session 23 each row stores its
//! own ranges (2.8 entries per fluid cell at frame 28 by this rule, counted from its labels).
//!
//! The layout: row `row` stores its ranges `[x0, end)` of cells (`x0` even) one after the
//! other, each in `(end - x0) / 2 + 1 + PAD` entries in whole vector chunks ([`PAD`] spare
//! entries: a chunk past a segment, and the x-neighbour one cell past it), from entry
//! `rs[row]` (colour 0; colour 1 `half` further) to `rs[row + 1]`; cell `i` of range `r` at
//! `rs[row] + o_r - x0_r / 2 + i / 2`, the row's *virtual start* in that range plus `i / 2`
//! ([`Layout::start`]; `rs[0]`, a margin of half a row at least, keeps it positive). A row's
//! ranges are the union of the segments of the row and of its four neighbour rows (the
//! smoother and the residual read `row +- 1` and `row +- ny` across a segment), each two cells
//! wider to the left (the sweeps read `x - 1` of a segment's first cell), and on a coarse
//! level the parents of the segments of the 16 finer rows whose prolongation reads it (fine
//! rows `2J - 2 ..= 2J + 1` of planes `2K - 2 ..= 2K + 1`), widened by a coarse cell each way
//! (the prolongation reads the parent and the side tap of every fine segment's cells, fluid
//! or not, which must be there and hold 0); ranges closer than [`MERGE`] cells are joined.
//! Each interval lies in one range, so every loop reads a segment's cells of each row at one
//! offset, which `segments.rs` keeps per segment. The restriction reads each fine row only
//! along its own segments (`kernels.rs`), so it adds nothing. The right end needs no
//! widening: [`PAD`] covers a chunk past a segment and the prolongation's reach. Entries
//! outside the segments hold 0; only the layout's set-up (`finish_setup`) moves rows, after
//! zeroing the old segments.

use super::super::super::sync_ptr::SyncPtr;
use super::segments::{Seg, Segments};
use rayon::prelude::*;

/// Cells per vector chunk of a compact row's loops (`wavefront.rs`).
pub(super) const LANES: usize = 8;

/// Spare entries past each range's last cell: a segment's chunks of [`LANES`] cells, and the
/// x-neighbour one cell past them, stay inside the range.
pub(super) const PAD: usize = LANES + 1;

/// Ranges of a row closer than this many cells are joined: a range's padding and rounding
/// (about 13 entries) costs about what a gap of this many cells (12 entries) would.
pub(super) const MERGE: usize = 24;

/// One stored range of a row: cells `[x0, end)` from entry `o` of the row's entries.
#[derive(Clone, Copy, Default)]
pub(super) struct Range {
    pub x0: u32,
    pub end: u32,
    pub o: u32,
}

pub(super) struct Layout {
    /// Per row `j + ny k`, and one past the last: its first stored entry (colour 0; colour 1
    /// at `+ half`).
    pub rs: Vec<usize>,
    /// Most ranges of a row (of the widest rows [`Self::new`] was made for).
    per: usize,
    /// Per row: its ranges' count, and `per` slots of them, in order along x.
    nr: Vec<u32>,
    ranges: Vec<Range>,
    /// Entries of colour 0; colour 1 starts here.
    pub half: usize,
}

/// Entries a range stores for the cells `[x0, end)` (`x0` even): a chunk of [`LANES`] past the
/// last one, and the `x + 1` neighbour, in whole chunks.
pub(super) fn entries(x0: usize, end: usize) -> usize {
    ((end - x0) / 2 + 1 + PAD).next_multiple_of(LANES)
}

/// Intervals a row's ranges are joined from, at most (more: the row gets one range).
const JOIN: usize = 512;

impl Layout {
    /// An empty layout (no row stores anything) for `n` cells per axis, with room for as many
    /// rows.
    pub fn new(n: [usize; 3], off: usize) -> Self {
        let rows = n[1] * n[2];
        let per = 2 + n[0] / MERGE;
        let mut l = Self {
            rs: Vec::with_capacity(rows + 1),
            per,
            nr: Vec::with_capacity(rows),
            ranges: vec![Range::default(); rows * per],
            half: 0,
        };
        l.clear(n, off);
        l
    }

    /// Makes this layout empty for `n` cells per axis (within the capacity [`Self::new`] gave).
    pub fn clear(&mut self, n: [usize; 3], off: usize) {
        let rows = n[1] * n[2];
        assert!(rows < self.rs.capacity() && rows * self.per <= self.ranges.len());
        assert!(n[0] / MERGE + 2 <= self.per);
        self.rs.clear();
        self.rs.resize(rows + 1, off);
        self.nr.clear();
        self.nr.resize(rows, 0);
        self.half = off;
    }

    /// Row `row`'s ranges, in order along x.
    #[inline(always)]
    pub fn ranges(&self, row: usize) -> &[Range] {
        &self.ranges[row * self.per..][..self.nr[row] as usize]
    }

    /// The offset of cell `x` of row `row` from the row's first stored entry, less `x / 2`
    /// (wrapping): the range that holds `x` (the last range from `x` back; the first if none).
    #[inline(always)]
    pub fn at(&self, row: usize, x: usize) -> usize {
        let r = self.ranges[row * self.per + self.find(row, x)];
        (r.o as usize).wrapping_sub(r.x0 as usize / 2)
    }

    /// The index among row `row`'s ranges of the last one from cell `x` back (0 if none, or
    /// if the row stores nothing: its first slot, zeroed).
    #[inline(always)]
    fn find(&self, row: usize, x: usize) -> usize {
        let rs = self.ranges(row);
        (1..rs.len())
            .take_while(|&i| rs[i].x0 as usize <= x)
            .last()
            .unwrap_or(0)
    }

    /// The virtual start (colour 0) of row `row` in the range that holds cell `x`: cell `i` of
    /// that range at `start + i / 2`.
    #[inline(always)]
    pub fn start(&self, row: usize, x: usize) -> usize {
        self.rs[row].wrapping_add(self.at(row, x))
    }

    /// The cells `[x0, end)` of the range of row `row` that [`Self::at`] gives for cell `x`.
    pub fn holding(&self, row: usize, x: usize) -> (usize, usize) {
        let r = self.ranges(row).get(self.find(row, x));
        r.map_or((0, 0), |r| (r.x0 as usize, r.end as usize))
    }

    /// For the range of row `row` that holds cell `x` ([`Self::at`]): its first cell, the
    /// cell past its last stored entry (its padding included), the next range's first cell
    /// (`usize::MAX` if none), and the row's virtual start in it ([`Self::start`]).
    pub fn reach(&self, row: usize, x: usize) -> (usize, usize, usize, usize) {
        let (rs, i) = (self.ranges(row), self.find(row, x));
        let Some(r) = rs.get(i) else {
            return (0, 0, usize::MAX, self.rs[row]);
        };
        let (x0, end) = (r.x0 as usize, r.end as usize);
        let next = rs.get(i + 1).map_or(usize::MAX, |r| r.x0 as usize);
        let start = self.rs[row] + r.o as usize - x0 / 2;
        (x0, x0 + 2 * entries(x0, end), next, start)
    }

    /// Start of row `row`'s stored entries of colour `c` and their number.
    #[inline(always)]
    pub fn stored(&self, c: usize, row: usize) -> (usize, usize) {
        (
            c * self.half + self.rs[row],
            self.rs[row + 1] - self.rs[row],
        )
    }

    /// The layout for the segments `seg` of a level of `n` cells per axis (`off` entries
    /// before the first row, more than half a row), and for a coarse level the finer level's
    /// segments (`finer`, its `n`): see the module docs.
    pub fn plan(
        &mut self,
        n: [usize; 3],
        seg: &Segments,
        off: usize,
        finer: Option<(&Segments, [usize; 3])>,
    ) {
        let (nx, ny) = (n[0], n[1]);
        let rows = n[1] * n[2];
        // A range's virtual start (its row's start plus `o - x0 / 2`) is then not below 0.
        assert!(
            off > nx / 2,
            "multigrid layout: a margin narrower than half a row"
        );
        let per = self.per;
        // Each row's ranges and their entries (in `rs[row + 1]` until the sums below).
        self.nr
            .par_iter_mut()
            .zip(self.ranges.par_chunks_mut(per))
            .zip(self.rs[1..].par_iter_mut())
            .enumerate()
            .with_min_len(64)
            .for_each(|(row, ((nr, out), len))| {
                // Uninitialised: a zeroed buffer per row was a third of the set-up's time.
                let mut buf = [const { std::mem::MaybeUninit::<[u32; 2]>::uninit() }; JOIN];
                let mut m = 0;
                // The intervals' first start and last end, and their last start and first end.
                let (mut whole, mut close) = ([u32::MAX, 0], [0, u32::MAX]);
                let mut push = |a: u32, b: u32| {
                    let b = b.min(nx as u32);
                    if a < b {
                        whole = [whole[0].min(a), whole[1].max(b)];
                        close = [close[0].max(a), close[1].min(b)];
                        if m < JOIN {
                            buf[m].write([a, b]);
                        }
                        m += 1;
                    }
                };
                for r in [
                    row.wrapping_sub(ny),
                    row.wrapping_sub(1),
                    row,
                    row + 1,
                    row + ny,
                ] {
                    if r < rows {
                        for &Seg { span: [lo, hi], .. } in seg.of(r) {
                            push(lo.saturating_sub(2), hi);
                        }
                    }
                }
                if let Some((f, fnn)) = finer {
                    // Fine rows 2J - 2 ..= 2J + 1 of planes 2K - 2 ..= 2K + 1 read this row
                    // (`taps::coarse_taps`); fine cell x has parent (x + 1) / 2.
                    let (j, k) = (row % ny, row / ny);
                    for fk in (2 * k).saturating_sub(2)..(2 * k + 2).min(fnn[2]) {
                        for fj in (2 * j).saturating_sub(2)..(2 * j + 2).min(fnn[1]) {
                            for &Seg { span: [a, b], .. } in f.of(fj + fnn[1] * fk) {
                                push(a.div_ceil(2).saturating_sub(1), b.div_ceil(2) + 2);
                            }
                        }
                    }
                }
                // Every interval starting before every other's end plus MERGE (the liquid's
                // body: its rows and their neighbours' alike) joins them all into one range,
                // as the sorted joins below would; so do too many intervals.
                let m = if m <= JOIN && (m < 2 || close[0] as usize >= close[1] as usize + MERGE) {
                    m
                } else {
                    buf[0].write(whole);
                    1
                };
                // SAFETY: the first `m` entries were written.
                let buf =
                    unsafe { std::slice::from_raw_parts_mut(buf.as_mut_ptr() as *mut [u32; 2], m) };
                buf.sort_unstable();
                let mut c = 0;
                for &[a, b] in buf.iter() {
                    if c > 0 && (a as usize) < out[c - 1].end as usize + MERGE {
                        out[c - 1].end = out[c - 1].end.max(b);
                    } else {
                        out[c] = Range {
                            x0: a & !1,
                            end: b,
                            o: 0,
                        };
                        c += 1;
                    }
                }
                if c == 0 {
                    out[0] = Range::default();
                }
                let mut o = 0;
                for r in &mut out[..c] {
                    r.o = o as u32;
                    o += entries(r.x0 as usize, r.end as usize);
                }
                *nr = c as u32;
                *len = o;
            });
        self.rs[0] = off;
        for row in 0..rows {
            self.rs[row + 1] += self.rs[row];
        }
        self.half = self.rs[rows];
    }

    /// Zeroes both colours' entries of every `f32` array of `fs` and of `bytes` (if given) in
    /// the rows that have a segment in `seg` (this layout's, placed in it:
    /// [`Segments::place`]): the whole stored row if `whole`, else the segments' compact
    /// cells. One parallel loop over the rows for all the arrays (a loop each woke the
    /// workers once per array and level at every set-up).
    pub fn zero<const N: usize>(
        &self,
        fs: [&mut [f32]; N],
        bytes: Option<&mut [u8]>,
        seg: &Segments,
        whole: bool,
    ) {
        let fs = fs.map(|v| (SyncPtr(v.as_mut_ptr()), v.len()));
        let bytes = bytes.map(|v| (SyncPtr(v.as_mut_ptr()), v.len()));
        (0..self.nr.len())
            .into_par_iter()
            .with_min_len(256)
            .for_each(|row| {
                let segs = seg.of(row);
                if segs.is_empty() {
                    return;
                }
                let fill = |a: usize, b: usize| {
                    for &(p, len) in &fs {
                        assert!(a <= b && b <= len);
                        // SAFETY: in bounds (asserted); rows' stored entries are disjoint, so
                        // no other task writes these.
                        unsafe { std::slice::from_raw_parts_mut(p.get(a), b - a).fill(0.0) };
                    }
                    if let Some((p, len)) = bytes {
                        assert!(a <= b && b <= len);
                        // SAFETY: as above.
                        unsafe { std::slice::from_raw_parts_mut(p.get(a), b - a).fill(0) };
                    }
                };
                for c in 0..2 {
                    let (s, h) = self.stored(c, row);
                    if whole {
                        fill(s, s + h);
                        continue;
                    }
                    // The segment's start in this layout (`Segments::place`).
                    for sg in segs {
                        let ([lo, hi], st) = (sg.span, sg.st());
                        let s = c * self.half + st[0];
                        fill(s + (lo as usize >> 1), s + ((hi as usize + 1) >> 1));
                    }
                }
            });
    }
}
