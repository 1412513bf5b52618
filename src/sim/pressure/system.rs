//! The pressure system `A q = b` (Bridson 2015, ch. 5): the fluid cells numbered as rows in
//! lexicographic cell order (x fastest), each row's six neighbour rows (a non-fluid neighbour
//! points at the dummy row `nf`, which always holds 0) and its diagonal (the non-solid
//! neighbours: walls are Neumann), and the matrix-vector products the solvers use. Matrix-free:
//! the work per product is proportional to the liquid, not to the box.
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

use super::super::mac_grid::{CellLabel, GridDims};
use super::super::reduce;
use super::SETUP_ROWS;
use rayon::prelude::*;

mod build;
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
            diag: vec![0.0; cells + 1],
            nf: 0,
            air: vec![0.0; cells + 1],
            has_air: false,
            w: Vec::new(),
            cut: Vec::new(),
            fractional: false,
            dims: [0; 3],
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

    /// `f(out_r, (A s)_r)` on every fluid row (weighted when `fractional`), and `max |out_r|`
    /// after it, per task (maxima are exact in any order). `s` has `nf + 1` entries.
    fn rows_map(
        &self,
        out: &mut [f64],
        s: &[f64],
        f: impl Fn(&mut f64, f64) + Sync,
    ) -> Option<f64> {
        let (nb, diag, w, cut, nf) = (&self.nb, &self.diag, &self.w, &self.cut, self.nf);
        assert!(s.len() > nf && nb.len() >= nf && diag.len() >= nf);
        // 64 rows per word of `cut`: a clear word (no row along an obstacle, most of them)
        // runs the unweighted loop without testing each row.
        out[..nf]
            .par_chunks_mut(64)
            .enumerate()
            .with_min_len(reduce::MIN_ROWS / 64)
            .map(|(i, oc)| {
                let (r0, bits) = (64 * i, if self.fractional { cut[i] } else { 0 });
                let mut m = 0.0f64;
                for (l, o) in oc.iter_mut().enumerate() {
                    let r = r0 + l;
                    // SAFETY: `nb`'s entries are rows or the dummy (`System::nb`), `s` has
                    // `nf + 1` entries, `r < nf` (asserted above).
                    let a = unsafe {
                        if cut_bit(bits, l) {
                            a_row_weighted(r, nb, diag, w, s)
                        } else {
                            a_row(r, nb, diag, s)
                        }
                    };
                    f(o, a);
                    m = m.max(o.abs());
                }
                m
            })
            .reduce_with(f64::max)
    }

    /// `out = A s` and `out . s` (see [`Self::apply_a_dot`]), weighted when `fractional`.
    pub fn mul_dot(&self, s: &[f64], out: &mut [f64], partials: &mut [f64]) -> f64 {
        if !self.fractional {
            return self.apply_a_dot(s, out, partials);
        }
        let (nb, diag, w, cut, nf) = (&self.nb, &self.diag, &self.w, &self.cut, self.nf);
        let s = &s[..nf + 1];
        assert!(nb.len() >= nf && diag.len() >= nf);
        rows_dot(
            nf,
            s,
            out,
            partials,
            |word| cut[word],
            // SAFETY: as in `rows_map` (`rows_dot` calls it for `r < nf`).
            |r, weighted| unsafe {
                if weighted {
                    a_row_weighted(r, nb, diag, w, s)
                } else {
                    a_row(r, nb, diag, s)
                }
            },
        )
    }

    /// `out = A s` on the fluid rows and, in the same pass, `out . s` (fixed chunks of
    /// [`reduce::CHUNK`], as [`reduce::dot`] sums them). Vectors have `nf + 1` entries.
    fn apply_a_dot(&self, s: &[f64], out: &mut [f64], partials: &mut [f64]) -> f64 {
        // The operations and order of [`rows_dot`] with [`a_row`], in a loop without the
        // per-row tests of the weighted path (fewer instructions per row, the same bits).
        let nf = self.nf;
        let s = &s[..nf + 1];
        let (nb, diag) = (&self.nb[..nf], &self.diag[..nf]);
        out[..nf + 1]
            .par_chunks_mut(reduce::CHUNK)
            .zip(partials.par_iter_mut())
            .with_min_len(reduce::MIN_ROWS.div_ceil(reduce::CHUNK))
            .enumerate()
            .for_each(|(ci, (oc, p))| {
                let r0 = ci * reduce::CHUNK;
                let rows = (nf - r0.min(nf)).min(oc.len());
                let (o_rows, o_dummy) = oc.split_at_mut(rows);
                let range = r0..r0 + rows;
                let mut acc = 0.0;
                for ((o, (m, d)), sr) in o_rows
                    .iter_mut()
                    .zip(nb[range.clone()].iter().zip(&diag[range.clone()]))
                    .zip(&s[range])
                {
                    // SAFETY: `nb`'s entries are rows or the dummy (`System::nb`), and `s` has
                    // `nf + 1` entries.
                    let g = |k: usize| unsafe { *s.get_unchecked(m[k] as usize) };
                    *o = d * sr - (g(0) + g(1) + g(2) + g(3) + g(4) + g(5));
                    acc += *o * sr;
                }
                // The dummy row (s = 0 there), as `rows_dot` adds it.
                for (o, sr) in o_dummy.iter().zip(&s[r0 + rows..]) {
                    acc += *o * sr;
                }
                *p = acc;
            });
        partials.iter().sum()
    }
}

/// `out[r] = row(r, cut)` for the fluid rows and `out . s` summed in fixed chunks of
/// [`reduce::CHUNK`] (as [`reduce::dot`] sums them), whatever the thread count. The rows go in
/// words of 64: `word(r / 64)` is the word's bitset of rows along an obstacle (see
/// `System::cut`), read once per word, and `cut` is row `r`'s bit (a clear word, most of them,
/// runs the unweighted rows without testing each).
fn rows_dot(
    nf: usize,
    s: &[f64],
    out: &mut [f64],
    partials: &mut [f64],
    word: impl Fn(usize) -> u64 + Sync,
    row: impl Fn(usize, bool) -> f64 + Sync,
) -> f64 {
    const _: () = assert!(reduce::CHUNK.is_multiple_of(64));
    out.par_chunks_mut(reduce::CHUNK)
        .zip(partials.par_iter_mut())
        .with_min_len(reduce::MIN_ROWS.div_ceil(reduce::CHUNK))
        .enumerate()
        .for_each(|(ci, (oc, p))| {
            let r0 = ci * reduce::CHUNK;
            let mut acc = 0.0;
            for (wi, ow) in oc.chunks_mut(64).enumerate() {
                let rw = r0 + 64 * wi;
                let bits = if rw < nf { word(rw >> 6) } else { 0 };
                for (l, o) in ow.iter_mut().enumerate() {
                    let r = rw + l;
                    if r < nf {
                        *o = row(r, cut_bit(bits, l));
                    }
                    acc += *o * s[r];
                }
            }
            *p = acc;
        });
    partials.iter().sum()
}

/// Bit `l` of a word of `System::cut` (tested only when the word has any).
#[inline(always)]
fn cut_bit(bits: u64, l: usize) -> bool {
    bits != 0 && (bits >> l) & 1 != 0
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
/// `F = w u + (1 - w) u_solid` on a partly open face and `F = u` on a face of weight 0 or 1
/// (a closed face already carries the solid's normal velocity, see `sim::solids`); `solid_vel`
/// is the solid's velocity per face (`None`: static solids, 0). A row with every face closed
/// gets 0 (it is decoupled).
#[inline]
pub fn flux_divergence(
    d: &GridDims,
    vel: &[Vec<f32>; 3],
    solid_vel: Option<&[Vec<f32>; 3]>,
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
            if wt == 0.0 || wt == 1.0 {
                return u;
            }
            let us = solid_vel.map_or(0.0, |sv| sv[a][f] as f64);
            wt as f64 * u + (1.0 - wt as f64) * us
        };
        s += flux(lo + step, w[2 * a + 1]) - flux(lo, w[2 * a]);
    }
    s
}
