//! Substep lengths and the leapfrog kicks of the stepper ([`super::Simulation`]).
//!
//! Substeps: with `solver.fixed_dt` a frame is exactly `scene.steps_per_frame()` steps of that
//! length (the tutorial's mode). Otherwise `dt` is the largest step with
//! `(u_max + |g| dt) dt <= cfl h`: a particle starting at the largest particle speed and
//! accelerated by gravity moves at most `cfl` cells (the meaning of `solver.cfl`; Bridson sec.
//! 3.2 bounds the same with `u_max + sqrt(5 h |g|)`, which costs 20% more substeps in fast
//! flow), and at most `surface_wave_step sqrt(h / |g|)` (0.32 by default: beyond about 0.5
//! grid-scale surface waves grow, and beyond about 0.35 the collapsing column's release, and
//! with it its front, depends on the substep length, see
//! [`super::settings::SolverSettings::surface_wave_step`]), clamped
//! to `[T / max_substeps, T / min_substeps]` for a frame of length `T = t(frame+1) - t(frame)`,
//! and what is left of the frame is cut into equal substeps no longer than that (the last ends
//! exactly at `scene.frame_time(frame + 1)`); the frame's times are derived from its index,
//! never accumulated across frames.
//!
//! Time integration: variable-step leapfrog (Stoermer-Verlet). The particle velocity is the
//! half-step one: each substep kicks it by gravity and pressure for `(dt_prev + dt) / 2` and
//! then drifts the particles for `dt` through the kicked grid velocity; the simulation's first
//! substep (frame 0) kicks half a step, and `dt_prev` crosses frame boundaries (it is state
//! besides the particles: checkpoints carry it, see [`super::Simulation::last_substep`]). Symplectic Euler (a full kick `dt` every substep, as before) put particles under an
//! acceleration `a` ahead by `a dt t / 2`, so the substep length, and with it the frame rate,
//! moved the collapsing column's front by 0.045 column widths (issue 19). Frames only sample
//! the state: besides the substep lengths (a frame shorter than the CFL step shortens its
//! substeps) only the pressure solve's warm start (dropped at a frame's first substep, within
//! the solver tolerance) depends on where frames fall
//! (`scripts/validate_physics.rs`).
//!

use super::SolverSettings;
use super::cell_sort::SortedParticles;
use rayon::prelude::*;

/// The next substep's length and whether it is the frame's last: `[umax, gnorm, h]` are the
/// largest particle speed (m/s), |g| (m/s^2) and the cell size (m); `[dt_min, dt_max]` the
/// frame's clamp; `remaining` what is left of the frame, s; `cap` says the substep cap is
/// reached (this one must end the frame).
pub(super) fn substep_length(
    solver: &SolverSettings,
    [umax, gnorm, h]: [f64; 3],
    [dt_min, dt_max]: [f64; 2],
    remaining: f64,
    cap: bool,
) -> (f64, bool) {
    // Largest dt with (u_max + |g| dt) dt <= cfl h: a particle starting at u_max and
    // accelerated by gravity moves at most cfl cells (stable form of the root).
    let reach = solver.cfl * h;
    let root = (umax * umax + 4.0 * gnorm * reach).sqrt();
    let mut dt = if umax + root > 0.0 {
        2.0 * reach / (umax + root)
    } else {
        dt_max
    };
    if solver.surface_wave_step > 0.0 && gnorm > 0.0 {
        dt = dt.min(solver.surface_wave_step * (h / gnorm).sqrt());
    }
    dt = dt.min(dt_max).max(dt_min);
    if cap || dt >= remaining * (1.0 - 1e-9) {
        (remaining, true)
    } else {
        // What is left in equal substeps (no sliver, and neighbouring substeps of about the
        // same length for the leapfrog kicks).
        (remaining / (remaining / dt * (1.0 - 1e-9)).ceil(), false)
    }
}

/// How a substep's kick is chosen: the leapfrog (the stepper's); the others only to measure
/// what it changes (`scripts/glass_runup.rs`, `sloshing_dt.rs`, `dam_volume_drift.rs`).
#[doc(hidden)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum KickRule {
    /// `(dt_prev + dt) / 2`, across frame boundaries.
    #[default]
    Leapfrog,
    /// The same, but `dt` at every frame's first substep (the rule before `dt_prev` was kept).
    FrameStartDt,
    /// `dt` every substep (symplectic Euler, the stepper before issue 19).
    SymplecticEuler,
}

/// The kick of a substep of length `dt` after one of `*prev` (leapfrog, see `substep`):
/// `(dt_prev + dt) / 2`, half a step at the start (`*prev == 0`), `dt` when `*prev` is unknown
/// (NaN) or with [`KickRule::SymplecticEuler`]; `*prev` becomes `dt`.
pub(super) fn leapfrog_kick(prev: &mut f64, dt: f64, rule: KickRule) -> f64 {
    let p = std::mem::replace(prev, dt);
    if p.is_nan() || rule == KickRule::SymplecticEuler {
        dt
    } else {
        0.5 * (p + dt)
    }
}

/// Largest particle speed, m/s (exact in any reduction order).
pub(super) fn max_speed(sp: &SortedParticles) -> f32 {
    let [vx, vy, vz] = &sp.vel;
    vx.par_iter()
        .zip(vy.par_iter())
        .zip(vz.par_iter())
        .with_min_len(4096)
        .map(|((x, y), z)| (x * x + y * y + z * z).sqrt())
        .reduce(|| 0.0, f32::max)
}
