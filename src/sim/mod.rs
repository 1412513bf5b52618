//! The PIC/FLIP stepper.
//!
//! STUB (skeleton): the real stepper replaces this file's `Simulation` internals. The public API
//! below is what the pipeline, checkpoints and tests use; keep it.

pub mod particles;

pub use particles::Particles;

use crate::scene::Scene;

/// Seconds spent per stage during one frame (wall-clock; the only non-deterministic output).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct StageSeconds {
    pub advect: f64,
    pub splat: f64,
    pub forces: f64,
    pub pressure: f64,
    pub extrapolate: f64,
    pub transfer: f64,
    pub sort: f64,
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
}

/// A running simulation. Its whole state is the scene, the particles and the frame index: it
/// can be rebuilt exactly from a particle frame (see `checkpoint`).
pub struct Simulation {
    scene: Scene,
    particles: Particles,
    frame: u32,
}

impl Simulation {
    /// A simulation of `scene` whose particles are at the state of the end of `frame`.
    pub fn new(scene: &Scene, particles: Particles, frame: u32) -> anyhow::Result<Self> {
        Ok(Self {
            scene: scene.clone(),
            particles,
            frame,
        })
    }

    /// The frame whose end the particles are at.
    pub fn frame(&self) -> u32 {
        self.frame
    }

    /// The particles, in creation order.
    pub fn particles(&self) -> &Particles {
        &self.particles
    }

    /// Advances to the end of the next frame, `self.frame() + 1`, at time
    /// `scene.frame_time(frame)`.
    pub fn advance_frame(&mut self) -> FrameReport {
        // STUB: ballistic motion, so the pipeline can be built before the stepper lands.
        let t0 = self.scene.frame_time(self.frame);
        let t1 = self.scene.frame_time(self.frame + 1);
        let dt = (t1 - t0) as f32;
        let g = self.scene.gravity;
        let p = &mut self.particles;
        for a in 0..3 {
            for i in 0..p.pos[a].len() {
                p.pos[a][i] += p.vel[a][i] * dt + 0.5 * g[a] as f32 * dt * dt;
                p.vel[a][i] += g[a] as f32 * dt;
            }
        }
        self.frame += 1;
        FrameReport {
            substeps: 1,
            max_speed: p.max_speed(),
            ..Default::default()
        }
    }
}
