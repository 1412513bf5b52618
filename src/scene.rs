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

/// Most particles a scene may seed (2^28, 6 GB of particle state): a guard against a typo
/// that would exhaust memory.
pub const MAX_PARTICLES: usize = 1 << 28;

/// Standard gravity, m/s^2.
pub const STANDARD_GRAVITY: f64 = 9.80665;

/// Largest gravity component and initial speed a scene may give, m/s^2 and m/s. Far beyond any
/// liquid shot (the speed of sound in water is 1,500 m/s, where incompressible flow stops making
/// sense) and far below what overflows the f32 particle state (a typo like `-9.8e30` would
/// turn every particle into NaN within a frame).
pub const MAX_ACCELERATION_OR_SPEED: f64 = 1e4;

/// Most substeps per frame (`solver.max_substeps`, or the fixed steps a frame takes with
/// `solver.fixed_dt`): beyond it a typo (a `fixed_dt` of `1e-12`) would run for days and its
/// per-substep reports would fill memory.
pub const MAX_SUBSTEPS: u32 = 10_000;

/// Smallest cell, m. Below a micron, FLIP's assumptions (no surface tension) do not hold and
/// squared lengths leave the f32 range.
pub const MIN_CELL_SIZE: f64 = 1e-6;

/// Positions are f32: the domain must lie close enough to the origin that f32 resolves this
/// fraction of a cell everywhere in it.
pub const POSITION_RESOLUTION_CELLS: f64 = 0.01;

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
    /// Preconditioner of the pressure solve's conjugate gradient: `"mic0"` or `"multigrid"`.
    /// (default: `"mic0"`; left out of the written scene when it is the default, so the physics
    /// hash of scenes that do not set it is unchanged)
    #[serde(default, skip_serializing_if = "PressurePreconditioner::is_default")]
    pub pressure_preconditioner: PressurePreconditioner,
}

/// The pressure solve's preconditioner (`solver.pressure_preconditioner`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PressurePreconditioner {
    /// Modified incomplete Cholesky, block-Jacobi over slabs (Bridson 2015, ch. 5).
    #[default]
    Mic0,
    /// One multigrid V-cycle (McAdams, Sifakis and Teran 2010).
    Multigrid,
}

impl PressurePreconditioner {
    fn is_default(&self) -> bool {
        *self == Self::default()
    }
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
            pressure_preconditioner: PressurePreconditioner::default(),
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

// ---------------------------------------------------------------------------------------------
// Loading and validation
// ---------------------------------------------------------------------------------------------

/// A bad input: which file, where in it, what is wrong, and how to fix it.
///
/// Displayed as `FILE: field `a.b`: PROBLEM` then `  fix: FIX` on a second line.
#[derive(Debug, Clone, PartialEq)]
pub struct InputError {
    /// The file at fault.
    pub file: PathBuf,
    /// Where in it: `field `domain.cell_size`` or `line 12`; none for the whole file.
    pub at: Option<String>,
    /// What is wrong.
    pub problem: String,
    /// What to do about it.
    pub fix: String,
}

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: ", self.file.display())?;
        if let Some(at) = &self.at {
            write!(f, "{at}: ")?;
        }
        write!(f, "{}\n  fix: {}", self.problem, self.fix)
    }
}

impl std::error::Error for InputError {}

impl InputError {
    /// An error about the field at JSON path `field` (e.g. `domain.cell_size`, `sources[1]`).
    pub fn field(
        file: &Path,
        field: &str,
        problem: impl Into<String>,
        fix: impl Into<String>,
    ) -> Self {
        Self {
            file: file.to_path_buf(),
            at: (!field.is_empty()).then(|| format!("field `{field}`")),
            problem: problem.into(),
            fix: fix.into(),
        }
    }
    /// An error about line `line` (1-based) of a text file.
    pub fn line(
        file: &Path,
        line: usize,
        problem: impl Into<String>,
        fix: impl Into<String>,
    ) -> Self {
        Self {
            file: file.to_path_buf(),
            at: Some(format!("line {line}")),
            problem: problem.into(),
            fix: fix.into(),
        }
    }
    /// An error about the whole file.
    pub fn file(file: &Path, problem: impl Into<String>, fix: impl Into<String>) -> Self {
        Self {
            file: file.to_path_buf(),
            at: None,
            problem: problem.into(),
            fix: fix.into(),
        }
    }
}

/// Which input format a scene file was in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SceneFormat {
    /// A native scene (`scenes/*.json`).
    Native,
    /// The tutorial's `fluid.json`.
    Tutorial,
}

/// A scene read, resolved, validated and seeded: everything a run needs to start.
#[derive(Debug, Clone)]
pub struct LoadedScene {
    /// The resolved scene: defaults filled in, particle file paths absolute.
    pub scene: Scene,
    /// The initial particles, in creation order (source order, then seeding order).
    pub particles: Particles,
    /// The file it came from.
    pub file: PathBuf,
    /// Its format.
    pub format: SceneFormat,
    /// Things worth telling the user that are not errors (a source clipped by the walls).
    pub notes: Vec<String>,
}

use crate::sim::Particles;
use std::path::Path;

/// Keys of the tutorial's `fluid.json`.
const TUTORIAL_KEYS: [&str; 9] = [
    "dt",
    "total_time",
    "density",
    "res",
    "h",
    "lc",
    "flipRatio",
    "particles",
    "output_fname",
];

/// Reads a scene file (native or the tutorial's `fluid.json`, told apart by their keys),
/// validates every field and seeds its particles. Nothing is written.
pub fn load(path: &Path) -> Result<LoadedScene, InputError> {
    if path.is_dir() {
        let p = path.display();
        let run_folder = path.join("scene.json").is_file()
            && ["particles", "checkpoints", "stats"]
                .iter()
                .any(|d| path.join(d).is_dir());
        let jsons: Vec<String> = std::fs::read_dir(path)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".json"))
            .collect();
        return Err(if run_folder {
            InputError::file(
                path,
                "is the output folder of a run, not a scene file",
                format!(
                    "continue that run with `surge resume {p}`, or run its scene again with `surge run {} -o NEW_FOLDER`",
                    path.join("scene.json").display()
                ),
            )
        } else if jsons.len() == 1 {
            InputError::file(
                path,
                "is a folder, not a scene file",
                format!(
                    "give the scene file itself: `{}`",
                    path.join(&jsons[0]).display()
                ),
            )
        } else {
            InputError::file(
                path,
                "is a folder, not a scene file",
                "give the scene's .json file, e.g. scenes/dam_break.json (or inputs/fluid.json)",
            )
        });
    }
    let bytes = std::fs::read(path).map_err(|e| {
        let fix = if e.kind() == std::io::ErrorKind::NotFound {
            "check the path; shipped scenes are in `scenes/`, the tutorial's input is `inputs/fluid.json`"
        } else {
            "make the file readable"
        };
        InputError::file(path, format!("cannot read the scene file: {e}"), fix)
    })?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let b = e.as_bytes();
        let utf16 = b.starts_with(&[0xff, 0xfe]) || b.starts_with(&[0xfe, 0xff]);
        InputError::file(
            path,
            if utf16 {
                "the file is UTF-16 text, not UTF-8".to_string()
            } else {
                format!(
                    "not UTF-8 text (invalid byte at offset {}): is it a scene file?",
                    e.utf8_error().valid_up_to()
                )
            },
            "save the scene as UTF-8 JSON text (in most editors: Save with Encoding > UTF-8)",
        )
    })?;
    if text.trim_start_matches('\u{feff}').trim().is_empty() {
        return Err(InputError::file(
            path,
            "the file is empty",
            "write the scene as one JSON object; README.md's scene reference has a minimal example",
        ));
    }
    let base = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let base = std::path::absolute(&base).unwrap_or(base);
    load_str(&text, path, &base)
}

/// [`load`] from text: `file` names it in errors (and gives the default name), relative particle
/// file paths of native scenes are taken from `base_dir`.
pub fn load_str(text: &str, file: &Path, base_dir: &Path) -> Result<LoadedScene, InputError> {
    let clean = strip_comment_lines(text);
    let value: serde_json::Value =
        serde_json::from_str(&clean).map_err(|e| json_syntax_error(file, &clean, e))?;
    let Some(obj) = value.as_object() else {
        return Err(InputError::file(
            file,
            "the top level is not a JSON object `{ ... }`",
            "write the scene as one JSON object; see README.md's scene reference",
        ));
    };
    let is_tutorial = !obj.contains_key("domain")
        && !obj.contains_key("sources")
        && TUTORIAL_KEYS
            .iter()
            .any(|k| *k != "density" && obj.contains_key(*k));
    let (scene, format) = if is_tutorial {
        (
            tutorial_scene(&clean, file, base_dir)?,
            SceneFormat::Tutorial,
        )
    } else {
        (native_scene(&clean, file, base_dir)?, SceneFormat::Native)
    };
    validate(&scene, file).map_err(|e| match format {
        SceneFormat::Tutorial => tutorial_names(e),
        SceneFormat::Native => e,
    })?;
    let particles = initial_particles(&scene, file)?;
    let notes = clipped_sources(&scene);
    Ok(LoadedScene {
        scene,
        particles,
        file: file.to_path_buf(),
        format,
        notes,
    })
}

/// A note for every box or sphere source that reaches outside the domain: only the part in the
/// liquid region is filled, so the liquid is smaller than the source says. (Reaching into the
/// one-cell wall layer is the usual way to fill up to a wall, e.g. `min` at the domain's corner,
/// and is not noted.)
fn clipped_sources(scene: &Scene) -> Vec<String> {
    let d = &scene.domain;
    let up = d.upper();
    let tol = 1e-9 * d.cell_size;
    let mut notes = Vec::new();
    for (i, src) in scene.sources.iter().enumerate() {
        let (lo, hi) = match src {
            Source::Box { min, max, .. } => (*min, *max),
            Source::Sphere { center, radius, .. } => {
                (center.map(|c| c - radius), center.map(|c| c + radius))
            }
            Source::ParticleFile { .. } => continue,
        };
        let axes: Vec<&str> = (0..3)
            .filter(|&a| lo[a] < d.lower[a] - tol || hi[a] > up[a] + tol)
            .map(|a| ["x", "y", "z"][a])
            .collect();
        if !axes.is_empty() {
            notes.push(format!(
                "sources[{i}] reaches outside the domain {:?}..{:?} along {}; only the part inside the walls is filled",
                d.lower,
                up.map(|v| (v * 1e9).round() / 1e9),
                axes.join(", ")
            ));
        }
    }
    notes
}

/// Renames the native fields in an error about a tutorial file to the tutorial's keys.
fn tutorial_names(mut e: InputError) -> InputError {
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

/// Blanks lines whose first non-blank characters are `//` (the tutorial's reader skips them),
/// keeping line numbers.
fn strip_comment_lines(text: &str) -> String {
    // A UTF-8 byte order mark (some Windows editors write one) is not JSON.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        if line.trim_start().starts_with("//") {
            if line.ends_with('\n') {
                out.push('\n');
            }
        } else {
            out.push_str(line);
        }
    }
    out
}

/// A JSON syntax error, with a special word for `NaN` and `Infinity`, which JSON lacks.
fn json_syntax_error(file: &Path, text: &str, e: serde_json::Error) -> InputError {
    let (line, col) = (e.line(), e.column());
    let line_text = text.lines().nth(line.saturating_sub(1)).unwrap_or("");
    let lower = line_text.to_ascii_lowercase();
    let has_word = |w: &str| {
        lower.match_indices(w).any(|(i, _)| {
            let before = lower[..i].chars().last();
            !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '"')
        })
    };
    if has_word("nan") || has_word("inf") {
        let key = last_key_before(text, line, col);
        return InputError {
            file: file.to_path_buf(),
            at: Some(match key {
                Some(k) => format!("line {line}, key `{k}`"),
                None => format!("line {line}"),
            }),
            problem: format!(
                "`{}` is not a number: JSON has no NaN or infinity, and surge needs every number finite",
                line_text.trim()
            ),
            fix: "write a finite number".into(),
        };
    }
    let msg = e.to_string();
    let msg = msg.split(" at line ").next().unwrap_or(&msg).to_string();
    if msg.contains("out of range") {
        let key = last_key_before(text, line, col);
        return InputError {
            file: file.to_path_buf(),
            at: Some(match key {
                Some(k) => format!("line {line}, column {col}, key `{k}`"),
                None => format!("line {line}, column {col}"),
            }),
            problem: "a number is out of range: beyond 1.8e308 it would be infinite, and surge needs every number finite".into(),
            fix: "write a finite number".into(),
        };
    }
    InputError {
        file: file.to_path_buf(),
        at: Some(format!("line {line}, column {col}")),
        problem: format!("JSON syntax error: {msg}"),
        fix: "fix the JSON there (a missing comma, quote or bracket is the usual cause; `//` comments must be on their own line)".into(),
    }
}

/// The last `"key":` before 1-based `line`, `col` (the key a value at that position belongs to).
fn last_key_before(text: &str, line: usize, col: usize) -> Option<String> {
    let offset: usize = text
        .split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum::<usize>()
        + col.saturating_sub(1);
    let mut head = text.get(..offset.min(text.len()))?;
    while let Some(colon) = head.rfind(':') {
        let before = head[..colon].trim_end();
        if let Some(inner) = before.strip_suffix('"')
            && let Some(open) = inner.rfind('"')
        {
            return Some(inner[open + 1..].to_string());
        }
        head = &head[..colon];
    }
    None
}

/// Deserialises `text` as `T`, turning errors into [`InputError`]s naming the JSON path.
fn typed<T: serde::de::DeserializeOwned>(text: &str, file: &Path) -> Result<T, InputError> {
    let mut de = serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let path = if path == "." { String::new() } else { path };
        serde_error(file, &path, e.into_inner().to_string())
    })
}

/// A deserialisation error `msg` at JSON path `path`, with the fix for its kind.
fn serde_error(file: &Path, path: &str, msg: String) -> InputError {
    {
        let fix = if msg.starts_with("unknown field") {
            "remove the key or correct its spelling (the valid keys are listed above)"
        } else if msg.starts_with("missing field") {
            "add the field; README.md's scene reference lists every field with its units"
        } else if msg.starts_with("invalid type") {
            "give the value the type named above (numbers without quotes, vectors as [x, y, z])"
        } else if msg.starts_with("unknown variant") {
            "use one of the values listed above"
        } else if msg.starts_with("invalid length") {
            "vectors have exactly three entries: [x, y, z]"
        } else if msg.contains("out of range") {
            "write a finite number in range (JSON numbers beyond 1.8e308 would be infinite)"
        } else if msg.starts_with("invalid value") {
            "give a value in the range named above"
        } else {
            "see README.md's scene reference"
        };
        InputError::field(file, path, msg, fix)
    }
}

/// The fields of each [`Source`] kind, for error messages only. `Source` is an internally
/// tagged enum, which serde reads through a buffer that loses the path inside the variant, so
/// a wrong type in `sources[1].radius` would be reported at `sources[1]`. [`check_sources`]
/// reads each source again through these mirrors to name the key. They must list the same
/// fields as the `Source` variants (the test `source_mirrors_match_the_enum` checks it).
mod source_fields {
    use serde::Deserialize;
    use std::path::PathBuf;

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    pub struct Box {
        min: [f64; 3],
        max: [f64; 3],
        #[serde(default)]
        velocity: [f64; 3],
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    pub struct Sphere {
        center: [f64; 3],
        radius: f64,
        #[serde(default)]
        velocity: [f64; 3],
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    pub struct ParticleFile {
        path: PathBuf,
    }
}

/// Reads every source of a native scene through its kind's field list, so that an error inside
/// one names the key (`sources[1].radius`), not just the source. Sources without a known
/// `type` are left to the main read, whose message for them is already precise.
fn check_sources(text: &str, file: &Path) -> Result<(), InputError> {
    let Ok(value) = serde_json::from_str::<serde_json::Value>(text) else {
        return Ok(());
    };
    let Some(sources) = value.get("sources").and_then(|v| v.as_array()) else {
        return Ok(());
    };
    const KINDS: &str = "`box`, `sphere` or `particle_file`";
    for (i, src) in sources.iter().enumerate() {
        let at = format!("sources[{i}]");
        let Some(obj) = src.as_object() else {
            return Err(InputError::field(
                file,
                &at,
                format!("expected a source object `{{\"type\": ..., ...}}`, found `{src}`"),
                format!("write each source as an object whose `type` is {KINDS}"),
            ));
        };
        let mut fields = obj.clone();
        let kind = fields.remove("type");
        if kind.is_none() {
            return Err(InputError::field(
                file,
                &at,
                "the source has no `type` key",
                format!("add `\"type\"`: {KINDS} (see README.md's source table)"),
            ));
        }
        let fields = serde_json::Value::Object(fields);
        let result = match kind.as_ref().and_then(|k| k.as_str()) {
            Some("box") => check_fields::<source_fields::Box>(&fields),
            Some("sphere") => check_fields::<source_fields::Sphere>(&fields),
            Some("particle_file") => check_fields::<source_fields::ParticleFile>(&fields),
            _ => Ok(()),
        };
        if let Err((path, msg)) = result {
            let at = if path == "." {
                at
            } else {
                format!("{at}.{path}")
            };
            return Err(serde_error(file, &at, msg));
        }
    }
    Ok(())
}

/// Deserialises `value` as `T`, returning the JSON path and message of the first error.
fn check_fields<T: serde::de::DeserializeOwned>(
    value: &serde_json::Value,
) -> Result<(), (String, String)> {
    serde_path_to_error::deserialize::<_, T>(value)
        .map(|_| ())
        .map_err(|e| (e.path().to_string(), e.into_inner().to_string()))
}

fn native_scene(text: &str, file: &Path, base_dir: &Path) -> Result<Scene, InputError> {
    let mut scene: Scene = match typed(text, file) {
        Ok(s) => s,
        Err(e)
            if e.at
                .as_deref()
                .is_some_and(|at| at.starts_with("field `sources[")) =>
        {
            // Name the key inside the source, keeping the position of the first report.
            let position = e.problem.rfind(" at line ").map_or("", |i| &e.problem[i..]);
            return Err(match check_sources(text, file) {
                Err(mut precise) => {
                    precise.problem.push_str(position);
                    precise
                }
                Ok(()) => e,
            });
        }
        Err(e) => return Err(e),
    };
    if scene.name.is_empty() {
        scene.name = file
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "scene".into());
    }
    for (i, src) in scene.sources.iter_mut().enumerate() {
        if let Source::ParticleFile { path } = src {
            let field = format!("sources[{i}].path");
            *path = resolve_input_path(file, &field, path, &[base_dir])?;
        }
    }
    Ok(scene)
}

/// Finds an input file: absolute as it is, relative tried against each of `bases` in order.
/// Returns an absolute path.
fn resolve_input_path(
    file: &Path,
    field: &str,
    path: &Path,
    bases: &[&Path],
) -> Result<PathBuf, InputError> {
    if path.as_os_str().is_empty() {
        return Err(InputError::field(
            file,
            field,
            "the particle file path is empty",
            "give the path of a particle file (`N`, then N lines `x y z vx vy vz`)",
        ));
    }
    let candidates: Vec<PathBuf> = if path.is_absolute() {
        vec![path.to_path_buf()]
    } else {
        bases.iter().map(|b| b.join(path)).collect()
    };
    for c in &candidates {
        if c.is_file() {
            return std::path::absolute(c).map_err(|e| {
                InputError::field(
                    file,
                    field,
                    format!("{}: {e}", c.display()),
                    "check the path",
                )
            });
        }
    }
    let tried: Vec<String> = candidates
        .iter()
        .map(|c| format!("`{}`", c.display()))
        .collect();
    Err(InputError::field(
        file,
        field,
        format!(
            "particle file `{}` not found (tried {})",
            path.display(),
            tried.join(", ")
        ),
        "correct the path or create the file",
    ))
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
    #[serde(rename = "flipRatio", default = "default_flip_ratio")]
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

fn tutorial_scene(text: &str, file: &Path, base_dir: &Path) -> Result<Scene, InputError> {
    let t: TutorialFile = typed(text, file)?;
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
    // As the tutorial: relative to the working directory. Also relative to the json's folder
    // and its parents, so `surge run /elsewhere/inputs/fluid.json` finds `inputs/particles.in`.
    let cwd = PathBuf::from(".");
    let mut bases: Vec<&Path> = vec![&cwd];
    bases.extend(base_dir.ancestors().take(3));
    let path = resolve_input_path(file, "particles", &t.particles, &bases)?;
    Ok(Scene {
        name: file
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "fluid".into()),
        domain: Domain {
            lower: t.lc,
            cell_size: t.h,
            resolution: t.res,
        },
        gravity: default_gravity(),
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
            ..SolverSettings::default()
        },
        surface: Default::default(),
        render: Default::default(),
        output: OutputSettings {
            part_pattern: Some(t.output_fname),
            ..OutputSettings::default()
        },
    })
}

/// A number as a person writes it: plain for everyday magnitudes, `1e-30` style beyond them
/// (Rust's `{}` would print thirty zeros).
pub fn show(x: f64) -> String {
    let a = x.abs();
    if x != 0.0 && a.is_finite() && !(1e-4..1e7).contains(&a) {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

/// Checks every field of a resolved scene; the first problem found is returned.
pub fn validate(scene: &Scene, file: &Path) -> Result<(), InputError> {
    let err =
        |field: &str, problem: String, fix: &str| InputError::field(file, field, problem, fix);
    let finite3 = |field: &str, v: &[f64; 3], fix: &str| -> Result<(), InputError> {
        for (a, x) in v.iter().enumerate() {
            if !x.is_finite() {
                return Err(err(
                    &format!("{field}[{a}]"),
                    format!("not a finite number: {x}"),
                    fix,
                ));
            }
        }
        Ok(())
    };
    let positive = |field: &str, v: f64, fix: &str| -> Result<(), InputError> {
        if v.is_finite() && v > 0.0 {
            Ok(())
        } else {
            Err(err(
                field,
                format!("must be a finite number > 0, got {}", show(v)),
                fix,
            ))
        }
    };
    if scene.name.contains('/')
        || scene.name.contains('\\')
        || scene.name == ".."
        || scene.name == "."
    {
        return Err(err(
            "name",
            format!("`{}` is not a plain name", scene.name),
            "use a name without path separators; it names the default output folder out/<name>/",
        ));
    }
    let d = &scene.domain;
    finite3(
        "domain.lower",
        &d.lower,
        "give the lower corner as three finite numbers in metres",
    )?;
    positive(
        "domain.cell_size",
        d.cell_size,
        "set the edge length of one grid cell in metres, e.g. 0.02",
    )?;
    if d.cell_size < MIN_CELL_SIZE {
        return Err(err(
            "domain.cell_size",
            format!(
                "{} m is below the smallest cell surge simulates ({} m)",
                show(d.cell_size),
                show(MIN_CELL_SIZE)
            ),
            "give the cell size in metres (e.g. 0.02 for 2 cm); scale a miniature scene up",
        ));
    }
    for a in 0..3 {
        if d.resolution[a] < 3 {
            return Err(err(
                &format!("domain.resolution[{a}]"),
                format!(
                    "{} cells: at least 3 are needed (one wall layer each side, one for liquid)",
                    d.resolution[a]
                ),
                "give at least 3 cells per axis",
            ));
        }
    }
    let cells: u64 = d.resolution.iter().map(|&n| n as u64).product();
    if cells > 1 << 30 {
        return Err(err(
            "domain.resolution",
            format!("{cells} cells is more than surge handles (2^30)"),
            "use fewer or larger cells",
        ));
    }
    // f32 positions: the spacing of f32 values at the farthest coordinate must stay well below
    // a cell, or particles would move in visible steps.
    let far = (0..3)
        .map(|a| d.lower[a].abs().max(d.upper()[a].abs()))
        .fold(0.0f64, f64::max);
    let f32_spacing = far * f32::EPSILON as f64;
    if f32_spacing > POSITION_RESOLUTION_CELLS * d.cell_size {
        return Err(err(
            "domain.lower",
            format!(
                "the domain reaches {far:.6e} m from the origin, where positions (stored as f32) are {f32_spacing:.3e} m apart: more than {}% of a {} m cell",
                POSITION_RESOLUTION_CELLS * 100.0,
                d.cell_size
            ),
            "simulate near the origin (e.g. lower = [0, 0, 0]) and move the imported meshes into place in Blender",
        ));
    }
    finite3(
        "gravity",
        &scene.gravity,
        "give gravity as three finite numbers in m/s^2, e.g. [0, 0, -9.80665]",
    )?;
    let bounded = |field: &str, v: &[f64; 3], unit: &str, fix: &str| -> Result<(), InputError> {
        match v.iter().position(|x| x.abs() > MAX_ACCELERATION_OR_SPEED) {
            Some(a) => Err(err(
                &format!("{field}[{a}]"),
                format!(
                    "{} {unit} is beyond what a liquid simulation can take (at most {} {unit} per component)",
                    show(v[a]),
                    show(MAX_ACCELERATION_OR_SPEED)
                ),
                fix,
            )),
            None => Ok(()),
        }
    };
    // A box's or sphere's initial velocity: finite and of a plausible size.
    let source_velocity = |f: &str, velocity: &[f64; 3]| -> Result<(), InputError> {
        finite3(
            &format!("{f}.velocity"),
            velocity,
            "give three finite numbers in m/s",
        )?;
        bounded(
            &format!("{f}.velocity"),
            velocity,
            "m/s",
            "check the exponent; give the initial velocity in m/s",
        )
    };
    bounded(
        "gravity",
        &scene.gravity,
        "m/s^2",
        "check the exponent; Earth's gravity is [0, 0, -9.80665] m/s^2",
    )?;
    positive(
        "density",
        scene.density,
        "set the liquid density in kg/m^3, e.g. 1000",
    )?;
    if scene.sources.is_empty() {
        return Err(err(
            "sources",
            "no fluid sources: the scene would be empty".into(),
            "add at least one source, e.g. {\"type\": \"box\", \"min\": [...], \"max\": [...]}",
        ));
    }
    let h = d.cell_size;
    let up = d.upper();
    let (lo_in, hi_in): ([f64; 3], [f64; 3]) = (
        std::array::from_fn(|a| d.lower[a] + h),
        std::array::from_fn(|a| up[a] - h),
    );
    let region = format!("[{:?}, {:?}]", lo_in, hi_in);
    let mut seeded_estimate = 0.0f64;
    for (i, src) in scene.sources.iter().enumerate() {
        let f = format!("sources[{i}]");
        let (lo, hi) = match src {
            Source::Box { min, max, velocity } => {
                finite3(
                    &format!("{f}.min"),
                    min,
                    "give three finite numbers in metres",
                )?;
                finite3(
                    &format!("{f}.max"),
                    max,
                    "give three finite numbers in metres",
                )?;
                source_velocity(&f, velocity)?;
                for a in 0..3 {
                    if min[a] >= max[a] {
                        return Err(err(
                            &format!("{f}.max[{a}]"),
                            format!(
                                "the box is empty: max {} is not above min {}",
                                max[a], min[a]
                            ),
                            "make every max coordinate larger than the min one",
                        ));
                    }
                }
                (*min, *max)
            }
            Source::Sphere {
                center,
                radius,
                velocity,
            } => {
                finite3(
                    &format!("{f}.center"),
                    center,
                    "give three finite numbers in metres",
                )?;
                positive(&format!("{f}.radius"), *radius, "give the radius in metres")?;
                source_velocity(&f, velocity)?;
                (center.map(|c| c - radius), center.map(|c| c + radius))
            }
            Source::ParticleFile { .. } => continue,
        };
        if (0..3).any(|a| hi[a] <= lo_in[a] || lo[a] >= hi_in[a]) {
            return Err(err(
                &f,
                format!(
                    "the source [{lo:?}, {hi:?}] lies outside the domain's liquid region {region} (the domain minus its one-cell wall layer)"
                ),
                "move the source inside the domain or enlarge the domain",
            ));
        }
        // Upper bound of the particles it seeds: 8 per covered interior cell.
        let cells: f64 = (0..3)
            .map(|a| {
                let c0 = ((lo[a].max(lo_in[a]) - d.lower[a]) / h).floor();
                let c1 = ((hi[a].min(hi_in[a]) - d.lower[a]) / h).ceil();
                (c1 - c0).max(0.0)
            })
            .product();
        seeded_estimate += 8.0 * cells;
        if seeded_estimate > MAX_PARTICLES as f64 {
            return Err(err(
                &f,
                format!(
                    "the sources would seed about {seeded_estimate:.3e} particles, more than surge handles ({MAX_PARTICLES})"
                ),
                "use a larger domain.cell_size or smaller sources",
            ));
        }
    }
    let t = &scene.time;
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
            "must be at least 1 (frame 0 is the initial state)".into(),
            "set the index of the last frame, e.g. 90",
        ));
    }
    let s = &scene.solver;
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
    if s.min_substeps < 1 {
        return Err(err(
            "solver.min_substeps",
            "must be at least 1".into(),
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
    if let Some(dt) = s.fixed_dt {
        positive(
            "solver.fixed_dt",
            dt,
            "set the fixed step in seconds, or remove the key for adaptive substeps",
        )?;
        let steps = 1.0 / (t.fps * dt);
        if steps.round() > MAX_SUBSTEPS as f64 {
            return Err(err(
                "solver.fixed_dt",
                format!(
                    "{} s at {} fps is {steps:.0} steps per frame, more than surge allows ({MAX_SUBSTEPS})",
                    show(dt),
                    t.fps
                ),
                "check the exponent, or remove the key for CFL-adaptive substeps",
            ));
        }
    }
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
            "must be at least 1".into(),
            "set the iteration cap, e.g. 1000",
        ));
    }
    if let Err(e) = scene.surface.validate_for(&scene.domain) {
        return Err(err("surface", e.message, &e.fix));
    }
    if let Err(e) = scene.render.validate() {
        return Err(err(
            "render",
            e.to_string(),
            "see the preview section of README.md",
        ));
    }
    let o = &scene.output;
    if o.keep_checkpoints < 1 {
        return Err(err(
            "output.keep_checkpoints",
            "must be at least 1".into(),
            "keep at least one checkpoint, e.g. 2",
        ));
    }
    if let Some(p) = &o.part_pattern
        && let Err(e) = crate::output::part::NamePattern::parse(p)
    {
        return Err(err(
            "output.part_pattern",
            e,
            "use a file name with one `%d`-style conversion, e.g. `fluid.%03d.part`",
        ));
    }
    Ok(())
}

/// Seeds the initial particles of a validated scene: box and sphere sources are seeded, particle
/// files read (their paths relative to the working directory unless absolute). Checks that every
/// source gives particles and that every particle lies in the liquid region.
pub fn initial_particles(scene: &Scene, file: &Path) -> Result<Particles, InputError> {
    let mut files = Vec::new();
    for src in &scene.sources {
        if let Source::ParticleFile { path } = src {
            files.push(crate::sources::read_particle_file(path, &scene.domain)?);
        }
    }
    let (particles, counts) = crate::sources::seed_sources(scene, &files);
    for (i, (n, src)) in counts.iter().zip(&scene.sources).enumerate() {
        if *n == 0 {
            let fix = match src {
                Source::ParticleFile { .. } => "put at least one particle in the file".to_string(),
                _ => format!(
                    "make it cover at least one particle spacing ({} m, half a cell) inside the domain's liquid region",
                    scene.domain.particle_spacing()
                ),
            };
            return Err(InputError::field(
                file,
                &format!("sources[{i}]"),
                "this source seeds no particles",
                fix,
            ));
        }
    }
    Ok(particles)
}

/// Reads a resolved scene (`OUT/scene.json`, as `surge run` writes it) and validates it.
pub fn read_resolved(path: &Path) -> Result<Scene, InputError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        InputError::file(
            path,
            format!("cannot read the resolved scene: {e}"),
            "give the output folder of a `surge run`; it holds scene.json",
        )
    })?;
    let clean = strip_comment_lines(&text);
    serde_json::from_str::<serde_json::Value>(&clean)
        .map_err(|e| json_syntax_error(path, &clean, e))?;
    let scene: Scene = typed(&clean, path)?;
    validate(&scene, path)?;
    Ok(scene)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every key of every `Source` kind is known to its mirror in `source_fields`, with the same
    /// required/optional status, so `check_sources` never misreports a valid source.
    #[test]
    fn source_mirrors_match_the_enum() {
        let kinds = [
            Source::Box {
                min: [0.0; 3],
                max: [1.0; 3],
                velocity: [0.0, 0.0, 1.0],
            },
            Source::Sphere {
                center: [0.5; 3],
                radius: 0.1,
                velocity: [0.0; 3],
            },
            Source::ParticleFile {
                path: PathBuf::from("p.in"),
            },
        ];
        for src in kinds {
            let full = serde_json::to_value(&src).unwrap();
            let keys: Vec<String> = full.as_object().unwrap().keys().cloned().collect();
            for drop in std::iter::once(None).chain(keys.iter().map(Some)) {
                let mut v = full.clone();
                if let Some(k) = drop {
                    v.as_object_mut().unwrap().remove(k);
                }
                if drop.is_some_and(|k| k == "type") {
                    continue;
                }
                let enum_ok = serde_json::from_value::<Source>(v.clone()).is_ok();
                let mut fields = v.as_object().unwrap().clone();
                let kind = fields.remove("type").unwrap();
                let fields = serde_json::Value::Object(fields);
                let mirror_ok = match kind.as_str().unwrap() {
                    "box" => check_fields::<source_fields::Box>(&fields),
                    "sphere" => check_fields::<source_fields::Sphere>(&fields),
                    "particle_file" => check_fields::<source_fields::ParticleFile>(&fields),
                    k => panic!("kind {k} has no mirror"),
                }
                .is_ok();
                assert_eq!(enum_ok, mirror_ok, "{v}");
            }
        }
    }
}
