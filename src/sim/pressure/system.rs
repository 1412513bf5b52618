//! The pressure system `A q = b` (Bridson 2015, ch. 5): the fluid cells numbered as rows in
//! lexicographic cell order (x fastest), each row's six neighbour rows (a non-fluid neighbour
//! points at the dummy row `nf`, which always holds 0) and its diagonal (the non-solid
//! neighbours: walls are Neumann), and the matrix-vector products the solvers use. Matrix-free:
//! the work per product is proportional to the liquid, not to the box.
//!
//! Layer 2 (sim::pressure): imports the grid types of `sim` only.

use super::super::mac_grid::{CellLabel, GridDims};
use super::super::reduce;
use super::super::sync_ptr::SyncPtr;
use super::{SETUP_CELLS, SETUP_ROWS};
use rayon::prelude::*;

/// Row number meaning "not a fluid cell" in the per-cell row index (before the dummy is known).
pub const NONE: u32 = u32::MAX;

/// The assembled system: row numbering, neighbours, diagonal.
#[derive(Default)]
pub struct System {
    /// Row of each grid cell (`NONE` for non-fluid cells).
    pub row_of: Vec<u32>,
    /// Grid cell of each row.
    pub cell_of: Vec<u32>,
    /// Grid coordinates `[i, j, k]` of each row's cell (no divisions in the row loops).
    pub ijk_of: Vec<[u32; 3]>,
    /// Fluid cells per z-plane of the grid, then their prefix sums (plane start rows).
    pub plane_rows: Vec<u32>,
    /// Neighbour rows `[-x, +x, -y, +y, -z, +z]` of each row (dummy `nf` when not fluid).
    pub nb: Vec<[u32; 6]>,
    /// Non-solid neighbours of each row (the diagonal of `A`), + dummy.
    pub diag: Vec<f64>,
    /// Number of fluid rows of the current system.
    pub nf: usize,
    /// Ghost-fluid air coefficients: the part of each row's diagonal beyond its count of
    /// non-solid neighbours, `sum over air neighbours (1 / theta - 1)` (all 0 with the
    /// staircase surface; see [`System::add_air_terms`]).
    pub air: Vec<f64>,
}

impl System {
    /// Buffers for a grid of `cells` cells, sized for every cell being fluid.
    pub fn new(cells: usize) -> Self {
        Self {
            row_of: vec![NONE; cells],
            cell_of: vec![0; cells],
            ijk_of: vec![[0; 3]; cells],
            plane_rows: Vec::new(),
            nb: vec![[0; 6]; cells],
            diag: vec![0.0; cells + 1],
            nf: 0,
            air: vec![0.0; cells + 1],
        }
    }

    /// Numbers the fluid cells, finds each row's neighbours and diagonal.
    pub fn build(&mut self, d: &GridDims, labels: &[CellLabel]) {
        let n = d.n;
        let plane = n[0] * n[1];
        let planes_per_task = (SETUP_CELLS / plane).max(1);
        // Fluid cells per plane, then plane start rows (deterministic prefix sum).
        self.plane_rows.resize(n[2] + 1, 0);
        self.plane_rows[1..]
            .par_iter_mut()
            .zip(labels.par_chunks(plane))
            .with_min_len(planes_per_task)
            .for_each(|(cnt, lp)| {
                *cnt = lp.iter().filter(|&&l| l == CellLabel::Fluid).count() as u32
            });
        self.plane_rows[0] = 0;
        for k in 0..n[2] {
            self.plane_rows[k + 1] += self.plane_rows[k];
        }
        let nf = self.plane_rows[n[2]] as usize;
        self.nf = nf;
        if self.diag.len() < nf + 1 {
            self.diag.resize(nf + 1, 0.0);
        }
        if self.cell_of.len() < nf {
            self.cell_of.resize(nf, 0);
            self.ijk_of.resize(nf, [0; 3]);
            self.nb.resize(nf, [0; 6]);
        }
        // Row of each cell and cell (and coordinates) of each row, plane by plane (each plane's
        // rows are a contiguous range).
        let starts = &self.plane_rows;
        let cp = SyncPtr(self.cell_of.as_mut_ptr());
        let ip = SyncPtr(self.ijk_of.as_mut_ptr());
        self.row_of
            .par_chunks_mut(plane)
            .zip(labels.par_chunks(plane))
            .with_min_len(planes_per_task)
            .enumerate()
            .for_each(|(k, (rp, lp))| {
                let mut r = starts[k];
                for j in 0..n[1] {
                    for i in 0..n[0] {
                        let l = i + n[0] * j;
                        rp[l] = if lp[l] == CellLabel::Fluid {
                            // SAFETY: rows of plane k are plane_rows[k]..plane_rows[k+1] < nf <=
                            // cell_of.len() = ijk_of.len(), written by this plane's task only.
                            unsafe {
                                *cp.get(r as usize) = (k * plane + l) as u32;
                                *ip.get(r as usize) = [i as u32, j as u32, k as u32];
                            }
                            r += 1;
                            r - 1
                        } else {
                            NONE
                        };
                    }
                }
            });
        // Cells, neighbours and diagonal of each row.
        let row_of = &self.row_of;
        let dummy = nf as u32;
        let row = |c: usize| {
            let r = row_of[c];
            if r == NONE { dummy } else { r }
        };
        let cell_of = &self.cell_of[..nf];
        self.nb[..nf]
            .par_iter_mut()
            .zip(self.diag[..nf].par_iter_mut())
            .zip(cell_of.par_iter())
            .with_min_len(SETUP_ROWS)
            .for_each(|((nbr, dg), &c)| {
                let c = c as usize;
                // Fluid cells are interior: all six neighbours exist.
                let m = [c - 1, c + 1, c - n[0], c + n[0], c - plane, c + plane];
                *nbr = m.map(row);
                *dg = m.iter().filter(|&&x| labels[x] != CellLabel::Solid).count() as f64;
            });
        // The dummy row holds zeros.
        self.diag[nf] = 0.0;
        if self.air.len() < nf + 1 {
            self.air.resize(nf + 1, 0.0);
        }
        self.air[..nf + 1]
            .par_iter_mut()
            .with_min_len(SETUP_ROWS)
            .for_each(|x| *x = 0.0);
    }

    /// The ghost-fluid free surface (an addition to the staircase matrix, after [`Self::build`]):
    /// each fluid row gains `1 / theta - 1` on its diagonal per air neighbour, `theta` from the
    /// level set `phi_air` (m) at that neighbour's centre ([`super::super::ghost_fluid`]),
    /// recorded in [`Self::air`]. Symmetric: only diagonals change.
    pub fn add_air_terms(&mut self, d: &GridDims, labels: &[CellLabel], phi_air: &[f32]) {
        let nf = self.nf;
        let (n, h) = (d.n, d.h);
        let plane = n[0] * n[1];
        self.air[..nf]
            .par_iter_mut()
            .zip(self.diag[..nf].par_iter_mut())
            .zip(self.cell_of[..nf].par_iter())
            .with_min_len(SETUP_ROWS)
            .for_each(|((air, dg), &c)| {
                let c = c as usize;
                let mut extra = 0.0;
                for m in [c - 1, c + 1, c - n[0], c + n[0], c - plane, c + plane] {
                    if labels[m] == CellLabel::Empty {
                        extra += 1.0 / super::super::ghost_fluid::theta(phi_air[m], h) - 1.0;
                    }
                }
                *air = extra;
                *dg += extra;
            });
    }

    /// `out = A s` on the fluid rows.
    pub fn apply_a(nf: usize, nb: &[[u32; 6]], diag: &[f64], s: &[f64], out: &mut [f64]) {
        out[..nf]
            .par_iter_mut()
            .enumerate()
            .with_min_len(reduce::MIN_ROWS)
            .for_each(|(r, o)| {
                *o = a_row(r, nb, diag, s);
            });
    }

    /// `out = A s` on the fluid rows and, in the same pass, `out . s` (fixed chunks of
    /// [`reduce::CHUNK`], as [`reduce::dot`] sums them). Vectors have `nf + 1` entries.
    pub fn apply_a_dot(
        nf: usize,
        nb: &[[u32; 6]],
        diag: &[f64],
        s: &[f64],
        out: &mut [f64],
        partials: &mut [f64],
    ) -> f64 {
        out.par_chunks_mut(reduce::CHUNK)
            .zip(partials.par_iter_mut())
            .with_min_len(reduce::MIN_ROWS.div_ceil(reduce::CHUNK))
            .enumerate()
            .for_each(|(ci, (oc, p))| {
                let r0 = ci * reduce::CHUNK;
                let mut acc = 0.0;
                for (l, o) in oc.iter_mut().enumerate() {
                    let r = r0 + l;
                    if r < nf {
                        *o = a_row(r, nb, diag, s);
                    }
                    acc += *o * s[r];
                }
                *p = acc;
            });
        partials.iter().sum()
    }
}

/// Row `r` of `A s`: `diag_r s_r - sum of the six neighbours' s` (non-fluid neighbours point
/// at the dummy row, which holds 0).
#[inline(always)]
pub fn a_row(r: usize, nb: &[[u32; 6]], diag: &[f64], s: &[f64]) -> f64 {
    let m = nb[r];
    diag[r] * s[r]
        - (s[m[0] as usize]
            + s[m[1] as usize]
            + s[m[2] as usize]
            + s[m[3] as usize]
            + s[m[4] as usize]
            + s[m[5] as usize])
}
