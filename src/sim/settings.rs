//! The stepper's settings, owned here: [`SolverSettings`] (the scene's `solver` section),
//! [`TimeSettings`] (`time`: frame rate and last frame) with the clock that turns a frame index
//! into simulated time, and [`SimSettings`], the plain data a [`super::Simulation`] runs on
//! (domain, gravity, density, sources, seed, time, solver), which the scene reader fills in.
//!
//! Layer 2 (sim): imports error, particles and geometry only. Each section checks itself
//! (`check`), naming the field and the fix; the scene reader places the error in its file.
//! The clock follows the tutorial (a frame is `round(1 / (fps dt))` fixed steps) or, with
//! adaptive substeps, `frame / fps` (Bridson 2015, sec. 3.2).

use super::seeding::Source;
use crate::error::InputError;
use crate::error::check::{bounded, err, finite3, positive};
use crate::error::show;
use crate::geometry::Domain;
use crate::particles::MAX_ACCELERATION_OR_SPEED;
use serde::{Deserialize, Serialize};

/// Standard gravity, m/s^2.
pub const STANDARD_GRAVITY: f64 = 9.80665;

/// Most substeps per frame (`solver.max_substeps`, or the fixed steps a frame takes with
/// `solver.fixed_dt`): beyond it a typo (a `fixed_dt` of `1e-12`) would run for days and its
/// per-substep reports would fill memory.
pub const MAX_SUBSTEPS: u32 = 10_000;
/// The largest last frame index, `time.frames` (100,000: over 55 minutes at 30 fps, days of
/// simulation; anything larger is a typo).
pub const MAX_FRAMES: u32 = 100_000;
/// The largest CFL number, cells a particle may cross per substep (stable values are 1 to 5).
pub const MAX_CFL: f64 = 100.0;

/// Frames and frame rate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimeSettings {
    /// Frames per second of the output. (default: `30`)
    #[serde(default = "default_fps")]
    pub fps: f64,
    /// Index of the last frame. A run writes frames `0..=frames`, frame 0 being the initial
    /// state, so it covers `frames / fps` seconds. (default: `90`, three seconds at 30 fps)
    #[serde(default = "default_frames")]
    pub frames: u32,
}

impl Default for TimeSettings {
    fn default() -> Self {
        Self {
            fps: default_fps(),
            frames: default_frames(),
        }
    }
}

/// Stepper settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SolverSettings {
    /// FLIP share f in `v_p = f (v_p - v_old) + v_new`: 0 is PIC, 1 is pure FLIP. (default: `0.95`)
    #[serde(default = "default_flip_ratio")]
    pub flip_ratio: f64,
    /// CFL number: the largest distance, in cells, a particle may move in one substep.
    /// (default: `3`)
    #[serde(default = "default_cfl")]
    pub cfl: f64,
    /// Longest substep in units of `sqrt(h / |g|)` (`h` the cell size), a gravity-wave bound
    /// independent of the frame rate: the free surface is stepped explicitly (the pressure
    /// sees where the particles were, they move after), and at substeps longer than about
    /// 0.5 `sqrt(h / |g|)` grid-scale surface waves grow instead of decaying, so water at rest
    /// never settles (sloshing in a box kept 1e-4 J/kg after 15 s at 1/30 s substeps on a
    /// 1.25 cm grid; README, "Substeps"); and the release of a collapsing column in substeps
    /// of 0.37-0.44 `sqrt(h / |g|)` left its surge front 0.025-0.036 column widths behind the
    /// one of short substeps at T = 3.3 (README, "Frame rate"). 0 switches the bound off.
    /// (default: `0.32`; always
    /// written, so that a checkpoint from before the bound, which ran without it, is read as
    /// `0` and a resume of it under the new default is refused, naming this field)
    #[serde(default = "default_surface_wave_step")]
    pub surface_wave_step: f64,
    /// Fewest substeps per frame. (default: `1`)
    #[serde(default = "default_min_substeps")]
    pub min_substeps: u32,
    /// Most substeps per frame; the CFL condition is given up beyond it. (default: `64`)
    #[serde(default = "default_max_substeps")]
    pub max_substeps: u32,
    /// Fixed substep length, s, instead of CFL-adaptive substeps (the tutorial's mode); a frame
    /// is then `round(1 / (fps * fixed_dt))` steps. (default: none, adaptive)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fixed_dt: Option<f64>,
    /// Relative tolerance of the pressure solve: stop when the residual's max norm falls below
    /// this times the right-hand side's. (default: `1e-6`)
    #[serde(default = "default_pressure_tolerance")]
    pub pressure_tolerance: f64,
    /// Iteration cap of the pressure solve. (default: `1000`)
    #[serde(default = "default_pressure_max_iterations")]
    pub pressure_max_iterations: u32,
    /// Strength of the volume (density) correction, within [0, 1]: the share of each cell's
    /// particle over-density that a correction moves away (Kugelstadt et al. 2019; see
    /// `sim::density`). 0 switches it off. (default: `1`)
    #[serde(default = "default_volume_correction")]
    pub volume_correction: f64,
    /// Physical time between volume corrections, s: a correction runs in every substep that
    /// reaches a multiple of this time (after its projection), so it depends on the simulated
    /// time only, never on the frame rate; 0 corrects in every substep. (default: `0`)
    #[serde(default)]
    pub volume_correction_interval: f64,
    /// Most particles a cell may hold at the end of a substep: every substep, the particles of
    /// a cell holding more are thinned to this count (chosen by a hash of their creation
    /// index, the cell's mean velocity kept; each moved to an emptier liquid cell within two
    /// cells where there is one, otherwise removed; see `sim::crowding`). 0 switches it off;
    /// otherwise more than the seeding density, 8. (default: `24`, three times the seeding density;
    /// always written, so that a checkpoint from before the thinning, which ran without it,
    /// is read as `0` and a resume of it under the new default is refused, naming this field)
    #[serde(default = "default_max_particles_per_cell")]
    pub max_particles_per_cell: u32,
    /// Preconditioner of the pressure solve's conjugate gradient: `"mic0"` or `"multigrid"`.
    /// (default: `"multigrid"`, since session 8; always written into a run's scene, so that a
    /// checkpoint of a scene that left it out, which ran MIC(0) before session 8, is told apart)
    #[serde(default)]
    pub pressure_preconditioner: PressurePreconditioner,
    /// Particle/grid transfer: `"flip"` (the PIC/FLIP blend set by `flip_ratio`) or `"apic"`
    /// (affine particle-in-cell, Jiang et al. 2015: each particle carries its velocity
    /// gradient; `flip_ratio` is not used). Part of the physics hash (a checkpoint of one cannot
    /// resume the other); left out of the written scene when it is the default, so the physics
    /// hash of scenes that do not set it is unchanged. (default: `"flip"`)
    #[serde(default, skip_serializing_if = "Transfer::is_default")]
    pub transfer: Transfer,
    /// Free-surface pressure boundary: `"staircase"` (air cells at p = 0, first order) or
    /// `"ghost_fluid"` (p = 0 on the particles' surface between cell centres, Gibou et al.
    /// 2002; see `sim::ghost_fluid`). (default: `"staircase"`; left out of the written scene
    /// when it is the default)
    #[serde(default, skip_serializing_if = "FreeSurface::is_default")]
    pub free_surface: FreeSurface,
}

/// The free-surface pressure boundary (`solver.free_surface`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FreeSurface {
    /// Air cells hold p = 0 (the surface at the air cell's centre).
    #[default]
    Staircase,
    /// Ghost-fluid boundary: p = 0 where the particles' level set crosses zero.
    GhostFluid,
}

impl FreeSurface {
    fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

impl Transfer {
    fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

/// The particle/grid transfer (`solver.transfer`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Transfer {
    /// PIC/FLIP blend (Zhu & Bridson 2005) with FLIP share `flip_ratio`.
    #[default]
    Flip,
    /// Affine particle-in-cell (Jiang, Schroeder, Selle, Teran and Stomakhin 2015).
    Apic,
}

/// The pressure solve's preconditioner (`solver.pressure_preconditioner`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PressurePreconditioner {
    /// Modified incomplete Cholesky, block-Jacobi over slabs (Bridson 2015, ch. 5).
    Mic0,
    /// One multigrid W-cycle (McAdams, Sifakis and Teran 2010): the default.
    #[default]
    Multigrid,
}

impl Default for SolverSettings {
    fn default() -> Self {
        Self {
            flip_ratio: default_flip_ratio(),
            cfl: default_cfl(),
            surface_wave_step: default_surface_wave_step(),
            min_substeps: default_min_substeps(),
            max_substeps: default_max_substeps(),
            fixed_dt: None,
            pressure_tolerance: default_pressure_tolerance(),
            pressure_max_iterations: default_pressure_max_iterations(),
            volume_correction: default_volume_correction(),
            volume_correction_interval: 0.0,
            max_particles_per_cell: default_max_particles_per_cell(),
            pressure_preconditioner: PressurePreconditioner::default(),
            transfer: Transfer::default(),
            free_surface: FreeSurface::default(),
        }
    }
}

fn default_fps() -> f64 {
    30.0
}
fn default_frames() -> u32 {
    90
}
fn default_flip_ratio() -> f64 {
    0.95
}
fn default_cfl() -> f64 {
    3.0
}
/// Below the measured onset of growing surface waves (sloshing settles at 0.47
/// `sqrt(h / |g|)` and keeps 40 times more energy at 0.50 on a 1.25 cm grid; README,
/// "Substeps"), and short enough that the collapsing column's release does not depend on the
/// frame rate (its front spread 0.036 column widths over 24-400 fps at 0.47, 0.013 at 0.32:
/// README, "Frame rate"; issue 19).
pub const SURFACE_WAVE_STEP: f64 = 0.32;
fn default_surface_wave_step() -> f64 {
    SURFACE_WAVE_STEP
}
fn default_min_substeps() -> u32 {
    1
}
fn default_max_substeps() -> u32 {
    64
}
fn default_pressure_tolerance() -> f64 {
    1e-6
}
fn default_pressure_max_iterations() -> u32 {
    1000
}
fn default_volume_correction() -> f64 {
    1.0
}
/// Three times the seeding density: issue 19's bound on crowding (README, "Volume").
pub const MAX_PARTICLES_PER_CELL: u32 = 24;
fn default_max_particles_per_cell() -> u32 {
    MAX_PARTICLES_PER_CELL
}

/// Simulated time at the end of `frame`, s, for these settings. Derived from the frame index,
/// never accumulated.
pub fn frame_time(time: &TimeSettings, solver: &SolverSettings, frame: u32) -> f64 {
    match solver.fixed_dt {
        Some(dt) => frame as f64 * steps_per_frame(time, solver) as f64 * dt,
        None => frame as f64 / time.fps,
    }
}

/// With a fixed step: steps per frame (at least 1). With adaptive steps: 0.
pub fn steps_per_frame(time: &TimeSettings, solver: &SolverSettings) -> u32 {
    match solver.fixed_dt {
        Some(dt) => ((1.0 / (time.fps * dt)).round() as u32).max(1),
        None => 0,
    }
}

/// Everything the stepper and the seeding read: the physics part of a scene, as plain data.
#[derive(Debug, Clone, PartialEq)]
pub struct SimSettings {
    /// The simulation box and its grid.
    pub domain: Domain,
    /// Gravity vector, m/s^2.
    pub gravity: [f64; 3],
    /// Liquid density, kg/m^3 (scales pressure only).
    pub density: f64,
    /// Where the liquid starts.
    pub sources: Vec<Source>,
    /// Seed of the seeding jitter.
    pub seed: u64,
    /// Frames and frame rate.
    pub time: TimeSettings,
    /// Stepper settings.
    pub solver: SolverSettings,
    /// Inflows (`emitters`).
    pub emitters: Vec<super::emit::Emitter>,
    /// Outflows (`sinks`).
    pub sinks: Vec<super::emit::Sink>,
    /// `limits` (the particle cap).
    pub limits: super::emit::Limits,
    /// Solid obstacles (plain geometry; none by default).
    pub obstacles: super::solids::Obstacles,
}

impl From<&SimSettings> for SimSettings {
    fn from(s: &SimSettings) -> Self {
        s.clone()
    }
}

impl SimSettings {
    /// Simulated time at the end of `frame`, s.
    pub fn frame_time(&self, frame: u32) -> f64 {
        frame_time(&self.time, &self.solver, frame)
    }
    /// With a fixed step: steps per frame (at least 1). With adaptive steps: 0.
    pub fn steps_per_frame(&self) -> u32 {
        steps_per_frame(&self.time, &self.solver)
    }
}

/// Checks the scene's `gravity` and `density`.
pub fn check_gravity_density(gravity: &[f64; 3], density: f64) -> Result<(), InputError> {
    finite3(
        "gravity",
        gravity,
        "give gravity as three finite numbers in m/s^2, e.g. [0, 0, -9.80665]",
    )?;
    bounded(
        "gravity",
        gravity,
        MAX_ACCELERATION_OR_SPEED,
        "m/s^2",
        "check the exponent; Earth's gravity is [0, 0, -9.80665] m/s^2",
    )?;
    positive(
        "density",
        density,
        "set the liquid density in kg/m^3, e.g. 1000",
    )
}

impl TimeSettings {
    /// Checks the scene's `time` section.
    pub fn check(&self) -> Result<(), InputError> {
        let t = self;
        positive("time.fps", t.fps, "set the frames per second, e.g. 30")?;
        if !(0.01..=1e5).contains(&t.fps) {
            return Err(err(
                "time.fps",
                format!(
                    "{} frames per second is outside [0.01, 100000]",
                    show(t.fps)
                ),
                "set the frames per second, e.g. 24, 30 or 60",
            ));
        }
        if t.frames < 1 {
            return Err(err(
                "time.frames",
                "must be at least 1 (frame 0 is the initial state)",
                "set the index of the last frame, e.g. 90",
            ));
        }
        if t.frames > MAX_FRAMES {
            return Err(err(
                "time.frames",
                format!(
                    "{} frames is more than surge allows ({MAX_FRAMES})",
                    t.frames
                ),
                "set the index of the last frame, e.g. 90; split a very long shot into several runs",
            ));
        }
        Ok(())
    }
}

impl SolverSettings {
    /// Checks the scene's `solver` section (`fps`: the frame rate, which bounds `fixed_dt`).
    pub fn check(&self, fps: f64) -> Result<(), InputError> {
        let s = self;
        if !(0.0..=1.0).contains(&s.flip_ratio) {
            return Err(err(
                "solver.flip_ratio",
                format!("must be within [0, 1], got {}", s.flip_ratio),
                "use 0 for PIC, 1 for FLIP, e.g. 0.95",
            ));
        }
        positive(
            "solver.cfl",
            s.cfl,
            "set the CFL number (cells per substep), e.g. 3",
        )?;
        if s.cfl > MAX_CFL {
            return Err(err(
                "solver.cfl",
                format!(
                    "{} is more than surge allows ({MAX_CFL} cells per substep)",
                    show(s.cfl)
                ),
                "set the CFL number (cells per substep), e.g. 3; stable values are 1 to 5",
            ));
        }
        if !(s.surface_wave_step.is_finite() && s.surface_wave_step >= 0.0) {
            return Err(err(
                "solver.surface_wave_step",
                format!(
                    "must be a finite number >= 0, got {}",
                    show(s.surface_wave_step)
                ),
                "use 0.32 (substeps of at most 0.32 sqrt(h / |g|)), or 0 for no bound",
            ));
        }
        if s.min_substeps < 1 {
            return Err(err(
                "solver.min_substeps",
                "must be at least 1",
                "set it to 1 or more",
            ));
        }
        if s.max_substeps > MAX_SUBSTEPS {
            return Err(err(
                "solver.max_substeps",
                format!(
                    "{} is more than surge allows ({MAX_SUBSTEPS})",
                    s.max_substeps
                ),
                "the CFL condition rarely needs more than 64; lower it",
            ));
        }
        if s.max_substeps < s.min_substeps {
            return Err(err(
                "solver.max_substeps",
                format!(
                    "{} is below solver.min_substeps ({})",
                    s.max_substeps, s.min_substeps
                ),
                "make max_substeps at least min_substeps",
            ));
        }
        self.check_fixed_dt(fps)?;
        if !(s.pressure_tolerance.is_finite()
            && s.pressure_tolerance > 0.0
            && s.pressure_tolerance < 1.0)
        {
            return Err(err(
                "solver.pressure_tolerance",
                format!("must be within (0, 1), got {}", s.pressure_tolerance),
                "set the relative residual to reach, e.g. 1e-6",
            ));
        }
        if s.pressure_max_iterations < 1 {
            return Err(err(
                "solver.pressure_max_iterations",
                "must be at least 1",
                "set the iteration cap, e.g. 1000",
            ));
        }
        if !(0.0..=1.0).contains(&s.volume_correction) {
            return Err(err(
                "solver.volume_correction",
                format!("must be within [0, 1], got {}", show(s.volume_correction)),
                "use 1 for the full correction, 0 to switch it off",
            ));
        }
        if !(s.volume_correction_interval.is_finite() && s.volume_correction_interval >= 0.0) {
            return Err(err(
                "solver.volume_correction_interval",
                format!(
                    "must be a finite number >= 0 (seconds), got {}",
                    show(s.volume_correction_interval)
                ),
                "use 0 to correct after every substep, or e.g. 0.01",
            ));
        }
        let seeded = super::density::REST_DENSITY as u32;
        if s.max_particles_per_cell != 0 && s.max_particles_per_cell <= seeded {
            return Err(err(
                "solver.max_particles_per_cell",
                format!(
                    "{} is not above the seeding density ({seeded} particles per cell): evenly \
                     seeded liquid would lose particles",
                    s.max_particles_per_cell
                ),
                format!(
                    "use 0 to switch the thinning off, or a count above {seeded}, e.g. {MAX_PARTICLES_PER_CELL}"
                ),
            ));
        }
        Ok(())
    }

    fn check_fixed_dt(&self, fps: f64) -> Result<(), InputError> {
        let Some(dt) = self.fixed_dt else {
            return Ok(());
        };
        positive(
            "solver.fixed_dt",
            dt,
            "set the fixed step in seconds, or remove the key for adaptive substeps",
        )?;
        let steps = 1.0 / (fps * dt);
        if steps.round() > MAX_SUBSTEPS as f64 {
            return Err(err(
                "solver.fixed_dt",
                format!(
                    "{} s at {} fps is {steps:.0} steps per frame, more than surge allows ({MAX_SUBSTEPS})",
                    show(dt),
                    fps
                ),
                "check the exponent, or remove the key for CFL-adaptive substeps",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The preconditioner is always written (the default changed from MIC(0) to the multigrid
    /// in session 8, so a checkpoint whose scene left it out ran MIC(0), and a resume must see
    /// the difference), and read back; a scene that leaves it out gets the multigrid.
    #[test]
    fn pressure_preconditioner_is_always_written() {
        let a = SolverSettings::default();
        assert_eq!(a.pressure_preconditioner, PressurePreconditioner::Multigrid);
        let text = serde_json::to_string(&a).unwrap();
        assert!(
            text.contains(r#""pressure_preconditioner":"multigrid""#),
            "{text}"
        );
        let b = SolverSettings {
            pressure_preconditioner: PressurePreconditioner::Mic0,
            ..a
        };
        let text = serde_json::to_string(&b).unwrap();
        assert!(
            text.contains(r#""pressure_preconditioner":"mic0""#),
            "{text}"
        );
        let back: SolverSettings = serde_json::from_str(&text).unwrap();
        assert_eq!(back, b);
        let unnamed: SolverSettings = serde_json::from_str("{}").unwrap();
        assert_eq!(unnamed, SolverSettings::default());
    }
}
