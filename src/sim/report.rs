//! What the stepper reports: per-stage seconds, per-substep figures and the frame's summary
//! (written to `stats.jsonl` by the run; everything but the seconds is deterministic).

use super::emit;

/// Seconds spent per stage during one frame (wall-clock; the only non-deterministic output).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct StageSeconds {
    /// Advection. Since the advection runs fused with the grid-to-particle transfer, its time
    /// is counted under `transfer` and this stays 0 (kept for the stats format).
    pub advect: f64,
    /// Particle-to-grid splat of the velocities.
    pub splat: f64,
    /// Cell labels, face classification, gravity and wall conditions.
    pub forces: f64,
    /// Pressure projection (building the system, MIC(0), CG, velocity update).
    pub pressure: f64,
    /// FLIP change and velocity extrapolation.
    pub extrapolate: f64,
    /// Grid-to-particle PIC/FLIP blend and RK2 advection.
    pub transfer: f64,
    /// Cell sort of the particles, and restoring creation order at the end of the frame.
    pub sort: f64,
    /// Density correction (its splat, solve and particle displacement).
    pub density: f64,
    /// Emitters, sinks and open faces (removal, emission, the emitters' grid velocity).
    pub emit: f64,
}

impl StageSeconds {
    /// Sum of all stages.
    pub fn total(&self) -> f64 {
        self.advect
            + self.splat
            + self.forces
            + self.pressure
            + self.extrapolate
            + self.transfer
            + self.sort
            + self.density
            + self.emit
    }
}

/// What happened in one substep.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct SubstepReport {
    /// Substep length, s.
    pub dt: f64,
    /// Pressure-solve iterations.
    pub pressure_iterations: u32,
    /// Final relative residual `max|r| / max|b|` of the pressure solve.
    pub pressure_residual: f64,
    /// Fluid cells (pressure unknowns).
    pub fluid_cells: u32,
    /// Iterations of the density correction's solve (0 when it is off).
    pub density_iterations: u32,
}

/// What happened while advancing one frame.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct FrameReport {
    /// Substeps taken.
    pub substeps: u32,
    /// Largest pressure-solve iteration count of any substep.
    pub pressure_iterations_max: u32,
    /// Sum of pressure-solve iterations over the substeps.
    pub pressure_iterations_total: u32,
    /// Largest final relative residual of any substep's pressure solve.
    pub pressure_residual_max: f64,
    /// Largest particle speed at the end of the frame, m/s.
    pub max_speed: f32,
    /// Wall-clock seconds per stage.
    pub seconds: StageSeconds,
    /// One entry per substep, in order.
    pub substep_reports: Vec<SubstepReport>,
    /// Particles added per emitter and removed per sink and by open faces (absent from the
    /// stats of scenes without emitters, sinks or open faces).
    #[serde(skip_serializing_if = "emit::EmissionReport::is_empty")]
    pub emission: emit::EmissionReport,
    /// Set on the frame where emission first stopped at `limits.max_particles` (the run warns
    /// once).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub particle_cap_reached: bool,
    /// Particles removed from crowded cells (`solver.max_particles_per_cell`; left out of the
    /// stats when none).
    #[serde(skip_serializing_if = "is_zero")]
    pub crowded_removed: u64,
    /// Particles moved from crowded cells to emptier neighbours instead (left out of the
    /// stats when none).
    #[serde(skip_serializing_if = "is_zero")]
    pub crowded_moved: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
