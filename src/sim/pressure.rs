//! Pressure projection: a 7-point Poisson system on the fluid cells, solved by MIC(0)-
//! preconditioned conjugate gradient, matrix-free.
//!
//! Bridson, *Fluid Simulation for Computer Graphics* (2nd ed., 2015), ch. 5: the discrete
//! pressure `p` makes the face velocities divergence-free in every fluid cell,
//!
//! `(dt / (rho h^2)) (n_c p_c - sum_{fluid nb} p_nb) = -div_c`,  `div_c = sum_a (u_a+ - u_a-) / h`,
//!
//! where `n_c` counts the non-solid neighbours (walls are Neumann: their face keeps zero normal
//! velocity, so the neighbour drops out), and empty (air) cells hold `p = 0` (Dirichlet free
//! surface, first order). With `q = p dt / (rho h)` the system is the integer-stencil
//! `n_c q_c - sum q_nb = -sum_a (u_a+ - u_a-)` and the update is `u_f -= q_c - q_{c - e_a}` on
//! every face between two non-solid cells with fluid on one side; `p = q rho h / dt`. The
//! scaling by `dt`, `rho` and `h` is thus exact and the solver works on O(1) numbers.
//!
//! The solver (Bridson fig. 5.5 / 5.7): modified incomplete Cholesky MIC(0) with `tau = 0.97`,
//! safety `sigma = 0.25`, applied block-Jacobi style on [`BLOCKS`] slabs of whole z-planes (so
//! the triangular solves run in parallel; the couplings between slabs are left to CG), conjugate
//! gradient stopping when `max|r| <= tol * max|b|` or after
//! the iteration cap. Vectors and dot products are f64 (f32 stalls around 1e-5 relative
//! residual on these systems); dot products use fixed chunks ([`super::reduce`]) and the
//! triangular solves run in a fixed lexicographic order, so results are thread-independent.
//!
//! Storage: the unknowns are only the fluid cells, numbered as "rows" in lexicographic cell
//! order (x fastest); each row keeps its six neighbours' row numbers, a non-fluid neighbour
//! pointing at a dummy row `nf` that always holds 0 (so air is `q = 0` and a wall neighbour,
//! which also drops out of the diagonal, contributes nothing). Vectors have `nf + 1` entries;
//! the work per iteration is proportional to the liquid, not to the box.

use super::mac_grid::{CellLabel, FaceKind, GridDims};
use super::reduce;
use rayon::prelude::*;

const TAU: f64 = 0.97;
const SIGMA: f64 = 0.25;
/// Row number meaning "not a fluid cell" in the per-cell row index (before the dummy is known).
const NONE: u32 = u32::MAX;
/// Independent blocks of the MIC(0) preconditioner (a constant, so results do not depend on
/// the thread count).
pub const BLOCKS: usize = 8;
/// Fewest rows per preconditioner block.
pub const BLOCK_ROWS: usize = 32 * 1024;

/// A raw pointer shared by tasks that touch disjoint index ranges (see each use).
#[derive(Clone, Copy)]
struct SyncPtr(*mut f64);
// SAFETY: every use writes disjoint ranges from concurrently running tasks.
unsafe impl Send for SyncPtr {}
unsafe impl Sync for SyncPtr {}
impl SyncPtr {
    /// Pointer to element `i`. Callers guarantee exclusive access to it.
    #[inline(always)]
    unsafe fn get(self, i: usize) -> *mut f64 {
        unsafe { self.0.add(i) }
    }
}

/// Outcome of one pressure solve.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct SolveStats {
    /// CG iterations.
    pub iterations: u32,
    /// Final `max|r| / max|b|` (0 when the right-hand side is zero).
    pub residual: f64,
    /// Fluid cells (unknowns).
    pub unknowns: u32,
    /// `max|b|`: the largest `|sum_a (u_a+ - u_a-)|` (divergence times `h`, m/s) of a fluid cell
    /// before the solve.
    pub rhs_max: f64,
}

/// The pressure system and the preallocated vectors of its solve.
#[derive(Default)]
pub struct PressureSolver {
    /// Row of each grid cell (`NONE` for non-fluid cells).
    row_of: Vec<u32>,
    /// Grid cell of each row.
    cell_of: Vec<u32>,
    /// Fluid cells per z-plane of the grid, then their prefix sums (plane start rows).
    plane_rows: Vec<u32>,
    /// Neighbour rows `[-x, +x, -y, +y, -z, +z]` of each row (dummy `nf` when not fluid).
    nb: Vec<[u32; 6]>,
    /// Non-solid neighbours of each row (the diagonal of `A`).
    diag: Vec<f64>,
    /// The scaled pressure `q = p dt / (rho h)` of the last solve, per row (+ dummy).
    q: Vec<f64>,
    rhs: Vec<f64>,
    r: Vec<f64>,
    z: Vec<f64>,
    s: Vec<f64>,
    tmp: Vec<f64>,
    precon: Vec<f64>,
    partials: Vec<f64>,
    /// Number of fluid rows of the current system.
    nf: usize,
    /// First row of each preconditioner block, then `nf`.
    blocks: [u32; BLOCKS + 1],
    /// Use the MIC(0) preconditioner (false: plain CG, for benchmarks).
    pub precondition: bool,
    /// Fewest rows per preconditioner block (default [`BLOCK_ROWS`]; tests lower it).
    pub block_rows: usize,
}

impl PressureSolver {
    /// Buffers for a grid of `cells` cells (vectors grow to the fluid size on first use).
    pub fn new(cells: usize) -> Self {
        Self {
            row_of: vec![NONE; cells],
            precondition: true,
            block_rows: BLOCK_ROWS,
            ..Default::default()
        }
    }

    /// Projects `vel` to be divergence-free in the fluid cells.
    pub fn project(
        &mut self,
        d: &GridDims,
        labels: &[CellLabel],
        kinds: &[Vec<FaceKind>; 3],
        vel: &mut [Vec<f32>; 3],
        tolerance: f64,
        max_iterations: u32,
    ) -> SolveStats {
        self.build(d, labels);
        let nf = self.nf;
        let (cell_of, rhs) = (&self.cell_of, &mut self.rhs[..nf]);
        rhs.par_iter_mut()
            .zip(cell_of.par_iter())
            .with_min_len(1024)
            .for_each(|(b, &c)| {
                let c = c as usize;
                let i = c % d.n[0];
                let j = (c / d.n[0]) % d.n[1];
                let k = c / (d.n[0] * d.n[1]);
                *b = -divergence_at(d, vel, i, j, k);
            });
        if self.precondition {
            self.build_precon();
        }
        let stats = self.solve(tolerance, max_iterations);
        self.apply(d, kinds, vel);
        stats
    }

    /// Density correction (after [`Self::project`], same cells and matrix): solves
    /// `A q = e_c h` on the fluid cells (`e_c` the relative over-density, see
    /// [`super::density`]) and writes the displacement `-grad q` (m) to the fluid faces of
    /// `disp` (zero elsewhere). Moving the particles by it makes over-dense cells expand by their
    /// excess volume.
    pub fn density_displacement(
        &mut self,
        d: &GridDims,
        kinds: &[Vec<FaceKind>; 3],
        rho: &[f32],
        disp: &mut [Vec<f32>; 3],
        tolerance: f64,
        max_iterations: u32,
    ) -> SolveStats {
        let h = d.h as f64;
        let n = d.n;
        let nf = self.nf;
        let (cell_of, nb, diag) = (&self.cell_of, &self.nb, &self.diag);
        self.rhs[..nf]
            .par_iter_mut()
            .enumerate()
            .with_min_len(1024)
            .for_each(|(r, b)| {
                let c = cell_of[r] as usize;
                let ijk = [c % n[0], (c / n[0]) % n[1], c / (n[0] * n[1])];
                // The kernel reaches 1/8 of its mass into an adjacent wall layer per axis,
                // where no particle can be.
                let walls = (0..3)
                    .filter(|&a| ijk[a] == 1 || ijk[a] + 2 == n[a])
                    .count();
                let rest = super::density::REST_DENSITY * 0.875f32.powi(walls as i32);
                let e = (rho[c] / rest - 1.0) as f64;
                // Interior cells (every neighbour fluid or wall) are corrected both ways; at
                // the surface, where the kernel sees air, only over-density counts.
                let fluid_nb = nb[r].iter().filter(|&&m| (m as usize) < nf).count();
                let interior = fluid_nb as f64 == diag[r];
                *b = if interior { e } else { e.max(0.0) } * h;
            });
        let stats = self.solve(tolerance, max_iterations);
        for v in disp.iter_mut() {
            v.par_iter_mut().with_min_len(4096).for_each(|x| *x = 0.0);
        }
        self.apply(d, kinds, disp);
        stats
    }

    /// Numbers the fluid cells, finds each row's neighbours and diagonal.
    fn build(&mut self, d: &GridDims, labels: &[CellLabel]) {
        let n = d.n;
        let plane = n[0] * n[1];
        // Fluid cells per plane, then plane start rows (deterministic prefix sum).
        self.plane_rows.resize(n[2] + 1, 0);
        self.plane_rows[1..]
            .par_iter_mut()
            .zip(labels.par_chunks(plane))
            .for_each(|(cnt, lp)| {
                *cnt = lp.iter().filter(|&&l| l == CellLabel::Fluid).count() as u32
            });
        self.plane_rows[0] = 0;
        for k in 0..n[2] {
            self.plane_rows[k + 1] += self.plane_rows[k];
        }
        let nf = self.plane_rows[n[2]] as usize;
        self.nf = nf;
        for v in [
            &mut self.q,
            &mut self.rhs,
            &mut self.r,
            &mut self.z,
            &mut self.s,
            &mut self.tmp,
            &mut self.precon,
            &mut self.diag,
        ] {
            if v.len() < nf + 1 {
                v.resize(nf + 1, 0.0);
            }
        }
        if self.cell_of.len() < nf {
            self.cell_of.resize(nf, 0);
            self.nb.resize(nf, [0; 6]);
        }
        self.partials.resize(reduce::partials_len(nf + 1), 0.0);
        // Row of each cell, plane by plane.
        let starts = &self.plane_rows;
        self.row_of
            .par_chunks_mut(plane)
            .zip(labels.par_chunks(plane))
            .enumerate()
            .for_each(|(k, (rp, lp))| {
                let mut r = starts[k];
                for (ro, l) in rp.iter_mut().zip(lp) {
                    *ro = if *l == CellLabel::Fluid {
                        r += 1;
                        r - 1
                    } else {
                        NONE
                    };
                }
            });
        // Cells, neighbours and diagonal of each row.
        let row_of = &self.row_of;
        let dummy = nf as u32;
        let row = |c: usize| {
            let r = row_of[c];
            if r == NONE { dummy } else { r }
        };
        for (c, &r) in row_of.iter().enumerate() {
            if r != NONE {
                self.cell_of[r as usize] = c as u32;
            }
        }
        let cell_of = &self.cell_of[..nf];
        self.nb[..nf]
            .par_iter_mut()
            .zip(self.diag[..nf].par_iter_mut())
            .zip(cell_of.par_iter())
            .with_min_len(1024)
            .for_each(|((nbr, dg), &c)| {
                let c = c as usize;
                // Fluid cells are interior: all six neighbours exist.
                let m = [c - 1, c + 1, c - n[0], c + n[0], c - plane, c + plane];
                *nbr = m.map(row);
                *dg = m.iter().filter(|&&x| labels[x] != CellLabel::Solid).count() as f64;
            });
        // The dummy row holds zeros.
        for v in [
            &mut self.q,
            &mut self.rhs,
            &mut self.r,
            &mut self.z,
            &mut self.s,
            &mut self.tmp,
            &mut self.precon,
            &mut self.diag,
        ] {
            v[nf] = 0.0;
        }
    }

    /// Splits the rows into up to [`BLOCKS`] contiguous blocks of whole z-planes, about equal
    /// in rows and at least [`BLOCK_ROWS`] rows each (fewer, larger blocks converge faster).
    fn build_blocks(&mut self) {
        let nf = self.nf as u32;
        let starts = &self.plane_rows;
        let used = (nf as usize / self.block_rows.max(1)).clamp(1, BLOCKS);
        self.blocks[0] = 0;
        let mut k = 0;
        for b in 1..BLOCKS {
            let target = (b.min(used) as u64 * nf as u64 / used as u64) as u32;
            while k + 1 < starts.len() && starts[k] < target {
                k += 1;
            }
            self.blocks[b] = starts[k].max(self.blocks[b - 1]);
        }
        self.blocks[BLOCKS] = nf;
    }

    /// MIC(0) preconditioner values (Bridson fig. 5.7), in row (lexicographic) order within
    /// each block; couplings between blocks are dropped (block-Jacobi MIC(0)).
    fn build_precon(&mut self) {
        self.build_blocks();
        let nf = self.nf;
        let (nb, dg, blocks) = (&self.nb, &self.diag, &self.blocks);
        let pc = SyncPtr(self.precon.as_mut_ptr());
        (0..BLOCKS).into_par_iter().for_each(|b| {
            let (s, e) = (blocks[b] as usize, blocks[b + 1] as usize);
            let inb = |r: u32| (r as usize) >= s && (r as usize) < e;
            let fl = |r: u32| inb(r) as u32 as f64;
            // SAFETY: this task reads and writes only rows s..e of `precon` (neighbours outside
            // the block are skipped), disjoint from every other block's rows.
            let get = |r: u32| {
                if inb(r) {
                    unsafe { *pc.get(r as usize) }
                } else {
                    0.0
                }
            };
            for r in s..e {
                let [xm, _, ym, _, zm, _] = nb[r];
                let (pi, pj, pk) = (get(xm), get(ym), get(zm));
                let (pi2, pj2, pk2) = (pi * pi, pj * pj, pk * pk);
                let diag = dg[r];
                let mut e_ = diag - pi2 - pj2 - pk2;
                // A_plus products: the -x neighbour's +y and +z neighbours being fluid (and in
                // the block), etc.
                let ex = if inb(xm) {
                    let q = nb[xm as usize];
                    fl(q[3]) + fl(q[5])
                } else {
                    0.0
                };
                let ey = if inb(ym) {
                    let q = nb[ym as usize];
                    fl(q[1]) + fl(q[5])
                } else {
                    0.0
                };
                let ez = if inb(zm) {
                    let q = nb[zm as usize];
                    fl(q[1]) + fl(q[3])
                } else {
                    0.0
                };
                e_ -= TAU * (pi2 * ex + pj2 * ey + pk2 * ez);
                if e_ < SIGMA * diag {
                    e_ = diag;
                }
                unsafe { *pc.get(r) = 1.0 / e_.sqrt() };
            }
        });
        self.precon[nf] = 0.0;
    }

    /// `z = M^-1 r` (or `z = r` without preconditioning): one forward and one backward
    /// triangular solve per block, blocks in parallel.
    #[allow(clippy::too_many_arguments)]
    fn apply_precon(
        nf: usize,
        precondition: bool,
        blocks: &[u32; BLOCKS + 1],
        nb: &[[u32; 6]],
        pc: &[f64],
        r: &[f64],
        tmp: &mut [f64],
        z: &mut [f64],
    ) {
        if !precondition {
            z[..nf]
                .par_iter_mut()
                .zip(r[..nf].par_iter())
                .with_min_len(4096)
                .for_each(|(z, r)| *z = *r);
            return;
        }
        let (tp, zp_) = (SyncPtr(tmp.as_mut_ptr()), SyncPtr(z.as_mut_ptr()));
        (0..BLOCKS).into_par_iter().for_each(|b| {
            let (s, e) = (blocks[b] as usize, blocks[b + 1] as usize);
            // SAFETY: rows s..e of `tmp` and `z` belong to this block only; neighbours outside
            // it are skipped (x and y neighbours share the plane, hence the block).
            unsafe {
                // Forward: L t = r.
                for i in s..e {
                    let [xm, _, ym, _, zm, _] = nb[i];
                    let (xm, ym, zm) = (xm as usize, ym as usize, zm as usize);
                    let mut t = r[i] + pc[xm] * *tp.get(xm) + pc[ym] * *tp.get(ym);
                    if zm >= s && zm < e {
                        t += pc[zm] * *tp.get(zm);
                    }
                    *tp.get(i) = t * pc[i];
                }
                // Backward: L^T z = t.
                for i in (s..e).rev() {
                    let [_, xp, _, yp, _, zp] = nb[i];
                    let mut acc = *zp_.get(xp as usize) + *zp_.get(yp as usize);
                    if (zp as usize) < e {
                        acc += *zp_.get(zp as usize);
                    }
                    *zp_.get(i) = (*tp.get(i) + pc[i] * acc) * pc[i];
                }
            }
        });
    }

    /// `out = A s` on the fluid rows.
    fn apply_a(nf: usize, nb: &[[u32; 6]], diag: &[f64], s: &[f64], out: &mut [f64]) {
        out[..nf]
            .par_iter_mut()
            .enumerate()
            .with_min_len(2048)
            .for_each(|(r, o)| {
                let m = nb[r];
                *o = diag[r] * s[r]
                    - (s[m[0] as usize]
                        + s[m[1] as usize]
                        + s[m[2] as usize]
                        + s[m[3] as usize]
                        + s[m[4] as usize]
                        + s[m[5] as usize]);
            });
    }

    /// Preconditioned CG on `A q = rhs` (Bridson fig. 5.5).
    fn solve(&mut self, tol: f64, max_iter: u32) -> SolveStats {
        let nf = self.nf;
        let n1 = nf + 1;
        for v in [&mut self.q, &mut self.z, &mut self.tmp, &mut self.s] {
            v[..n1]
                .par_iter_mut()
                .with_min_len(4096)
                .for_each(|x| *x = 0.0);
        }
        let mut stats = SolveStats {
            unknowns: nf as u32,
            ..Default::default()
        };
        let bmax = reduce::max_abs(&self.rhs[..nf]);
        stats.rhs_max = bmax;
        if bmax == 0.0 {
            return stats;
        }
        let (nb, dg, pc, blocks) = (&self.nb, &self.diag, &self.precon, &self.blocks);
        let (q, r, z, s, tmp) = (
            &mut self.q[..n1],
            &mut self.r[..n1],
            &mut self.z[..n1],
            &mut self.s[..n1],
            &mut self.tmp[..n1],
        );
        let partials = &mut self.partials;
        r.copy_from_slice(&self.rhs[..n1]);
        Self::apply_precon(nf, self.precondition, blocks, nb, pc, r, tmp, z);
        s.copy_from_slice(z);
        let mut sigma = reduce::dot(z, r, partials);
        let mut rmax = bmax;
        while stats.iterations < max_iter {
            Self::apply_a(nf, nb, dg, s, z);
            let zs = reduce::dot(z, s, partials);
            if zs == 0.0 {
                break;
            }
            let alpha = sigma / zs;
            stats.iterations += 1;
            q.par_iter_mut()
                .zip(s.par_iter())
                .zip(r.par_iter_mut().zip(z.par_iter()))
                .with_min_len(4096)
                .for_each(|((q, s), (r, z))| {
                    *q += alpha * s;
                    *r -= alpha * z;
                });
            rmax = reduce::max_abs(r);
            if rmax <= tol * bmax {
                break;
            }
            Self::apply_precon(nf, self.precondition, blocks, nb, pc, r, tmp, z);
            let sigma_new = reduce::dot(z, r, partials);
            let beta = sigma_new / sigma;
            s.par_iter_mut()
                .zip(z.par_iter())
                .with_min_len(4096)
                .for_each(|(s, z)| *s = z + beta * *s);
            sigma = sigma_new;
        }
        stats.residual = rmax / bmax;
        stats
    }

    /// `u_f -= q_c - q_{c - e_a}` on fluid faces (`q = 0` in air).
    fn apply(&self, d: &GridDims, kinds: &[Vec<FaceKind>; 3], vel: &mut [Vec<f32>; 3]) {
        let (q, row_of) = (&self.q, &self.row_of);
        let qc = |c: usize| {
            let r = row_of[c];
            if r == NONE { 0.0 } else { q[r as usize] }
        };
        for a in 0..3 {
            let m = d.face_n(a);
            let stride = [1, d.n[0], d.n[0] * d.n[1]][a];
            let kind = &kinds[a];
            vel[a]
                .par_chunks_mut(m[0] * m[1])
                .enumerate()
                .for_each(|(k, vp)| {
                    for j in 0..m[1] {
                        for i in 0..m[0] {
                            let l = i + m[0] * j;
                            if kind[l + m[0] * m[1] * k] != FaceKind::Fluid {
                                continue;
                            }
                            // Fluid faces are interior: both cells exist.
                            let c = d.cell(i, j, k);
                            vp[l] -= (qc(c) - qc(c - stride)) as f32;
                        }
                    }
                });
        }
    }
}

/// `sum_a (u_a+ - u_a-)` of cell `(i, j, k)`: the divergence times `h` (velocity units).
#[inline]
pub fn divergence_at(d: &GridDims, vel: &[Vec<f32>; 3], i: usize, j: usize, k: usize) -> f64 {
    let mut s = 0.0f64;
    for (a, v) in vel.iter().enumerate() {
        let m = d.face_n(a);
        let lo = i + m[0] * (j + m[1] * k);
        let step = [1, m[0], m[0] * m[1]][a];
        s += v[lo + step] as f64 - v[lo] as f64;
    }
    s
}

/// Divergence `div u = sum_a (u_a+ - u_a-) / h`, 1/s, of every fluid cell (0 elsewhere).
#[doc(hidden)]
pub fn divergence(d: &GridDims, labels: &[CellLabel], vel: &[Vec<f32>; 3], out: &mut [f64]) {
    for k in 0..d.n[2] {
        for j in 0..d.n[1] {
            for i in 0..d.n[0] {
                let c = d.cell(i, j, k);
                out[c] = if labels[c] == CellLabel::Fluid {
                    divergence_at(d, vel, i, j, k) / d.h as f64
                } else {
                    0.0
                };
            }
        }
    }
}
