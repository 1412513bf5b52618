//! [`System::build`]: the row numbering, neighbours and diagonal of a new system, in three
//! passes that visit the fluid, not the box: the fluid cells per z-plane (a count in byte
//! lanes); per plane, each x-row's fluid span ([`fluid_span`], blocks of labels tested at
//! once) and the rows of its fluid cells ([`number_plane`]); per row, the six neighbour rows
//! and the diagonal from the neighbours' labels ([`neighbours`]). `row_of` is written, and
//! read, at fluid cells only: a neighbour that is not fluid is the dummy row by its label, so
//! the entries of other cells keep whatever an earlier system left there.

use super::super::super::mac_grid::{CellLabel, GridDims, label_bytes};
use super::super::super::sync_ptr::SyncPtr;
use super::super::{SETUP_CELLS, SETUP_ROWS};
use super::System;
use rayon::prelude::*;

impl System {
    /// Numbers the fluid cells, finds each row's neighbours and diagonal.
    ///
    /// Three passes: the fluid cells per z-plane (a vectorised count); per plane, each x-row's
    /// fluid span (`[lo, hi)`, its first and last fluid cell) and the rows of its fluid cells
    /// (x-rows without fluid are skipped after the count); per row, the six neighbour rows and
    /// the diagonal from the neighbours' labels. `row_of` is written, and read, at fluid cells
    /// only: a neighbour that is not fluid is the dummy row by its label, so the entries of
    /// other cells keep whatever an earlier system left there.
    pub fn build(&mut self, d: &GridDims, labels: &[CellLabel]) {
        self.stamp = self.stamp.wrapping_add(1);
        self.fractional = false;
        self.has_air = false;
        let n = d.n;
        let plane = n[0] * n[1];
        let planes_per_task = (SETUP_CELLS / plane).max(1);
        // Fluid cells per plane, then plane start rows (deterministic prefix sum).
        self.plane_rows.resize(n[2] + 1, 0);
        self.plane_rows[1..]
            .par_iter_mut()
            .zip(labels.par_chunks(plane))
            .with_min_len(planes_per_task)
            .for_each(|(cnt, lp)| *cnt = fluid_count(lp));
        self.plane_rows[0] = 0;
        for k in 0..n[2] {
            self.plane_rows[k + 1] += self.plane_rows[k];
        }
        let nf = self.plane_rows[n[2]] as usize;
        self.nf = nf;
        if self.diag.len() < nf + 1 {
            self.diag.resize(nf + 1, 0.0);
        }
        // Grown with the other rows' arrays (never cleared here: read only with `has_air`),
        // so that the ghost fluid's air terms do not allocate in a later substep.
        if self.air.len() < nf + 1 {
            self.air.resize(nf + 1, 0.0);
        }
        if self.cell_of.len() < nf {
            self.cell_of.resize(nf, 0);
            self.ijk_of.resize(nf, [0; 3]);
            self.nb.resize(nf, [0; 6]);
        }
        if self.runs.len() < nf.div_ceil(64) {
            self.runs.resize(nf.div_ceil(64), 0);
        }
        if self.zeros.len() < n[0] {
            self.zeros.resize(n[0], 0.0);
        }
        // Row of each fluid cell and cell (and coordinates) of each row, plane by plane (each
        // plane's rows are a contiguous range).
        assert!(labels.len() == d.cells() && self.row_of.len() >= d.cells());
        let starts = &self.plane_rows;
        let cp = SyncPtr(self.cell_of.as_mut_ptr());
        let ip = SyncPtr(self.ijk_of.as_mut_ptr());
        self.row_of[..d.cells()]
            .par_chunks_mut(plane)
            .zip(labels.par_chunks(plane))
            .with_min_len(planes_per_task)
            .enumerate()
            .for_each(|(k, (rp, lp))| {
                let r = starts[k];
                if starts[k + 1] > r {
                    // SAFETY: rows of plane k are plane_rows[k]..plane_rows[k+1] <= nf <=
                    // cell_of.len() = ijk_of.len(), written by this plane's task only.
                    unsafe { number_plane(n, k, r, rp, lp, cp, ip) };
                }
            });
        self.dims = n;
        // Neighbours, diagonal and run starts of each row.
        const _: () = assert!(SETUP_ROWS.is_multiple_of(64));
        let row_of = &self.row_of[..d.cells()];
        let cell_of = &self.cell_of[..nf];
        self.nb[..nf]
            .par_chunks_mut(SETUP_ROWS)
            .zip(self.diag[..nf].par_chunks_mut(SETUP_ROWS))
            .zip(cell_of.par_chunks(SETUP_ROWS))
            .zip(self.runs[..nf.div_ceil(64)].par_chunks_mut(SETUP_ROWS / 64))
            .enumerate()
            .for_each(|(t, (((nbr, dg), cells), runs))| {
                neighbours(n, nf, labels, row_of, t * SETUP_ROWS, cells, nbr, dg, runs)
            });
        // The dummy row holds zeros.
        self.diag[nf] = 0.0;
    }
}

/// Rows of the fluid cells of plane `k` (labels `lp`, rows from `r`): each x-row's fluid
/// cells are numbered in `rp` (the plane's `row_of`) and their cells and coordinates written
/// at their rows; x-rows without fluid are skipped after a count. Panics if a fluid cell lies
/// in the grid's outermost layer (fluid cells are interior: the neighbour indices of
/// [`neighbours`] and the velocity update rely on it).
///
/// # Safety
/// `cp` and `ip` hold the plane's rows `r..r + fluid cells of the plane`, written by no one
/// else at the same time.
#[inline(never)]
unsafe fn number_plane(
    n: [usize; 3],
    k: usize,
    mut r: u32,
    rp: &mut [u32],
    lp: &[CellLabel],
    cp: SyncPtr<u32>,
    ip: SyncPtr<[u32; 3]>,
) {
    let plane = n[0] * n[1];
    let mut bad = k == 0 || k + 1 == n[2];
    for (j, (row, rr)) in lp
        .chunks_exact(n[0])
        .zip(rp.chunks_exact_mut(n[0]))
        .enumerate()
    {
        let Some((lo, hi)) = fluid_span(label_bytes(row)) else {
            continue;
        };
        bad |= j == 0 || j + 1 == n[1] || lo == 0 || hi == n[0];
        if bad {
            break;
        }
        let c0 = (k * plane + j * n[0]) as u32;
        for (i, (&l, o)) in row[lo..hi].iter().zip(&mut rr[lo..hi]).enumerate() {
            if l == CellLabel::Fluid {
                let i = (lo + i) as u32;
                *o = r;
                // SAFETY: the caller's.
                unsafe {
                    *cp.get(r as usize) = c0 + i;
                    *ip.get(r as usize) = [i, j as u32, k as u32];
                }
                r += 1;
            }
        }
    }
    assert!(!bad, "pressure: a fluid cell in the grid's outermost layer");
}

/// The neighbour rows `nbr` and diagonals `dg` of the rows whose cells are `cells`: a neighbour
/// is its row (`row_of`) when fluid, else the dummy row `nf`; the diagonal counts the non-solid
/// neighbours; `runs` the rows' bits of [`System::runs`] (a row starts a run unless the cell
/// before it is fluid with the same fluid `±y`, `±z` neighbours). `r0` is the row of
/// `cells[0]`, a multiple of 64.
#[allow(clippy::too_many_arguments, clippy::needless_range_loop)]
#[inline(never)]
fn neighbours(
    n: [usize; 3],
    nf: usize,
    labels: &[CellLabel],
    row_of: &[u32],
    r0: usize,
    cells: &[u32],
    nbr: &mut [[u32; 6]],
    dg: &mut [f64],
    runs: &mut [u64],
) {
    let plane = n[0] * n[1];
    let dummy = nf as u32;
    assert!(labels.len() == n[0] * n[1] * n[2] && row_of.len() == labels.len());
    assert!(r0.is_multiple_of(64) && runs.len() == cells.len().div_ceil(64));
    runs.fill(0);
    // Only `Fluid` has bit 0 set and only `Solid` bit 1 (`fluid_count`).
    for (r, ((nbr, dg), &c)) in nbr.iter_mut().zip(dg.iter_mut()).zip(cells).enumerate() {
        let (l_r, c) = (r, c as usize);
        let r = (r0 + r) as u32;
        let m = [c - 1, c + 1, c - n[0], c + n[0], c - plane, c + plane];
        // SAFETY: fluid cells are interior (`number_plane` checked it for this system), so
        // their six neighbours are cells of the grid, which `labels` and `row_of` hold; the
        // cell before, `c - 1`, has `c`'s `j` and `k` (not in the outermost y- or z-layer), so
        // its `±y`, `±z` neighbours are cells of the grid too.
        let l = m.map(|x| unsafe { *labels.get_unchecked(x) } as u8);
        let before = [c - 1 - n[0], c - 1 + n[0], c - 1 - plane, c - 1 + plane]
            .map(|x| unsafe { *labels.get_unchecked(x) } as u8 & 1);
        if l[0] & 1 == 0 || before != [l[2] & 1, l[3] & 1, l[4] & 1, l[5] & 1] {
            runs[l_r / 64] |= 1 << (l_r % 64);
        }
        // The x-neighbours, when fluid, are the rows next to this one (rows follow the cells).
        let rows = [
            r.wrapping_sub(1),
            r + 1,
            unsafe { *row_of.get_unchecked(m[2]) },
            unsafe { *row_of.get_unchecked(m[3]) },
            unsafe { *row_of.get_unchecked(m[4]) },
            unsafe { *row_of.get_unchecked(m[5]) },
        ];
        let mut solid = 0u32;
        for k in 0..6 {
            nbr[k] = if l[k] & 1 != 0 { rows[k] } else { dummy };
            solid += (l[k] >> 1) as u32;
        }
        *dg = (6 - solid) as f64;
    }
}

/// `[lo, hi)` from the first to the last fluid cell of the label row `l` (`CellLabel` values
/// as bytes; `None`: no fluid): blocks of 16 labels tested at once by a vectorised OR of their
/// fluid bits (most rows of the box hold no fluid, and a span's ends may lie far from the
/// row's), then a search within the first and the last block with fluid.
pub fn fluid_span(l: &[u8]) -> Option<(usize, usize)> {
    const W: usize = 16;
    const F: u8 = CellLabel::Fluid as u8;
    let has = |b: &[u8]| b.iter().fold(0u8, |a, &x| a | x) & F != 0;
    let first = l.chunks(W).position(has)?;
    let lo = first * W + l[first * W..].iter().position(|&x| x == F)?;
    let (last, b) = l.rchunks(W).enumerate().find(|(_, b)| has(b))?;
    let hi = l.len() - last * W - b.len() + b.iter().rposition(|&x| x == F)? + 1;
    Some((lo, hi))
}

/// Fluid cells among `l` (a count the compiler vectorises).
#[inline(never)]
fn fluid_count(l: &[CellLabel]) -> u32 {
    // The labels' values: only `Fluid` has bit 0 set.
    const _: () = assert!(
        CellLabel::Fluid as u8 == 1 && CellLabel::Empty as u8 == 0 && CellLabel::Solid as u8 == 2
    );
    // Byte lanes summed over blocks of at most 255 cells (no lane overflows), then widened.
    l.chunks(255)
        .map(|b| b.iter().fold(0u8, |a, &x| a.wrapping_add(x as u8 & 1)) as u32)
        .sum()
}
