//! A multigrid cycle over the liquid, as the preconditioner of the pressure solve's conjugate
//! gradient (MGPCG).
//!
//! McAdams, Sifakis and Teran (2010), "A parallel multigrid Poisson solver for fluids simulation
//! on large grids", SCA: one cycle of a geometric multigrid on the free-surface Poisson problem
//! is a preconditioner for CG whose iteration count hardly grows with the resolution, and every
//! part of it is a data-parallel loop over the grid (unlike MIC(0)'s triangular solves).
//!
//! The problem of every level is the integer-stencil Poisson operator of
//! [`super`] with face weights, `(A u)_c = sum_f w_f (u_c - u_nb)`, `u = 0` in air
//! cells (Dirichlet, the free surface) and `w = 0` across solid faces (Neumann walls); the
//! weights are 1 on open faces today and carry the fractional face areas of obstacles when the
//! caller passes them. With the ghost-fluid surface the finest level's diagonal also takes
//! each row's air terms (`System::air`, `1 / theta - 1` per air neighbour; `Level::
//! add_to_diagonal`), so its operator is the system's; the coarse levels keep the staircase
//! operator (without the terms CG took 131 iterations per solve on the 1M dam break, with them
//! 11.3, the staircase 10.3). The hierarchy (`level.rs`):
//!
//! - coarse cell `I` covers fine cells `2I - 1, 2I` per axis; it is **air if any child is air**,
//!   else fluid if any child is fluid, else solid (McAdams sec. 4: the Dirichlet surface is
//!   never lost on a coarse level); with fractional weights a coarse face's weight is the mean
//!   of the four fine faces it covers, without them every level has unit weights on its open
//!   faces (McAdams' coarse operators) and the loops read no weight arrays at all; with them,
//!   the rows whose faces between two fluid cells all have weight 1 (away from the obstacles)
//!   read none either, the same sums (`Level::unit_rows`: the 1M dam break's cycle with
//!   every weight given took 1.9x as long before);
//! - levels are coarsened until every axis has at most [`COARSEST_INTERIOR`] interior cells.
//!
//! One cycle ([`Multigrid::apply`]; McAdams Algorithm 1, with red-black Gauss-Seidel as the
//! smoother: on the 1M dam break two sweeps need 15 CG iterations where McAdams' damped Jacobi
//! needed 22, for about the same time per solve (session 5; dropped in session 8, when the
//! levels came to be stored by colour); three sweeps (the default) need 12; a red-black sweep
//! runs both colours in one pass over the planes, all the sweeps of a smoothing in one pass,
//! `sweeps::rb_sweeps`, with the residual or the prolongation in the same pass):
//!
//! - down: from `u = 0`, [`Settings::pre_sweeps`] red-black sweeps (red first), the residual,
//!   and its restriction `b_{l+1} = P^T r_l / 2` (full weighting times 4: the integer stencil of
//!   spacing `2h` is 4 times that of spacing `h`);
//! - on the coarse level, [`Settings::coarse_cycles`] cycles in a row (the first from zero, the
//!   next from its result: `u += B (b - A u)`); 2 by default, a W-cycle: the V-cycle's count
//!   grew with the resolution (12 CG iterations on the replayed 1M dam-break system, 16 on the
//!   8M one) where the W-cycle's hardly does (10 and 13), for about the same time per solve at
//!   1M and 9% less at 8M (each coarse level costs an eighth of the one above, so visiting it
//!   twice adds about a third to the finest level's work);
//! - bottom: the finest coarse level that fits the budgets of [`direct`] (at most 512
//!   unknowns, a small envelope, a factorisation cheap next to a solve) is solved exactly by
//!   an `L D L^T` factor computed at each set-up, and ends the cycle (the levels below it are
//!   not visited; [`Settings::direct`]). On the 1M dam break that is the 210-unknown level:
//!   the cycle's instructions fall by 11% (`valgrind --tool=callgrind` on `cargo bench
//!   --bench mg_cycle`, `MG_DIRECT=0` / `1`), all of it serial work, at the same 10 CG
//!   iterations. Where no level fits, the coarsest level takes [`Settings::coarsest_sweeps`]
//!   red-black sweeps then as many black-red ones;
//! - up: `u_l += P u_{l+1}` (cell-centred trilinear interpolation, weights 27/64 ... 1/64)
//!   and the same number of sweeps in the mirrored order (black first);
//! - the sweeps over-relaxed (red-black SOR smoothing, Yavneh 1996; [`Settings::omega`], 1.3:
//!   7.1 CG iterations a substep on the 1M dam break against 8.4), all but the first two
//!   half-sweeps down (from zero) and their mirror images, the last two up.
//!
//! The post-smoother is the adjoint of the pre-smoother and restriction is a constant times
//! `P^T`, and `k` steps from zero of a symmetric linear iteration are a symmetric map of the
//! right-hand side (`B`, then `2B - BAB`, ...), so the cycle is a symmetric positive (semi-)definite linear map of the right-hand
//! side (to f32 rounding), as CG needs. A liquid region that touches no air is a singular,
//! compatible Neumann problem; the cycle (Gauss-Seidel sweeps, no division by its zero
//! eigenvalue) stays bounded there, and CG handles it as it does with MIC(0).
//!
//! Storage is `f32` per level cell (`u`, `b`, `r`, `1/diag`, the diagonal, three face weights)
//! and a label and an open-face count (`diagonal.rs`) a byte each: 34 bytes per finest cell,
//! about 46 with the compact rows' padding and the coarser levels: 30.6 MB for the 1M dam
//! break's 162 x 42 x 98 grid, `cargo bench --bench mg_cycle`),
//! all allocated once in [`Multigrid::new`] for the whole grid; each set-up fits the levels
//! to the liquid's box in those buffers (`window.rs`: the rows follow each other in memory,
//! and the 8M dam break's standing column cycles 2.4-2.6x faster), and each row stores only
//! the ranges of cells its own and its neighbours' loops reach, the loops visiting its
//! segments (`layout.rs`, `segments.rs`: a row costs what it stores, not what it visits; the
//! 8M dam break's flowing frames cycle 1.4x faster with rows as long as their plane's liquid,
//! session 20, and its last frames 1.5x faster again with rows of their own ranges, session
//! 23); `u`, `b`, `r`
//! and the diagonals are stored by
//! colour (red-black ordering, `level.rs`), so a half-sweep's vector lanes are all cells of its
//! colour, and the restriction reads a fine row's even and odd cells as two compact rows. Each solve re-labels the levels ([`Multigrid::setup`]) and each application
//! scatters the CG residual (rows of fluid cells, `f64`) onto the finest grid and gathers the
//! result (through each row's index in the colour-split layout, found per run of rows in the
//! CG loop, `pcg.rs`). Every loop visits the rows of a level
//! in parallel (rayon) and only each row's span of fluid cells; each cell's value is computed
//! from values no other task writes in that loop, in a fixed order, so the result is the same
//! for any number of threads. There are no reductions. On more than one thread each cycle runs
//! on a team of the pool's threads (`team.rs`, [`Settings::team`]): one fan-out of joins per
//! application, its phases (slab passes, stages by rows, restrictions, the small levels) tasks
//! claimed from counters, with no fork and join between them; the same bits.
//!
//! In the CG loop the cycle takes the liquid's main body only: the matrix has no entry
//! between two connected pieces of the liquid, and the small ones (the drops a breaking wave
//! flings across the tank, which widen every row they lie in) are preconditioned apart by a
//! few symmetric Gauss-Seidel sweeps, a block-diagonal preconditioner (`drops.rs`,
//! [`Settings::drop_cells`]).

mod diagonal;
mod direct;
mod drops;
mod kernels;
mod layout;
mod level;
mod members;
mod pcg;
#[cfg(feature = "mg-profile")]
pub mod profile;
mod redim;
mod runs;
mod segments;
mod slabs;
mod sweeps;
mod taps;
mod team;
mod team_knobs;
#[cfg(test)]
mod tests;
mod wavefront;
mod window;

use super::super::mac_grid::CellLabel;
use super::super::sync_ptr::SyncPtr;
use level::Level;
use rayon::prelude::*;
pub use team_knobs::TeamKnobs;
pub use window::Window;

/// Coarsening stops at the first level with at most this many interior cells along every
/// axis (an axis may reach 1 interior cell before that: thin, quasi-2D tanks).
pub const COARSEST_INTERIOR: usize = 8;

/// Rows per task of the scatter and gather (rows of the CG vectors).
const ROWS_PER_TASK: usize = 16 * 1024;

/// The cycle's smoothing and shape (a W-cycle by default: `coarse_cycles` 2).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// Red-black sweeps before the restriction (and as many after the prolongation).
    pub pre_sweeps: u32,
    /// Red-black sweeps on the coarsest level (then as many black-red ones).
    pub coarsest_sweeps: u32,
    /// Most levels (the finest included).
    pub max_levels: usize,
    /// Cycles on each coarse level per visit from the level above (1: a V-cycle, 2: a
    /// W-cycle); the coarsest level is visited once (its sweeps are its solve).
    pub coarse_cycles: u32,
    /// Solve the finest coarse level that fits [`direct`]'s budgets exactly, ending the cycle
    /// there (else the coarsest level's sweeps end it).
    pub direct: bool,
    /// On more than one thread, run each cycle on a team of the pool's threads, its phases
    /// tasks claimed from counters (`team.rs`), rather than a rayon loop per phase (the same
    /// bits).
    pub team: bool,
    /// How the team shares out its work (for benchmarks; every value gives the same bits).
    #[doc(hidden)]
    pub team_knobs: TeamKnobs,
    /// Each set-up fits the levels to the liquid's box rather than the whole grid
    /// (`window.rs`; `false`, the whole grid: for benchmarks and tests).
    #[doc(hidden)]
    pub window: bool,
    /// In the CG loop, pieces of the liquid of at most this many cells (but the largest) are
    /// preconditioned apart from the cycle (`drops.rs`); 0: every piece in the cycle. 256 by
    /// default: the 8M dam break's drops hold at most 191 cells at frame 22, 401 at frame 28,
    /// and its replayed frame-22 solve took the same time with 64, 256 and 1,024.
    pub drop_cells: usize,
    /// Symmetric Gauss-Seidel sweeps on the drops' rows per application: 4 by default, where
    /// the random problems of the tests (a sixth of their rows in drops) take as many CG
    /// iterations as with the drops in the cycle (1 sweep: 4 more, 2: up to 2 more); on the 8M
    /// dam break 1, 2 and 4 all take the cycle's count.
    pub drop_sweeps: u32,
    /// Over-relaxation of the red-black smoother (red-black SOR smoothing, Yavneh 1996, "On
    /// red-black SOR smoothing in multigrid", SIAM J. Sci. Comput. 17): every half-sweep but
    /// the two of each smoothing that must stay plain (`wavefront::relaxation`: the first two
    /// from zero, and their mirror images after the coarse correction, so the cycle stays
    /// symmetric) moves `u` by `omega` times the Gauss-Seidel step. 1: plain Gauss-Seidel
    /// (the bits before session 26). 1.3 by default: the 1M dam break's 30 frames took 8.4
    /// CG iterations a substep with 1, 7.5 / 7.1 / 7.0 / 6.9 / 7.0 / 7.1 / 7.3 / 8.0 with
    /// 1.2 / 1.3 / 1.4 / 1.45 / 1.5 / 1.55 / 1.6 / 1.7; the 8M one's replayed frame-2 system
    /// 13 with 1, 11 with 1.3 to 1.6 but 10 with 1.5. 1.45 and 1.5 first failed the settled
    /// glass of `tests/obstacles_glass.rs` (a bottom vertex 6.7 mm off the base: a void of
    /// particles the surface did not fill; with 1.3 the same void showed at frames the test
    /// did not look at, and the surface fills it since session 27). With the test passing,
    /// 1.45 took 6.9 iterations against 7.1 but no less pressure time in three alternating
    /// pairs (`scripts/pressure_log.md`, "Session 27"), so 1.3 stays.
    pub omega: f32,
}

impl Default for Settings {
    /// A W-cycle (see the module docs) with three red-black sweeps before and after: with a
    /// V-cycle, on the 1M-particle dam break's replayed
    /// system 12 iterations to the default tolerance and about 9% less CPU time per solve than
    /// two sweeps (15 iterations; one sweep: 24 and more time, four: 11 and more time); two
    /// damped Jacobi sweeps need 22 (`BENCH_REPLAY_ONLY=1 cargo bench --bench bench_stepper`,
    /// changing this default).
    fn default() -> Self {
        Self {
            pre_sweeps: 3,
            coarsest_sweeps: 16,
            max_levels: 16,
            coarse_cycles: 2,
            direct: true,
            team: true,
            team_knobs: TeamKnobs::default(),
            window: true,
            drop_cells: 256,
            drop_sweeps: 4,
            omega: 1.3,
        }
    }
}

/// The level hierarchy of one grid, allocated once.
pub struct Multigrid {
    /// Every level the whole grid could need; the first [`Self::active`] are the current
    /// window's.
    levels: Vec<Level>,
    active: usize,
    /// Where the finest level lies in the simulation grid since the last set-up.
    window: Window,
    /// Per row of the CG vectors, the index of its cell in the finest level's arrays stored
    /// by colour ([`Level::split`]); built at the first [`Self::apply`] after each
    /// [`Self::setup`] (`None` until then). The CG loop's passes (`pcg.rs`) find the index by
    /// runs of rows instead and never build it.
    split_rows: Vec<u32>,
    split_len: Option<usize>,
    /// The exact solve of the coarse level that ends the cycle, where one qualifies
    /// ([`direct`]).
    direct: direct::Direct,
    /// The team's plans of the levels since the last set-up, for `team_key` (threads, stages,
    /// knobs).
    team_plans: Vec<team::LevelPlan>,
    team_key: Option<(usize, usize, TeamKnobs)>,
    /// Per phase of the team's cycle, its tasks claimed and done (`team.rs`).
    team_phases: Vec<[std::sync::atomic::AtomicU32; 2]>,
    /// The liquid's pieces preconditioned apart from the cycle in the CG loop (`drops.rs`).
    drops: drops::Drops,
    /// The CG rows' segments on the finest level since the last CG set-up (`runs.rs`).
    runs: runs::Runs,
    /// Smoothing settings (may be changed between solves).
    pub settings: Settings,
}

/// Grid dimensions of the level below one of `n` cells per axis (the wall layer included).
fn coarser(n: [usize; 3]) -> [usize; 3] {
    n.map(|m| (m - 1) / 2 + 2)
}

/// The grid of the level below one of `n` cells per axis, unless coarsening stops at `n`
/// (every axis at most [`COARSEST_INTERIOR`] interior cells, or nothing left to halve).
fn next_level(n: [usize; 3]) -> Option<[usize; 3]> {
    let c = coarser(n);
    (!n.iter().all(|&x| x <= COARSEST_INTERIOR + 2) && c != n).then_some(c)
}

impl Multigrid {
    /// The hierarchy for a grid of `n` cells per axis (outermost layer solid), with every
    /// buffer allocated.
    pub fn new(n: [usize; 3], settings: Settings) -> Self {
        let mut levels = vec![Level::new(n)];
        let mut m = n;
        while levels.len() < settings.max_levels.max(1) {
            let Some(c) = next_level(m) else { break };
            levels.push(Level::new(c));
            m = c;
        }
        Self {
            active: levels.len(),
            levels,
            window: Window::whole(n),
            settings,
            split_rows: Vec::new(),
            split_len: None,
            direct: direct::Direct::new(),
            team_plans: Vec::new(),
            team_key: None,
            team_phases: Vec::new(),
            drops: drops::Drops::new(n.iter().product(), settings.drop_cells > 0),
            runs: {
                let cells = n.iter().product::<usize>();
                runs::Runs::with_room(cells, cells / runs::CELLS_PER_ENTRY)
            },
        }
    }

    /// Cells per axis of the simulation grid.
    pub fn dims(&self) -> [usize; 3] {
        self.window.full
    }

    /// The finest level's window of the simulation grid since the last set-up.
    pub fn window(&self) -> Window {
        self.window
    }

    /// Number of levels of the current window.
    pub fn levels(&self) -> usize {
        self.active
    }

    /// Unknowns (fluid cells with a non-zero diagonal) per level, finest first.
    pub fn unknowns(&self) -> Vec<usize> {
        self.levels[..self.active]
            .iter()
            .map(|l| l.unknowns())
            .collect()
    }

    /// Bytes the hierarchy holds.
    pub fn bytes(&self) -> usize {
        self.levels
            .iter()
            .map(|l| {
                4 * (l.u.capacity() * 4 + l.r.capacity() + 3 * l.w[0].capacity())
                    + l.label.capacity()
                    + l.count.capacity()
                    + l.spans.capacity() * 8
                    + l.unit_rows.capacity()
            })
            .sum::<usize>()
            + 4 * self.split_rows.capacity()
            + self.direct.bytes()
            + self.runs.bytes()
    }

    /// The level solved exactly at the bottom of the cycle, and its unknowns (`None`: the
    /// coarsest level is smoothed instead).
    pub fn direct_level(&self) -> Option<(usize, usize)> {
        self.direct.level.map(|l| (l, self.direct.unknowns()))
    }

    /// Re-labels every level for a new system: `labels` per cell of the finest grid (its
    /// outermost layer is taken as solid), `weights` the optional per-face weights in [0, 1]
    /// (`weights[a]` on face component `a`'s grid of `n + e_a` nodes; `None`: 1 on every face
    /// between two non-solid cells).
    /// The levels cover the liquid's box, not the whole grid ([`Settings::window`]).
    pub fn setup(&mut self, labels: &[CellLabel], weights: Option<&[Vec<f32>; 3]>) {
        self.drops.clear();
        self.setup_levels(labels, weights);
    }

    /// [`Self::setup`] without clearing the drops (the CG loop's set-up marks them first).
    fn setup_levels(&mut self, labels: &[CellLabel], weights: Option<&[Vec<f32>; 3]>) {
        self.split_len = None;
        self.runs.invalidate();
        self.team_key = None;
        let full = self.window.full;
        self.window = if self.settings.window {
            // Coarse cells cover the same fine cells as in the whole grid's hierarchy.
            Window::around_liquid(labels, full, 1 << (self.levels.len() - 1))
        } else {
            Window::whole(full)
        };
        // The levels of the window, coarsened as `new` does the grid's.
        let mut m = self.window.n;
        self.levels[0].redim(m);
        self.active = 1;
        while self.active < self.levels.len() {
            let Some(c) = next_level(m) else { break };
            self.levels[self.active].redim(c);
            self.active += 1;
            m = c;
        }
        self.levels[0].setup_finest(labels, weights, &self.window);
        for l in 1..self.active {
            let (f, c) = self.levels.split_at_mut(l);
            c[0].setup_coarse(&f[l - 1]);
            // The finer level's prolongation reads this level's rows (`segments.rs`).
            let f = &mut f[l - 1];
            let cl = &c[0].lay;
            f.seg.place_prolong(f.n, c[0].n, |r, x| cl.start(r, x));
            let (c, fl) = (&mut c[0], &f.lay);
            c.seg.place_restrict(c.n, f.n, |r, x| fl.reach(r, x));
        }
        // The finest level that fits the direct solve's budgets ends the cycle.
        self.direct.level = None;
        if self.settings.direct {
            let fine_rows: usize = self.levels[0]
                .spans
                .iter()
                .map(|&[lo, hi]| (hi - lo) as usize)
                .sum();
            for l in 1..self.active {
                if self.direct.factor(&self.levels[l], l, fine_rows) {
                    break;
                }
            }
        }
    }

    /// `z = M^-1 r` on rows of fluid cells: row `i` is grid cell `cell_of[i]` (strictly
    /// increasing, as the pressure solver numbers its rows, and the same rows for every
    /// application between two [`Self::setup`]s); `r` and `z` have at least `cell_of.len()`
    /// entries (others are left alone). One cycle.
    pub fn apply(&mut self, cell_of: &[u32], r: &[f64], z: &mut [f64]) {
        let nf = cell_of.len();
        self.map_rows(cell_of);
        self.scatter(r);
        self.vcycle();
        self.gather(&mut z[..nf]);
    }

    /// Builds [`Self::split_rows`] for the rows `cell_of` unless built since the last setup
    /// (it grows only when a system has more rows than any before). Panics unless `cell_of`
    /// is strictly increasing and within the grid: then the rows' split cells are distinct
    /// (the split layout is a one-to-one map of the cells), which makes the parallel writes of
    /// the scatters disjoint.
    fn map_rows(&mut self, cell_of: &[u32]) {
        let nf = cell_of.len();
        if self.split_len == Some(nf) {
            return;
        }
        if self.split_rows.len() < nf {
            self.split_rows.resize(nf, 0);
        }
        let (lv, win) = (&self.levels[0], &self.window);
        let cells = win.full.iter().product();
        self.split_rows[..nf]
            .par_chunks_mut(ROWS_PER_TASK)
            .zip(cell_of.par_chunks(ROWS_PER_TASK))
            .enumerate()
            .for_each(|(t, (s, c))| {
                check_task_cells(cell_of, t, c, cells);
                // The window's first cell in the row of the last cell: a next cell further
                // along the same row needs no division. Cell i of the window's row lies at
                // compact i / 2 of the colour of i's parity (`base[i % 2]`, [`Level::split`])
                // of the stored range from `x0` to `end` (`layout.rs`).
                let (nx, mut start, mut jk) = (win.n[0], usize::MAX, (0, 0));
                let (mut base, mut range) = ([0, 0], (1, 0));
                for (s, &c) in s.iter_mut().zip(c) {
                    let c = c as usize;
                    if c < start || c >= start + nx {
                        assert!(
                            win.holds(c),
                            "multigrid: a row's cell outside the liquid's box"
                        );
                        let [i, j, k] = win.local(c);
                        start = c - i;
                        jk = (j, k);
                        range = (1, 0);
                    }
                    let i = c - start;
                    if i < range.0 || i >= range.1 {
                        let (j, k) = jk;
                        base = lv.bases(j, k, i);
                        range = lv.lay.holding(j + lv.n[1] * k, i);
                    }
                    *s = (base[i & 1] + (i >> 1)) as u32;
                }
            });
        self.split_len = Some(nf);
    }

    /// `z` (the rows) from the finest level's `u` at the rows' cells (after [`Self::map_rows`]).
    fn gather(&self, z: &mut [f64]) {
        let (u, sr) = (&self.levels[0].u, &self.split_rows[..z.len()]);
        z.par_iter_mut()
            .zip(sr.par_iter())
            .with_min_len(ROWS_PER_TASK)
            .for_each(|(z, &c)| *z = u[c as usize] as f64);
    }

    /// Writes the rows' `r` into the finest level's `b` at their cells ([`Self::map_rows`]
    /// first).
    fn scatter(&mut self, r: &[f64]) {
        let nf = self.split_len.unwrap_or(0);
        let bp = SyncPtr(self.levels[0].b.as_mut_ptr());
        let sr = &self.split_rows[..nf];
        sr.par_chunks(ROWS_PER_TASK)
            .zip(r[..nf].par_chunks(ROWS_PER_TASK))
            .for_each(|(c, x)| {
                for (&c, &x) in c.iter().zip(x) {
                    // SAFETY: the rows' split cells are distinct and in bounds
                    // ([`Self::map_rows`]), each written by the task of its row.
                    unsafe { *bp.get(c as usize) = x as f32 };
                }
            });
    }

    /// One V-cycle (or W-cycle, [`Settings::coarse_cycles`]) on the finest level's `b`, into
    /// its `u` (McAdams Algorithm 1).
    pub fn vcycle(&mut self) {
        let mut s = self.settings;
        // The first sweep starts from u = 0 and leaves no stale value behind only when there is
        // at least one whole sweep.
        s.pre_sweeps = s.pre_sweeps.max(1);
        s.coarsest_sweeps = s.coarsest_sweeps.max(1);
        s.coarse_cycles = s.coarse_cycles.max(1);
        let threads = rayon::current_num_threads();
        if self.team_fits(&s, threads) {
            self.team_cycle(&s, threads);
        } else {
            self.cycle(0, true, &s);
        }
    }

    /// The cycle on level `l` (its `b` set): from `u = 0` (`from_zero`) or from the `u` it
    /// holds, `u += B (b - A u)` with `B` the from-zero cycle (a linear, consistent iteration).
    /// Below level `l`, `coarse_cycles` cycles in a row approximate the coarse problem (the
    /// first from zero): `k` steps of a symmetric iteration from zero are a symmetric map of the
    /// right-hand side, so the cycle stays symmetric.
    fn cycle(&mut self, l: usize, from_zero: bool, s: &Settings) {
        // The bottom: the directly solved level, else the coarsest (smoothed).
        let last = self.direct.level.unwrap_or(self.active - 1);
        if l == last && self.direct.level.is_some() {
            self.direct.solve(&mut self.levels[l]);
            return;
        }
        if l == last {
            // Only ever entered from zero (the repeats below stop above the coarsest level).
            let lv = &mut self.levels[last];
            smooth(lv, s.coarsest_sweeps, false, s.omega);
            smooth(lv, s.coarsest_sweeps, true, s.omega);
            return;
        }
        let lv = &mut self.levels[l];
        // The residual in the sweeps' pass.
        let x = wavefront::Extra::Residual;
        sweeps::rb_sweeps(lv, s.pre_sweeps as usize, 0, from_zero, x, s.omega);
        {
            let (f, c) = self.levels.split_at_mut(l + 1);
            kernels::restrict(&f[l], &mut c[0]);
        }
        self.cycle(l + 1, true, s);
        if l + 1 < last {
            for _ in 1..s.coarse_cycles {
                self.cycle(l + 1, false, s);
            }
        }
        let (f, c) = self.levels.split_at_mut(l + 1);
        // The prolongation in the sweeps' pass (black first: the adjoint order).
        let x = wavefront::Extra::Prolong(&c[0]);
        sweeps::rb_sweeps(&mut f[l], s.pre_sweeps as usize, 1, false, x, s.omega);
    }
}

/// Panics unless the cells `c` of task `t` (rows `t ROWS_PER_TASK ..` of `cell_of`) are
/// strictly increasing, within a grid of `cells` cells, and below the next task's first cell:
/// then the tasks' writes at their rows' cells are disjoint and in bounds.
fn check_task_cells(cell_of: &[u32], t: usize, c: &[u32], cells: usize) {
    let next = cell_of.get((t + 1) * ROWS_PER_TASK).copied();
    let last = *c.last().unwrap_or(&0);
    assert!(
        c.windows(2).all(|w| w[0] < w[1])
            && (last as usize) < cells
            && next.is_none_or(|n| n > last),
        "multigrid: the rows' cells must be strictly increasing and in the grid"
    );
}

/// `sweeps` red-black Gauss-Seidel sweeps; `mirrored`: black first (the adjoint order, after
/// the coarse correction); otherwise red first, the first from `u = 0`.
fn smooth(lv: &mut Level, sweeps: u32, mirrored: bool, omega: f32) {
    let x = wavefront::Extra::None;
    if mirrored {
        sweeps::rb_sweeps(lv, sweeps as usize, 1, false, x, omega);
    } else {
        sweeps::rb_sweeps(lv, sweeps as usize, 0, true, x, omega);
    }
}
