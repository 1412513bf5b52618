//! The PIC/FLIP stepper: one [`Simulation::advance_frame`] per video frame.
//!
//! Method: PIC/FLIP on a MAC grid (Zhu & Bridson 2005, "Animating sand as a fluid", ACM TOG
//! 24(3); Bridson, *Fluid Simulation for Computer Graphics*, 2nd ed., 2015). One substep of
//! length `dt`, each stage in its own module:
//!
//! 1. [`cell_sort`]: stable counting sort of the particles by cell;
//! 2. [`transfer::splat`]: particle to grid, trilinear with weight normalisation; cell labels
//!    solid (wall layer) / fluid (holds a particle) / empty; the splatted grid is kept as
//!    `v_old`;
//! 3. [`forces`]: gravity `u += g k`, then zero normal velocity on wall faces; the kick `k`
//!    (also the pressure impulse's length) is `(dt_prev + dt) / 2`, see "Time integration";
//! 4. [`pressure`]: 7-point Poisson projection solved by conjugate gradient preconditioned by
//!    a [`pressure::multigrid`] W-cycle (the default) or MIC(0) (`solver.pressure_preconditioner`);
//!    with `solver.free_surface = "ghost_fluid"` the particles' density is splatted first, the
//!    cells' fill fractions place the surface and the surface cells whose centre is outside
//!    the liquid are labelled air ([`ghost_fluid`], before the faces are classified);
//! 5. [`density`] (every substep, or every `solver.volume_correction_interval` of simulated
//!    time, see [`density::correction_due`]): a position correction that spreads over-dense
//!    particles back to the seeding density (a second Poisson solve with the same matrix),
//!    keeping the liquid's volume; it moves the particles where they were splatted, before the
//!    transfer and advection;
//! 6. [`extrapolate`]: the projected velocity and the FLIP change `v_new - v_old` spread into
//!    air and wall faces, enough layers for the substep's CFL number;
//! 7. [`transfer::gather_and_advect`]: grid to particle, `v_p = f (v_p - v_old) + v_new`, and
//!    in the same pass [`advect`]ion by RK2 through `v_new`, mirrored back off walls (clamped on
//!    open faces); then solid obstacles ([`solids`]) stop particles before they enter a solid
//!    and push out any that are inside. With `solver.transfer = "apic"` the splat adds each
//!    particle's affine term and the gather is [`apic::gather_and_advect`] (`v_p = v_new(x_p)`,
//!    `C_p = grad v_new(x_p)`; Jiang et al. 2015).
//! 8. [`crowding`] (with `solver.max_particles_per_cell`, default 24): the particles sorted by
//!    cell for the next substep, and any cell holding more than the bound thinned to it (which
//!    particles go: a hash of their creation index; the cell's mean velocity kept; each goes
//!    to an emptier liquid cell nearby where there is one, otherwise it is removed).
//!
//! Advection comes last rather than first so that the particles are the whole state between
//! substeps (no grid velocity outlives a substep): a simulation rebuilt from a frame's particles
//! continues bit for bit (exact resume). Cyclically it is the same sequence as
//! "advect, splat, ..., blend".
//!
//! Substeps and time integration (variable-step leapfrog, the substep lengths, what depends
//! on where frames fall): see [`stepping`].
//!
//! Determinism: every parallel stage either writes disjoint outputs computed in a fixed order
//! (the splat runs colour by colour over blocks of cell rows of cell-sorted particles; the
//! preconditioner's
//! blocks are fixed by the data, not by the pool) or reduces in fixed chunks ([`reduce`]). The
//! result of a frame depends only on the scene, the particles in creation order and the frame
//! index, for any thread count; `tests/physics.rs` checks 1, 2 and 3 threads and resume.
//!
//! Performance: particles are struct-of-arrays and cell-sorted every substep, grids are flat
//! `f32` arrays stored z-plane by z-plane (pressure vectors `f64` over the fluid cells only),
//! every buffer is allocated when the simulation is created (nothing is allocated inside a
//! substep), and every stage that scales with particles or cells runs on rayon. Small scenes
//! are a chain of short parallel loops, so the stages are split along lines that keep both
//! cores busy whatever the liquid's shape (blocks of cell rows, not z-planes), extrapolation
//! only visits rows near the liquid, the pool's other workers are kept awake during a frame
//! (`with_workers_awake`), and the grid-to-particle loop runs eight particles at a time with
//! AVX2 where the CPU has it (`gather_avx2`, bit-identical to the scalar loop).
//!
//! Layer 2 (a stage beside surface, render and output, importing none of them): imports error,
//! particles and geometry. Owns its settings ([`settings`]: `SolverSettings`, `TimeSettings`,
//! `SimSettings`), the seeding of sources ([`seeding`]) and the pressure solve ([`pressure`]:
//! system assembly, the CG loop, and the preconditioners behind one trait).

pub mod advect;
pub mod apic;
mod awake;
mod bench;
pub mod cell_sort;
pub mod crowding;
pub mod density;
#[cfg(target_arch = "x86_64")]
mod displace_avx2;
pub mod emit;
pub mod extrapolate;
pub mod forces;
pub mod friction;
#[cfg(target_arch = "x86_64")]
mod gather_avx2;
pub mod ghost_fluid;
pub mod mac_grid;
mod permute;
pub mod pressure;
pub mod reduce;
mod report;
pub mod rest_share;
pub mod seeding;
pub mod settings;
pub mod solids;
mod stepping;
mod substep;
mod sync_ptr;
pub mod thin_walls;
pub mod transfer;

pub use crate::particles::{self, Particles};

/// For benchmarks (`scripts/bench_mg_cycle.rs`: the cycle in the stepper's conditions).
#[doc(hidden)]
pub use awake::with_workers_awake;
use cell_sort::SortedParticles;
use extrapolate::Extrapolator;
use mac_grid::{CellLabel, FaceKind, GridDims};
use pressure::PressureSolver;
pub use report::{FrameReport, StageSeconds, SubstepReport};
pub use settings::{PressurePreconditioner, SimSettings, SolverSettings, TimeSettings, Transfer};
use std::time::Instant;
pub use stepping::KickRule;
use stepping::{leapfrog_kick, max_speed};
use substep::{Step, substep};

/// Grid state and scratch of a substep (workspace only: nothing here outlives a substep).
struct Workspace {
    dims: GridDims,
    labels: Vec<CellLabel>,
    kinds: [Vec<FaceKind>; 3],
    vel: [Vec<f32>; 3],
    old: [Vec<f32>; 3],
    /// Two floats per face, used by stages that are never live at once: the splat's
    /// accumulators `[sum w v, sum w]` per face, then (its first half) the density
    /// correction's displacement, m, on the faces, and (past `d.faces(0)` in the first
    /// component) the cells' particle density ([`split_density`]; one buffer: 16 bytes per
    /// cell less).
    disp: [Vec<f32>; 3],
    /// Ghost-fluid surface only: scratch of [`ghost_fluid::demote_surface_slivers`].
    sliver: Vec<bool>,
    density_correction: bool,
    pressure: PressureSolver,
    extrapolator: Extrapolator,
    sorted: SortedParticles,
    last_solve: pressure::SolveStats,
    emission: emit::Emission,
    solids: solids::SolidState,
    crowding: crowding::Crowding,
    /// The friction of each face this substep, for the particles (allocated only for scenes
    /// with friction; `friction::rub_particles`).
    wall_layer: friction::WallLayer,
}

impl Workspace {
    fn new(dims: GridDims, emission: emit::Emission, obstacles: solids::Obstacles) -> Self {
        let faces = |a: usize| dims.faces(a);
        let fgrid = || std::array::from_fn(|a| vec![0.0f32; faces(a)]);
        Self {
            dims,
            labels: vec![CellLabel::Empty; dims.cells()],
            kinds: std::array::from_fn(|a| vec![FaceKind::Free; faces(a)]),
            vel: fgrid(),
            old: fgrid(),
            disp: std::array::from_fn(|a| vec![0.0; 2 * faces(a)]),
            sliver: Vec::new(),
            density_correction: true,
            pressure: PressureSolver::new(dims.cells()),
            extrapolator: Extrapolator::new(&dims),
            sorted: SortedParticles::default(),
            last_solve: Default::default(),
            emission,
            solids: solids::SolidState::new(obstacles, &dims),
            crowding: crowding::Crowding::with_capacity(256),
            wall_layer: Default::default(),
        }
    }
}

/// A running simulation. Its whole state is the scene, the particles, the frame index and the
/// last substep's length: it can be rebuilt exactly from a checkpoint (see `checkpoint`).
pub struct Simulation {
    settings: SimSettings,
    particles: Particles,
    frame: u32,
    /// Length of the last substep taken, s (the next kick's `dt_prev`): 0 before the first
    /// substep (a half kick), NaN when unknown (a state from outside; the kick is then `dt`).
    last_dt: f64,
    /// The kick rule (the leapfrog; others for comparisons only).
    kick_rule: KickRule,
    ws: Workspace,
}

impl Simulation {
    /// A simulation of `settings` (a [`SimSettings`], or a scene, which converts into one)
    /// whose particles are at the state of the end of `frame`. For `frame > 0` give the last
    /// substep's length with [`Self::with_last_substep`] to continue bit for bit.
    pub fn new(
        settings: impl Into<SimSettings>,
        particles: Particles,
        frame: u32,
    ) -> anyhow::Result<Self> {
        let scene: SimSettings = settings.into();
        let d = &scene.domain;
        anyhow::ensure!(
            d.cell_size.is_finite() && d.cell_size > 0.0,
            "domain.cell_size must be a positive number of metres, got {}",
            d.cell_size
        );
        anyhow::ensure!(
            d.resolution.iter().all(|&r| r >= 3),
            "domain.resolution must be at least 3 cells per axis (one wall layer each side), got {:?}",
            d.resolution
        );
        anyhow::ensure!(
            particles.len() < u32::MAX as usize,
            "too many particles ({})",
            particles.len()
        );
        for a in 0..3 {
            let bad = (0..particles.len())
                .find(|&i| !(particles.pos[a][i].is_finite() && particles.vel[a][i].is_finite()));
            if let Some(i) = bad {
                anyhow::bail!(
                    "particle {i} has a non-finite position or velocity ({:?}, {:?}): every \
                     particle needs finite numbers",
                    particles.position(i),
                    particles.velocity(i)
                );
            }
        }
        if let Some(dt) = scene.solver.fixed_dt {
            anyhow::ensure!(
                dt.is_finite() && dt > 0.0,
                "solver.fixed_dt must be positive, got {dt}"
            );
        }
        let dims = GridDims::new(d);
        let emission = emit::Emission::new(
            &dims,
            &scene.emitters,
            &scene.sinks,
            &d.boundaries,
            scene.limits.cap(),
            scene.seed,
        )
        .with_obstacles(scene.obstacles.solids.clone())
        .with_cfl(scene.solver.cfl);
        let obstacles = scene.obstacles.clone();
        let mut ws = Workspace::new(dims, emission, obstacles);
        ws.solids.set_gravity(scene.gravity);
        if ws
            .solids
            .friction_faces(scene.domain.friction.to_f32())
            .any()
        {
            ws.wall_layer = friction::WallLayer::new(&dims);
        }
        let mut particles = particles;
        let apic = scene.solver.transfer == Transfer::Apic;
        ws.sorted.affine = apic;
        if !apic {
            particles.affine = Default::default();
        } else if !particles.has_affine() {
            // A start (or a PIC/FLIP state): zero affine matrices, sized now so that no frame
            // allocates them.
            let n = particles.len();
            particles.affine = std::array::from_fn(|_| vec![0.0; n]);
        } else if particles.affine.iter().any(|c| c.len() != particles.len()) {
            anyhow::bail!(
                "the particles' affine matrices do not match their count ({} particles)",
                particles.len()
            );
        }
        if scene.solver.free_surface == settings::FreeSurface::GhostFluid {
            ws.pressure.fill = vec![0.0; dims.cells()];
            ws.sliver = vec![false; dims.cells()];
        }
        // The workspace's solver starts with MIC(0) (`PressureSolver::new`).
        let choice = scene.solver.pressure_preconditioner;
        if choice != PressurePreconditioner::Mic0 {
            ws.pressure.set_preconditioning(choice, dims.n);
        }
        Ok(Self {
            settings: scene,
            particles,
            frame,
            last_dt: if frame == 0 { 0.0 } else { f64::NAN },
            kick_rule: KickRule::Leapfrog,
            ws,
        })
    }

    /// The same simulation with the length of the substep that ended `frame` (what
    /// [`Self::last_substep`] said then), for the leapfrog kick that starts the next frame.
    pub fn with_last_substep(mut self, dt: f64) -> anyhow::Result<Self> {
        anyhow::ensure!(
            dt.is_finite() && dt >= 0.0,
            "the last substep's length must be a finite, non-negative time, got {dt}"
        );
        self.last_dt = dt;
        Ok(self)
    }

    /// Length of the last substep taken, s (0 at frame 0): part of the state (checkpoints).
    pub fn last_substep(&self) -> f64 {
        self.last_dt
    }

    /// The frame whose end the particles are at.
    pub fn frame(&self) -> u32 {
        self.frame
    }

    /// The particles, in creation order.
    pub fn particles(&self) -> &Particles {
        &self.particles
    }

    /// The settings being simulated.
    pub fn settings(&self) -> &SimSettings {
        &self.settings
    }

    /// Precondition the pressure solve with the scene's `solver.pressure_preconditioner`
    /// (default true; false gives plain CG, for benchmarks). Allocates: call before stepping.
    #[doc(hidden)]
    pub fn set_preconditioner(&mut self, on: bool) {
        if on {
            let choice = self.settings.solver.pressure_preconditioner;
            self.ws.pressure.set_preconditioning(choice, self.ws.dims.n);
        } else {
            self.ws.pressure.set_preconditioner(false);
        }
    }

    /// Divergence times `h` (m/s) of every fluid cell after the last substep's projection,
    /// with that solve's statistics (`rhs_max` is the same measure before the solve). For tests.
    #[doc(hidden)]
    pub fn last_projection(&self) -> (Vec<f64>, pressure::SolveStats) {
        let ws = &self.ws;
        let mut div = vec![0.0; ws.dims.cells()];
        pressure::divergence(&ws.dims, &ws.labels, &ws.vel, &mut div);
        let h = ws.dims.h as f64;
        let fluid = div
            .iter()
            .zip(&ws.labels)
            .filter(|(_, l)| **l == CellLabel::Fluid)
            .map(|(x, _)| x * h)
            .collect();
        (fluid, ws.last_solve)
    }

    /// Ghost fluid only: grid size, labels as the last projection saw them, fill fractions.
    #[doc(hidden)]
    pub fn ghost_surface(&self) -> Option<([usize; 3], &[CellLabel], &[f32])> {
        let ws = &self.ws;
        (!ws.pressure.fill.is_empty()).then(|| (ws.dims.n, &ws.labels[..], &ws.pressure.fill[..]))
    }

    /// Fewest rows per block of the block-Jacobi MIC(0) preconditioner (for tests: a small
    /// value exercises the parallel blocks on small scenes).
    #[doc(hidden)]
    pub fn set_preconditioner_block_rows(&mut self, rows: usize) {
        self.ws.pressure.set_block_rows(rows);
    }

    /// The kick rule ([`KickRule`]; default the leapfrog): for comparisons only.
    #[doc(hidden)]
    pub fn set_kick_rule(&mut self, rule: KickRule) {
        self.kick_rule = rule;
    }

    /// Apply the density correction (default true; false for benchmarks and comparisons).
    #[doc(hidden)]
    pub fn set_density_correction(&mut self, on: bool) {
        self.ws.density_correction = on;
    }

    /// Advances to the end of the next frame, `self.frame() + 1`, at time
    /// `scene.frame_time(frame)`.
    pub fn advance_frame(&mut self) -> FrameReport {
        // Run the frame on a worker of the current rayon pool: called from outside the pool
        // (the CLI's main thread), every parallel loop would otherwise pay a cross-thread
        // hand-off, which costs more than the work in small scenes.
        rayon::scope(|_| with_workers_awake(|| self.advance_frame_in_pool()))
    }

    fn advance_frame_in_pool(&mut self) -> FrameReport {
        if self.kick_rule == KickRule::FrameStartDt && self.frame > 0 {
            self.last_dt = f64::NAN;
        }
        let mut report = FrameReport::default();
        let most = self
            .settings
            .steps_per_frame()
            .max(self.settings.solver.max_substeps);
        report.substep_reports.reserve(most as usize);
        let ws = &mut self.ws;
        let d = ws.dims;
        let t = Instant::now();
        // The particles' arrays move into the sorted state for the frame (no copy) and come
        // back in creation order at its end.
        ws.sorted.take(&mut self.particles, d.cells());
        ws.crowding.invalidate();
        advect::clamp_inside(&d, &mut ws.sorted);
        ws.emission.begin_frame(&mut ws.sorted);
        report.seconds.sort += t.elapsed().as_secs_f64();
        let t_frame = self.settings.frame_time(self.frame);

        let solver = &self.settings.solver;
        let g = self.settings.gravity.map(|x| x as f32);
        let gnorm = (g[0] * g[0] + g[1] * g[1] + g[2] * g[2]).sqrt() as f64;
        if let Some(dt) = solver.fixed_dt {
            let steps = self.settings.steps_per_frame();
            for i in 0..steps {
                let umax = max_speed(&ws.sorted) as f64;
                let at = Step {
                    t_start: t_frame + i as f64 * dt,
                    t_end: if i + 1 == steps {
                        self.settings.frame_time(self.frame + 1)
                    } else {
                        t_frame + (i + 1) as f64 * dt
                    },
                };
                let kick = leapfrog_kick(&mut self.last_dt, dt, self.kick_rule);
                let dts = [dt as f32, kick as f32];
                substep(ws, &self.settings, dts, umax, i == 0, at, &mut report);
            }
        } else {
            let t0 = self.settings.frame_time(self.frame);
            let t1 = self.settings.frame_time(self.frame + 1);
            let len = t1 - t0;
            let dt_min = len / solver.max_substeps.max(1) as f64;
            let dt_max = len / solver.min_substeps.max(1) as f64;
            let h = d.h as f64;
            let mut elapsed = 0.0f64;
            let mut n = 0u32;
            loop {
                let remaining = len - elapsed;
                let umax = max_speed(&ws.sorted) as f64;
                let last_allowed = n + 1 >= solver.max_substeps.max(1);
                let (dt, last) = stepping::substep_length(
                    solver,
                    [umax, gnorm, h],
                    [dt_min, dt_max],
                    remaining,
                    last_allowed,
                );
                let at = Step {
                    t_start: t0 + elapsed,
                    t_end: if last { t1 } else { t0 + (elapsed + dt) },
                };
                let kick = leapfrog_kick(&mut self.last_dt, dt, self.kick_rule);
                let dts = [dt as f32, kick as f32];
                substep(ws, &self.settings, dts, umax, n == 0, at, &mut report);
                elapsed += dt;
                debug_assert!(last || t0 + elapsed == at.t_end);
                n += 1;
                if last {
                    break;
                }
            }
        }

        report.max_speed = max_speed(&ws.sorted);
        let t = Instant::now();
        ws.emission.store(&mut ws.sorted, &mut self.particles);
        report.seconds.sort += t.elapsed().as_secs_f64();
        report.particle_cap_reached = ws.emission.take_cap_warning();
        report.crowded_removed = ws.crowding.take_removed();
        report.crowded_moved = ws.crowding.take_moved();
        report.emission = ws.emission.take_report();
        self.frame += 1;
        report
    }
}

/// The shared face buffer `disp` ([`Workspace`]) split into the three face grids (the density
/// correction's displacement) and the cells' particle density `rho`, which lives in the
/// splat's half of the first component: it is splatted after the velocity splat is done with
/// those accumulators and read until the correction has moved the particles.
fn split_density<'a>(
    d: &GridDims,
    disp: &'a mut [Vec<f32>; 3],
) -> ([&'a mut [f32]; 3], &'a mut [f32]) {
    let [d0, d1, d2] = disp;
    let (f0, tail) = d0.split_at_mut(d.faces(0));
    (
        [f0, d1.as_mut_slice(), d2.as_mut_slice()],
        &mut tail[..d.cells()],
    )
}
