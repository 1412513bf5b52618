//! Pressure projection: a 7-point Poisson system on the fluid cells, solved by conjugate
//! gradient preconditioned by a multigrid W-cycle (the default, [`multigrid`]) or MIC(0)
//! (`solver.pressure_preconditioner`), matrix-free.
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
//!
//! Obstacles ([`SolidFaces`]): the faces' open fractions weight the system (Batty, Bertails and
//! Bridson 2007, see [`system`]); both preconditioners take them (MIC(0) with the weighted
//! off-diagonals of Bridson fig. 5.7, the multigrid with weighted levels). The velocity update
//! stays `u_f -= q_c - q_nb` on every open face: with fluxes `w u + (1 - w) u_solid` the updated
//! field is discretely divergence-free, and fully closed faces (wall faces) keep the solid's
//! velocity.

pub mod cg;
pub mod mic0;
pub mod multigrid;
mod pockets;
pub mod preconditioner;
pub mod system;

pub use mic0::{BLOCK_ROWS, BLOCKS, Mic0};
pub use multigrid::Multigrid;
pub use preconditioner::{Identity, Preconditioner};

use super::mac_grid::{CellLabel, FaceKind, GridDims};
use super::reduce;
use super::settings::PressurePreconditioner;
use super::sync_ptr::SyncPtr;
use rayon::prelude::*;
use system::System;

/// Fewest rows (cells) per task of the passes that set up and finish a solve (once per solve,
/// not per CG iteration): finer than the CG loop's vector operations ([`reduce::MIN_TASK`]),
/// since these passes are longer and the stepper keeps the pool's workers awake (a hand-off
/// costs a microsecond or two). Task sizes never change results.
pub(crate) const SETUP_ROWS: usize = 1024;
pub(crate) const SETUP_CELLS: usize = 4096;

/// The preconditioner a pressure solver uses (each implements [`Preconditioner`]; adding one
/// is a file and a variant here).
pub enum Preconditioning {
    /// Plain CG.
    None(Identity),
    /// Block-Jacobi MIC(0) (the scene default until session 8; the solver starts with it).
    Mic0(Mic0),
    /// One multigrid W-cycle over the liquid (McAdams et al. 2010; the scene default).
    Multigrid(Box<Multigrid>),
}

impl Preconditioning {
    /// The preconditioner `choice` for a grid of `n` cells per axis, its buffers allocated.
    pub fn new(choice: PressurePreconditioner, n: [usize; 3]) -> Self {
        match choice {
            PressurePreconditioner::Mic0 => Self::Mic0(Mic0::new(n.iter().product())),
            PressurePreconditioner::Multigrid => {
                Self::Multigrid(Box::new(Multigrid::new(n, multigrid::Settings::default())))
            }
        }
    }

    /// The preconditioner behind the choice.
    pub fn get(&mut self) -> &mut dyn Preconditioner {
        match self {
            Self::None(p) => p,
            Self::Mic0(p) => p,
            Self::Multigrid(p) => p.as_mut(),
        }
    }
}

pub use super::mac_grid::SolidFaces;

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

/// The pressure system, its preconditioner and the preallocated vectors of its solve.
pub struct PressureSolver {
    /// The assembled system.
    sys: System,
    /// The scaled pressure `q = p dt / (rho h)` of the last solve, per row (+ dummy).
    q: Vec<f64>,
    /// The residual (the right-hand side `b` before a solve).
    r: Vec<f64>,
    z: Vec<f64>,
    s: Vec<f64>,
    partials: Vec<f64>,
    /// The preconditioner (default MIC(0); none gives plain CG, for benchmarks).
    pub preconditioner: Preconditioning,
    /// The last projection's `q` per row, its rows' cells (increasing), the grid's cell count
    /// and its substep length (0: none to start from). Kept by rows, not per grid cell: the
    /// next start finds each row's cell among them by a merge (both are increasing), and a
    /// substep writes 8 bytes a fluid cell instead of 4 a grid cell (on the 8M dam break 8 MB
    /// instead of 21 MB, and as much less resident memory).
    warm_q: Vec<f32>,
    warm_cell: Vec<u32>,
    warm_grid: usize,
    warm_dt: f32,
    /// Ghost-fluid free surface (`solver.free_surface`): every cell's fill fraction, which the
    /// stepper fills before each projection ([`super::ghost_fluid::fill_fraction`]); empty with
    /// the staircase surface.
    pub fill: Vec<f32>,
    /// Sealed pockets' scratch ([`pockets`]: the projection's with moving solids, the density
    /// correction's always).
    pockets: pockets::Pockets,
}

impl PressureSolver {
    /// Buffers for a grid of `cells` cells, sized for every cell being fluid, so that no
    /// substep allocates.
    pub fn new(cells: usize) -> Self {
        let v = || vec![0.0; cells + 1];
        Self {
            sys: System::new(cells),
            q: v(),
            r: v(),
            z: v(),
            s: v(),
            partials: vec![0.0; reduce::partials_len(cells + 1)],
            preconditioner: Preconditioning::Mic0(Mic0::new(cells)),
            warm_q: Vec::with_capacity(cells),
            warm_cell: Vec::with_capacity(cells),
            warm_grid: cells,
            warm_dt: 0.0,
            fill: Vec::new(),
            pockets: pockets::Pockets::new(cells),
        }
    }

    /// Use the MIC(0) preconditioner (true, the default) or none (plain CG). Allocates: call
    /// before stepping.
    pub fn set_preconditioner(&mut self, on: bool) {
        // The vectors have a row per grid cell and the dummy (`new`; never shortened).
        let cells = self.q.len() - 1;
        self.preconditioner = if on {
            Preconditioning::Mic0(Mic0::new(cells))
        } else {
            Preconditioning::None(Identity)
        };
    }

    /// Use the preconditioner `choice` on a grid of `n` cells per axis. Allocates: call before
    /// stepping.
    pub fn set_preconditioning(&mut self, choice: PressurePreconditioner, n: [usize; 3]) {
        self.preconditioner = Preconditioning::new(choice, n);
    }

    /// Fewest rows per block of the block-Jacobi MIC(0) preconditioner (tests).
    pub fn set_block_rows(&mut self, rows: usize) {
        if let Preconditioning::Mic0(m) = &mut self.preconditioner {
            m.block_rows = rows;
        }
    }

    /// Assembles the system of `labels` (weighted by the solids' open face fractions when
    /// given) and sizes the row vectors (the dummy row holds 0).
    fn build(&mut self, d: &GridDims, labels: &[CellLabel], solid: Option<SolidFaces<'_>>) {
        self.sys.build(d, labels);
        if let Some(sf) = solid {
            self.sys.build_weights(d, labels, sf.open);
        }
        // After the weights (which set the diagonal to the sum of the open fractions): the
        // ghost-fluid air terms are added on top of either diagonal.
        if self.fill.len() == d.cells() {
            self.sys.add_air_terms(d, labels, &self.fill);
        }
        let nf = self.sys.nf;
        for v in [&mut self.q, &mut self.r, &mut self.z, &mut self.s] {
            if v.len() < nf + 1 {
                v.resize(nf + 1, 0.0);
            }
            v[nf] = 0.0;
        }
        self.partials.resize(reduce::partials_len(nf + 1), 0.0);
    }

    /// Projects `vel` to be divergence-free in the fluid cells. `warm`: start CG from the last
    /// projection's pressure scaled by `dt / dt_last` (the previous substep of the same frame;
    /// the first substep of a frame starts from zero so that a frame depends on its particles
    /// only). `solid`: the obstacles' face fractions (variational boundaries), if any.
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
        solid: Option<SolidFaces<'_>>,
    ) -> SolveStats {
        self.build(d, labels, solid);
        let use_warm = warm && self.warm_dt > 0.0 && self.warm_grid == d.cells();
        let scale = if use_warm {
            (dt / self.warm_dt) as f64
        } else {
            0.0
        };
        let nf = self.sys.nf;
        // The right-hand side into the residual vector (the solve starts from it) and its
        // largest magnitude, in one pass (maxima are exact in any order).
        let (ijk_of, rhs) = (&self.sys.ijk_of[..nf], &mut self.r[..nf]);
        let bmax = if self.sys.fractional {
            let w = &self.sys.w[..nf];
            rhs.par_iter_mut()
                .zip(ijk_of.par_iter().zip(w.par_iter()))
                .with_min_len(SETUP_ROWS)
                .map(|(b, (ijk, w))| {
                    *b = -system::flux_divergence(d, vel, solid, ijk.map(|x| x as usize), w);
                    b.abs()
                })
                .reduce(|| 0.0, f64::max)
        } else {
            rhs.par_iter_mut()
                .zip(ijk_of.par_iter())
                .with_min_len(SETUP_ROWS)
                .map(|(b, &[i, j, k])| {
                    let (i, j, k) = (i as usize, j as usize, k as usize);
                    *b = -divergence_fast(d, vel, d.cell(i, j, k), j, k);
                    b.abs()
                })
                .reduce(|| 0.0, f64::max)
        };
        // Only an obstacle (its wall faces' and moving faces' fluxes) can give a pocket that
        // touches no air a net inflow ([`pockets`]).
        let obstacles = solid.map(|s| (s.open, s.velocity));
        let bmax = if let Some((open, sv)) = obstacles
            && (self.pockets).make_compatible(
                d,
                &self.sys,
                labels,
                [open, sv, vel],
                &mut self.r[..nf],
            ) > 0
        {
            self.r[..nf].iter().fold(0.0, |m, b| f64::max(m, b.abs()))
        } else {
            bmax
        };
        let open = solid.map(|s| s.open);
        self.preconditioner.get().setup(&self.sys, labels, open);
        if use_warm {
            // Each row's `q` from the last solve's row of the same cell (0 where there was
            // none): per chunk of rows, a merge of the two increasing lists of cells from the
            // first old cell at or after the chunk's first.
            let (wq, wc) = (&self.warm_q, &self.warm_cell);
            let (q, cell_of) = (&mut self.q[..nf], &self.sys.cell_of[..nf]);
            q.par_chunks_mut(SETUP_ROWS)
                .zip(cell_of.par_chunks(SETUP_ROWS))
                .for_each(|(q, cells)| {
                    let mut at = wc.partition_point(|&c| c < cells[0]);
                    for (q, &c) in q.iter_mut().zip(cells) {
                        while at < wc.len() && wc[at] < c {
                            at += 1;
                        }
                        let w = if at < wc.len() && wc[at] == c {
                            wq[at]
                        } else {
                            0.0
                        };
                        *q = w as f64 * scale;
                    }
                });
        }
        let stats = self.solve(bmax, tolerance, max_iterations, use_warm);
        self.apply(d, kinds, vel.each_mut().map(|v| v.as_mut_slice()));
        // Keep this pressure and its rows' cells for the next substep's start (within the
        // capacity reserved for every cell: no allocation).
        let (q, cell_of) = (&self.q[..nf], &self.sys.cell_of[..nf]);
        self.warm_q.resize(nf, 0.0);
        self.warm_cell.resize(nf, 0);
        self.warm_q
            .par_chunks_mut(SETUP_ROWS)
            .zip(self.warm_cell.par_chunks_mut(SETUP_ROWS))
            .zip(q.par_chunks(SETUP_ROWS).zip(cell_of.par_chunks(SETUP_ROWS)))
            .for_each(|((wq, wc), (q, c))| {
                for (w, &q) in wq.iter_mut().zip(q) {
                    *w = q as f32;
                }
                wc.copy_from_slice(c);
            });
        self.warm_grid = d.cells();
        self.warm_dt = dt;
        stats
    }

    /// Density correction (after [`Self::project`], same cells and matrix): solves
    /// `A q = e_c h` on the fluid cells (`e_c` the relative over-density, see
    /// [`super::density`]; `share`: each cell's kernel share open to particles next to
    /// obstacles, [`super::rest_share`]) and writes the displacement `-grad q` (m) to the fluid
    /// faces of `disp` (zero elsewhere on the face grids; entries past `d.faces(a)`, if any, are
    /// left alone). Moving the particles by it makes over-dense
    /// cells expand by their excess volume.
    #[allow(clippy::too_many_arguments)]
    pub fn density_displacement(
        &mut self,
        d: &GridDims,
        labels: &[CellLabel],
        kinds: &[Vec<FaceKind>; 3],
        rho: &[f32],
        share: Option<&[f32]>,
        mut disp: [&mut [f32]; 3],
        tolerance: f64,
        max_iterations: u32,
    ) -> SolveStats {
        let h = d.h as f64;
        let n = d.n;
        let nf = self.sys.nf;
        let sys = &self.sys;
        let (cell_of, ijk_of, nb, diag) = (&sys.cell_of, &sys.ijk_of, &sys.nb, &sys.diag);
        let (fractional, fw) = (sys.fractional, &sys.w);
        let bmax = self.r[..nf]
            .par_iter_mut()
            .enumerate()
            .with_min_len(reduce::MIN_ROWS)
            .map(|(r, b)| {
                let c = cell_of[r] as usize;
                let ijk = ijk_of[r].map(|x| x as usize);
                let rest = super::density::REST_DENSITY * super::density::wall_open_share(n, ijk);
                let mut e = (rho[c] / rest - 1.0) as f64;
                // A sliver next to an obstacle: its own rest density, with slack (see
                // `super::density`).
                if let Some(s) = share.map(|s| s[c])
                    && s < super::rest_share::SLIVER_SHARE
                {
                    let rest = super::density::REST_DENSITY * s;
                    e = (rho[c] / rest - 1.0 - super::rest_share::SLIVER_SLACK) as f64;
                }
                // Interior cells (every neighbour fluid or wall) are corrected both ways; at
                // the surface, where the kernel sees air, only over-density counts.
                let interior = if fractional {
                    // Next to an obstacle (a face partly or wholly closed that is not a domain
                    // wall) the kernel also reaches into solid: treated as surface.
                    (0..6).all(|k| {
                        let (a, up) = (k / 2, k % 2 == 1);
                        let wall = if up { ijk[a] + 2 == n[a] } else { ijk[a] == 1 };
                        ((nb[r][k] as usize) < nf && fw[r][k] == 1.0) || (wall && fw[r][k] == 0.0)
                    })
                } else {
                    let fluid_nb: u32 = nb[r].iter().map(|&m| ((m as usize) < nf) as u32).sum();
                    let air = if sys.has_air { sys.air[r] } else { 0.0 };
                    fluid_nb as f64 == diag[r] - air
                };
                *b = if interior { e } else { e.max(0.0) } * h;
                b.abs()
            })
            .reduce(|| 0.0, f64::max);
        // A piece that touches no air cannot change its volume: its mean over-density is
        // taken off ([`pockets`]).
        let bmax =
            if (self.pockets).make_all_compatible(d, &self.sys, labels, &mut self.r[..nf]) > 0 {
                self.r[..nf].iter().fold(0.0, |m, b| f64::max(m, b.abs()))
            } else {
                bmax
            };
        let stats = self.solve(bmax, tolerance, max_iterations, false);
        for (a, v) in disp.iter_mut().enumerate() {
            v[..d.faces(a)]
                .par_iter_mut()
                .with_min_len(reduce::MIN_TASK)
                .for_each(|x| *x = 0.0);
        }
        self.apply(d, kinds, disp);
        stats
    }

    /// `u_f -= q_c - q_{c - e_a}` on fluid faces (`q = 0` in air), visiting the fluid rows:
    /// each row updates its lower face along each axis (unless it is a wall face) and its upper
    /// face when the cell above is air, so every fluid face is updated exactly once.
    fn apply(&self, d: &GridDims, kinds: &[Vec<FaceKind>; 3], mut vel: [&mut [f32]; 3]) {
        let nf = self.sys.nf;
        let (q, nb, ijk_of) = (&self.q, &self.sys.nb, &self.sys.ijk_of[..nf]);
        // Ghost fluid: a face between a fluid row and air gets `(0 - q_c) / theta`. (A wall
        // neighbour also points at the dummy row, but its face is no fluid face.)
        let (ghost, fill) = (self.fill.len() == d.cells(), &self.fill);
        let plane = d.n[0] * d.n[1];
        // `c` the fluid row's cell, `m` its air neighbour.
        let air_scale = |c: usize, m: usize| {
            if ghost {
                1.0 / super::ghost_fluid::theta(fill[c], fill[m])
            } else {
                1.0
            }
        };
        // Every face below is a face of a fluid cell, which is interior (the outermost layer is
        // never fluid: checked once by the system's build on this grid, asserted below), so its
        // upper faces lie inside each component's grid (`n + e_a` nodes): no per-face bounds
        // tests.
        for a in 0..3 {
            assert!(vel[a].len() >= d.faces(a) && kinds[a].len() >= d.faces(a));
        }
        assert_eq!(
            self.sys.dims, d.n,
            "pressure: the system was built on another grid"
        );
        let ptr: [SyncPtr<f32>; 3] = std::array::from_fn(|a| SyncPtr(vel[a].as_mut_ptr()));
        let [k0, k1, k2] = [&kinds[0][..], &kinds[1][..], &kinds[2][..]];
        let kinds = [k0, k1, k2];
        let n = d.n;
        // The step between a cell and its neighbour along each axis, in cells and on that
        // axis's face grid alike (component a's grid has n + e_a nodes).
        let step = [1, n[0], plane];
        let q = &q[..nf + 1];
        if !ghost {
            return apply_staircase(d, &kinds, ptr, q, &self.sys);
        }
        ijk_of
            .par_chunks(SETUP_ROWS)
            .zip(nb[..nf].par_chunks(SETUP_ROWS))
            .enumerate()
            .for_each(|(t, (ijks, nbs))| {
                for (l, (ijk, nbr)) in ijks.iter().zip(nbs).enumerate() {
                    let [i, j, k] = ijk.map(|x| x as usize);
                    let c = d.cell(i, j, k);
                    // The lower face of the cell on each component's grid: `face_index` below.
                    let lower = face_index(d, c, j, k);
                    let qr = q[t * SETUP_ROWS + l];
                    for a in 0..3 {
                        let (lower, upper) = (lower[a], lower[a] + step[a]);
                        let (below, above) = (nbr[2 * a] as usize, nbr[2 * a + 1] as usize);
                        // SAFETY: `lower` and `upper` are in bounds (above). A fluid face is
                        // written only by the fluid row above it or, when that cell is air, by
                        // the fluid row below it: one writer per face.
                        unsafe {
                            if *kinds[a].get_unchecked(lower) == FaceKind::Fluid {
                                let g = if below == nf {
                                    air_scale(c, c - step[a])
                                } else {
                                    1.0
                                };
                                *ptr[a].get(lower) -= ((qr - q[below]) * g) as f32;
                            }
                            if above == nf && *kinds[a].get_unchecked(upper) == FaceKind::Fluid {
                                *ptr[a].get(upper) -=
                                    ((q[above] - qr) * air_scale(c, c + step[a])) as f32;
                            }
                        }
                    }
                }
            });
    }
}

/// [`PressureSolver::apply`] with the staircase surface (no ghost-fluid scale): the same
/// updates, with the lower face's kind test as a select (a face that is not a fluid face gets
/// `u - 0`, which leaves every value as it is: the lower face of a fluid row's cell is written
/// by that row only, fluid face or not) and the neighbours' `q` read without bounds checks.
fn apply_staircase(
    d: &GridDims,
    kinds: &[&[FaceKind]; 3],
    ptr: [SyncPtr<f32>; 3],
    q: &[f64],
    sys: &System,
) {
    let nf = sys.nf;
    let (nb, ijk_of) = (&sys.nb[..nf], &sys.ijk_of[..nf]);
    assert!(q.len() == nf + 1);
    ijk_of
        .par_chunks(SETUP_ROWS)
        .zip(nb.par_chunks(SETUP_ROWS))
        .zip(q[..nf].par_chunks(SETUP_ROWS))
        // SAFETY: as `update_rows` asks.
        .for_each(|((ijks, nbs), qs)| unsafe { update_rows(d, kinds, ptr, q, ijks, nbs, qs) });
}

/// The staircase velocity update of the rows with coordinates `ijks`, neighbours `nbs` and
/// pressures `qs` (see [`apply_staircase`]).
///
/// # Safety
/// The rows' cells are interior (their faces lie in the face grids that `ptr` and `kinds`
/// hold), `nbs` has entries at most `nf = q.len() - 1`, and no other task writes these rows'
/// faces at the same time.
#[inline(never)]
unsafe fn update_rows(
    d: &GridDims,
    kinds: &[&[FaceKind]; 3],
    ptr: [SyncPtr<f32>; 3],
    q: &[f64],
    ijks: &[[u32; 3]],
    nbs: &[[u32; 6]],
    qs: &[f64],
) {
    let nf = q.len() - 1;
    let step = [1, d.n[0], d.n[0] * d.n[1]];
    for ((ijk, nbr), &qr) in ijks.iter().zip(nbs).zip(qs) {
        let [i, j, k] = ijk.map(|x| x as usize);
        let lower = face_index(d, d.cell(i, j, k), j, k);
        for a in 0..3 {
            let (lower, upper) = (lower[a], lower[a] + step[a]);
            let (below, above) = (nbr[2 * a] as usize, nbr[2 * a + 1] as usize);
            // SAFETY: the caller's; a fluid row's lower face is written by that row only.
            unsafe {
                let dq = (qr - *q.get_unchecked(below)) as f32;
                let fluid = *kinds[a].get_unchecked(lower) == FaceKind::Fluid;
                *ptr[a].get(lower) -= if fluid { dq } else { 0.0 };
                if above == nf && *kinds[a].get_unchecked(upper) == FaceKind::Fluid {
                    *ptr[a].get(upper) -= (*q.get_unchecked(above) - qr) as f32;
                }
            }
        }
    }
}

/// The lower face of cell `c = (i, j, k)` on each face component's grid (component `a`'s
/// grid has `n + e_a` nodes, x fastest): `c + j + ny k`, `c + nx k` and `c`. The upper face
/// is one step further (1, `nx` or `nx ny`: the cells' own steps).
#[inline(always)]
fn face_index(d: &GridDims, c: usize, j: usize, k: usize) -> [usize; 3] {
    [c + j + d.n[1] * k, c + d.n[0] * k, c]
}

/// [`divergence_at`] from the cell index `c` of `(i, j, k)` (the same sum, fewer index
/// multiplications).
#[inline(always)]
fn divergence_fast(d: &GridDims, vel: &[Vec<f32>; 3], c: usize, j: usize, k: usize) -> f64 {
    let lower = face_index(d, c, j, k);
    let step = [1, d.n[0], d.n[0] * d.n[1]];
    let mut s = 0.0f64;
    for (a, v) in vel.iter().enumerate() {
        let lo = lower[a];
        s += v[lo + step[a]] as f64 - v[lo] as f64;
    }
    s
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
