//! The liquid's small pieces (drops) apart from the multigrid: a block-diagonal
//! preconditioner.
//!
//! The liquid's fluid cells fall into connected pieces (two cells are joined when they share
//! a face), and the pressure matrix has no entry between two pieces: `A` is block-diagonal,
//! one block per piece. Any preconditioner that is symmetric positive definite on each block
//! is one for `A` (Saad 2003, "Iterative methods for sparse linear systems", sec. 10.1: block
//! Jacobi), so each piece may be preconditioned its own way. Where a wave breaks, the liquid
//! is one main body and thousands of drops flung from the sheet: on the 8M-particle dam break
//! at frame 22 the main body has 1,015,966 cells and 2,703 drops hold 7,189 (at most 191
//! each, 0.7% of the rows), scattered across the tank's width. Those drops cost the cycle far
//! more than their share: each z-plane's rows stored every cell from the first to the last
//! their loops reach (`layout.rs` until session 23, when rows came to store their own
//! ranges), so a drop far from the body widened its rows (3.02 stored
//! cells per fluid cell at frame 22, 1.86 without the drops), and the cycle with the drops
//! turned to air took 0.7x the time (`cargo bench --bench mg_cycle` on the dumped labels,
//! `scripts/mg_label_pieces.py --drops-to-air`).
//!
//! So each set-up labels the pieces ([`Drops::label`]: a union-find over the system's runs of
//! rows in slabs of z-planes in parallel, `system/pieces.rs`; the pieces do not depend on the
//! slabs or the threads), keeps the largest piece and every piece of more than
//! [`super::Settings::drop_cells`] cells in the multigrid, and gives it the
//! grid's labels with the other pieces' cells turned to air (no multigrid cell touches them:
//! a drop has no face in common with another piece). The drops' rows are preconditioned by
//! [`super::Settings::drop_sweeps`] symmetric Gauss-Seidel sweeps from zero (a forward sweep
//! over the drop rows in row order, then a backward one, on the system's own rows: diagonal
//! with the ghost-fluid air terms, face weights), in a fixed order: a symmetric
//! positive (semi-)definite map of each drop's right-hand side, like the cycle's own sweeps.
//! The rows are kept piece by piece (pieces in order of their first row, each piece's rows
//! increasing), and since no piece reads another's values, the sweeps run piece by piece, on
//! all threads, each piece's rows in the cache while its sweeps last: the same bits as sweeps
//! over all the drop rows in row order (`drop_sweeps_by_pieces_equal_sweeps_in_row_order`).
//! The CG loop's passes (`pcg.rs`) skip the drops' runs when they move values to and from the
//! grid and read their `M^-1 r` from the CG vector the sweeps wrote.

use super::super::super::mac_grid::CellLabel;
use super::super::super::sync_ptr::SyncPtr;
use super::super::system::pieces::Pieces;
use super::super::system::{System, is_cut};
use rayon::prelude::*;

/// The drops of the current system and the scratch of their labelling.
pub(super) struct Drops {
    /// One bit per row, set on the rows of drops (whole runs: a run lies in one piece).
    pub bits: Vec<u64>,
    /// The drops' rows, piece by piece (pieces in order of their first row), each piece's
    /// rows increasing.
    pub rows: Vec<u32>,
    /// Where each piece's rows begin in [`Self::rows`], and their end (empty without drops).
    pub piece_at: Vec<u32>,
    /// The grid's labels with the drops' cells as air (the multigrid's set-up reads them);
    /// empty unless drops are enabled.
    pub labels: Vec<CellLabel>,
    /// The pieces of the system's rows, by runs ([`Pieces`]).
    pub pieces: Pieces,
    /// Scratch of [`Self::label`]: each root run's cells (0 for a run that is not a root).
    cells: Vec<u32>,
    /// Scratch of [`Self::label`]: per root of a drop, where its next row goes in
    /// [`Self::rows`].
    slot: Vec<u32>,
    /// Drop rows per task of [`Self::smooth`] ([`PIECE_ROWS`]; tests lower it).
    pub piece_rows: usize,
    /// The drops' rows as a compact system, by position in [`Self::rows`]: each row's
    /// neighbours' positions (`NO_ROW` where the neighbour is not fluid) with their weights
    /// (1 without face weights), its diagonal, and its `r` and `z` during [`Self::smooth`]:
    /// the sweeps read a few hundred kilobytes instead of rows scattered over the CG vectors.
    nb: Vec<[u32; 6]>,
    w: Vec<[f32; 6]>,
    diag: Vec<f64>,
    rz: Vec<[f64; 2]>,
}

/// No neighbour in [`Drops::nb`].
const NO_ROW: u32 = u32::MAX;

/// Drop rows per task of [`Drops::smooth`] (whole pieces: a task takes the pieces that begin
/// in its range).
const PIECE_ROWS: usize = 2048;

impl Drops {
    /// Buffers for a grid of `cells` cells (`enabled`: also the labels' copy and the
    /// scratch; without it there are never drops). The scratch is reserved for the most a
    /// grid can need (a run per cell; drops in an eighth of the cells, [`Self::label`]) and
    /// never grows, so no set-up allocates; only the pages a system uses become resident.
    pub fn new(cells: usize, enabled: bool) -> Self {
        let (runs, drops) = if enabled { (cells, cells / 8) } else { (0, 0) };
        Self {
            bits: vec![0; cells.div_ceil(64) + 1],
            rows: Vec::with_capacity(drops),
            piece_at: Vec::with_capacity(drops + 1),
            labels: vec![CellLabel::Empty; if enabled { cells } else { 0 }],
            pieces: Pieces::with_capacity(runs),
            cells: Vec::with_capacity(runs),
            slot: Vec::with_capacity(runs),
            piece_rows: PIECE_ROWS,
            nb: Vec::with_capacity(drops),
            w: Vec::with_capacity(drops),
            diag: Vec::with_capacity(drops),
            rz: Vec::with_capacity(drops),
        }
    }

    /// No drops (every row to the multigrid).
    pub fn clear(&mut self) {
        for &r in &self.rows {
            self.bits[r as usize >> 6] = 0;
        }
        self.rows.clear();
        self.piece_at.clear();
    }

    /// Finds the pieces of `sys`'s fluid rows and marks as drops every piece of at most
    /// `max_cells` cells but the largest (the first of the largest in row order), as long as
    /// the drops' rows fit the scratch (an eighth of the grid's cells: the pieces in row order
    /// of their first run that would not fit stay in the cycle, which is as correct); then,
    /// if there are drops, writes `labels` with their cells as air into [`Self::labels`].
    /// Returns the number of drop rows.
    pub fn label(&mut self, sys: &System, labels: &[CellLabel], max_cells: usize) -> usize {
        self.clear();
        let nf = sys.nf;
        if max_cells == 0 || nf == 0 || self.labels.len() != labels.len() {
            return 0;
        }
        self.pieces(sys);
        let (starts, p, cells) = (&self.pieces.starts, &self.pieces.parent, &mut self.cells);
        let (nr, end) = (starts.len(), |i: usize| {
            starts.get(i + 1).map_or(nf, |&s| s as usize)
        });
        // The main body: the first root of the most cells.
        let main = (0..nr).fold(0, |m, i| if cells[i] > cells[m] { i } else { m });
        // Room left for drop rows; a piece is taken at its first run, whole, or not at all
        // (its root's count then marks it left out). A piece taken gets its place in `rows`
        // at its first run (after the pieces taken before it), and each of its runs' rows go
        // to the next places of it.
        let (room, slot) = (self.rows.capacity(), &mut self.slot);
        slot.clear();
        slot.resize(nr, 0);
        for (i, &a) in starts.iter().enumerate() {
            let root = p[i] as usize;
            if root == main || cells[root] == u32::MAX || cells[root] as usize > max_cells {
                continue;
            }
            if root == i {
                let taken = self.rows.len();
                if cells[root] as usize > room - taken {
                    cells[root] = u32::MAX;
                    continue;
                }
                self.piece_at.push(taken as u32);
                slot[root] = taken as u32;
                self.rows.resize(taken + cells[root] as usize, 0);
            }
            for r in a as usize..end(i) {
                self.bits[r >> 6] |= 1 << (r & 63);
                self.rows[slot[root] as usize] = r as u32;
                slot[root] += 1;
            }
        }
        if !self.rows.is_empty() {
            self.piece_at.push(self.rows.len() as u32);
        }
        self.compact(sys);
        if !self.rows.is_empty() {
            self.labels
                .par_chunks_mut(1 << 16)
                .zip(labels.par_chunks(1 << 16))
                .for_each(|(o, l)| o.copy_from_slice(l));
            for &r in &self.rows {
                self.labels[sys.cell_of[r as usize] as usize] = CellLabel::Empty;
            }
        }
        self.rows.len()
    }

    /// The pieces of `sys`'s fluid rows (`nf > 0`, [`Pieces::label`]) and [`Self::cells`]
    /// each root's cells.
    fn pieces(&mut self, sys: &System) {
        let nf = sys.nf;
        self.pieces.label(sys);
        let (pc, cells) = (&self.pieces, &mut self.cells);
        cells.clear();
        cells.resize(pc.starts.len(), 0);
        for (i, &a) in pc.starts.iter().enumerate() {
            cells[pc.parent[i] as usize] += (pc.end(i, nf) - a as usize) as u32;
        }
    }

    /// Whether row `r` is a drop's.
    #[inline(always)]
    pub fn holds(&self, r: usize) -> bool {
        is_cut(&self.bits, r)
    }

    /// The compact system of the drops' rows ([`Self::nb`]): a fluid neighbour of a drop row
    /// is a row of the same piece, found in the piece's increasing rows by one cursor per
    /// direction, which only moves forward (the neighbours' rows increase with the rows).
    fn compact(&mut self, sys: &System) {
        let (nf, rows) = (sys.nf, &self.rows);
        self.nb.clear();
        self.w.clear();
        self.diag.clear();
        for piece in self.piece_at.windows(2) {
            let (p0, p1) = (piece[0] as usize, piece[1] as usize);
            let mut cur = [p0; 6];
            for &row in &rows[p0..p1] {
                let row = row as usize;
                let m = &sys.nb[row];
                let mut at = [NO_ROW; 6];
                for k in 0..6 {
                    if (m[k] as usize) < nf {
                        while cur[k] < p1 && rows[cur[k]] < m[k] {
                            cur[k] += 1;
                        }
                        assert!(
                            cur[k] < p1 && rows[cur[k]] == m[k],
                            "drops: a drop's neighbour"
                        );
                        at[k] = cur[k] as u32;
                    }
                }
                self.nb.push(at);
                let cut = sys.fractional && is_cut(&sys.cut, row);
                self.w.push(if cut { sys.w[row] } else { [1.0; 6] });
                self.diag.push(sys.diag[row]);
            }
        }
        self.rz.clear();
        self.rz.resize(rows.len(), [0.0; 2]);
    }

    /// `z = M^-1 r` on the drops' rows: `sweeps` symmetric Gauss-Seidel sweeps on `A z = r`
    /// from zero (each a forward sweep over the rows in order then a backward one), on the
    /// compact system, piece by piece: pieces in tasks of about [`Self::piece_rows`] rows (a task
    /// takes the pieces that begin in its range), each piece's sweeps done before the next.
    /// A row of zero diagonal (every face closed) gets 0.
    pub fn smooth(&mut self, r: &[f64], z: &mut [f64], sweeps: u32) {
        let n = self.rows.len();
        if n == 0 {
            return;
        }
        assert!(z.len() >= r.len() && self.rz.len() == n);
        let (rows, at, nb, w, diag) = (&self.rows, &self.piece_at, &self.nb, &self.w, &self.diag);
        let (rzp, zp) = (SyncPtr(self.rz.as_mut_ptr()), SyncPtr(z.as_mut_ptr()));
        let per = self.piece_rows.max(1);
        (0..n.div_ceil(per)).into_par_iter().for_each(|t| {
            let first = |x: usize| at.partition_point(|&a| (a as usize) < x);
            let pieces = first(t * per)..first((t + 1) * per).min(at.len() - 1);
            for pc in pieces {
                let (p0, p1) = (at[pc] as usize, at[pc + 1] as usize);
                // SAFETY: the pieces' ranges of positions are disjoint, each piece in the
                // task holding its start; `p1 <= n`.
                let rz = unsafe { std::slice::from_raw_parts_mut(rzp.get(p0), p1 - p0) };
                for (rz, &row) in rz.iter_mut().zip(&rows[p0..p1]) {
                    *rz = [r[row as usize], 0.0];
                }
                // A row's neighbours lie in its piece: positions `p0..p1`.
                let row_gs = |rz: &mut [[f64; 2]], i: usize| {
                    let x = p0 + i;
                    let mut acc = rz[i][0];
                    for k in 0..6 {
                        if nb[x][k] != NO_ROW {
                            acc += w[x][k] as f64 * rz[nb[x][k] as usize - p0][1];
                        }
                    }
                    rz[i][1] = if diag[x] > 0.0 { acc / diag[x] } else { 0.0 };
                };
                for _ in 0..sweeps {
                    for i in 0..rz.len() {
                        row_gs(rz, i);
                    }
                    for i in (0..rz.len()).rev() {
                        row_gs(rz, i);
                    }
                }
                for (rz, &row) in rz.iter().zip(&rows[p0..p1]) {
                    // SAFETY: `row < r.len() <= z.len()` (`r[row]` was read above, the
                    // lengths asserted); the drop rows are distinct, each written by the task
                    // of its piece.
                    unsafe { *zp.get(row as usize) = rz[1] };
                }
            }
        });
    }
}
