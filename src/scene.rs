//! Shot descriptions: the native scene format (`scenes/*.json`) and the tutorial's `fluid.json`.
//!
//! This is the only module that knows JSON input. Every input becomes one [`Scene`], fully
//! resolved (defaults filled in), which is what `OUT/scene.json` stores and what a resume reads.
//!
//! Units: metres, seconds, kilograms. Axes: z is up by default (Blender's convention); gravity
//! is a vector, so a y-up scene just sets `gravity: [0, -9.80665, 0]`.
//!
//! Grid convention: the domain is `resolution` cubic cells of `cell_size` from `lower`. The
//! outermost layer of cells is solid wall (as in the tutorial and in Mantaflow's default), so
//! liquid lives in the inner `resolution - 2` cells of each axis.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Standard gravity, m/s^2.
pub const STANDARD_GRAVITY: f64 = 9.80665;

/// A fully described shot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scene {
    /// Shot name; the default output folder is `out/<name>/`. (default: the scene file's stem)
    #[serde(default)]
    pub name: String,
    /// The simulation box and its grid.
    pub domain: Domain,
    /// Gravity vector, m/s^2. (default: `[0, 0, -9.80665]`, z up)
    #[serde(default = "default_gravity")]
    pub gravity: [f64; 3],
    /// Liquid density, kg/m^3. Scales pressure only; the motion does not depend on it.
    /// (default: `1000`)
    #[serde(default = "default_density")]
    pub density: f64,
    /// Where the liquid starts. At least one source.
    pub sources: Vec<Source>,
    /// Seed of the jitter used when seeding sources. (default: `0`)
    #[serde(default)]
    pub seed: u64,
    /// Frames and frame rate.
    #[serde(default)]
    pub time: TimeSettings,
    /// Stepper settings.
    #[serde(default)]
    pub solver: SolverSettings,
    /// Surface reconstruction settings (meshes).
    #[serde(default)]
    pub surface: crate::surface::SurfaceSettings,
    /// Sphere preview settings.
    #[serde(default)]
    pub render: crate::render::RenderSettings,
    /// What to write.
    #[serde(default)]
    pub output: OutputSettings,
}

/// The simulation box: `resolution` cubic cells of `cell_size` metres from `lower`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Domain {
    /// Lower corner `[x, y, z]`, m.
    pub lower: [f64; 3],
    /// Edge length of one cubic cell, m. Must be > 0.
    pub cell_size: f64,
    /// Cells along x, y, z, including the one-cell solid wall layer on each side. Each >= 3.
    pub resolution: [u32; 3],
}

impl Domain {
    /// Upper corner, m.
    pub fn upper(&self) -> [f64; 3] {
        std::array::from_fn(|a| self.lower[a] + self.resolution[a] as f64 * self.cell_size)
    }
    /// Spacing of seeded particles (2 x 2 x 2 per cell), m.
    pub fn particle_spacing(&self) -> f64 {
        0.5 * self.cell_size
    }
}

/// A region that starts full of liquid.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Source {
    /// An axis-aligned box `[min, max]`, m, seeded 2 x 2 x 2 jittered particles per cell.
    Box {
        min: [f64; 3],
        max: [f64; 3],
        /// Initial velocity, m/s. (default: `[0, 0, 0]`)
        #[serde(default)]
        velocity: [f64; 3],
    },
    /// A ball, m, seeded like a box.
    Sphere {
        center: [f64; 3],
        radius: f64,
        /// Initial velocity, m/s. (default: `[0, 0, 0]`)
        #[serde(default)]
        velocity: [f64; 3],
    },
    /// A particle file in the tutorial's text layout (`N`, then N lines `x y z vx vy vz`).
    /// A relative path is relative to the scene file's folder.
    ParticleFile { path: PathBuf },
}

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
}

impl Default for SolverSettings {
    fn default() -> Self {
        Self {
            flip_ratio: default_flip_ratio(),
            cfl: default_cfl(),
            min_substeps: default_min_substeps(),
            max_substeps: default_max_substeps(),
            fixed_dt: None,
            pressure_tolerance: default_pressure_tolerance(),
            pressure_max_iterations: default_pressure_max_iterations(),
        }
    }
}

/// What a run writes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputSettings {
    /// Write `particles/frame_NNNN.bin`. (default: `true`)
    #[serde(default = "yes")]
    pub particles: bool,
    /// Write `meshes/frame_NNNN.ply`. (default: `true`)
    #[serde(default = "yes")]
    pub meshes: bool,
    /// Write `previews/frame_NNNN.png`. (default: `true`)
    #[serde(default = "yes")]
    pub previews: bool,
    /// Also write the tutorial's text frames, named by this printf pattern with one integer
    /// (e.g. `fluid.%03d.part`). (default: none; set from `output_fname` for tutorial input)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub part_pattern: Option<String>,
    /// Write a checkpoint every this many frames (0: only at the end). (default: `10`)
    #[serde(default = "default_checkpoint_every")]
    pub checkpoint_every: u32,
    /// Checkpoints kept; older ones are removed. (default: `2`)
    #[serde(default = "default_keep_checkpoints")]
    pub keep_checkpoints: u32,
}

impl Default for OutputSettings {
    fn default() -> Self {
        Self {
            particles: true,
            meshes: true,
            previews: true,
            part_pattern: None,
            checkpoint_every: default_checkpoint_every(),
            keep_checkpoints: default_keep_checkpoints(),
        }
    }
}

impl Scene {
    /// Simulated time at the end of `frame`, s. Derived from the frame index, never accumulated.
    pub fn frame_time(&self, frame: u32) -> f64 {
        match self.solver.fixed_dt {
            Some(dt) => frame as f64 * self.steps_per_frame() as f64 * dt,
            None => frame as f64 / self.time.fps,
        }
    }

    /// With a fixed step: steps per frame (at least 1). With adaptive steps: 0.
    pub fn steps_per_frame(&self) -> u32 {
        match self.solver.fixed_dt {
            Some(dt) => ((1.0 / (self.time.fps * dt)).round() as u32).max(1),
            None => 0,
        }
    }
}

fn default_gravity() -> [f64; 3] {
    [0.0, 0.0, -STANDARD_GRAVITY]
}
fn default_density() -> f64 {
    1000.0
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
fn default_checkpoint_every() -> u32 {
    10
}
fn default_keep_checkpoints() -> u32 {
    2
}
fn yes() -> bool {
    true
}

/// Reads a resolved scene (`OUT/scene.json`, as `surge run` writes it).
pub fn read_resolved(path: &std::path::Path) -> anyhow::Result<Scene> {
    use anyhow::Context;
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text)
        .with_context(|| format!("{}: not a valid surge scene", path.display()))
}
