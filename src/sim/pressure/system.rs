//! The pressure system `A q = b` (Bridson 2015, ch. 5): the fluid cells numbered as rows in
//! lexicographic cell order (x fastest), each row's six neighbour rows (a non-fluid neighbour
//! points at the dummy row `nf`, which always holds 0) and its diagonal (the non-solid
//! neighbours: walls are Neumann), and the matrix-vector products the solvers use. Matrix-free:
//! the work per product is proportional to the liquid, not to the box. The products go by runs
//! of rows (consecutive cells of one x-line with the same fluid `±y`, `±z` neighbours, whose
//! neighbour rows follow from the run's first: [`System::runs`]), streaming `s` and the
//! diagonal as slices rather than reading six neighbour indices per row.
//!
//! Variational solid boundaries (Batty, Bertails and Bridson 2007, "A fast variational
//! framework for accurate solid-fluid coupling", SIGGRAPH): with obstacles, [`System::build_weights`]
//! gives each row the open fraction `w` of its six faces (the part of the face not inside a
//! solid, 0 across a solid cell), the matrix becomes `A = D^T W G` (off-diagonals `-w`, diagonal
//! `sum w` over non-solid neighbours), and the right-hand side is the divergence of the
//! face fluxes `w u + (1 - w) u_solid`. With unit weights it is the staircase matrix above; the
//! stepper builds weights only when the scene has obstacles (`fractional`), so a scene without
//! them runs the unweighted loops, bit for bit as before.
//!
//! Layer 2 (sim::pressure): imports the grid types of `sim` only.

use super::super::mac_grid::{CellLabel, GridDims, SolidFaces};
use super::super::reduce;
use super::SETUP_ROWS;
use rayon::prelude::*;

mod build;
pub mod pieces;
pub use build::fluid_span;

/// Row number meaning "not a fluid cell" in the per-cell row index (before the dummy is known).
pub const NONE: u32 = u32::MAX;

/// The assembled system: row numbering, neighbours, diagonal.
#[derive(Default)]
pub struct System {
    /// Row of each fluid cell of the current system. The entries of other cells are whatever
    /// an earlier system left (`NONE` at first): [`Self::build`] reads them only at fluid cells
    /// (a neighbour that is not fluid is the dummy row by its label).
    pub row_of: Vec<u32>,
    /// Grid cell of each row.
    pub cell_of: Vec<u32>,
    /// Grid coordinates `[i, j, k]` of each row's cell (no divisions in the row loops).
    pub ijk_of: Vec<[u32; 3]>,
    /// Fluid cells per z-plane of the grid, then their prefix sums (plane start rows).
    pub plane_rows: Vec<u32>,
    /// Neighbour rows `[-x, +x, -y, +y, -z, +z]` of each row (dummy `nf` when not fluid).
    /// Invariant (written by [`Self::build`] only): every entry of `nb[..nf]` is at most `nf`;
    /// the products here and MIC(0)'s sweeps read vectors of `nf + 1` entries at them
    /// without bounds checks.
    pub nb: Vec<[u32; 6]>,
    /// One bit per row, set where a run of rows starts: rows in a run are consecutive cells
    /// of one x-line, and each of their `±y`, `±z` neighbours is fluid for all of them or for
    /// none (two neighbouring fluid cells have consecutive rows, so along a run each fluid
    /// neighbour's row is the one before's plus one). Within a run, `nb` follows from the
    /// run's first row, which lets the products stream without reading `nb` (see
    /// [`System::mul_dot`]). Written by [`Self::build`]; bits past `nf` are clear.
    pub runs: Vec<u64>,
    /// Zeros, as many as the grid's longest x-line: the slice a run reads for a neighbour
    /// that is not fluid.
    pub zeros: Vec<f64>,
    /// Non-solid neighbours of each row (the diagonal of `A`), + dummy.
    pub diag: Vec<f64>,
    /// Number of fluid rows of the current system.
    pub nf: usize,
    /// Ghost-fluid air coefficients: the part of each row's diagonal beyond its count of
    /// non-solid neighbours, `sum over air neighbours (1 / theta - 1)` (all 0 with the
    /// staircase surface; see [`System::add_air_terms`]). Valid for the current system only
    /// when [`Self::has_air`]; otherwise it holds whatever an earlier system left (readers
    /// take 0 then).
    pub air: Vec<f64>,
    /// Whether [`Self::air`] was set by [`System::add_air_terms`] for this system.
    pub has_air: bool,
    /// Open fraction of each row's faces `[-x, +x, -y, +y, -z, +z]` (Batty 2007; 0 across a
    /// solid cell), valid when `fractional`.
    pub w: Vec<[f32; 6]>,
    /// One bit per row, set where the row's weights differ from the unweighted row's (some
    /// face to a fluid neighbour has weight below 1), valid when `fractional`: the few rows
    /// along obstacles. The other rows are computed by the unweighted formulas (the same
    /// numbers: their weights are 1, or 0 towards the dummy row, which holds 0), so the solver
    /// loops read `w` only there (see [`is_cut`]).
    pub cut: Vec<u64>,
    /// Whether the rows carry face weights (the scene has obstacles).
    pub fractional: bool,
    /// Cells per axis of the grid of the last [`Self::build`], whose every fluid cell it checked
    /// to be interior (not in the outermost layer): the velocity update relies on it.
    pub dims: [usize; 3],
    /// Counts the builds ([`Self::build`]): what was derived from one system's rows (the
    /// multigrid's table of their segments) is checked against it.
    pub stamp: u64,
}

/// Whether row `r` is marked in the bitset `cut` (see [`System::cut`]).
#[inline(always)]
pub fn is_cut(cut: &[u64], r: usize) -> bool {
    (cut[r >> 6] >> (r & 63)) & 1 != 0
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
            runs: vec![0; cells.div_ceil(64)],
            zeros: Vec::new(),
            diag: vec![0.0; cells + 1],
            nf: 0,
            air: vec![0.0; cells + 1],
            has_air: false,
            w: Vec::new(),
            cut: Vec::new(),
            fractional: false,
            dims: [0; 3],
            stamp: 0,
        }
    }

    /// The ghost-fluid free surface (an addition to the staircase matrix, after [`Self::build`]):
    /// each fluid row gains `1 / theta - 1` on its diagonal per air neighbour, `theta` from the
    /// fill fractions `fill` of the row's cell and that neighbour ([`super::super::ghost_fluid`]),
    /// recorded in [`Self::air`]. Symmetric: only diagonals change.
    pub fn add_air_terms(&mut self, d: &GridDims, labels: &[CellLabel], fill: &[f32]) {
        let nf = self.nf;
        let n = d.n;
        let plane = n[0] * n[1];
        self.has_air = true;
        if self.air.len() < nf {
            self.air.resize(nf, 0.0);
        }
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
                        extra += 1.0 / super::super::ghost_fluid::theta(fill[c], fill[m]) - 1.0;
                    }
                }
                *air = extra;
                *dg += extra;
            });
    }

    /// After [`Self::build`]: the face weights `w` of every row from the open fractions `open`
    /// (`open[a]` on face component `a`'s grid; a face next to a solid cell has weight 0) and
    /// the diagonal `sum w`. A row whose faces are all closed (liquid sealed in a pocket) keeps
    /// diagonal 1 and is decoupled (its right-hand side is 0, see [`flux_divergence`]).
    pub fn build_weights(&mut self, d: &GridDims, labels: &[CellLabel], open: &[Vec<f32>; 3]) {
        let nf = self.nf;
        if self.w.len() < nf {
            self.w.resize(nf, [0.0; 6]);
        }
        self.fractional = true;
        let (n, plane) = (d.n, d.n[0] * d.n[1]);
        self.w[..nf]
            .par_iter_mut()
            .zip(self.diag[..nf].par_iter_mut())
            .zip(
                self.cell_of[..nf]
                    .par_iter()
                    .zip(self.ijk_of[..nf].par_iter()),
            )
            .with_min_len(SETUP_ROWS)
            .for_each(|((w, dg), (&c, ijk))| {
                let c = c as usize;
                let ijk = ijk.map(|x| x as usize);
                let mut sum = 0.0f64;
                #[allow(clippy::needless_range_loop)] // k names the face: axis k / 2, side k % 2
                for k in 0..6 {
                    let (a, up) = (k / 2, k % 2);
                    let step = [1, n[0], plane][a];
                    let nbc = if up == 1 { c + step } else { c - step };
                    let m = d.face_n(a);
                    let mut f = ijk;
                    f[a] += up;
                    let face = f[0] + m[0] * (f[1] + m[1] * f[2]);
                    let wt = if labels[nbc] == CellLabel::Solid {
                        0.0
                    } else {
                        open[a][face].clamp(0.0, 1.0)
                    };
                    w[k] = wt;
                    sum += wt as f64;
                }
                *dg = if sum > 0.0 { sum } else { 1.0 };
            });
        // The cut rows, 64 per word (rows past `nf` stay clear).
        let words = nf.div_ceil(64);
        if self.cut.len() < words {
            self.cut.resize(words, 0);
        }
        let (w, nb) = (&self.w[..nf], &self.nb[..nf]);
        self.cut[..words]
            .par_iter_mut()
            .enumerate()
            .with_min_len(SETUP_ROWS / 64)
            .for_each(|(i, word)| {
                let mut bits = 0u64;
                for (b, r) in (64 * i..(64 * i + 64).min(nf)).enumerate() {
                    if (0..6).any(|k| w[r][k] != 1.0 && (nb[r][k] as usize) < nf) {
                        bits |= 1 << b;
                    }
                }
                *word = bits;
            });
    }

    /// `out = A s` on the fluid rows (weighted when `fractional`).
    pub fn mul(&self, s: &[f64], out: &mut [f64]) {
        let (s, out) = (&s[..self.nf + 1], &mut out[..self.nf]);
        self.rows_map(out, s, |o, a| *o = a);
    }

    /// `r -= A q` on the fluid rows and `max |r|` (the residual of a warm start, in one pass).
    pub fn residual(&self, q: &[f64], r: &mut [f64]) -> f64 {
        let (q, r) = (&q[..self.nf + 1], &mut r[..self.nf]);
        self.rows_map(r, q, |r, a| *r -= a)
            .into_iter()
            .fold(0.0, f64::max)
    }

    /// The end of the run ([`Self::runs`]) that holds row `a`, or `end` if sooner: the rows
    /// `a..` that end returns are consecutive cells of one x-line, `cell_of[a] + t` for row
    /// `a + t`.
    #[inline(always)]
    pub fn run_end(&self, a: usize, end: usize) -> usize {
        next_run(&self.runs, a + 1, end)
    }

    /// `f(out_r, (A s)_r)` on every fluid row (weighted when `fractional`), and `max |out_r|`
    /// after it, per task (maxima are exact in any order). `s` has `nf + 1` entries.
    fn rows_map(
        &self,
        out: &mut [f64],
        s: &[f64],
        f: impl Fn(&mut f64, f64) + Sync,
    ) -> Option<f64> {
        const PIECE: usize = 1024;
        let nf = self.nf;
        assert!(s.len() > nf);
        out[..nf]
            .par_chunks_mut(PIECE)
            .enumerate()
            .with_min_len(reduce::MIN_ROWS / PIECE)
            .map(|(i, oc)| {
                let mut a = [0.0f64; PIECE];
                let a = &mut a[..oc.len()];
                self.rows_into(s, PIECE * i, a);
                let mut m = 0.0f64;
                for (o, &a) in oc.iter_mut().zip(a.iter()) {
                    f(o, a);
                    m = m.max(o.abs());
                }
                m
            })
            .reduce_with(f64::max)
    }

    /// `out = A s` on the fluid rows (weighted when `fractional`) and, in the same pass,
    /// `out . s` (fixed chunks of [`reduce::CHUNK`] by lanes, as [`reduce::dot`] sums them).
    /// Vectors have `nf + 1` entries.
    pub fn mul_dot(&self, s: &[f64], out: &mut [f64], partials: &mut [f64]) -> f64 {
        let nf = self.nf;
        let s = &s[..nf + 1];
        out[..nf + 1]
            .par_chunks_mut(reduce::CHUNK)
            .zip(partials.par_iter_mut())
            .with_min_len(reduce::MIN_ROWS.div_ceil(reduce::CHUNK))
            .enumerate()
            .for_each(|(ci, (oc, p))| {
                let r0 = ci * reduce::CHUNK;
                let rows = (nf - r0.min(nf)).min(oc.len());
                self.rows_into(s, r0, &mut oc[..rows]);
                // By lanes (`reduce::Lanes`), the dummy row too (s = 0 there).
                *p = reduce::dot_chunk(oc, &s[r0..]);
            });
        partials.iter().sum()
    }

    /// `o = A s` on the rows `r0..r0 + o.len()` (fluid rows; weighted when `fractional`).
    ///
    /// By runs ([`Self::runs`]): a run's neighbour rows are read from `nb` at its first row
    /// only; along it each fluid `±y`, `±z` neighbour is the row after the previous row's and
    /// the `x` neighbours are the rows next to it, so its inner rows are slices of `s` (or of
    /// zeros, for a neighbour that is not fluid) at fixed offsets, a loop the compiler
    /// vectorises: a product streams `s`, the diagonal and its output, 24 bytes a row instead
    /// of 48 with `nb` (each array counted once). A run holding a row along an obstacle
    /// ([`Self::cut`]) goes row by row. The same numbers, added in the same order, as the row
    /// formulas [`a_row`] and [`a_row_weighted`].
    fn rows_into(&self, s: &[f64], r0: usize, o: &mut [f64]) {
        let (nf, end) = (self.nf, r0 + o.len());
        let (nb, diag, w, cut) = (&self.nb[..nf], &self.diag[..nf], &self.w, &self.cut);
        assert!(s.len() == nf + 1 && end <= nf);
        let mut a = r0;
        while a < end {
            let b = self.run_end(a, end);
            let o = &mut o[a - r0..b - r0];
            if self.fractional && next_run(cut, a, b) < b {
                for (r, o) in (a..b).zip(o) {
                    // SAFETY: `r < nf`; `nb`'s entries are rows or the dummy (`System::nb`),
                    // `s` has `nf + 1` entries, `w` holds the rows when `fractional`.
                    *o = unsafe {
                        if is_cut(cut, r) {
                            a_row_weighted(r, nb, diag, w, s)
                        } else {
                            a_row(r, nb, diag, s)
                        }
                    };
                }
            } else {
                run_rows(a, nb, diag, s, &self.zeros, o);
            }
            a = b;
        }
    }
}

/// The first row `r` in `from..end` whose bit is set in `bits` (a run's start in
/// [`System::runs`], a row of [`System::cut`]), or `end`.
#[inline(always)]
fn next_run(bits: &[u64], from: usize, end: usize) -> usize {
    let mut r = from;
    while r < end {
        let w = bits[r >> 6] >> (r & 63);
        if w != 0 {
            return (r + w.trailing_zeros() as usize).min(end);
        }
        r = (r | 63) + 1;
    }
    end
}

/// `o = (A s)` on the rows `a..a + o.len()`, which lie in one run ([`System::runs`]): the
/// first and last rows by [`a_row`], the inner ones from slices of `s` (of `zeros`, at least
/// as long, for a neighbour that is not fluid) at the offsets of the first row's neighbours.
#[inline(always)]
fn run_rows(a: usize, nb: &[[u32; 6]], diag: &[f64], s: &[f64], zeros: &[f64], o: &mut [f64]) {
    let len = o.len();
    // SAFETY: `a`, `a + len - 1` are rows (`< nf`, the callers' chunks), `nb` and `s` as in
    // `a_row`.
    o[0] = unsafe { a_row(a, nb, diag, s) };
    if len == 1 {
        return;
    }
    o[len - 1] = unsafe { a_row(a + len - 1, nb, diag, s) };
    let n = len - 2;
    if n == 0 {
        return;
    }
    let (m, dummy) = (nb[a], s.len() - 1);
    // Neighbour `k`'s slice for the inner rows: the rows after the first row's neighbour.
    let side = |k: usize| {
        let q = m[k] as usize;
        if q == dummy {
            &zeros[..n]
        } else {
            &s[q + 1..q + 1 + n]
        }
    };
    let (ym, yp, zm, zp) = (side(2), side(3), side(4), side(5));
    let (xm, c, xp) = (&s[a..a + n], &s[a + 1..a + 1 + n], &s[a + 2..a + 2 + n]);
    let d = &diag[a + 1..a + 1 + n];
    for i in 0..n {
        o[1 + i] = d[i] * c[i] - (xm[i] + xp[i] + ym[i] + yp[i] + zm[i] + zp[i]);
    }
}

/// Row `r` of `A s`: `diag_r s_r - sum of the six neighbours' s` (non-fluid neighbours point
/// at the dummy row, which holds 0).
///
/// # Safety
/// `r < nf` with `nb` and `diag` of at least `nf` rows, every entry of `nb[r]` at most `nf`
/// ([`System::nb`]), and `s` of `nf + 1` entries.
#[inline(always)]
unsafe fn a_row(r: usize, nb: &[[u32; 6]], diag: &[f64], s: &[f64]) -> f64 {
    // SAFETY: the caller's.
    unsafe {
        let m = nb.get_unchecked(r);
        let g = |k: usize| *s.get_unchecked(m[k] as usize);
        diag.get_unchecked(r) * s.get_unchecked(r) - (g(0) + g(1) + g(2) + g(3) + g(4) + g(5))
    }
}

/// Row `r` of `A s` with face weights: `diag_r s_r - sum_k w_k s_{nb_k}`.
///
/// # Safety
/// As [`a_row`], and `w` has at least `r + 1` rows.
#[inline(always)]
unsafe fn a_row_weighted(
    r: usize,
    nb: &[[u32; 6]],
    diag: &[f64],
    w: &[[f32; 6]],
    s: &[f64],
) -> f64 {
    // SAFETY: the caller's.
    unsafe {
        let (m, w) = (nb.get_unchecked(r), &w[r]);
        let mut acc = 0.0;
        for k in 0..6 {
            acc += w[k] as f64 * *s.get_unchecked(m[k] as usize);
        }
        diag.get_unchecked(r) * s.get_unchecked(r) - acc
    }
}

/// The weighted flux divergence of cell `ijk` (Batty 2007): `sum_a (F_a+ - F_a-)` with
/// `F = w u + (1 - w) u_solid` on a partly open face (row weight `w`) and `F = u` on a face of
/// weight 1. A wall face (weight 0) beside moving solids has its flux prescribed by its
/// geometric open fraction `o`, `F = o u + (1 - o) u_solid`: `u` is the liquid's velocity in its
/// open part, which particles interpolate, not the flux (`sim::solids::wall_faces`); beside
/// static solids only (no solid velocities) `F = u`. A row with every face closed gets 0 (it
/// is decoupled).
#[inline]
pub fn flux_divergence(
    d: &GridDims,
    vel: &[Vec<f32>; 3],
    solid: Option<SolidFaces<'_>>,
    ijk: [usize; 3],
    w: &[f32; 6],
) -> f64 {
    if w.iter().all(|&x| x == 0.0) {
        return 0.0;
    }
    let mut s = 0.0f64;
    for (a, v) in vel.iter().enumerate() {
        let m = d.face_n(a);
        let lo = ijk[0] + m[0] * (ijk[1] + m[1] * ijk[2]);
        let step = [1, m[0], m[0] * m[1]][a];
        let flux = |f: usize, wt: f32| {
            let u = v[f] as f64;
            if wt == 0.0
                && let Some(sf) = solid
            {
                let o = sf.open[a][f] as f64;
                return o * u + (1.0 - o) * sf.velocity[a][f] as f64;
            }
            if wt == 0.0 || wt == 1.0 {
                return u;
            }
            let us = solid.map_or(0.0, |s| s.velocity[a][f] as f64);
            wt as f64 * u + (1.0 - wt as f64) * us
        };
        s += flux(lo + step, w[2 * a + 1]) - flux(lo, w[2 * a]);
    }
    s
}

#[cfg(test)]
mod tests;
