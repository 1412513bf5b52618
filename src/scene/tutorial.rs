//! The tutorial's `fluid.json` (`dt`, `total_time`, `density`, `res`, `h`, `lc`, `flipRatio`,
//! `particles`, `output_fname`), read into a [`Scene`]: a fixed step of `dt`, 30 frames per
//! second, the particle file as the only source, and the `.part` frames it names. Errors use
//! the tutorial's key names.
//!
//! Layer 4 (scene): imports error and the stages' settings through [`super`].

use super::json::typed;
use super::native::resolve_input_path;
use super::{
    Domain, InputError, MAX_SUBSTEPS, OutputSettings, Scene, SolverSettings, Source, TimeSettings,
    show,
};
use std::path::{Path, PathBuf};

/// Renames the native fields in an error about a tutorial file to the tutorial's keys.
pub fn tutorial_names(mut e: InputError) -> InputError {
    const NAMES: [(&str, &str); 6] = [
        ("domain.cell_size", "h"),
        ("domain.lower", "lc"),
        ("domain.resolution", "res"),
        ("solver.fixed_dt", "dt"),
        ("solver.flip_ratio", "flipRatio"),
        ("sources[0].path", "particles"),
    ];
    if let Some(at) = &mut e.at {
        for (native, tutorial) in NAMES {
            if let Some(rest) = at.strip_prefix(&format!("field `{native}")) {
                *at = format!("field `{tutorial}{rest}");
            }
        }
    }
    e
}

/// The tutorial's `fluid.json`, every key optional where the tutorial has a default.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct TutorialFile {
    #[serde(default = "tutorial_default_dt")]
    dt: f64,
    #[serde(default = "tutorial_default_total_time")]
    total_time: f64,
    #[serde(default = "tutorial_default_density")]
    density: f64,
    res: [u32; 3],
    h: f64,
    lc: [f64; 3],
    #[serde(rename = "flipRatio", default = "tutorial_default_flip_ratio")]
    flip_ratio: f64,
    particles: PathBuf,
    #[serde(default = "tutorial_default_output_fname")]
    output_fname: String,
}

fn tutorial_default_dt() -> f64 {
    1.0 / 300.0
}
fn tutorial_default_total_time() -> f64 {
    1.0
}
fn tutorial_default_density() -> f64 {
    1.0 / 300.0
}
fn tutorial_default_output_fname() -> String {
    "output.%04d.txt".into()
}

/// Frames per second of the tutorial's output (one frame every 1/30 s).
pub const TUTORIAL_FPS: f64 = 30.0;

/// The last frame index the tutorial writes: its loop `for (t = 0; t < total_time; t += dt)`
/// takes `ceil(total_time / dt)` steps and writes a frame before every `steps_per_frame`-th
/// step, frame 0 being the initial state.
pub fn tutorial_last_frame(total_time: f64, dt: f64) -> u64 {
    let steps = (total_time / dt).ceil().max(0.0) as u64;
    let spf = ((1.0 / (TUTORIAL_FPS * dt)).round() as u64).max(1);
    steps.saturating_sub(1) / spf
}

/// Reads the tutorial's file into a resolved [`Scene`] (validated later with every scene).
pub fn tutorial_scene(text: &str, file: &Path, base_dir: &Path) -> Result<Scene, InputError> {
    let t: TutorialFile = typed(text, file)?;
    let frames = check_tutorial(&t, file)?;
    // As the tutorial: relative to the working directory. Also relative to the json's folder
    // and its parents, so `surge run /elsewhere/inputs/fluid.json` finds `inputs/particles.in`.
    let cwd = PathBuf::from(".");
    let mut bases: Vec<&Path> = vec![&cwd];
    bases.extend(base_dir.ancestors().take(3));
    let path = resolve_input_path(file, "particles", &t.particles, &bases)?;
    Ok(scene_of(t, file, path, frames))
}

/// Checks what only the tutorial's keys can say (steps per frame, the frame count, the name
/// pattern), in the tutorial's names; returns the last frame index.
fn check_tutorial(t: &TutorialFile, file: &Path) -> Result<u64, InputError> {
    let err =
        |field: &str, problem: String, fix: &str| InputError::field(file, field, problem, fix);
    // `what` prefixes "must be > 0" (e.g. "the time step ").
    let positive = |field: &str, v: f64, what: &str, fix: &str| -> Result<(), InputError> {
        if v.is_finite() && v > 0.0 {
            Ok(())
        } else {
            Err(err(field, format!("{what}must be > 0, got {v}"), fix))
        }
    };
    positive(
        "dt",
        t.dt,
        "the time step ",
        "set `dt` to the fixed step in seconds, e.g. 0.001111112",
    )?;
    positive(
        "total_time",
        t.total_time,
        "",
        "set the simulated duration in seconds, e.g. 5.0",
    )?;
    if t.total_time / t.dt > 1e9 {
        return Err(err(
            "dt",
            format!(
                "{} s over {} s is more than a billion steps",
                t.dt, t.total_time
            ),
            "use a larger `dt` or a shorter `total_time`",
        ));
    }
    let steps = (1.0 / (TUTORIAL_FPS * t.dt)).round();
    if steps > MAX_SUBSTEPS as f64 {
        return Err(err(
            "dt",
            format!(
                "{} s is {steps:.0} steps per 1/30 s frame, more than surge allows ({MAX_SUBSTEPS})",
                show(t.dt)
            ),
            "check the exponent of `dt`, e.g. 0.001111112",
        ));
    }
    check_grid(t, file)?;
    if !(0.0..=1.0).contains(&t.flip_ratio) {
        return Err(err(
            "flipRatio",
            format!("must be within [0, 1], got {}", t.flip_ratio),
            "use 0 for PIC, 1 for FLIP, e.g. 0.95",
        ));
    }
    if let Err(e) = crate::output::part::NamePattern::parse(&t.output_fname) {
        return Err(err(
            "output_fname",
            e,
            "use a file name with one `%d`-style conversion, e.g. `fluid.%03d.part`",
        ));
    }
    let frames = tutorial_last_frame(t.total_time, t.dt);
    if frames < 1 {
        return Err(err(
            "total_time",
            format!(
                "{} s is shorter than two output frames (frame 1 is at 1/30 s)",
                t.total_time
            ),
            "simulate at least 1/15 s",
        ));
    }
    if frames > crate::sim::settings::MAX_FRAMES as u64 {
        return Err(err(
            "total_time",
            format!(
                "{} s is {frames} frames at 30 fps, more than surge allows ({})",
                show(t.total_time),
                crate::sim::settings::MAX_FRAMES
            ),
            "simulate a shorter `total_time` (seconds), e.g. 5.0",
        ));
    }
    Ok(frames)
}

/// Checks the density and the grid (`density`, `h`, `res`, `lc`) in the tutorial's names.
fn check_grid(t: &TutorialFile, file: &Path) -> Result<(), InputError> {
    let err =
        |field: &str, problem: String, fix: &str| InputError::field(file, field, problem, fix);
    // `what` prefixes "must be > 0" (e.g. "the time step ").
    let positive = |field: &str, v: f64, what: &str, fix: &str| -> Result<(), InputError> {
        if v.is_finite() && v > 0.0 {
            Ok(())
        } else {
            Err(err(field, format!("{what}must be > 0, got {v}"), fix))
        }
    };
    positive(
        "density",
        t.density,
        "",
        "set the liquid density in kg/m^3, e.g. 1000",
    )?;
    positive(
        "h",
        t.h,
        "the cell width ",
        "set `h` to the cell edge length in metres, e.g. 0.01",
    )?;
    for a in 0..3 {
        if t.res[a] < 3 {
            return Err(err(
                &format!("res[{a}]"),
                format!(
                    "{} cells: at least 3 are needed (one wall layer each side, one for liquid)",
                    t.res[a]
                ),
                "give at least 3 cells per axis",
            ));
        }
        if !t.lc[a].is_finite() {
            return Err(err(
                &format!("lc[{a}]"),
                format!("not a finite number: {}", t.lc[a]),
                "give the lower corner as three finite numbers in metres",
            ));
        }
    }
    Ok(())
}

/// The scene the tutorial's file describes: a fixed step, 30 fps, the particle file as the only
/// source, its `.part` frames.
fn scene_of(t: TutorialFile, file: &Path, path: PathBuf, frames: u64) -> Scene {
    Scene {
        name: file
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "fluid".into()),
        domain: Domain {
            lower: t.lc,
            cell_size: t.h,
            resolution: t.res,
            boundaries: Default::default(),
            friction: Default::default(),
        },
        gravity: super::default_gravity(),
        density: t.density,
        sources: vec![Source::ParticleFile { path }],
        seed: 0,
        time: TimeSettings {
            fps: TUTORIAL_FPS,
            frames: frames.min(u32::MAX as u64) as u32,
        },
        solver: SolverSettings {
            flip_ratio: t.flip_ratio,
            fixed_dt: Some(t.dt),
            // The tutorial's solver is PIC/FLIP, whatever surge's default transfer.
            transfer: crate::sim::settings::Transfer::Flip,
            // Nor does it remove particles: its `.part` frames carry the input's count.
            max_particles_per_cell: 0,
            // MIC(0), the preconditioner its figures against the tutorial's C++ were measured
            // with (the scene default became the multigrid in session 8).
            pressure_preconditioner: crate::sim::settings::PressurePreconditioner::Mic0,
            ..SolverSettings::default()
        },
        surface: Default::default(),
        render: Default::default(),
        output: OutputSettings {
            part_pattern: Some(t.output_fname),
            ..OutputSettings::default()
        },
        emitters: Vec::new(),
        sinks: Vec::new(),
        limits: Default::default(),
        obstacles: Vec::new(),
        built_obstacles: Default::default(),
    }
}

fn tutorial_default_flip_ratio() -> f64 {
    SolverSettings::default().flip_ratio
}
