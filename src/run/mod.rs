//! The library entry points of a shot: [`run()`] (simulate a scene into a run folder),
//! [`resume()`] (continue a run from its newest valid checkpoint), and [`remesh()`] /
//! [`repreview`] (re-make meshes or previews from a run's particle frames).
//!
//! Layer 5: imports every layer below (scene, checkpoint, the stages, geometry, error) and is
//! imported only by `cli`. No terminal, no process exit, no signal handling: the caller hands
//! in a stop flag (checked between frames; the last finished frame is checkpointed and the call
//! returns [`Interrupted`]) and an [`Observer`] that hears the messages and the progress. So
//! tests drive a whole shot through `surge::run` without spawning the binary.
//!
//! The order of work, the file layout and the exact-resume guarantee are described in
//! [`pipeline`] (the frame loop) and [`resume`](mod@resume).

pub mod disk;
pub mod folder;
pub mod pipeline;
pub mod remesh;
pub mod resume;
pub mod verify;

pub use remesh::{MeshOptions, PreviewOptions, remesh, repreview};
pub use resume::{ResumeOptions, resume};

use crate::error::InputError;
use crate::output::frame::ParticleFrame;
use crate::output::{OutputSettings, RunLayout};
use crate::scene::{self, LoadedScene, Scene};
use crate::sim::FrameReport;
use folder::{check_memory, prepare_output_dir, write_scene};
use pipeline::Pipeline;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

/// The built-in default shot, `scenes/dam_break.json`.
pub const DEFAULT_SCENE: &str = include_str!("../../scenes/dam_break.json");

/// The error a run ends with when its stop flag was raised (the CLI: Ctrl-C or SIGTERM).
#[derive(Debug, thiserror::Error)]
#[error(
    "interrupted after frame {frame}; its checkpoint is written. Continue with: surge resume {}",
    out.display()
)]
pub struct Interrupted {
    pub frame: u32,
    pub out: PathBuf,
}

/// One finished frame, as the [`Observer`] hears of it (after its outputs are written).
#[derive(Debug, Clone, Copy)]
pub struct FrameDone<'a> {
    /// The frame index.
    pub frame: u32,
    /// The run's last frame.
    pub last: u32,
    /// Its simulated time, s.
    pub time: f64,
    /// Number of particles.
    pub particles: usize,
    /// The stepper's report.
    pub report: &'a FrameReport,
    /// Wall-clock seconds simulating it.
    pub sim_seconds: f64,
    /// Wall-clock seconds writing its outputs.
    pub output_seconds: f64,
}

/// What a run tells its caller. Every method has a silent default.
pub trait Observer: Sync {
    /// A message for the user (a note, a warning, what is being done), without a prefix.
    fn say(&self, _text: &str) {}
    /// The simulation is about to start (or continue): the point from which the stop flag is
    /// honoured (the CLI installs its signal handler here).
    fn simulating(&self) {}
    /// Frames `first + 1 ..= last` are about to be simulated, `particles` of them.
    fn begin(&self, _first: u32, _last: u32, _particles: usize) {}
    /// A frame's outputs are written.
    fn frame(&self, _done: &FrameDone) {}
    /// The frame loop ended: `finished` when it reached the last frame, false when stopped.
    fn end(&self, _finished: bool) {}
    /// The run is complete: frames `0..=last` are in `out`, with these outputs.
    fn done(&self, _out: &Path, _last: u32, _output: &OutputSettings) {}
    /// A plain report line (re-meshing and re-rendering report per frame and at the end).
    fn log(&self, _text: &str) {}
    /// `total` independent frames are about to be made ([`repreview`]); `header` says which.
    fn batch_begin(&self, _total: usize, _header: &str) {}
    /// One of them is written (called from the worker threads); `line` describes it.
    fn batch_tick(&self, _line: &str) {}
    /// All of them are written.
    fn batch_end(&self) {}
}

/// An observer that hears nothing.
pub struct Silent;
impl Observer for Silent {}

/// How to run a scene (the command line's `surge run` flags).
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Output folder. (default: `out/<scene name>/`)
    pub out: Option<PathBuf>,
    /// Write into a non-empty output folder, replacing the previous run's outputs there.
    pub overwrite: bool,
    /// Index of the last frame (overrides the scene's `time.frames`).
    pub frames: Option<u32>,
    /// Write a checkpoint every N frames (overrides `output.checkpoint_every`).
    pub checkpoint_every: Option<u32>,
    /// Start even when the disk estimate exceeds the output folder's free space.
    pub ignore_disk_check: bool,
}

/// Reads `scene_file` (the built-in dam break for `None`), checks it, and simulates every frame
/// into the output folder, which it returns. The whole scene is validated (once) before the
/// output folder is touched, and the folder is locked (`OUT/.surge.lock`) while it is written.
pub fn run(
    scene_file: Option<&Path>,
    options: &RunOptions,
    stop: &AtomicBool,
    observer: &dyn Observer,
) -> anyhow::Result<PathBuf> {
    let loaded = match scene_file {
        Some(path) => scene::load(path)?,
        None => scene::load_str(
            DEFAULT_SCENE,
            Path::new("scenes/dam_break.json (built in)"),
            Path::new("."),
        )?,
    };
    run_loaded(loaded, options, stop, observer)
}

/// [`run()`] for a scene already read and validated (by [`scene::load`] or
/// [`scene::load_str`]).
pub fn run_loaded(
    loaded: LoadedScene,
    options: &RunOptions,
    stop: &AtomicBool,
    observer: &dyn Observer,
) -> anyhow::Result<PathBuf> {
    let LoadedScene {
        mut scene,
        particles,
        file,
        notes,
        ..
    } = loaded;
    if let Some(f) = options.frames {
        scene.time.frames = f;
    }
    if let Some(n) = options.checkpoint_every {
        scene.output.checkpoint_every = n;
    }
    // The scene was validated when it was read; only the overridden section is checked again.
    scene.time.check().map_err(|e| e.in_file(&file))?;
    check_memory(&scene, particles.len(), &file, observer)?;
    let out = options
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("out").join(&scene.name));
    disk::check_disk(
        &scene,
        particles.len(),
        None,
        &out,
        options.ignore_disk_check,
        &|t| observer.say(t),
    )?;
    let _lock = prepare_output_dir(&out, options.overwrite, &scene)?;
    let layout = RunLayout::new(&out);
    folder::test_kill_point("before-scene", &layout);
    write_scene(&layout, &scene)?;
    folder::test_kill_point("after-scene", &layout);
    for n in &notes {
        // A note that is a warning says so first: `warning: FILE: ...`, not `note: FILE: warning: ...`.
        match n.strip_prefix("warning: ") {
            Some(w) => observer.say(&format!("warning: {}: {w}", file.display())),
            None => observer.say(&format!("note: {}: {n}", file.display())),
        }
    }
    if let Some(note) = fixed_dt_note(&scene) {
        observer.say(&note);
    }
    observer.say(&format!(
        "{} -> {}: {} particles, frames 0..={} at {} fps",
        file.display(),
        out.display(),
        particles.len(),
        scene.time.frames,
        scene.time.fps
    ));
    let pipeline = Pipeline::new(layout, scene, stop, observer)?;
    pipeline.start_fresh(particles)?;
    Ok(out)
}

/// With `solver.fixed_dt`, a frame is a whole number of steps: a note when that is not 1/fps.
fn fixed_dt_note(scene: &Scene) -> Option<String> {
    let dt = scene.solver.fixed_dt?;
    let frame = scene.frame_time(1);
    let nominal = 1.0 / scene.time.fps;
    ((frame - nominal).abs() > 0.01 * nominal).then(|| {
        format!(
            "note: with solver.fixed_dt = {dt} s a frame is {} step(s) = {frame:.6} s, not 1/fps = {nominal:.6} s: played at {} fps the motion runs at {:.3}x real speed",
            scene.steps_per_frame(),
            scene.time.fps,
            frame / nominal
        )
    })
}

/// The PLY file of one frame's surface mesh: the surface stage, then `output::ply`. Checks the
/// scene's surface settings first (a loop over frames checks them once and calls the stage
/// directly, as [`remesh()`] does).
pub fn frame_ply_bytes(frame: &ParticleFrame, scene: &Scene) -> anyhow::Result<Vec<u8>> {
    scene
        .surface
        .validate_for(&scene.domain)
        .map_err(InputError::from)?;
    let mesh = frame_mesh(&frame.particles, scene, frame.time);
    Ok(crate::output::ply::encode(&mesh, frame.frame, frame.time))
}

/// The surface stage for one frame at `time`: with obstacles, their signed distance at that
/// time is passed so the mesh meets them (`surface::obstacles`).
pub(crate) fn frame_mesh(
    particles: &crate::particles::Particles,
    scene: &Scene,
    time: f64,
) -> crate::mesh::TriMesh {
    let solids = &scene.built_obstacles.solids;
    if solids.is_empty() {
        return crate::surface::reconstruct(particles, &scene.surface, &scene.domain);
    }
    let posed: Vec<_> = solids.iter().map(|s| s.at(time)).collect();
    let sd =
        move |p: [f64; 3]| {
            posed.iter().map(|s| s.distance_and_normal(p)).fold(
                (f64::INFINITY, [0.0; 3]),
                |a, b| if b.0 < a.0 { b } else { a },
            )
        };
    crate::surface::reconstruct_with_solids(particles, &scene.surface, &scene.domain, Some(&sd))
}

/// The PNG file of one frame's preview: the render stage, then `output::png`.
pub fn frame_png_bytes(frame: &ParticleFrame, scene: &Scene) -> anyhow::Result<Vec<u8>> {
    use anyhow::Context;
    let image = crate::render::render_scene(&frame.particles, scene)
        .with_context(|| format!("rendering the preview of frame {}", frame.frame))?;
    image.to_png()
}
