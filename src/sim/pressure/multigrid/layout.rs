//! Where a level keeps each compact row of its vectors (`u`, `b`, `r`, the diagonals and the
//! counts, stored by colour: `level.rs`): the rows of one z-plane are as long as the liquid
//! around that plane needs, not as long as the level's window is wide.
//!
//! Why: a row's loops visit only its span, yet they cost in proportion to the entries the row
//! *stores* (most likely the hardware prefetchers streaming on past a span's end through the
//! rest of the row; the measuring machine exposes no counters to confirm it). Measured
//! (session 20, `mg_cycle` on 1 thread, the 8M dam break's frame-2 labels, the same 1.0M
//! fluid cells): padding every row by 16, 40 and 120 entries made the finest level's
//! smoothing 1.33x, 1.84x and 2.7x as slow and the restriction 1.5x, 2.3x, 3.1x, in
//! proportion to the stored entries. A dam break's flowing frames fill a wide window
//! unevenly (the spread layer's planes are full width, the column's above it a quarter of
//! it): the frame-10 window holds 1.80 cells per fluid cell where the standing column's holds
//! 1.11, and its finest level cost 1.5x as much per fluid cell; with rows per plane its cycle
//! costs 0.7x what it did (`mg_cycle`, 2 threads), the column's 1.06x.
//!
//! The layout: plane `k` stores the cells `[x0_k, end_k)` of each of its rows (`x0_k` even),
//! in `ph[k]` entries a row (with [`PAD`] spare entries, whole vector chunks); cell `i` of row
//! `row` and colour `c` is at `c * half + rs[row] + i / 2`, `rs[row]` the row's *virtual*
//! start (its storage begins at `rs[row] + px[k]`, `px[k] = x0_k / 2`). The range covers what
//! every loop reads of the plane: a plane's range is the union of the spans of the planes
//! within two of it, two cells wider to the left (the sweeps read `x - 1` of a span's first
//! cell, the restriction the fine cells `2 lo - 2` of a coarse span; two planes rather than
//! one, for a coarse cell whose only fluid child lies against a solid one); a coarse level's
//! also covers the parents of the finer level's ranges of fine planes `2K - 2 ..= 2K + 1`,
//! widened by a coarse cell each way (the prolongation reads the parent and the side tap of
//! every fine span's cells, fluid or not, which must be there and hold 0). The right end needs no widening: [`PAD`] covers a chunk past a
//! span and the restriction's and prolongation's reach. Entries outside the spans hold 0, as
//! before; only the layout's set-up (`finish_setup`) moves rows, after zeroing the old spans.
//! Reading `row +- 1` (same plane) is `-+ ph[k]` away; `row +- ny` is `rs[row +- ny] -
//! rs[row]` away (wrapping arithmetic: the plane below may start its rows further right).

use super::super::super::sync_ptr::SyncPtr;
use rayon::prelude::*;

/// Cells per vector chunk of a compact row's loops (`wavefront.rs`).
pub(super) const LANES: usize = 8;

/// Spare entries past each compact row's last cell: a row's chunks of [`LANES`] cells, and the
/// x-neighbour one cell past them, stay inside the row.
pub(super) const PAD: usize = LANES + 1;

pub(super) struct Layout {
    /// Per row `j + ny k`: its virtual start (cell `i` of colour `c` at `c half + rs + i / 2`).
    pub rs: Vec<usize>,
    /// Per plane: the first stored compact entry of its rows (`x0 / 2`).
    pub px: Vec<usize>,
    /// Per plane: entries a row stores (0: the plane stores nothing).
    pub ph: Vec<usize>,
    /// Per plane: the cells `[x0, end)` its rows store (`lo >= hi`: none).
    pub range: Vec<[u32; 2]>,
    /// Per plane: the union of its rows' spans (the set-up's scratch).
    ext: Vec<[u32; 2]>,
    /// Entries of colour 0; colour 1 starts here.
    pub half: usize,
}

/// Entries a row needs for the cells `[x0, end)` (`x0` even): a chunk of [`LANES`] past the
/// last one, and the `x + 1` neighbour, in whole chunks.
fn entries(x0: usize, end: usize) -> usize {
    ((end - x0) / 2 + 1 + PAD).next_multiple_of(LANES)
}

impl Layout {
    /// An empty layout (no plane stores anything) for `n` cells per axis, with room for as
    /// many rows and planes.
    pub fn new(n: [usize; 3], off: usize) -> Self {
        let mut l = Self {
            rs: Vec::with_capacity(n[1] * n[2]),
            px: Vec::with_capacity(n[2]),
            ph: Vec::with_capacity(n[2]),
            range: Vec::with_capacity(n[2]),
            ext: Vec::with_capacity(n[2]),
            half: 0,
        };
        l.clear(n, off);
        l
    }

    /// Makes this layout empty for `n` cells per axis (within the capacity [`Self::new`] gave).
    pub fn clear(&mut self, n: [usize; 3], off: usize) {
        assert!(n[1] * n[2] <= self.rs.capacity() && n[2] <= self.px.capacity());
        self.rs.clear();
        self.rs.resize(n[1] * n[2], off);
        for v in [&mut self.px, &mut self.ph] {
            v.clear();
            v.resize(n[2], 0);
        }
        for v in [&mut self.range, &mut self.ext] {
            v.clear();
            v.resize(n[2], [0, 0]);
        }
        self.half = off;
    }

    /// Start of row `row`'s stored entries of colour `c` (plane `k`) and their number.
    #[inline(always)]
    pub fn stored(&self, c: usize, row: usize, k: usize) -> (usize, usize) {
        (c * self.half + self.rs[row] + self.px[k], self.ph[k])
    }

    /// The layout for the spans `spans` of a level of `n` cells per axis (`off` entries
    /// before the first plane, at least half the widest row), and for a coarse level the finer
    /// level's layout (`finer`, its `n`): see the module docs.
    pub fn plan(
        &mut self,
        n: [usize; 3],
        spans: &[[u32; 2]],
        off: usize,
        finer: Option<(&Layout, [usize; 3])>,
    ) {
        let (nx, ny, nz) = (n[0], n[1], n[2]);
        const NONE: [u32; 2] = [u32::MAX, 0];
        let join = |a: [u32; 2], b: [u32; 2]| [a[0].min(b[0]), a[1].max(b[1])];
        for (k, e) in self.ext.iter_mut().enumerate() {
            *e = spans[ny * k..ny * (k + 1)]
                .iter()
                .filter(|s| s[0] < s[1])
                .fold(NONE, |a, &s| join(a, s));
        }
        for k in 0..nz {
            let mut r = self.ext[k.saturating_sub(2)..(k + 3).min(nz)]
                .iter()
                .fold(NONE, |a, &s| join(a, s));
            if r[0] < r[1] {
                r[0] = r[0].saturating_sub(2);
            }
            if let Some((f, fnn)) = finer {
                // Fine cell x has parent (x + 1) / 2; fine planes 2k - 2 ..= 2k + 1 have this
                // plane as the parent or the side tap (`kernels::coarse_taps`).
                for fk in (2 * k).saturating_sub(2)..(2 * k + 2).min(fnn[2]) {
                    let [a, b] = f.range[fk];
                    if a < b {
                        r = join(r, [a.div_ceil(2).saturating_sub(1), b.div_ceil(2) + 2]);
                    }
                }
            }
            self.range[k] = if r[0] < r[1] {
                [r[0] & !1, r[1].min(nx as u32)]
            } else {
                [0, 0]
            };
        }
        let mut at = off;
        for k in 0..nz {
            let [x0, end] = self.range[k].map(|x| x as usize);
            let (px, ph) = if x0 < end {
                (x0 / 2, entries(x0, end))
            } else {
                (0, 0)
            };
            assert!(px <= off, "multigrid layout: a row starts past the margin");
            self.px[k] = px;
            self.ph[k] = ph;
            for j in 0..ny {
                self.rs[j + ny * k] = at + j * ph - px;
            }
            at += ny * ph;
        }
        self.half = at;
    }

    /// Zeroes both colours' entries of `v` in the rows that have a span in `spans` (this
    /// layout's): the whole stored row if `whole`, else the span's compact cells.
    pub fn zero<T: Copy + Default + Send + Sync>(
        &self,
        v: &mut [T],
        spans: &[[u32; 2]],
        ny: usize,
        whole: bool,
    ) {
        let len = v.len();
        let p = SyncPtr(v.as_mut_ptr());
        spans
            .par_iter()
            .enumerate()
            .with_min_len(256)
            .for_each(|(row, &[lo, hi])| {
                if lo >= hi {
                    return;
                }
                let k = row / ny;
                for c in 0..2 {
                    let (a, b) = if whole {
                        let (s, h) = self.stored(c, row, k);
                        (s, s + h)
                    } else {
                        let s = c * self.half + self.rs[row];
                        (s + (lo as usize >> 1), s + ((hi as usize + 1) >> 1))
                    };
                    assert!(b <= len);
                    // SAFETY: in bounds (asserted); rows' stored entries are disjoint, so
                    // no other task writes these.
                    unsafe { std::slice::from_raw_parts_mut(p.get(a), b - a).fill(T::default()) };
                }
            });
    }
}
