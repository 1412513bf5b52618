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
//! safety `sigma = 0.25`, conjugate gradient stopping when `max|r| <= tol * max|b|` or after
//! the iteration cap. Vectors and dot products are f64 (f32 stalls around 1e-5 relative
//! residual on these systems); dot products use fixed chunks ([`super::reduce`]) and the
//! triangular solves run in a fixed lexicographic order, so results are thread-independent.
//! All vectors span the whole grid (zero outside the fluid), indexed like the cells.

use super::mac_grid::{CellLabel, FaceKind, GridDims};
use super::reduce;
use rayon::prelude::*;

const TAU: f64 = 0.97;
const SIGMA: f64 = 0.25;

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

/// Preallocated vectors of the pressure solve.
#[derive(Default)]
pub struct PressureSolver {
    /// The scaled pressure `q = p dt / (rho h)` of the last solve, per cell.
    pub q: Vec<f64>,
    rhs: Vec<f64>,
    r: Vec<f64>,
    z: Vec<f64>,
    s: Vec<f64>,
    tmp: Vec<f64>,
    precon: Vec<f64>,
    diag: Vec<u8>,
    fluid: Vec<u8>,
    partials: Vec<f64>,
    /// Use the MIC(0) preconditioner (false: plain CG, for benchmarks).
    pub precondition: bool,
}

impl PressureSolver {
    /// Buffers for a grid of `cells` cells.
    pub fn new(cells: usize) -> Self {
        Self {
            q: vec![0.0; cells],
            rhs: vec![0.0; cells],
            r: vec![0.0; cells],
            z: vec![0.0; cells],
            s: vec![0.0; cells],
            tmp: vec![0.0; cells],
            precon: vec![0.0; cells],
            diag: vec![0; cells],
            fluid: vec![0; cells],
            partials: vec![0.0; reduce::partials_len(cells)],
            precondition: true,
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
        self.build(d, labels, vel);
        if self.precondition {
            self.build_precon(d);
        }
        let stats = self.solve(tolerance, max_iterations, d);
        self.apply(d, kinds, vel);
        stats
    }

    /// Density correction (after [`Self::project`], same cells and matrix): solves
    /// `A q = e_c h` on the fluid cells (`e_c` the relative over-density, see
    /// [`super::density`]) and writes the displacement
    /// `-grad q` (m) to the fluid faces of `disp` (zero elsewhere). Moving the particles by it
    /// makes over-dense cells expand by their excess volume; see [`super::density`].
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
        let plane = n[0] * n[1];
        let (fluid, diag) = (&self.fluid, &self.diag);
        self.rhs
            .par_chunks_mut(plane)
            .enumerate()
            .for_each(|(k, bp)| {
                for j in 0..n[1] {
                    for i in 0..n[0] {
                        let l = i + n[0] * j;
                        let c = l + plane * k;
                        if fluid[c] == 0 {
                            bp[l] = 0.0;
                            continue;
                        }
                        // The kernel reaches a quarter of its weight into an adjacent wall layer
                        // per axis (1/8 of the mass), where no particle can be.
                        let walls = [i, j, k]
                            .iter()
                            .zip(n.iter())
                            .filter(|&(&x, &m)| x == 1 || x + 2 == m)
                            .count();
                        let rest = super::density::REST_DENSITY * 0.875f32.powi(walls as i32);
                        let e = (rho[c] / rest - 1.0) as f64;
                        // Interior cells (every neighbour fluid or wall) are corrected both ways;
                        // at the surface, where the kernel sees air, only over-density counts.
                        let nb = [c - 1, c + 1, c - n[0], c + n[0], c - plane, c + plane];
                        let fluid_nb = nb.iter().filter(|&&m| fluid[m] != 0).count() as u8;
                        let interior = fluid_nb == diag[c];
                        bp[l] = if interior { e } else { e.max(0.0) } * h;
                    }
                }
            });
        let stats = self.solve(tolerance, max_iterations, d);
        for v in disp.iter_mut() {
            v.par_iter_mut().with_min_len(4096).for_each(|x| *x = 0.0);
        }
        self.apply(d, kinds, disp);
        stats
    }

    /// Fluid flags, diagonal and right-hand side `-sum_a (u_a+ - u_a-)`.
    fn build(&mut self, d: &GridDims, labels: &[CellLabel], vel: &[Vec<f32>; 3]) {
        let n = d.n;
        let plane = n[0] * n[1];
        self.fluid
            .par_iter_mut()
            .zip(labels.par_iter())
            .with_min_len(4096)
            .for_each(|(f, l)| *f = (*l == CellLabel::Fluid) as u8);
        let fluid = &self.fluid;
        self.diag
            .par_chunks_mut(plane)
            .zip(self.rhs.par_chunks_mut(plane))
            .enumerate()
            .for_each(|(k, (dp, bp))| {
                for j in 0..n[1] {
                    for i in 0..n[0] {
                        let l = i + n[0] * j;
                        let c = l + plane * k;
                        if fluid[c] == 0 {
                            dp[l] = 0;
                            bp[l] = 0.0;
                            continue;
                        }
                        // Fluid cells are interior: all six neighbours exist.
                        let nb = [c - 1, c + 1, c - n[0], c + n[0], c - plane, c + plane];
                        dp[l] = nb
                            .iter()
                            .filter(|&&m| labels[m] != CellLabel::Solid)
                            .count() as u8;
                        bp[l] = -divergence_at(d, vel, i, j, k);
                    }
                }
            });
    }

    /// MIC(0) preconditioner values (Bridson fig. 5.7), lexicographic order.
    fn build_precon(&mut self, d: &GridDims) {
        let n = d.n;
        let (sx, sy, sz) = (1, n[0], n[0] * n[1]);
        let (fl, dg, pc) = (&self.fluid, &self.diag, &mut self.precon);
        for k in 0..n[2] {
            for j in 0..n[1] {
                for i in 0..n[0] {
                    let c = d.cell(i, j, k);
                    if fl[c] == 0 {
                        pc[c] = 0.0;
                        continue;
                    }
                    let f = |m: usize| fl[m] as f64;
                    let pi = pc[c - sx];
                    let pj = pc[c - sy];
                    let pk = pc[c - sz];
                    let (pi2, pj2, pk2) = (pi * pi, pj * pj, pk * pk);
                    let diag = dg[c] as f64;
                    let mut e = diag - pi2 - pj2 - pk2;
                    e -= TAU
                        * (pi2 * (f(c - sx + sy) + f(c - sx + sz))
                            + pj2 * (f(c - sy + sx) + f(c - sy + sz))
                            + pk2 * (f(c - sz + sx) + f(c - sz + sy)));
                    if e < SIGMA * diag {
                        e = diag;
                    }
                    pc[c] = 1.0 / e.sqrt();
                }
            }
        }
    }

    /// `z = M^-1 r` (or `z = r` without preconditioning).
    fn apply_precon(
        d: &GridDims,
        precondition: bool,
        pc: &[f64],
        r: &[f64],
        tmp: &mut [f64],
        z: &mut [f64],
    ) {
        if !precondition {
            z.par_iter_mut()
                .zip(r.par_iter())
                .with_min_len(4096)
                .for_each(|(z, r)| *z = *r);
            return;
        }
        let n = d.n;
        let (sx, sy, sz) = (1, n[0], n[0] * n[1]);
        // Forward: L t = r.
        for k in 1..n[2] - 1 {
            for j in 1..n[1] - 1 {
                let row = d.cell(0, j, k);
                for c in row + 1..row + n[0] - 1 {
                    let p = pc[c];
                    if p == 0.0 {
                        continue;
                    }
                    let t = r[c]
                        + pc[c - sx] * tmp[c - sx]
                        + pc[c - sy] * tmp[c - sy]
                        + pc[c - sz] * tmp[c - sz];
                    tmp[c] = t * p;
                }
            }
        }
        // Backward: L^T z = t.
        for k in (1..n[2] - 1).rev() {
            for j in (1..n[1] - 1).rev() {
                let row = d.cell(0, j, k);
                for c in (row + 1..row + n[0] - 1).rev() {
                    let p = pc[c];
                    if p == 0.0 {
                        continue;
                    }
                    let t = tmp[c] + p * (z[c + sx] + z[c + sy] + z[c + sz]);
                    z[c] = t * p;
                }
            }
        }
    }

    /// `out = A s` on the fluid cells.
    #[allow(clippy::needless_range_loop)]
    fn apply_a(d: &GridDims, diag: &[u8], s: &[f64], out: &mut [f64]) {
        let n = d.n;
        let plane = n[0] * n[1];
        out.par_chunks_mut(plane).enumerate().for_each(|(k, op)| {
            if k == 0 || k + 1 == n[2] {
                return;
            }
            for l in n[0]..plane - n[0] {
                let c = l + plane * k;
                let dg = diag[c];
                op[l] = if dg == 0 {
                    0.0
                } else {
                    dg as f64 * s[c]
                        - (s[c - 1]
                            + s[c + 1]
                            + s[c - n[0]]
                            + s[c + n[0]]
                            + s[c - plane]
                            + s[c + plane])
                };
            }
        });
    }

    /// Preconditioned CG on `A q = rhs`.
    fn solve(&mut self, tol: f64, max_iter: u32, d: &GridDims) -> SolveStats {
        let unknowns = self.fluid.par_iter().map(|&f| f as u32).sum::<u32>();
        for v in [&mut self.q, &mut self.z, &mut self.tmp, &mut self.s] {
            v.par_iter_mut().with_min_len(4096).for_each(|x| *x = 0.0);
        }
        let mut stats = SolveStats {
            unknowns,
            ..Default::default()
        };
        let bmax = reduce::max_abs(&self.rhs);
        stats.rhs_max = bmax;
        if bmax == 0.0 {
            return stats;
        }
        self.r.copy_from_slice(&self.rhs);
        Self::apply_precon(
            d,
            self.precondition,
            &self.precon,
            &self.r,
            &mut self.tmp,
            &mut self.z,
        );
        self.s.copy_from_slice(&self.z);
        let mut sigma = reduce::dot(&self.z, &self.r, &mut self.partials);
        let mut rmax = bmax;
        while stats.iterations < max_iter {
            Self::apply_a(d, &self.diag, &self.s, &mut self.z);
            let zs = reduce::dot(&self.z, &self.s, &mut self.partials);
            if zs == 0.0 {
                break;
            }
            let alpha = sigma / zs;
            stats.iterations += 1;
            self.q
                .par_iter_mut()
                .zip(self.s.par_iter())
                .with_min_len(4096)
                .for_each(|(q, s)| *q += alpha * s);
            self.r
                .par_iter_mut()
                .zip(self.z.par_iter())
                .with_min_len(4096)
                .for_each(|(r, z)| *r -= alpha * z);
            rmax = reduce::max_abs(&self.r);
            if rmax <= tol * bmax {
                break;
            }
            Self::apply_precon(
                d,
                self.precondition,
                &self.precon,
                &self.r,
                &mut self.tmp,
                &mut self.z,
            );
            let sigma_new = reduce::dot(&self.z, &self.r, &mut self.partials);
            let beta = sigma_new / sigma;
            self.s
                .par_iter_mut()
                .zip(self.z.par_iter())
                .with_min_len(4096)
                .for_each(|(s, z)| *s = z + beta * *s);
            sigma = sigma_new;
        }
        stats.residual = rmax / bmax;
        stats
    }

    /// `u_f -= q_c - q_{c - e_a}` on fluid faces.
    fn apply(&self, d: &GridDims, kinds: &[Vec<FaceKind>; 3], vel: &mut [Vec<f32>; 3]) {
        let q = &self.q;
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
                            vp[l] -= (q[c] - q[c - stride]) as f32;
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
