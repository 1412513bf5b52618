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
//! safety `sigma = 0.25`, applied block-Jacobi style on up to [`BLOCKS`] slabs of whole
//! z-planes of at least [`BLOCK_ROWS`] unknowns each (so large systems run their triangular
//! solves in parallel; the couplings between slabs are left to CG; small systems are one
//! block, plain MIC(0)), conjugate gradient stopping when `max|r| <= tol * max|b|` or after the
//! iteration cap. Vectors and dot products are f64 (the default tolerance, 1e-6, is close to
//! f32's resolution); dot products use fixed chunks ([`super::reduce`]), the blocks depend on
//! the fluid cells only and each block's triangular solves run in lexicographic order, so
//! results are thread-independent.
//! Within a frame each projection starts from the previous substep's pressure scaled by the
//! ratio of the substeps (the hydrostatic part carries over); the first substep of a frame
//! starts from zero, so that a frame depends on its particles only (exact resume).
//!
//! Storage: the unknowns are only the fluid cells, numbered as "rows" in lexicographic cell
//! order (x fastest); each row keeps its six neighbours' row numbers, a non-fluid neighbour
//! pointing at a dummy row `nf` that always holds 0 (so air is `q = 0` and a wall neighbour,
//! which also drops out of the diagonal, contributes nothing). Vectors have `nf + 1` entries;
//! the work per iteration is proportional to the liquid, not to the box.

use super::mac_grid::{CellLabel, FaceKind, GridDims};
use super::multigrid::{self, Multigrid};
use super::reduce;
use super::sync_ptr::SyncPtr;
use rayon::prelude::*;

const TAU: f64 = 0.97;
const SIGMA: f64 = 0.25;
/// Row number meaning "not a fluid cell" in the per-cell row index (before the dummy is known).
const NONE: u32 = u32::MAX;
/// Independent blocks of the MIC(0) preconditioner (a constant, so results do not depend on
/// the thread count).
pub const BLOCKS: usize = 8;
/// Fewest rows per preconditioner block.
pub const BLOCK_ROWS: usize = 64 * 1024;
/// Fewest rows (cells) per task of the passes that set up and finish a solve (once per solve,
/// not per CG iteration): finer than the CG loop's vector operations ([`reduce::MIN_TASK`]),
/// since these passes are longer and the stepper keeps the pool's workers awake (a hand-off
/// costs a microsecond or two). Task sizes never change results.
const SETUP_ROWS: usize = 1024;
const SETUP_CELLS: usize = 4096;

/// Runs `f(b, &mut out[b])` for every preconditioner block `b` of `blocks` (row bounds),
/// in parallel when more than one block holds rows; a system that is one block runs on this
/// thread, without a hand-off to the pool (same result either way).
fn for_each_block<T: Send>(
    blocks: &[u32; BLOCKS + 1],
    out: &mut [T; BLOCKS],
    f: impl Fn(usize, &mut T) + Sync,
) {
    let used = (0..BLOCKS).filter(|&b| blocks[b] < blocks[b + 1]).count();
    if used <= 1 {
        out.iter_mut().enumerate().for_each(|(b, o)| f(b, o));
    } else {
        out.par_iter_mut().enumerate().for_each(|(b, o)| f(b, o));
    }
}

/// The forward sweep of MIC(0) over rows `s..e` of one block, shared by
/// [`PressureSolver::apply_precon`] and the fused CG step: `tmp_i = p2_i (r_i + sum tmp_nb)` over
/// the lower neighbours in the block, with `r_i = rhs(i)` (called once per row, in order, just
/// before the row is used: the fused step updates the row there).
///
/// The x neighbour is usually the row just computed: it is taken from a register (`prev`)
/// rather than reloaded from memory and added last, so the sweep's serial dependency chain is
/// one add and one multiply per row.
///
/// # Safety
/// Rows `s..e` of `tmp` belong to the calling block only, every neighbour index in `nb[s..e]`
/// is a valid row, and `tmp` holds 0 at the dummy row.
#[inline(always)]
unsafe fn forward_sweep(
    s: usize,
    e: usize,
    nb: &[[u32; 6]],
    p2: &[f64],
    tp: SyncPtr<f64>,
    mut rhs: impl FnMut(usize) -> f64,
) {
    let mut prev = 0.0f64;
    for i in s..e {
        let ri = rhs(i);
        let [xm, _, ym, _, zm, _] = nb[i];
        // SAFETY: the caller's; x and y neighbours share the plane, hence the block.
        unsafe {
            let xv = if xm as usize + 1 == i {
                prev
            } else {
                *tp.get(xm as usize)
            };
            let mut t = ri + *tp.get(ym as usize);
            if (zm as usize) >= s && (zm as usize) < e {
                t += *tp.get(zm as usize);
            }
            prev = (t + xv) * p2[i];
            *tp.get(i) = prev;
        }
    }
}

/// Row `r` of `A s`: `diag_r s_r - sum of the six neighbours' s` (non-fluid neighbours point
/// at the dummy row, which holds 0).
#[inline(always)]
fn a_row(r: usize, nb: &[[u32; 6]], diag: &[f64], s: &[f64]) -> f64 {
    let m = nb[r];
    diag[r] * s[r]
        - (s[m[0] as usize]
            + s[m[1] as usize]
            + s[m[2] as usize]
            + s[m[3] as usize]
            + s[m[4] as usize]
            + s[m[5] as usize])
}

/// The backward sweep of MIC(0) over rows `s..e` of one block: `z = tmp + precon^2 (U z)`,
/// shared by [`apply_precon`] and the fused CG step; returns `z . r` over the block, summed
/// from the last row to the first.
///
/// # Safety
/// Rows `s..e` of `tmp`, `z` and `r` belong to the calling block only, and every neighbour
/// index in `nb[s..e]` is a valid row.
#[inline(always)]
unsafe fn backward_sweep(
    s: usize,
    e: usize,
    nb: &[[u32; 6]],
    p2: &[f64],
    tp: SyncPtr<f64>,
    zp_: SyncPtr<f64>,
    r: *const f64,
) -> f64 {
    let mut dot = 0.0f64;
    let mut prev = 0.0f64;
    unsafe {
        for i in (s..e).rev() {
            let [_, xp, _, yp, _, zp] = nb[i];
            let xv = if xp as usize == i + 1 && i + 1 < e {
                prev
            } else {
                *zp_.get(xp as usize)
            };
            let mut acc = *zp_.get(yp as usize);
            if (zp as usize) < e {
                acc += *zp_.get(zp as usize);
            }
            let zi = *tp.get(i) + p2[i] * (acc + xv);
            prev = zi;
            *zp_.get(i) = zi;
            dot += zi * *r.add(i);
        }
    }
    dot
}

/// The preconditioner of the CG loop (the same loop and stopping rule for each).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Preconditioner {
    /// Block-Jacobi MIC(0) (this module).
    #[default]
    Mic0,
    /// One multigrid V-cycle over the liquid ([`super::multigrid`], McAdams et al. 2010): the
    /// residual is scattered onto the grid, cycled in f32, and gathered back.
    Multigrid,
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
    /// Grid coordinates `[i, j, k]` of each row's cell (no divisions in the row loops).
    ijk_of: Vec<[u32; 3]>,
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
    /// Precondition CG (false: plain CG, for benchmarks).
    pub precondition: bool,
    /// Which preconditioner (when `precondition`).
    pub preconditioner: Preconditioner,
    /// The multigrid hierarchy, allocated by the first multigrid solve on a grid.
    multigrid: Option<Multigrid>,
    /// Fewest rows per preconditioner block (default [`BLOCK_ROWS`]; tests lower it).
    pub block_rows: usize,
    /// The last projection's `q` per grid cell (0 outside the fluid), and its substep length
    /// (0: none to start from).
    warm: Vec<f32>,
    warm_dt: f32,
}

impl PressureSolver {
    /// Buffers for a grid of `cells` cells, sized for every cell being fluid, so that no
    /// substep allocates.
    pub fn new(cells: usize) -> Self {
        let v = || vec![0.0; cells + 1];
        Self {
            row_of: vec![NONE; cells],
            cell_of: vec![0; cells],
            ijk_of: vec![[0; 3]; cells],
            plane_rows: Vec::new(),
            nb: vec![[0; 6]; cells],
            diag: v(),
            q: v(),
            rhs: v(),
            r: v(),
            z: v(),
            s: v(),
            tmp: v(),
            precon: v(),
            partials: vec![0.0; reduce::partials_len(cells + 1)],
            nf: 0,
            blocks: [0; BLOCKS + 1],
            precondition: true,
            preconditioner: Preconditioner::Mic0,
            multigrid: None,
            block_rows: BLOCK_ROWS,
            warm: vec![0.0; cells],
            warm_dt: 0.0,
        }
    }

    /// Projects `vel` to be divergence-free in the fluid cells. `warm`: start CG from the last
    /// projection's pressure scaled by `dt / dt_last` (the previous substep of the same frame;
    /// the first substep of a frame starts from zero so that a frame depends on its particles
    /// only).
    #[allow(clippy::too_many_arguments)]
    pub fn project(
        &mut self,
        d: &GridDims,
        labels: &[CellLabel],
        kinds: &[Vec<FaceKind>; 3],
        vel: &mut [Vec<f32>; 3],
        tolerance: f64,
        max_iterations: u32,
        dt: f32,
        warm: bool,
    ) -> SolveStats {
        self.build(d, labels);
        let use_warm = warm && self.warm_dt > 0.0 && self.warm.len() == d.cells();
        let scale = if use_warm {
            (dt / self.warm_dt) as f64
        } else {
            0.0
        };
        let nf = self.nf;
        let (ijk_of, rhs) = (&self.ijk_of[..nf], &mut self.rhs[..nf]);
        rhs.par_iter_mut()
            .zip(ijk_of.par_iter())
            .with_min_len(SETUP_ROWS)
            .for_each(|(b, &[i, j, k])| {
                *b = -divergence_at(d, vel, i as usize, j as usize, k as usize);
            });
        if self.precondition {
            match self.preconditioner {
                Preconditioner::Mic0 => self.build_precon(),
                Preconditioner::Multigrid => {
                    // Allocated once per grid; re-labelled every solve (the density
                    // correction reuses it: same cells and matrix).
                    if self.multigrid.as_ref().map(|m| m.dims()) != Some(d.n) {
                        self.multigrid = Some(Multigrid::new(d.n, multigrid::Settings::default()));
                    }
                    if let Some(mg) = self.multigrid.as_mut() {
                        mg.setup(labels, None);
                    }
                }
            }
        }
        if use_warm {
            let (warm, q, cell_of) = (&self.warm, &mut self.q[..nf], &self.cell_of[..nf]);
            q.par_iter_mut()
                .zip(cell_of.par_iter())
                .with_min_len(SETUP_ROWS)
                .for_each(|(q, &c)| *q = warm[c as usize] as f64 * scale);
        }
        let stats = self.solve(tolerance, max_iterations, use_warm);
        self.apply(d, kinds, vel);
        // Keep this pressure (per cell, zero outside the fluid) for the next substep's start.
        self.warm.resize(d.cells(), 0.0);
        let (q, row_of) = (&self.q, &self.row_of);
        self.warm
            .par_iter_mut()
            .zip(row_of.par_iter())
            .with_min_len(SETUP_CELLS)
            .for_each(|(w, &r)| *w = if r == NONE { 0.0 } else { q[r as usize] as f32 });
        self.warm_dt = dt;
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
        let (cell_of, ijk_of, nb, diag) = (&self.cell_of, &self.ijk_of, &self.nb, &self.diag);
        self.rhs[..nf]
            .par_iter_mut()
            .enumerate()
            .with_min_len(reduce::MIN_ROWS)
            .for_each(|(r, b)| {
                let c = cell_of[r] as usize;
                let ijk = ijk_of[r].map(|x| x as usize);
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
        let stats = self.solve(tolerance, max_iterations, false);
        for v in disp.iter_mut() {
            v.par_iter_mut()
                .with_min_len(reduce::MIN_TASK)
                .for_each(|x| *x = 0.0);
        }
        self.apply(d, kinds, disp);
        stats
    }

    /// The per-row vectors (each `nf + 1` long, the dummy row last).
    fn row_vectors(&mut self) -> [&mut Vec<f64>; 8] {
        [
            &mut self.q,
            &mut self.rhs,
            &mut self.r,
            &mut self.z,
            &mut self.s,
            &mut self.tmp,
            &mut self.precon,
            &mut self.diag,
        ]
    }

    /// Numbers the fluid cells, finds each row's neighbours and diagonal.
    fn build(&mut self, d: &GridDims, labels: &[CellLabel]) {
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
        for v in self.row_vectors() {
            if v.len() < nf + 1 {
                v.resize(nf + 1, 0.0);
            }
        }
        if self.cell_of.len() < nf {
            self.cell_of.resize(nf, 0);
            self.ijk_of.resize(nf, [0; 3]);
            self.nb.resize(nf, [0; 6]);
        }
        self.partials.resize(reduce::partials_len(nf + 1), 0.0);
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
        for v in self.row_vectors() {
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
    /// each block; couplings between blocks are dropped (block-Jacobi MIC(0)). Stores the
    /// square of Bridson's `precon`, `1 / e`, which is all the solves need.
    fn build_precon(&mut self) {
        self.build_blocks();
        let nf = self.nf;
        let (nb, dg, blocks) = (&self.nb, &self.diag, &self.blocks);
        let pc = SyncPtr(self.precon.as_mut_ptr());
        for_each_block(blocks, &mut [(); BLOCKS], |b, _| {
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
                // Stored values are precon^2 = 1 / e (see `apply_precon`).
                let (pi2, pj2, pk2) = (get(xm), get(ym), get(zm));
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
                unsafe { *pc.get(r) = 1.0 / e_ };
            }
        });
        self.precon[nf] = 0.0;
    }

    /// `z = M^-1 r` (or `z = r` without preconditioning); returns `z . r`, summed in the same
    /// pass (per block in row order, the blocks in order: thread-independent).
    #[allow(clippy::too_many_arguments)]
    fn apply_precon(
        nf: usize,
        precondition: bool,
        blocks: &[u32; BLOCKS + 1],
        nb: &[[u32; 6]],
        p2: &[f64],
        r: &[f64],
        tmp: &mut [f64],
        z: &mut [f64],
        partials: &mut [f64],
    ) -> f64 {
        if !precondition {
            z[..nf]
                .par_iter_mut()
                .zip(r[..nf].par_iter())
                .with_min_len(reduce::MIN_TASK)
                .for_each(|(z, r)| *z = *r);
            return reduce::dot(z, r, partials);
        }
        let (tp, zp_) = (SyncPtr(tmp.as_mut_ptr()), SyncPtr(z.as_mut_ptr()));
        let mut sums = [0.0f64; BLOCKS];
        // Bridson's fig. 5.7 with `p` his `precon` and `p2 = p^2` (what is stored):
        // forward `t_i = r_i + sum_{j<i} p_j q_j`, `q_i = p_i t_i`; backward
        // `z_i = p_i (q_i + p_i sum_{j>i} z_j)`. With `w_i = p_i q_i = p2_i t_i` kept in
        // `tmp`: forward `w_i = p2_i (r_i + sum_{j<i} w_j)`, backward
        // `z_i = w_i + p2_i sum_{j>i} z_j`: one multiply-add per row.
        for_each_block(blocks, &mut sums, |b, sum| {
            let (s, e) = (blocks[b] as usize, blocks[b + 1] as usize);
            // SAFETY: rows s..e of `tmp` and `z` belong to this block only; neighbours outside
            // it are skipped; the dummy row `nf` is only read (it holds 0).
            unsafe {
                forward_sweep(s, e, nb, p2, tp, |i| r[i]);
                *sum = backward_sweep(s, e, nb, p2, tp, zp_, r.as_ptr());
            }
        });
        sums.iter().sum()
    }

    /// `z = M^-1 r` by one multigrid V-cycle; returns `z . r` (fixed chunks). `r` and `z` have
    /// `nf + 1` entries, the dummy row last (left at 0).
    fn apply_multigrid(
        mg: &mut Multigrid,
        cell_of: &[u32],
        r: &[f64],
        z: &mut [f64],
        partials: &mut [f64],
    ) -> f64 {
        mg.apply_dot(cell_of, r, z, partials)
    }

    /// One CG step fused with the next preconditioner application (the preconditioned case):
    /// `q += alpha s`, `r -= alpha z` (`z` holds `A s` on entry), `z = M^-1 r`; returns
    /// `(z . r, max |r|)`. The update of row `i` is done in the forward sweep just before the
    /// row is used, saving a pass over four vectors; the operations and their order per row
    /// are those of the separate passes, so the bits are the same.
    #[allow(clippy::too_many_arguments)]
    fn step_and_precon(
        blocks: &[u32; BLOCKS + 1],
        nb: &[[u32; 6]],
        p2: &[f64],
        alpha: f64,
        q: &mut [f64],
        s: &[f64],
        r: &mut [f64],
        tmp: &mut [f64],
        z: &mut [f64],
    ) -> (f64, f64) {
        let (tp, zp_) = (SyncPtr(tmp.as_mut_ptr()), SyncPtr(z.as_mut_ptr()));
        let (qp, rp) = (SyncPtr(q.as_mut_ptr()), SyncPtr(r.as_mut_ptr()));
        let mut sums = [(0.0f64, 0.0f64); BLOCKS];
        for_each_block(blocks, &mut sums, |b, out| {
            let (st, e) = (blocks[b] as usize, blocks[b + 1] as usize);
            // SAFETY: as in `apply_precon`; rows st..e of `q`, `r`, `tmp` and `z` belong to this
            // block only, and `z` (holding `A s`) is read at row i before the backward sweep
            // overwrites it.
            let mut rmax = 0.0f64;
            unsafe {
                forward_sweep(st, e, nb, p2, tp, |i| {
                    *qp.get(i) += alpha * s[i];
                    let ri = *rp.get(i) - alpha * *zp_.get(i);
                    *rp.get(i) = ri;
                    rmax = rmax.max(ri.abs());
                    ri
                });
                *out = (backward_sweep(st, e, nb, p2, tp, zp_, rp.0), rmax);
            }
        });
        let dot = sums.iter().map(|x| x.0).sum();
        let rmax = sums.iter().map(|x| x.1).fold(0.0, f64::max);
        (dot, rmax)
    }

    /// `out = A s` on the fluid rows.
    fn apply_a(nf: usize, nb: &[[u32; 6]], diag: &[f64], s: &[f64], out: &mut [f64]) {
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
    fn apply_a_dot(
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

    /// (Bridson fig. 5.5.)
    /// Preconditioned CG on `A q = rhs`, from `q = 0` or (`warm`) from the `q` already set.
    fn solve(&mut self, tol: f64, max_iter: u32, warm: bool) -> SolveStats {
        let nf = self.nf;
        let n1 = nf + 1;
        for v in [&mut self.z, &mut self.tmp, &mut self.s] {
            v[..n1]
                .par_iter_mut()
                .with_min_len(reduce::MIN_TASK)
                .for_each(|x| *x = 0.0);
        }
        if !warm {
            self.q[..n1]
                .par_iter_mut()
                .with_min_len(reduce::MIN_TASK)
                .for_each(|x| *x = 0.0);
        }
        self.q[nf] = 0.0;
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
        // The multigrid cycle, when it is the preconditioner (`None`: MIC(0) or none).
        let mut mg = match (self.precondition, self.preconditioner) {
            (true, Preconditioner::Multigrid) => self.multigrid.as_mut(),
            _ => None,
        };
        let cell_of = &self.cell_of[..nf];
        let fused = self.precondition && mg.is_none();
        let (q, r, z, s, tmp) = (
            &mut self.q[..n1],
            &mut self.r[..n1],
            &mut self.z[..n1],
            &mut self.s[..n1],
            &mut self.tmp[..n1],
        );
        let partials = &mut self.partials;
        r.copy_from_slice(&self.rhs[..n1]);
        let mut rmax = bmax;
        if warm {
            // r = b - A q0.
            Self::apply_a(nf, nb, dg, q, z);
            r[..nf]
                .par_iter_mut()
                .zip(z[..nf].par_iter())
                .with_min_len(reduce::MIN_TASK)
                .for_each(|(r, z)| *r -= z);
            z[..nf]
                .par_iter_mut()
                .with_min_len(reduce::MIN_TASK)
                .for_each(|x| *x = 0.0);
            rmax = reduce::max_abs(&r[..nf]);
            if rmax <= tol * bmax {
                stats.residual = rmax / bmax;
                return stats;
            }
        }
        let mut sigma = match mg.as_deref_mut() {
            Some(m) => Self::apply_multigrid(m, cell_of, r, z, partials),
            None => Self::apply_precon(nf, self.precondition, blocks, nb, pc, r, tmp, z, partials),
        };
        s.copy_from_slice(z);
        while stats.iterations < max_iter {
            let zs = Self::apply_a_dot(nf, nb, dg, s, z, partials);
            if zs == 0.0 {
                break;
            }
            let alpha = sigma / zs;
            stats.iterations += 1;
            if fused {
                // The update fused with the next preconditioner application; the last one is
                // wasted, but a pass over four vectors per iteration is saved.
                let (sigma_new, m) = Self::step_and_precon(blocks, nb, pc, alpha, q, s, r, tmp, z);
                rmax = m;
                if rmax <= tol * bmax {
                    break;
                }
                let beta = sigma_new / sigma;
                s.par_iter_mut()
                    .zip(z.par_iter())
                    .with_min_len(reduce::MIN_TASK)
                    .for_each(|(s, z)| *s = z + beta * *s);
                sigma = sigma_new;
                continue;
            }
            // q += alpha s, r -= alpha z, and max |r| in the same pass (max is exact in any
            // order).
            rmax = q
                .par_iter_mut()
                .zip(s.par_iter())
                .zip(r.par_iter_mut().zip(z.par_iter()))
                .with_min_len(reduce::MIN_TASK)
                .map(|((q, s), (r, z))| {
                    *q += alpha * s;
                    *r -= alpha * z;
                    r.abs()
                })
                .reduce(|| 0.0, f64::max);
            if rmax <= tol * bmax {
                break;
            }
            let sigma_new = match mg.as_deref_mut() {
                Some(m) => Self::apply_multigrid(m, cell_of, r, z, partials),
                None => {
                    Self::apply_precon(nf, self.precondition, blocks, nb, pc, r, tmp, z, partials)
                }
            };
            let beta = sigma_new / sigma;
            s.par_iter_mut()
                .zip(z.par_iter())
                .with_min_len(reduce::MIN_TASK)
                .for_each(|(s, z)| *s = z + beta * *s);
            sigma = sigma_new;
        }
        stats.residual = rmax / bmax;
        stats
    }

    /// `u_f -= q_c - q_{c - e_a}` on fluid faces (`q = 0` in air), visiting the fluid rows:
    /// each row updates its lower face along each axis (unless it is a wall face) and its upper
    /// face when the cell above is air, so every fluid face is updated exactly once.
    fn apply(&self, d: &GridDims, kinds: &[Vec<FaceKind>; 3], vel: &mut [Vec<f32>; 3]) {
        let nf = self.nf;
        let (q, nb, ijk_of) = (&self.q, &self.nb, &self.ijk_of[..nf]);
        let ptr: [SyncPtr<f32>; 3] = std::array::from_fn(|a| SyncPtr(vel[a].as_mut_ptr()));
        let lens: [usize; 3] = std::array::from_fn(|a| vel[a].len());
        ijk_of
            .par_iter()
            .enumerate()
            .with_min_len(SETUP_ROWS)
            .for_each(|(r, ijk)| {
                let ijk = ijk.map(|x| x as usize);
                for a in 0..3 {
                    let m = d.face_n(a);
                    let lower = ijk[0] + m[0] * (ijk[1] + m[1] * ijk[2]);
                    let upper = lower + [1, m[0], m[0] * m[1]][a];
                    assert!(upper < lens[a]);
                    let (below, above) = (nb[r][2 * a] as usize, nb[r][2 * a + 1] as usize);
                    // SAFETY: a fluid face is written only by the fluid row above it or, when that
                    // cell is air, by the fluid row below it: one writer per face.
                    unsafe {
                        if kinds[a][lower] == FaceKind::Fluid {
                            *ptr[a].get(lower) -= (q[r] - q[below]) as f32;
                        }
                        if above == nf && kinds[a][upper] == FaceKind::Fluid {
                            *ptr[a].get(upper) -= (q[above] - q[r]) as f32;
                        }
                    }
                }
            });
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
